package source

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
)

// crdWatch runs a dynamic informer for each custom resource once the apiserver serves it. A
// resource whose CRD is missing is logged once and checked again every interval, so installing
// Traefik later needs no restart, and a missing CRD never delays or blocks anything else.
type crdWatch struct {
	client    dynamic.Interface
	disc      kube.Discovery
	namespace string
	selector  string
	interval  time.Duration
	log       logrus.FieldLogger
	// onChange is told of each object's change, and with nil and nil of a resource that
	// became served.
	onChange func(old, cur metav1.Object)
	// ignore, when set, drops updates that change nothing the kind reads.
	ignore func(old, cur metav1.Object) bool
	// transform cuts objects down before they are cached.
	transform cache.TransformFunc
	// after, when set, holds every resource back until it says the resources the kind reads
	// beside them are cached (a route is read against its Gateways, never without them).
	after func() bool

	// retry is the first wait before discovery is asked again at start; it doubles to
	// maxRetry.
	retry time.Duration

	mu      sync.Mutex
	active  map[schema.GroupVersionResource]cache.GenericLister
	started map[schema.GroupVersionResource]bool
	missing map[schema.GroupVersionResource]bool
}

func newCRDWatch(client dynamic.Interface, disc kube.Discovery, cfg Config, ignore func(old, cur metav1.Object) bool,
	transform cache.TransformFunc, onChange func(old, cur metav1.Object)) *crdWatch {
	interval := cfg.DiscoveryInterval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	return &crdWatch{
		client: client, disc: disc, namespace: cfg.Namespace, selector: cfg.LabelSelector, interval: interval,
		log: cfg.Log, onChange: onChange, ignore: ignore, transform: transform, retry: time.Second,
		active: map[schema.GroupVersionResource]cache.GenericLister{}, started: map[schema.GroupVersionResource]bool{},
		missing: map[schema.GroupVersionResource]bool{},
	}
}

// maxRetry caps the wait between two discoveries at start.
const maxRetry = 5 * time.Second

// start checks the resources now, waits for the caches of those that are served, and keeps
// checking the others in the background until ctx ends. Discovery that fails at start (the
// apiserver away, say while it restarts) is asked again until it answers, as informers retry
// their lists: the first sync must see every served resource, or it would take a resource's
// objects for deleted, so start returns only then, or when ctx ends.
func (w *crdWatch) start(ctx context.Context, gvrs []schema.GroupVersionResource) error {
	wait := w.retry
	for attempt := 0; ; attempt++ {
		err := w.check(ctx, gvrs, true)
		var de *discoveryError
		if err == nil {
			break
		}
		if !errors.As(err, &de) {
			return err
		}
		if attempt%10 == 0 {
			w.log.WithError(err).WithField("retry_in", wait).Warn("cannot discover custom resources yet; asking again until the apiserver answers")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		case <-time.After(wait):
		}
		if wait = 2 * wait; wait > maxRetry {
			wait = maxRetry
		}
	}
	go func() {
		t := time.NewTicker(w.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := w.check(ctx, gvrs, false); err != nil {
					w.log.WithError(err).Warn("checking for custom resources")
				}
			}
		}
	}()
	return nil
}

// check starts an informer for every served resource not yet watched. At start it waits for
// their caches; later it waits in the background and announces the new resource when ready.
func (w *crdWatch) check(ctx context.Context, gvrs []schema.GroupVersionResource, wait bool) error {
	for _, gvr := range gvrs {
		w.mu.Lock()
		started := w.started[gvr]
		w.mu.Unlock()
		if started || (w.after != nil && !w.after()) {
			continue
		}
		served, err := w.served(gvr)
		if err != nil {
			return err
		}
		if !served {
			w.mu.Lock()
			if !w.missing[gvr] {
				w.missing[gvr] = true
				w.log.WithField("resource", gvr.String()).Info("custom resource not served by the cluster; skipping it and checking again periodically")
			}
			w.mu.Unlock()
			continue
		}
		inf := w.informer(gvr)
		if err := inf.SetTransform(w.transform); err != nil {
			return fmt.Errorf("cache transform for %s: %w", gvr, err)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.changed(nil, obj) },
			UpdateFunc: func(old, obj any) { w.changed(old, obj) },
			DeleteFunc: func(obj any) { w.changed(nil, obj) },
		}); err != nil {
			return fmt.Errorf("watching %s: %w", gvr, err)
		}
		w.mu.Lock()
		w.started[gvr] = true
		w.mu.Unlock()
		go inf.RunWithContext(ctx)
		activate := func() bool {
			if !waitSynced(ctx, inf.HasSynced) {
				return false
			}
			w.mu.Lock()
			// A lister of the indexer as it is: the dynamic lister would insist on
			// unstructured objects, and a transform may cache typed ones.
			w.active[gvr] = cache.NewGenericLister(inf.GetIndexer(), gvr.GroupResource())
			wasMissing := w.missing[gvr]
			w.mu.Unlock()
			if wasMissing {
				w.log.WithField("resource", gvr.String()).Info("custom resource is now served; watching it")
			}
			return true
		}
		if wait {
			if !activate() {
				return fmt.Errorf("waiting for the %s cache: %w", gvr, context.Cause(ctx))
			}
			continue
		}
		go func() {
			if activate() {
				w.onChange(nil, nil)
			}
		}()
	}
	return nil
}

// informer is the shared informer of one resource through the dynamic client, in the
// namespace and with the label selector of the source, as client-go's dynamic informer
// factory builds it (whose package would link every API group's informers).
func (w *crdWatch) informer(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	res := w.client.Resource(gvr).Namespace(w.namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = w.selector
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = w.selector
			return res.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, w.client), &unstructured.Unstructured{},
		cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, ObjectDescription: gvr.String()})
}

// discoveryError is a discovery that did not answer whether a resource is served.
type discoveryError struct {
	gv  schema.GroupVersion
	err error
}

func (e *discoveryError) Error() string { return fmt.Sprintf("discovering %s: %v", e.gv, e.err) }
func (e *discoveryError) Unwrap() error { return e.err }

// served asks discovery whether the group/version lists the resource. A group that does not
// exist at all is "not served", not an error.
func (w *crdWatch) served(gvr schema.GroupVersionResource) (bool, error) {
	list, err := w.disc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, &discoveryError{gv: gvr.GroupVersion(), err: err}
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// changed passes an object's change on, unless it changed nothing the kind reads.
func (w *crdWatch) changed(old, obj any) {
	prev, cur := asObject(old), asObject(obj)
	if prev != nil && cur != nil && w.ignore != nil && w.ignore(prev, cur) {
		return
	}
	if prev != nil || cur != nil {
		w.onChange(prev, cur)
	}
}

// listers returns the resources being watched whose caches are ready.
func (w *crdWatch) listers() map[schema.GroupVersionResource]cache.GenericLister {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[schema.GroupVersionResource]cache.GenericLister, len(w.active))
	for k, v := range w.active {
		out[k] = v
	}
	return out
}

// asObject is the cached object an informer handed over, nil for none.
func asObject(obj any) metav1.Object {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if o, ok := obj.(metav1.Object); ok && !reflect.ValueOf(o).IsNil() {
		return o
	}
	return nil
}

// crdResource is one custom resource a kind reads, with the kind written in its objects.
type crdResource struct {
	gvr  schema.GroupVersionResource
	kind string
}

// crdKind is the reading half of a custom-resource kind: dynamic informers started once the
// apiserver serves the resource, objects of every served resource. A kind embeds it and adds
// optedIn and claim.
type crdKind struct {
	resources []crdResource
	// transform cuts objects down to what the kind reads before they are cached.
	transform cache.TransformFunc
	// ignore, when set, says which updates change nothing the kind reads.
	ignore func(old, cur metav1.Object) bool
	// after, when set, holds the resources back until it is true (crdWatch.after).
	after func() bool
	watch *crdWatch
}

func (k *crdKind) start(ctx context.Context, c Clients, cfg Config, changed func(old, cur metav1.Object)) error {
	k.watch = newCRDWatch(c.Dynamic, c.Discovery, cfg, k.ignore, k.transform, changed)
	k.watch.after = k.after
	gvrs := make([]schema.GroupVersionResource, 0, len(k.resources))
	for _, r := range k.resources {
		gvrs = append(gvrs, r.gvr)
	}
	return k.watch.start(ctx, gvrs)
}

// synced is always true: a resource's cache is read only once it is filled, and a resource
// not served yet has no objects.
func (k *crdKind) synced() bool { return true }

func (k *crdKind) objects() ([]metav1.Object, error) {
	listers := k.watch.listers()
	var out []metav1.Object
	for _, r := range k.resources {
		l := listers[r.gvr]
		if l == nil {
			continue
		}
		objs, err := l.List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("listing %s from the cache: %w", r.gvr, err)
		}
		for _, o := range objs {
			if m, ok := o.(metav1.Object); ok {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// rules: reading each resource where the operator watches.
func (k *crdKind) rules() []Rule {
	out := make([]Rule, 0, len(k.resources))
	for _, r := range k.resources {
		out = append(out, read(r.gvr.Group, r.gvr.Resource))
	}
	return out
}

// ref is the reference to a cached custom resource, from the apiVersion and kind it carries.
func (k *crdKind) ref(o metav1.Object) endpoint.SourceRef {
	var gvk schema.GroupVersionKind
	if r, ok := o.(runtime.Object); ok {
		gvk = r.GetObjectKind().GroupVersionKind()
	}
	return refOf(gvk.Group, gvk.Version, gvk.Kind, o)
}
