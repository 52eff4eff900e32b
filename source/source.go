// Package source reads the cluster and turns opted-in resources into endpoints. A source never
// writes and never calls the API during a sync: everything comes from shared informer caches,
// which are filled once and then kept current by watches.
package source

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
)

// The annotations, as in the design. Only "enabled" is required.
const (
	annotationPrefix      = "router-hosts.fzymgc.house/"
	AnnotationEnabled     = annotationPrefix + "enabled"
	AnnotationIPAddress   = annotationPrefix + "ip-address"
	AnnotationTags        = annotationPrefix + "tags"
	AnnotationAliases     = annotationPrefix + "aliases"
	AnnotationGracePeriod = annotationPrefix + "grace-period"
	// AnnotationShared ("true") lets other clusters whose claims are shared too write
	// addresses of their own for the object's hostnames.
	AnnotationShared = annotationPrefix + "shared"
	// AnnotationHostname names a Service's hostnames, comma-separated: a Service has none of
	// its own.
	AnnotationHostname = annotationPrefix + "hostname"
)

// Clients are the API clients the sources read through: the typed clients of package kube,
// not client-go's clientset, which links the client code of every API group into the binary,
// whose pages are much of an idle operator's memory (docs/performance.md, "Where the memory
// goes").
type Clients struct {
	Ingresses kube.Ingresses
	Services  kube.Services
	Dynamic   dynamic.Interface
	Discovery kube.Discovery
	// WatchListUnsupported turns off streaming lists, for fake clientsets (unit tests), which
	// cannot serve them; a real apiserver can.
	WatchListUnsupported bool
}

// IsWatchListSemanticsUnSupported tells client-go's reflector whether to stream its lists.
func (c Clients) IsWatchListSemanticsUnSupported() bool { return c.WatchListUnsupported }

// newInformer builds a shared informer over one list/watch pair, as client-go's generated
// informers do, with tweak applied to every list and watch (label and field selectors) and
// transform to every object before it is cached.
func newInformer[T runtime.Object](c Clients, list func(context.Context, metav1.ListOptions) (T, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	example runtime.Object, tweak func(*metav1.ListOptions), transform cache.TransformFunc) (cache.SharedIndexInformer, error) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return watchFn(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, c), example, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := inf.SetTransform(transform); err != nil {
		return nil, err
	}
	return inf, nil
}

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

// waitSynced polls the caches every 5 ms for the first second, then every 100 ms. client-go's
// WaitForCacheSync looks every 100 ms from the start, which would hold every start, and so the
// first sync, up to a whole period after the caches are filled; a cache that never fills (its
// list forbidden, say) must not keep a goroutine waking every 5 ms either.
func waitSynced(ctx context.Context, synced ...cache.InformerSynced) bool {
	const fast, slow, fastFor = 5 * time.Millisecond, 100 * time.Millisecond, time.Second
	start := time.Now()
	for {
		done := true
		for _, s := range synced {
			if !s() {
				done = false
				break
			}
		}
		if done {
			return true
		}
		wait := fast
		if time.Since(start) > fastFor {
			wait = slow
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// notify passes an informer's changes of typed objects on as metav1.Objects.
func notify(inf cache.SharedIndexInformer, changed func(old, cur metav1.Object)) error {
	obj := func(x any) metav1.Object {
		if d, ok := x.(cache.DeletedFinalStateUnknown); ok {
			x = d.Obj
		}
		o, _ := x.(metav1.Object)
		return o
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(x any) { changed(nil, obj(x)) },
		UpdateFunc: func(old, x any) { changed(obj(old), obj(x)) },
		DeleteFunc: func(x any) { changed(nil, obj(x)) },
	})
	return err
}

// typedKind is the reading half of a built-in kind: one informer through a typed client, its
// objects cut by a transform. A kind embeds it and adds optedIn and claim.
type typedKind struct {
	indexer  cache.Indexer
	isSynced cache.InformerSynced
}

// startTyped starts the informer of a built-in kind (what names it in errors) and waits for
// its cache, so that the first sync sees the whole cluster rather than an empty one.
func startTyped[T runtime.Object](ctx context.Context, k *typedKind, c Clients, cfg Config, what string,
	list func(context.Context, metav1.ListOptions) (T, error), watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	example runtime.Object, transform cache.TransformFunc, changed func(old, cur metav1.Object)) error {
	inf, err := newInformer(c, list, watchFn, example, func(o *metav1.ListOptions) { o.LabelSelector = cfg.LabelSelector }, transform)
	if err != nil {
		return fmt.Errorf("the %s informer: %w", what, err)
	}
	if err := notify(inf, changed); err != nil {
		return fmt.Errorf("watching %ss: %w", what, err)
	}
	k.indexer, k.isSynced = inf.GetIndexer(), inf.HasSynced
	go inf.RunWithContext(ctx)
	if !waitSynced(ctx, k.isSynced) {
		return fmt.Errorf("waiting for the %s cache: %w", what, context.Cause(ctx))
	}
	return nil
}

func (k *typedKind) synced() bool { return k.isSynced() }

func (k *typedKind) objects() ([]metav1.Object, error) {
	list := k.indexer.List()
	out := make([]metav1.Object, 0, len(list))
	for _, o := range list {
		if m, ok := o.(metav1.Object); ok {
			out = append(out, m)
		}
	}
	return out, nil
}
