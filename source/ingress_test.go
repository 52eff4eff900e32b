package source

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube/clientset"
)

func ing(name string, ann map[string]string, status []string, hosts ...string) *networkingv1.Ingress {
	i := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: ktypes.UID("uid-" + name), Annotations: ann}}
	for _, h := range hosts {
		i.Spec.Rules = append(i.Spec.Rules, networkingv1.IngressRule{Host: h})
	}
	for _, ip := range status {
		i.Status.LoadBalancer.Ingress = append(i.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{IP: ip})
	}
	return i
}

func on(kv ...string) map[string]string {
	a := map[string]string{AnnotationEnabled: "true"}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	return a
}

// ingressSource builds the ingress source on a fake clientset holding objs, with its own
// resolver of chain.
func ingressSource(t *testing.T, chain []string, objs ...runtime.Object) *Source {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return buildIngress(t, ctx, fakeClients(fake.NewClientset(objs...)), chain)
}

func buildIngress(t *testing.T, ctx context.Context, c Clients, chain []string) *Source {
	t.Helper()
	strategies, err := ParseIPResolution(chain)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewResolver(ctx, c, strategies)
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	s, err := Build(ctx, "ingress", c, Config{Resolver: r, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fakeClients are the sources' clients on a fake clientset, which cannot stream lists.
func fakeClients(c *fake.Clientset) Clients {
	return Clients{Ingresses: clientset.Ingresses(c), Services: clientset.Services(c), WatchListUnsupported: true}
}

// hostTargets renders endpoints as hostname → targets.
func hostTargets(eps []*endpoint.Endpoint) map[string][]string {
	out := map[string][]string{}
	for _, e := range eps {
		out[e.Hostname] = e.Targets
	}
	return out
}

func TestIngressEndpoints(t *testing.T) {
	traefik := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik"},
		Spec: corev1.ServiceSpec{ExternalIPs: []string{"10.0.0.40"}}}
	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "lb"},
		Spec:   corev1.ServiceSpec{ExternalIPs: []string{"10.0.0.41"}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.0.0.50"}, {Hostname: "lb.example"}}}}}
	tests := []struct {
		name  string
		chain []string
		objs  []runtime.Object
		want  map[string][]string
	}{
		{name: "annotated only", chain: []string{"ingress-status"}, objs: []runtime.Object{
			ing("a", on(), []string{"10.0.0.1"}, "a.lan"),
			ing("b", nil, []string{"10.0.0.2"}, "b.lan"),
			ing("c", map[string]string{AnnotationEnabled: "yes"}, []string{"10.0.0.3"}, "c.lan"),
		}, want: map[string][]string{"a.lan": {"10.0.0.1"}}},
		{name: "wildcard and invalid hosts skipped, others kept", chain: []string{"ingress-status"}, objs: []runtime.Object{
			ing("a", on(), []string{"10.0.0.1"}, "*.a.lan", "bad_host.lan", "ok.lan", "ok.lan", ""),
		}, want: map[string][]string{"ok.lan": {"10.0.0.1"}}},
		{name: "ip annotation wins over status", chain: []string{"ingress-status"}, objs: []runtime.Object{
			ing("a", on(AnnotationIPAddress, "10.0.0.9,fd00::9"), []string{"10.0.0.1"}, "a.lan"),
		}, want: map[string][]string{"a.lan": {"10.0.0.9", "fd00::9"}}},
		{name: "invalid ip annotation holds", chain: []string{"static:10.0.0.7"}, objs: []runtime.Object{
			ing("a", on(AnnotationIPAddress, "10.0.0.300"), nil, "a.lan"),
		}, want: map[string][]string{"a.lan": nil}},
		{name: "status ips, hostname-only skipped", chain: []string{"ingress-status"}, objs: []runtime.Object{
			ing("a", on(), []string{"10.0.0.1", "", "fd00::1"}, "a.lan"),
		}, want: map[string][]string{"a.lan": {"10.0.0.1", "fd00::1"}}},
		{name: "service externalIPs", chain: []string{"ingress-status", "service:traefik/traefik"}, objs: []runtime.Object{
			traefik, ing("a", on(), nil, "a.lan"),
		}, want: map[string][]string{"a.lan": {"10.0.0.40"}}},
		{name: "service load balancer beats externalIPs", chain: []string{"service:traefik/lb"}, objs: []runtime.Object{
			lb, ing("a", on(), nil, "a.lan"),
		}, want: map[string][]string{"a.lan": {"10.0.0.50"}}},
		{name: "first strategy that yields wins", chain: []string{"service:traefik/missing", "static:10.0.0.7", "service:traefik/traefik"}, objs: []runtime.Object{
			traefik, ing("a", on(), nil, "a.lan"),
		}, want: map[string][]string{"a.lan": {"10.0.0.7"}}},
		{name: "nothing resolves: held", chain: []string{"ingress-status", "service:traefik/missing"}, objs: []runtime.Object{
			ing("a", on(), nil, "a.lan"),
		}, want: map[string][]string{"a.lan": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eps, err := ingressSource(t, tc.chain, tc.objs...).Endpoints(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := hostTargets(eps); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIngressEndpointFields(t *testing.T) {
	s := ingressSource(t, []string{"ingress-status"}, ing("a", on(AnnotationIPAddress, "10.0.0.1", AnnotationTags, "x,y", AnnotationAliases, "Z.lan,a.lan,bad_alias", AnnotationGracePeriod, "45"), nil, "a.lan", "b.lan"))
	eps, err := s.Endpoints(context.Background())
	if err != nil || len(eps) != 2 {
		t.Fatalf("endpoints = %v, %v", eps, err)
	}
	a, b := eps[0], eps[1]
	if !reflect.DeepEqual(a.Aliases, []string{"z.lan"}) || !reflect.DeepEqual(b.Aliases, []string{"a.lan", "z.lan"}) {
		t.Errorf("aliases: a=%q b=%q (an alias equal to the hostname is dropped per host)", a.Aliases, b.Aliases)
	}
	if !reflect.DeepEqual(a.Tags, []string{"x", "y"}) || a.GracePeriod == nil || *a.GracePeriod != 45*time.Second {
		t.Errorf("tags=%q grace=%v", a.Tags, a.GracePeriod)
	}
	if ref := a.Sources[0]; ref.Kind != "Ingress" || ref.Namespace != "ns" || ref.Name != "a" || ref.UID != "uid-a" {
		t.Errorf("source ref = %+v", ref)
	}
}

// handledKind is a kind that reports each change of one of its objects on seen once the source
// has handled it, with the count fired gave right then: the next change is handled on the same
// goroutine, so it cannot have fired yet.
type handledKind struct {
	kind
	fired func() int64
	seen  chan handledChange
}

type handledChange struct {
	name  string
	fired int64
}

func (k handledKind) start(ctx context.Context, c Clients, cfg Config, changed func(old, cur metav1.Object)) error {
	return k.kind.start(ctx, c, cfg, func(old, cur metav1.Object) {
		changed(old, cur)
		k.seen <- handledChange{cur.GetName(), k.fired()}
	})
}

func TestIngressEvents(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := NewResolver(ctx, fakeClients(client), []Strategy{{Kind: StrategyIngressStatus}})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	var fired atomic.Int64
	k := handledKind{kind: &ingressKind{}, fired: fired.Load, seen: make(chan handledChange, 10)}
	s, err := newSource(ctx, "ingress", k, fakeClients(client), Config{Resolver: r, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	s.AddEventHandler(func() { fired.Add(1) })
	// handled waits for the source to handle a change of each of names, in whatever order the
	// informer delivers them (the fake clientset hands objects created before its watch began
	// over in any order), and checks at each that the handler has fired once for every change
	// of an opted-in Ingress so far, and for nothing else.
	optedIn := map[string]bool{"on": true}
	var want int64
	handled := func(names ...string) {
		t.Helper()
		pending := map[string]bool{}
		for _, n := range names {
			pending[n] = true
		}
		for len(pending) > 0 {
			select {
			case got := <-k.seen:
				if !pending[got.name] {
					t.Fatalf("a change of %s handled, want one of %v", got.name, pending)
				}
				delete(pending, got.name)
				if optedIn[got.name] {
					want++
				}
				if got.fired != want {
					t.Fatalf("handler fired %d times once the change of %s was handled, want %d", got.fired, got.name, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("changes of %v not handled in 10 s", pending)
			}
		}
	}
	api := client.NetworkingV1().Ingresses("ns")
	if _, err := api.Create(ctx, ing("plain", nil, nil, "p.lan"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Create(ctx, ing("on", on(), nil, "o.lan"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	handled("plain", "on") // the unannotated one does not fire
	if err := api.Delete(ctx, "on", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	handled("on")
}

// TestUnsyncedCacheIsAnErrorNotAnEmptyList: a cache that is not filled (an informer that lost
// its apiserver before its first list, or is relisting) must never read as "the cluster wants
// nothing", which the plan would turn into deletes.
func TestUnsyncedCacheIsAnErrorNotAnEmptyList(t *testing.T) {
	s := ingressSource(t, []string{"ingress-status"}, ing("web", on(AnnotationIPAddress, "10.0.0.1"), nil, "web.lan"))
	if eps, err := s.Endpoints(context.Background()); err != nil || len(eps) != 1 {
		t.Fatalf("synced: %v %v", eps, err)
	}
	s.kind.(*ingressKind).isSynced = func() bool { return false }
	if eps, err := s.Endpoints(context.Background()); err == nil || eps != nil {
		t.Fatalf("unsynced cache read as %v, %v; want an error and no endpoints", eps, err)
	}
}
