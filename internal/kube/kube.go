// Package kube holds the operator's Kubernetes clients: a scheme of the few API groups it
// uses, typed clients over it, a discovery of one request and an event sink. client-go's
// clientset, its scheme, its discovery client and its informer factory register every
// built-in API group, whose code and type tables would be much of an idle operator's memory.
package kube

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// Scheme knows the API groups the operator's typed clients read and write, and the
// options and status types of every request.
var (
	Scheme         = runtime.NewScheme()
	Codecs         = serializer.NewCodecFactory(Scheme)
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(corev1.AddToScheme(Scheme))
	utilruntime.Must(networkingv1.AddToScheme(Scheme))
	utilruntime.Must(coordinationv1.AddToScheme(Scheme))
}

// Getter, Lister and Reader are the parts of a typed client that the operator calls; the
// typed clients of client-go (and their fakes, in tests) have them too.
type (
	Getter[T runtime.Object] interface {
		Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	}
	Lister[L runtime.Object] interface {
		List(ctx context.Context, opts metav1.ListOptions) (L, error)
	}
	Reader[T, L runtime.Object] interface {
		Getter[T]
		Lister[L]
		Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	}
	// LeaseClient is what the leader election does with its Lease.
	LeaseClient interface {
		Getter[*coordinationv1.Lease]
		Lister[*coordinationv1.LeaseList]
		Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
		Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
	}
)

// Namespaced gives a resource's client in a namespace ("" for every namespace).
type Namespaced[C any] func(namespace string) C

// The clients of each resource the operator reads.
type (
	Ingresses       = Namespaced[Reader[*networkingv1.Ingress, *networkingv1.IngressList]]
	Services        = Namespaced[Reader[*corev1.Service, *corev1.ServiceList]]
	Secrets         = Namespaced[Reader[*corev1.Secret, *corev1.SecretList]]
	Pods            = Namespaced[Reader[*corev1.Pod, *corev1.PodList]]
	ConfigMaps      = Namespaced[Getter[*corev1.ConfigMap]]
	ServiceAccounts = Namespaced[Getter[*corev1.ServiceAccount]]
	Events          = Namespaced[Lister[*corev1.EventList]]
	Leases          = Namespaced[LeaseClient]
)

// Core is a client of the core API group (v1).
type Core struct{ c rest.Interface }

// NewCore builds the core client from cfg, which keeps its rate limiter and content type.
func NewCore(cfg *rest.Config) (*Core, error) {
	c, err := restClient(cfg, corev1.SchemeGroupVersion, "/api")
	return &Core{c}, err
}

func (c *Core) Services(ns string) Reader[*corev1.Service, *corev1.ServiceList] {
	return withList(c.c, "services", ns, func() *corev1.Service { return &corev1.Service{} }, func() *corev1.ServiceList { return &corev1.ServiceList{} })
}

func (c *Core) Secrets(ns string) Reader[*corev1.Secret, *corev1.SecretList] {
	return withList(c.c, "secrets", ns, func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
}

func (c *Core) Pods(ns string) Reader[*corev1.Pod, *corev1.PodList] {
	return withList(c.c, "pods", ns, func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })
}

func (c *Core) ConfigMaps(ns string) Getter[*corev1.ConfigMap] {
	return withList(c.c, "configmaps", ns, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

func (c *Core) ServiceAccounts(ns string) Getter[*corev1.ServiceAccount] {
	return withList(c.c, "serviceaccounts", ns, func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} },
		func() *corev1.ServiceAccountList { return &corev1.ServiceAccountList{} })
}

func (c *Core) Events(ns string) Lister[*corev1.EventList] {
	return withList(c.c, "events", ns, func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

// Namespaces reads namespaces, which are cluster-scoped.
func (c *Core) Namespaces() Getter[*corev1.Namespace] {
	return withList(c.c, "namespaces", "", func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

// EventSink writes the event recorder's events through this client.
func (c *Core) EventSink() record.EventSink { return eventSink{c.c} }

// Networking is a client of the networking.k8s.io/v1 API group.
type Networking struct{ c rest.Interface }

// NewNetworking builds the networking client from cfg.
func NewNetworking(cfg *rest.Config) (*Networking, error) {
	c, err := restClient(cfg, networkingv1.SchemeGroupVersion, "/apis")
	return &Networking{c}, err
}

func (c *Networking) Ingresses(ns string) Reader[*networkingv1.Ingress, *networkingv1.IngressList] {
	return withList(c.c, "ingresses", ns, func() *networkingv1.Ingress { return &networkingv1.Ingress{} },
		func() *networkingv1.IngressList { return &networkingv1.IngressList{} })
}

// Coordination is a client of the coordination.k8s.io/v1 API group.
type Coordination struct{ c rest.Interface }

// NewCoordination builds the coordination client from cfg.
func NewCoordination(cfg *rest.Config) (*Coordination, error) {
	c, err := restClient(cfg, coordinationv1.SchemeGroupVersion, "/apis")
	return &Coordination{c}, err
}

func (c *Coordination) Leases(ns string) LeaseClient {
	return withList(c.c, "leases", ns, func() *coordinationv1.Lease { return &coordinationv1.Lease{} },
		func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}

type object interface {
	runtime.Object
	metav1.Object
}

func withList[T object, L runtime.Object](c rest.Interface, resource, ns string, obj func() T, list func() L) *gentype.ClientWithList[T, L] {
	return gentype.NewClientWithList(resource, c, ParameterCodec, ns, obj, list, gentype.PrefersProtobuf[T]())
}

// restClient is a REST client of one group version with this package's scheme, as client-go's
// typed clients configure theirs.
func restClient(cfg *rest.Config, gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion, c.APIPath = &gv, apiPath
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, Codecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("the %s client: %w", gv, err)
	}
	return rc, nil
}

// eventSink writes events in their own namespace, as client-go's EventSinkImpl does.
type eventSink struct{ c rest.Interface }

func (s eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := s.c.Post().NamespaceIfScoped(e.Namespace, e.Namespace != "").Resource("events").Body(e).Do(context.Background()).Into(out)
	return out, err
}

func (s eventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := s.c.Put().NamespaceIfScoped(e.Namespace, e.Namespace != "").Resource("events").Name(e.Name).Body(e).Do(context.Background()).Into(out)
	return out, err
}

func (s eventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := s.c.Patch(types.StrategicMergePatchType).NamespaceIfScoped(e.Namespace, e.Namespace != "").Resource("events").Name(e.Name).
		Body(data).Do(context.Background()).Into(out)
	return out, err
}

// Discovery tells which resources a group version serves: ServerResourcesForGroupVersion of
// client-go's discovery client, whose fake the tests use.
type Discovery interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// NewDiscovery builds a Discovery from cfg, with the timeout client-go's discovery client
// has by default.
func NewDiscovery(cfg *rest.Config) (Discovery, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath, c.GroupVersion = "", nil
	if c.Timeout == 0 {
		c.Timeout = 32 * time.Second
	}
	c.NegotiatedSerializer = serializer.NegotiatedSerializerWrapper(runtime.SerializerInfo{Serializer: runtime.NoopEncoder{Decoder: Codecs.UniversalDecoder()}})
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("the discovery client: %w", err)
	}
	return discovery{rc}, nil
}

type discovery struct{ c rest.Interface }

// ServerResourcesForGroupVersion asks /api/v1 or /apis/<group>/<version>, one request.
func (d discovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if gv == "" {
		return nil, fmt.Errorf("groupVersion shouldn't be empty")
	}
	path := "/apis/" + gv
	if gv == "v1" {
		path = "/api/v1"
	}
	out := &metav1.APIResourceList{GroupVersion: gv}
	if err := d.c.Get().AbsPath(path).Do(context.Background()).Into(out); err != nil {
		if gv == "v1" && apierrors.IsNotFound(err) {
			return out, nil
		}
		return nil, err
	}
	return out, nil
}

// IsResourceEnabled reports whether the cluster serves gvr: a group version it does not
// serve at all is not an error, as with client-go's discovery.IsResourceEnabled.
func IsResourceEnabled(d Discovery, gvr schema.GroupVersionResource) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}
