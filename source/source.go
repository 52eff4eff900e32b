// Package source reads the cluster and turns opted-in resources into endpoints. A source never
// writes and never calls the API during a sync: everything comes from shared informer caches,
// which are filled once and then kept current by watches.
package source

import (
	"context"
	"sync"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Source is what the controller consumes.
type Source interface {
	// Endpoints returns one endpoint per (object, hostname); the registry merges claims.
	Endpoints(ctx context.Context) ([]*endpoint.Endpoint, error)
	// AddEventHandler registers a function called on every relevant change. It must be cheap.
	AddEventHandler(handler func())
}

// The annotations, as in the design. Only "enabled" is required.
const (
	annotationPrefix      = "router-hosts.fzymgc.house/"
	AnnotationEnabled     = annotationPrefix + "enabled"
	AnnotationIPAddress   = annotationPrefix + "ip-address"
	AnnotationTags        = annotationPrefix + "tags"
	AnnotationAliases     = annotationPrefix + "aliases"
	AnnotationGracePeriod = annotationPrefix + "grace-period"
)

// handlers is a list of change callbacks safe to add to while informers run.
type handlers struct {
	mu  sync.Mutex
	fns []func()
}

func (h *handlers) add(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fns = append(h.fns, fn)
}

func (h *handlers) fire() {
	h.mu.Lock()
	fns := h.fns
	h.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
