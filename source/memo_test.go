package source

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestUnchangedObjectsAreNotReadAgain: a sync reuses what an unchanged object gave the last
// one, and reads again an object whose resourceVersion changed, and every object when a
// Service of the resolution chain changed.
func TestUnchangedObjectsAreNotReadAgain(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svcs := client.CoreV1().Services("lb")
	if _, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "lb", Name: "traefik", ResourceVersion: "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := buildIngress(t, ctx, fakeClients(client), []string{"service:lb/traefik", "static:10.0.0.9"})
	api := client.NetworkingV1().Ingresses("ns")
	for _, i := range []*struct{ name, host string }{{"a", "a.lan"}, {"b", "b.lan"}} {
		o := ing(i.name, on(), nil, i.host)
		o.ResourceVersion = "1"
		if _, err := api.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// read waits until the source shows want (hostname → first target) and returns its
	// endpoints by hostname.
	read := func(want map[string]string) map[string]*endpoint.Endpoint {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			eps, err := s.Endpoints(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]*endpoint.Endpoint{}
			same := len(eps) == len(want)
			for _, e := range eps {
				got[e.Hostname] = e
				if len(e.Targets) == 0 || want[e.Hostname] != e.Targets[0] {
					same = false
				}
			}
			if same {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("endpoints %v, want %v", hostTargets(eps), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	first := read(map[string]string{"a.lan": "10.0.0.9", "b.lan": "10.0.0.9"})
	again := read(map[string]string{"a.lan": "10.0.0.9", "b.lan": "10.0.0.9"})
	for h := range first {
		if first[h] != again[h] {
			t.Errorf("%s: unchanged object read again", h)
		}
	}

	changed := ing("a", on(AnnotationIPAddress, "10.0.0.1"), nil, "a.lan")
	changed.ResourceVersion = "2"
	if _, err := api.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	after := read(map[string]string{"a.lan": "10.0.0.1", "b.lan": "10.0.0.9"})
	if after["b.lan"] != first["b.lan"] {
		t.Error("b.lan: unchanged object read again after another changed")
	}

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "lb", Name: "traefik", ResourceVersion: "2"}}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.5"}}
	if _, err := svcs.UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	read(map[string]string{"a.lan": "10.0.0.1", "b.lan": "10.0.0.5"})
}

// TestAChangeOfWhatAKindReadsBesideItsObjectsReadsThemAgain: a route's addresses come from its
// Gateways, so a Gateway's change re-reads routes whose own resourceVersion did not move.
func TestAChangeOfWhatAKindReadsBesideItsObjectsReadsThemAgain(t *testing.T) {
	r := newRouteRig(t)
	routes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	gvr := r.k.resources[0].gvr
	r.k.watch = &crdWatch{active: map[schema.GroupVersionResource]cache.GenericLister{gvr: cache.NewGenericLister(routes, gvr.GroupResource())}}
	listeners := []any{lis("web", "HTTP", 80, "", nil)}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.gateways.Add(gw("app", "gw", nil, listeners, "10.0.0.1")))
	must(r.ns.Add(obj("v1", "Namespace", "", "app", nil, nil)))
	route := httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{name: "gw", accepted: true})
	route.SetResourceVersion("1")
	must(routes.Add(route))
	targets := func() []string {
		t.Helper()
		eps, err := r.s.Endpoints(context.Background())
		must(err)
		return hostTargets(eps)["a.home.lan"]
	}
	if got := targets(); !reflect.DeepEqual(got, []string{"10.0.0.1"}) {
		t.Fatalf("before: %v", got)
	}
	must(r.gateways.Update(gw("app", "gw", nil, listeners, "10.0.0.2")))
	r.s.changed(nil, nil)
	if got := targets(); !reflect.DeepEqual(got, []string{"10.0.0.2"}) {
		t.Fatalf("after the Gateway's address changed: %v", got)
	}
}
