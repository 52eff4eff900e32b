package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// statusWatch counts the HostMappings whose status says Synced for their generation, from a
// watch: one list at the start, then an event per status write. Polling with lists instead
// would load the apiserver with ten thousand objects a second and slow the very operator
// being measured.
type statusWatch struct {
	mu      sync.Mutex
	synced  map[string]bool // by name
	changed chan struct{}
}

// watchStatuses starts the watch on the cluster's HostMappings and waits for its first list.
func (c *cluster) watchStatuses(ctx context.Context) (*statusWatch, error) {
	w := &statusWatch{synced: map[string]bool{}, changed: make(chan struct{}, 1)}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 0, c.ns, nil)
	inf := f.ForResource(source.HostMappingGVR).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.set(obj, false) },
		UpdateFunc: func(_, obj any) { w.set(obj, false) },
		DeleteFunc: func(obj any) { w.set(obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("watching HostMapping statuses: %w", err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("waiting for the HostMapping watch: %w", ctx.Err())
	}
	return w, nil
}

func (w *statusWatch) set(obj any, gone bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	ok, _, _ = unstructured.NestedBool(u.Object, "status", "synced")
	gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	w.mu.Lock()
	if gone || !ok || gen != u.GetGeneration() {
		delete(w.synced, u.GetName())
	} else {
		w.synced[u.GetName()] = true
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// count is the number of HostMappings that say Synced.
func (w *statusWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.synced)
}

// waitAll waits until n HostMappings say Synced and returns when that was seen; alive is
// asked between events, so a dead operator fails the wait.
func (w *statusWatch) waitAll(ctx context.Context, n int, limit time.Duration, alive func() error) (time.Time, error) {
	deadline := time.After(limit)
	for {
		if w.count() >= n {
			return time.Now(), nil
		}
		if err := alive(); err != nil {
			return time.Time{}, err
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-deadline:
			return time.Time{}, fmt.Errorf("only %d of %d statuses Synced after %v", w.count(), n, limit)
		case <-w.changed:
		case <-time.After(time.Second):
		}
	}
}
