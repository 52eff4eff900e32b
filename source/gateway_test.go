package source

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// TestIntersectHostnames: the Gateway API's rule for the names a route gets on a listener, in
// shapes from the Gateway API documentation and from homelab manifests.
func TestIntersectHostnames(t *testing.T) {
	for _, tc := range []struct {
		route    []string
		listener string
		want     []string
	}{
		{nil, "", nil},
		{nil, "foo.example.com", []string{"foo.example.com"}},
		{nil, "*.example.com", []string{"*.example.com"}},
		{[]string{"a.example.com"}, "", []string{"a.example.com"}},
		{[]string{"*.example.com"}, "", []string{"*.example.com"}},
		{[]string{"a.example.com"}, "a.example.com", []string{"a.example.com"}},
		{[]string{"a.example.com"}, "b.example.com", nil},
		{[]string{"a.example.com"}, "*.example.com", []string{"a.example.com"}},
		{[]string{"a.b.example.com"}, "*.example.com", []string{"a.b.example.com"}},
		{[]string{"example.com"}, "*.example.com", nil},
		{[]string{"badexample.com"}, "*.example.com", nil},
		{[]string{"a.example.org"}, "*.example.com", nil},
		{[]string{"*.example.com"}, "foo.example.com", []string{"foo.example.com"}},
		{[]string{"*.example.com"}, "example.com", nil},
		{[]string{"*.example.com"}, "*.example.com", []string{"*.example.com"}},
		{[]string{"*.a.example.com"}, "*.example.com", []string{"*.a.example.com"}},
		{[]string{"*.example.com"}, "*.a.example.com", []string{"*.a.example.com"}},
		{[]string{"*.example.com", "foo.other.com"}, "bar.example.com", []string{"bar.example.com"}},
		{[]string{"a.example.com", "b.example.com"}, "*.example.com", []string{"a.example.com", "b.example.com"}},
		{[]string{"Foo.Example.COM"}, "foo.example.com", []string{"foo.example.com"}},
		{[]string{"foo.example.com"}, "*.com", []string{"foo.example.com"}},
		{[]string{"grafana.home.lan"}, "*.home.lan", []string{"grafana.home.lan"}},
		{[]string{"grafana.home.lan", "grafana.example.com"}, "*.home.lan", []string{"grafana.home.lan"}},
	} {
		if got := intersectHostnames(tc.route, tc.listener); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("route %q × listener %q = %q, want %q", tc.route, tc.listener, got, tc.want)
		}
	}
}

// routeRig is an HTTPRoute kind over caches the test fills, with a resolver of static:10.9.9.9.
type routeRig struct {
	k        *routeKind
	gateways cache.Indexer
	ns       cache.Indexer
	s        *Source
}

func newRouteRig(t *testing.T) *routeRig {
	t.Helper()
	indexer := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	r := &routeRig{k: newRouteKind("httproutes", "HTTPRoute", "HTTP", "HTTPS").(*routeKind), gateways: indexer(), ns: indexer()}
	r.k.gateways = &crdWatch{active: map[schema.GroupVersionResource]cache.GenericLister{
		gatewayResource.gvr: cache.NewGenericLister(r.gateways, gatewayResource.gvr.GroupResource())}}
	r.k.namespaces = &crdWatch{active: map[schema.GroupVersionResource]cache.GenericLister{
		namespaceResource: cache.NewGenericLister(r.ns, namespaceResource.GroupResource())}}
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	r.s = &Source{name: "gateway-httproute", kind: r.k, cfg: Config{Resolver: &Resolver{chain: []Strategy{{Kind: StrategyStatic, IP: "10.9.9.9"}}}, Log: log},
		reports: newReporter(log, nil)}
	return r
}

func obj(apiVersion, kind, namespace, name string, ann map[string]string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetUID(ktypes.UID("uid-" + namespace + "-" + name))
	u.SetAnnotations(ann)
	return u
}

// gw is a Gateway with listeners and status addresses ("10.0.0.1", or "Hostname=lb.example").
func gw(namespace, name string, ann map[string]string, listeners []any, addresses ...string) *unstructured.Unstructured {
	var addrs []any
	for _, a := range addresses {
		if typ, v, ok := strings.Cut(a, "="); ok {
			addrs = append(addrs, map[string]any{"type": typ, "value": v})
		} else {
			addrs = append(addrs, map[string]any{"type": "IPAddress", "value": a})
		}
	}
	fields := map[string]any{"spec": map[string]any{"listeners": listeners}}
	if addresses != nil {
		fields["status"] = map[string]any{"addresses": addrs}
	}
	return obj("gateway.networking.k8s.io/v1", "Gateway", namespace, name, ann, fields)
}

func lis(name, protocol string, port int64, hostname string, allowed map[string]any) map[string]any {
	m := map[string]any{"name": name, "protocol": protocol, "port": port}
	if hostname != "" {
		m["hostname"] = hostname
	}
	if allowed != nil {
		m["allowedRoutes"] = allowed
	}
	return m
}

// pref is a parentRef; accepted ones go into the route's status with Accepted=True.
type pref struct {
	namespace, name, section string
	port                     int64
	accepted                 bool
}

func httpRoute(namespace, name string, ann map[string]string, hostnames []string, parents ...pref) *unstructured.Unstructured {
	var refs, status []any
	for _, p := range parents {
		ref := map[string]any{"name": p.name}
		if p.namespace != "" {
			ref["namespace"] = p.namespace
		}
		if p.section != "" {
			ref["sectionName"] = p.section
		}
		if p.port != 0 {
			ref["port"] = p.port
		}
		refs = append(refs, ref)
		cond := "False"
		if p.accepted {
			cond = "True"
		}
		status = append(status, map[string]any{"parentRef": ref, "controllerName": "example.com/gw",
			"conditions": []any{map[string]any{"type": "Accepted", "status": cond}}})
	}
	var hosts []any
	for _, h := range hostnames {
		hosts = append(hosts, h)
	}
	return obj("gateway.networking.k8s.io/v1", "HTTPRoute", namespace, name, ann, map[string]any{
		"spec": map[string]any{"hostnames": hosts, "parentRefs": refs}, "status": map[string]any{"parents": status}})
}

func TestRouteClaims(t *testing.T) {
	web := []any{lis("web", "HTTP", 80, "*.home.lan", nil), lis("tls", "HTTPS", 443, "secure.home.lan", nil)}
	all := map[string]any{"namespaces": map[string]any{"from": "All"}}
	selector := map[string]any{"namespaces": map[string]any{"from": "Selector", "selector": map[string]any{"matchLabels": map[string]any{"routes": "yes"}}}}
	grpcOnly := map[string]any{"kinds": []any{map[string]any{"kind": "GRPCRoute"}}}
	for _, tc := range []struct {
		name     string
		gateways []*unstructured.Unstructured
		route    *unstructured.Unstructured
		optedIn  bool
		want     map[string][]string // nil targets: held
		problem  string
	}{
		{name: "route opt-in, accepted, wildcard listener",
			gateways: []*unstructured.Unstructured{gw("infra", "gw", nil, []any{lis("web", "HTTP", 80, "*.home.lan", all)}, "10.0.0.1", "fd00::1")},
			route:    httpRoute("app", "r", on(), []string{"grafana.home.lan"}, pref{namespace: "infra", name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{"grafana.home.lan": {"10.0.0.1", "fd00::1"}}},
		{name: "Gateway opt-in covers an unannotated route",
			gateways: []*unstructured.Unstructured{gw("app", "gw", on(), web, "10.0.0.1")},
			route:    httpRoute("app", "r", nil, []string{"a.home.lan"}, pref{name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{"a.home.lan": {"10.0.0.1"}}},
		{name: "neither annotated", gateways: []*unstructured.Unstructured{gw("app", "gw", nil, web, "10.0.0.1")},
			route: httpRoute("app", "r", nil, []string{"a.home.lan"}, pref{name: "gw", accepted: true})},
		{name: "not accepted: nothing", gateways: []*unstructured.Unstructured{gw("app", "gw", nil, web, "10.0.0.1")},
			route:   httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{name: "gw", accepted: false}),
			optedIn: true, want: map[string][]string{}, problem: "no parent Gateway has accepted"},
		{name: "route without hostnames takes the listeners' concrete names",
			gateways: []*unstructured.Unstructured{gw("app", "gw", nil, web, "10.0.0.1")},
			route:    httpRoute("app", "r", on(), nil, pref{name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{"secure.home.lan": {"10.0.0.1"}}, problem: "wildcard"},
		{name: "sectionName picks one listener",
			gateways: []*unstructured.Unstructured{gw("app", "gw", nil, web, "10.0.0.1")},
			route:    httpRoute("app", "r", on(), []string{"a.home.lan", "secure.home.lan"}, pref{name: "gw", section: "tls", accepted: true}),
			optedIn:  true, want: map[string][]string{"secure.home.lan": {"10.0.0.1"}}},
		{name: "port picks listeners",
			gateways: []*unstructured.Unstructured{gw("app", "gw", nil, web, "10.0.0.1")},
			route:    httpRoute("app", "r", on(), []string{"a.home.lan", "secure.home.lan"}, pref{name: "gw", port: 443, accepted: true}),
			optedIn:  true, want: map[string][]string{"secure.home.lan": {"10.0.0.1"}}},
		{name: "allowedRoutes Same refuses another namespace",
			gateways: []*unstructured.Unstructured{gw("infra", "gw", nil, web, "10.0.0.1")},
			route:    httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{namespace: "infra", name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{}, problem: "no parent Gateway"},
		{name: "allowedRoutes Selector by namespace label",
			gateways: []*unstructured.Unstructured{gw("infra", "gw", nil, []any{lis("web", "HTTP", 80, "", selector)}, "10.0.0.1")},
			route:    httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{namespace: "infra", name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{"a.home.lan": {"10.0.0.1"}}},
		{name: "allowedRoutes Selector refuses an unlabelled namespace",
			gateways: []*unstructured.Unstructured{gw("infra", "gw", nil, []any{lis("web", "HTTP", 80, "", selector)}, "10.0.0.1")},
			route:    httpRoute("other", "r", on(), []string{"a.home.lan"}, pref{namespace: "infra", name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{}},
		{name: "allowedRoutes kinds without HTTPRoute",
			gateways: []*unstructured.Unstructured{gw("app", "gw", nil, []any{lis("grpc", "HTTPS", 443, "", grpcOnly)}, "10.0.0.1")},
			route:    httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{}},
		{name: "a TLS listener takes no HTTPRoute",
			gateways: []*unstructured.Unstructured{gw("app", "gw", nil, []any{lis("tls", "TLS", 443, "", nil)}, "10.0.0.1")},
			route:    httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{}},
		{name: "two parents: IPv4 from one, IPv6 from the other, merged",
			gateways: []*unstructured.Unstructured{gw("app", "v4", nil, web, "10.0.0.4"), gw("app", "v6", nil, web, "fd00::6")},
			route:    httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{name: "v4", accepted: true}, pref{name: "v6", accepted: true}),
			optedIn:  true, want: map[string][]string{"a.home.lan": {"10.0.0.4", "fd00::6"}}},
		{name: "a Gateway with no address yet: held, never the chain's static",
			gateways: []*unstructured.Unstructured{gw("app", "gw", nil, web)},
			route:    httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{"a.home.lan": nil}, problem: "no address yet"},
		{name: "a Gateway with only a hostname address falls to the chain",
			gateways: []*unstructured.Unstructured{gw("app", "gw", nil, web, "Hostname=lb.example.com")},
			route:    httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{"a.home.lan": {"10.9.9.9"}}},
		{name: "the ip-address annotation wins",
			gateways: []*unstructured.Unstructured{gw("app", "gw", nil, web, "10.0.0.1")},
			route:    httpRoute("app", "r", on(AnnotationIPAddress, "10.5.5.5"), []string{"a.home.lan"}, pref{name: "gw", accepted: true}),
			optedIn:  true, want: map[string][]string{"a.home.lan": {"10.5.5.5"}}},
		{name: "opted in through one Gateway: only that Gateway's names and addresses",
			gateways: []*unstructured.Unstructured{
				gw("app", "internal", on(), []any{lis("web", "HTTP", 80, "*.home.lan", nil)}, "10.0.0.1"),
				gw("app", "public", nil, []any{lis("web", "HTTP", 80, "*.example.com", nil)}, "203.0.113.5")},
			route: httpRoute("app", "r", nil, []string{"app.home.lan", "app.example.com"},
				pref{name: "internal", accepted: true}, pref{name: "public", accepted: true}),
			optedIn: true, want: map[string][]string{"app.home.lan": {"10.0.0.1"}}},
		{name: "each name gets the addresses of the Gateways that gave it",
			gateways: []*unstructured.Unstructured{
				gw("app", "internal", nil, []any{lis("web", "HTTP", 80, "*.home.lan", nil)}, "10.0.0.1"),
				gw("app", "public", nil, []any{lis("web", "HTTP", 80, "*.example.com", nil)}, "203.0.113.5")},
			route: httpRoute("app", "r", on(), []string{"app.home.lan", "app.example.com"},
				pref{name: "internal", accepted: true}, pref{name: "public", accepted: true}),
			optedIn: true, want: map[string][]string{"app.home.lan": {"10.0.0.1"}, "app.example.com": {"203.0.113.5"}}},
		{name: "a refusal by one controller outweighs another's leftover acceptance",
			gateways: []*unstructured.Unstructured{gw("app", "gw", nil, web, "10.0.0.1")},
			route:    withRefusal(httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{name: "gw", accepted: true}), "gw"),
			optedIn:  true, want: map[string][]string{}},
		{name: "an acceptance about an older generation does not count",
			gateways: []*unstructured.Unstructured{gw("app", "gw", nil, web, "10.0.0.1")},
			route:    atGeneration(httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{name: "gw", accepted: true}), 2, 1),
			optedIn:  true, want: map[string][]string{}},
		{name: "a parent that is not there",
			route:   httpRoute("app", "r", on(), []string{"a.home.lan"}, pref{name: "gone", accepted: true}),
			optedIn: true, want: map[string][]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRouteRig(t)
			for _, g := range tc.gateways {
				if err := r.gateways.Add(g); err != nil {
					t.Fatal(err)
				}
			}
			ns := obj("v1", "Namespace", "", "app", nil, nil)
			ns.SetLabels(map[string]string{"routes": "yes"})
			if err := r.ns.Add(ns); err != nil {
				t.Fatal(err)
			}
			if got := r.k.optedIn(tc.route); got != tc.optedIn {
				t.Fatalf("optedIn = %v, want %v", got, tc.optedIn)
			}
			if !tc.optedIn {
				return
			}
			eps, ref, problems := endpointsOf(r.s, tc.route)
			if got := hostTargets(eps); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("endpoints = %v, want %v (problems %v)", got, tc.want, problems)
			}
			if ref.Kind != "HTTPRoute" || ref.Group != gatewayGroup || ref.Name != "r" {
				t.Fatalf("ref = %+v", ref)
			}
			found := tc.problem == ""
			for _, p := range problems {
				found = found || strings.Contains(p.Message, tc.problem)
			}
			if !found {
				t.Fatalf("problems = %v, want one about %q", problems, tc.problem)
			}
		})
	}
}

// withRefusal adds a second controller's entry refusing the route for the Gateway name.
func withRefusal(route *unstructured.Unstructured, name string) *unstructured.Unstructured {
	parents, _, _ := unstructured.NestedSlice(route.Object, "status", "parents")
	parents = append(parents, map[string]any{"parentRef": map[string]any{"name": name}, "controllerName": "example.com/other",
		"conditions": []any{map[string]any{"type": "Accepted", "status": "False"}}})
	_ = unstructured.SetNestedSlice(route.Object, parents, "status", "parents")
	return route
}

// atGeneration sets the route's generation and the generation its acceptance is about.
func atGeneration(route *unstructured.Unstructured, generation, observed int64) *unstructured.Unstructured {
	route.SetGeneration(generation)
	parents, _, _ := unstructured.NestedSlice(route.Object, "status", "parents")
	for _, p := range parents {
		for _, c := range p.(map[string]any)["conditions"].([]any) {
			c.(map[string]any)["observedGeneration"] = observed
		}
	}
	_ = unstructured.SetNestedSlice(route.Object, parents, "status", "parents")
	return route
}

func TestExpandGateway(t *testing.T) {
	got := Expand([]string{"ingress", "gateway", "gateway-httproute", "service"})
	want := []string{"ingress", "gateway-httproute", "gateway-grpcroute", "gateway-tlsroute", "service"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Expand = %q, want %q", got, want)
	}
}
