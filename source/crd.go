package source

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// crdWatch runs a dynamic informer for each custom resource once the apiserver serves it. A
// resource whose CRD is missing is logged once and checked again every interval, so installing
// Traefik later needs no restart, and a missing CRD never delays or blocks anything else.
type crdWatch struct {
	client    dynamic.Interface
	disc      discovery.DiscoveryInterface
	namespace string
	selector  string
	interval  time.Duration
	log       logrus.FieldLogger
	// onChange is told of each object's change, and with nil and nil of a resource that
	// became served.
	onChange func(old, cur metav1.Object)
	// specOnly drops updates that change only the status: the operator's own status writes.
	specOnly bool
	// transform cuts objects down before they are cached.
	transform cache.TransformFunc

	mu      sync.Mutex
	active  map[schema.GroupVersionResource]cache.GenericLister
	started map[schema.GroupVersionResource]bool
	missing map[schema.GroupVersionResource]bool
}

func newCRDWatch(client dynamic.Interface, disc discovery.DiscoveryInterface, cfg Config, specOnly bool,
	transform cache.TransformFunc, onChange func(old, cur metav1.Object)) *crdWatch {
	interval := cfg.DiscoveryInterval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	return &crdWatch{
		client: client, disc: disc, namespace: cfg.Namespace, selector: cfg.LabelSelector, interval: interval,
		log: cfg.Log, onChange: onChange, specOnly: specOnly, transform: transform,
		active: map[schema.GroupVersionResource]cache.GenericLister{}, started: map[schema.GroupVersionResource]bool{},
		missing: map[schema.GroupVersionResource]bool{},
	}
}

// start checks the resources now, waits for the caches of those that are served, and keeps
// checking the others in the background until ctx ends.
func (w *crdWatch) start(ctx context.Context, gvrs []schema.GroupVersionResource) error {
	if err := w.check(ctx, gvrs, true); err != nil {
		return err
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
		if started {
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
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(w.client, 0, w.namespace, w.tweak)
		inf := f.ForResource(gvr)
		if err := inf.Informer().SetTransform(w.transform); err != nil {
			return fmt.Errorf("cache transform for %s: %w", gvr, err)
		}
		if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.changed(nil, obj) },
			UpdateFunc: func(old, obj any) { w.changed(old, obj) },
			DeleteFunc: func(obj any) { w.changed(nil, obj) },
		}); err != nil {
			return fmt.Errorf("watching %s: %w", gvr, err)
		}
		w.mu.Lock()
		w.started[gvr] = true
		w.mu.Unlock()
		f.Start(ctx.Done())
		activate := func() bool {
			if !waitSynced(ctx, inf.Informer().HasSynced) {
				return false
			}
			w.mu.Lock()
			w.active[gvr] = inf.Lister()
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

func (w *crdWatch) tweak(o *metav1.ListOptions) { o.LabelSelector = w.selector }

// served asks discovery whether the group/version lists the resource. A group that does not
// exist at all is "not served", not an error.
func (w *crdWatch) served(gvr schema.GroupVersionResource) (bool, error) {
	list, err := w.disc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("discovering %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// changed passes an object's change on, unless it changed only the status of a kind that
// does not read it.
func (w *crdWatch) changed(old, obj any) {
	cur, prev := asUnstructured(obj), asUnstructured(old)
	if w.specOnly && prev != nil && cur != nil && onlyStatusChanged(prev, cur) {
		return
	}
	// A nil *Unstructured must reach onChange as a nil interface.
	var a, b metav1.Object
	if prev != nil {
		a = prev
	}
	if cur != nil {
		b = cur
	}
	if a != nil || b != nil {
		w.onChange(a, b)
	}
}

// onlyStatusChanged reports whether an update changed nothing but the status: for a kind that
// does not read its status, the operator's own status write coming back. Answering it with a sync would keep the loop
// busy for as long as statuses are written, and hold every real change back by the minimum
// spacing of event-triggered syncs.
func onlyStatusChanged(prev, cur *unstructured.Unstructured) bool {
	return prev.GetGeneration() == cur.GetGeneration() &&
		reflect.DeepEqual(prev.GetAnnotations(), cur.GetAnnotations()) &&
		reflect.DeepEqual(prev.Object["spec"], cur.Object["spec"]) &&
		!reflect.DeepEqual(prev.Object["status"], cur.Object["status"])
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

func asUnstructured(obj any) *unstructured.Unstructured {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o
	case cache.DeletedFinalStateUnknown:
		u, _ := o.Obj.(*unstructured.Unstructured)
		return u
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
	// keepSpec cuts the spec down to what the kind reads before objects are cached.
	keepSpec func(spec map[string]any) map[string]any
	// specOnly: an update that changes only the status starts no sync.
	specOnly bool
	watch    *crdWatch
}

func (k *crdKind) start(ctx context.Context, c Clients, cfg Config, changed func(old, cur metav1.Object)) error {
	k.watch = newCRDWatch(c.Dynamic, c.Discovery, cfg, k.specOnly, slimUnstructured(k.keepSpec), changed)
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
			if u, ok := o.(*unstructured.Unstructured); ok {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// ref is the reference to a cached custom resource, from the apiVersion and kind it carries.
func (k *crdKind) ref(u *unstructured.Unstructured) endpoint.SourceRef {
	gvk := u.GroupVersionKind()
	return refOf(gvk.Group, gvk.Version, gvk.Kind, u)
}
