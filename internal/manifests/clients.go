package manifests

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
)

// The built-in resources the sources read through typed clients.
var (
	ingressGVR = networkingv1.SchemeGroupVersion.WithResource("ingresses")
	serviceGVR = corev1.SchemeGroupVersion.WithResource("services")
)

// Lists reads live objects of any resource through a dynamic client, in every namespace: the
// Lister of a plan with cluster access.
func Lists(c dynamic.Interface) Lister {
	return func(ctx context.Context, gvr schema.GroupVersionResource) ([]unstructured.Unstructured, error) {
		l, err := c.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
}

// Ingresses is the typed Ingress client of the overlaid cluster: List, Get and Watch answer
// from the overlay (a watch that never fires: the plan decides once).
func (o *Overlay) Ingresses() kube.Ingresses {
	return func(ns string) kube.Reader[*networkingv1.Ingress, *networkingv1.IngressList] {
		return ingresses{o: o, ns: ns}
	}
}

type ingresses struct {
	o  *Overlay
	ns string
}

func (c ingresses) List(ctx context.Context, opts metav1.ListOptions) (*networkingv1.IngressList, error) {
	items, err := typedList[networkingv1.Ingress](ctx, c.o, ingressGVR, c.ns, opts)
	return &networkingv1.IngressList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: items}, err
}

func (c ingresses) Get(ctx context.Context, name string, _ metav1.GetOptions) (*networkingv1.Ingress, error) {
	return typedGet[networkingv1.Ingress](ctx, c.o, ingressGVR, c.ns, name)
}

func (c ingresses) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// Services is the typed Service client of the overlaid cluster, as Ingresses.
func (o *Overlay) Services() kube.Services {
	return func(ns string) kube.Reader[*corev1.Service, *corev1.ServiceList] { return services{o: o, ns: ns} }
}

type services struct {
	o  *Overlay
	ns string
}

func (c services) List(ctx context.Context, opts metav1.ListOptions) (*corev1.ServiceList, error) {
	items, err := typedList[corev1.Service](ctx, c.o, serviceGVR, c.ns, opts)
	return &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: items}, err
}

func (c services) Get(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.Service, error) {
	return typedGet[corev1.Service](ctx, c.o, serviceGVR, c.ns, name)
}

func (c services) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// typedList and typedGet answer a typed client's List and Get from the overlay, converting
// its objects to T.
func typedList[T any](ctx context.Context, o *Overlay, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) ([]T, error) {
	objs, err := o.list(ctx, gvr, ns, opts)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(objs))
	for i := range objs {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", gvr.Resource, objs[i].GetNamespace(), objs[i].GetName(), err)
		}
	}
	return out, nil
}

func typedGet[T any](ctx context.Context, o *Overlay, gvr schema.GroupVersionResource, ns, name string) (*T, error) {
	u, err := get(ctx, o, gvr, ns, name)
	if err != nil {
		return nil, err
	}
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", gvr.Resource, ns, name, err)
	}
	return &out, nil
}

func get(ctx context.Context, o *Overlay, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	objs, err := o.list(ctx, gvr, ns, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range objs {
		if objs[i].GetName() == name {
			return &objs[i], nil
		}
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

// Dynamic is the dynamic client of the overlaid cluster, as Ingresses.
func (o *Overlay) Dynamic(live dynamic.Interface) dynamic.Interface {
	return dynamicClient{o: o, live: live}
}

type dynamicClient struct {
	o    *Overlay
	live dynamic.Interface
}

// IsWatchListSemanticsUnSupported tells client-go's informers to list, then watch: the overlay
// answers a list, and its watches never speak, so a streamed list would wait forever.
func (dynamicClient) IsWatchListSemanticsUnSupported() bool { return true }

func (d dynamicClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	var live dynamic.NamespaceableResourceInterface
	if d.live != nil {
		live = d.live.Resource(gvr)
	}
	return resource{NamespaceableResourceInterface: live, o: d.o, gvr: gvr}
}

type resource struct {
	dynamic.NamespaceableResourceInterface
	o   *Overlay
	gvr schema.GroupVersionResource
	ns  string
}

func (r resource) Namespace(ns string) dynamic.ResourceInterface {
	r.ns = ns
	return r
}

func (r resource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	objs, err := r.o.list(ctx, r.gvr, r.ns, opts)
	if err != nil {
		return nil, err
	}
	out := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": r.gvr.GroupVersion().String(), "kind": "List"}, Items: objs}
	out.SetResourceVersion("1")
	return out, nil
}

func (r resource) Get(ctx context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	return get(ctx, r.o, r.gvr, r.ns, name)
}

func (r resource) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// Discovery answers what the cluster serves: the live cluster's answer, or offline (live nil)
// every resource of the given groups' versions that serves lists, so that each source reads
// the manifests' objects of its kinds.
func Discovery(live kube.Discovery, offline map[string][]string) kube.Discovery {
	if live != nil {
		return live
	}
	return offlineDiscovery{served: offline}
}

type offlineDiscovery struct {
	served map[string][]string // resources by API group
}

func (d offlineDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	parsed, err := schema.ParseGroupVersion(gv)
	if err != nil {
		return nil, err
	}
	res, ok := d.served[parsed.Group]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: parsed.Group}, gv)
	}
	out := &metav1.APIResourceList{GroupVersion: gv}
	for _, r := range res {
		out.APIResources = append(out.APIResources, metav1.APIResource{Name: r, Namespaced: true, Verbs: []string{"get", "list", "watch"}})
	}
	return out, nil
}
