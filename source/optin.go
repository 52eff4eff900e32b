package source

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// OptIn is how objects are managed besides their own opt-in annotation: every Ingress of some
// classes (--ingress-class), every route of some Gateways (--gateway-name, namespace/name), and
// external-dns's annotations (--external-dns-annotations). A RouterHostsConfig may change it
// while the operator runs.
type OptIn struct {
	IngressClasses         []string
	GatewayNames           []string
	ExternalDNSAnnotations bool
}

// Check reports a class or a Gateway name that can match nothing.
func (o OptIn) Check() error {
	for _, c := range o.IngressClasses {
		if c == "" {
			return errors.New("an empty ingress class")
		}
	}
	for _, g := range o.GatewayNames {
		if ns, name, ok := strings.Cut(g, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("Gateway %q: want namespace/name", g)
		}
	}
	return nil
}

// optInSet is an OptIn made ready to look up.
type optInSet struct {
	classes, gateways map[string]bool
	externalDNS       bool
}

func compileOptIn(o OptIn) *optInSet {
	s := &optInSet{classes: map[string]bool{}, gateways: map[string]bool{}, externalDNS: o.ExternalDNSAnnotations}
	for _, c := range o.IngressClasses {
		s.classes[c] = true
	}
	for _, g := range o.GatewayNames {
		s.gateways[g] = true
	}
	return s
}

// liveOptIn is the OptIn a source and its kind read on every object; SetOptIn replaces it.
// The rule that goes with it: what each object gave under the old one is forgotten
// (Source.SetOptIn moves the memos' epoch).
type liveOptIn struct{ p atomic.Pointer[optInSet] }

// load is the OptIn in use; a kind that was never started (a unit test's) has none.
func (l *liveOptIn) load() *optInSet {
	if l == nil {
		return &optInSet{}
	}
	return l.p.Load()
}
