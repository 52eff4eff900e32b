package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
)

var (
	gwGVR   = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	httpGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	grpcGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "grpcroutes"}
	tlsGVR  = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "tlsroutes"}
)

// installGatewayAPI installs the Gateway API's standard CRDs from sigs.k8s.io/gateway-api.
func installGatewayAPI(t *testing.T, into *kubetest.ControlPlane) {
	t.Helper()
	if err := into.InstallGatewayAPI(); err != nil {
		t.Fatal(err)
	}
}

// gwObj creates a Gateway API object and, when status is given, writes it as its controller
// would.
func (h *harness) gwObj(gvr schema.GroupVersionResource, kind, name string, annotations map[string]string, spec, status map[string]any) *unstructured.Unstructured {
	h.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": h.ns}, "spec": spec}}
	u.SetAnnotations(annotations)
	res := dynamic.NewForConfigOrDie(h.cp.Config).Resource(gvr).Namespace(h.ns)
	got, err := res.Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("creating %s %s: %v", kind, name, err)
	}
	if status != nil {
		h.setGWStatus(gvr, got, status)
	}
	return got
}

func (h *harness) setGWStatus(gvr schema.GroupVersionResource, u *unstructured.Unstructured, status map[string]any) {
	h.t.Helper()
	res := dynamic.NewForConfigOrDie(h.cp.Config).Resource(gvr).Namespace(h.ns)
	cur, err := res.Get(context.Background(), u.GetName(), metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	cur.Object["status"] = status
	if _, err := res.UpdateStatus(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		h.t.Fatalf("status of %s: %v", u.GetName(), err)
	}
}

func addresses(ips ...string) map[string]any {
	var out []any
	for _, ip := range ips {
		out = append(out, map[string]any{"type": "IPAddress", "value": ip})
	}
	return map[string]any{"addresses": out}
}

// parents is a route status in which the Gateway controller accepted (or not) each parentRef.
func parents(accepted bool, refs ...map[string]any) map[string]any {
	cond := "True"
	if !accepted {
		cond = "False"
	}
	var out []any
	for _, r := range refs {
		out = append(out, map[string]any{"parentRef": r, "controllerName": "example.com/gateway",
			"conditions": []any{map[string]any{"type": "Accepted", "status": cond, "reason": "Accepted", "message": "",
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}})
	}
	return map[string]any{"parents": out}
}

func strs(v ...string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

// TestGatewayRoutes runs the three route kinds against the real Gateway API CRDs, in the order
// a homelab meets them: a Gateway with IPv4 and IPv6 addresses and listeners for HTTP, gRPC and
// TLS passthrough; routes opted in by annotation or through their Gateway; one not accepted;
// a second Gateway with no address yet (held), which then gets one; a hostname change; and
// three quiet syncs that write nothing.
func TestGatewayRoutes(t *testing.T) {
	installGatewayAPI(t, cp)
	h := newHarness(t, options{sources: []string{"gateway"}, ipResolution: []string{"static:10.99.0.1"}, grace: time.Minute})
	tls := func(mode string) map[string]any {
		m := map[string]any{"mode": mode}
		if mode == "Terminate" {
			m["certificateRefs"] = []any{map[string]any{"name": "cert"}}
		}
		return m
	}
	h.gwObj(gwGVR, "Gateway", "gw", nil, map[string]any{"gatewayClassName": "example", "listeners": []any{
		map[string]any{"name": "web", "protocol": "HTTP", "port": int64(80), "hostname": "*.gw.lan"},
		map[string]any{"name": "grpc", "protocol": "HTTPS", "port": int64(443), "hostname": "grpc.gw.lan", "tls": tls("Terminate")},
		map[string]any{"name": "tls", "protocol": "TLS", "port": int64(8443), "hostname": "*.tls.gw.lan", "tls": tls("Passthrough")},
		map[string]any{"name": "admin", "protocol": "HTTP", "port": int64(8080), "hostname": "admin.gw.lan"},
	}}, addresses("10.44.0.1", "fd00::44"))
	h.gwObj(gwGVR, "Gateway", "later", enabled(), map[string]any{"gatewayClassName": "example", "listeners": []any{
		map[string]any{"name": "web", "protocol": "HTTP", "port": int64(80)}}}, nil)

	gw := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}
	section := func(s string) map[string]any {
		return map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "sectionName": s}
	}
	later := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "later"}
	web := h.gwObj(httpGVR, "HTTPRoute", "web", enabled(), map[string]any{"hostnames": strs("a.gw.lan", "b.other.lan"), "parentRefs": []any{gw}}, parents(true, gw))
	h.gwObj(httpGVR, "HTTPRoute", "refused", enabled(), map[string]any{"hostnames": strs("refused.gw.lan"), "parentRefs": []any{gw}}, parents(false, gw))
	h.gwObj(httpGVR, "HTTPRoute", "via-gateway", nil, map[string]any{"hostnames": strs("held.lan"), "parentRefs": []any{later}}, parents(true, later))
	h.gwObj(grpcGVR, "GRPCRoute", "api", enabled(), map[string]any{"hostnames": strs("grpc.gw.lan"), "parentRefs": []any{section("grpc")}}, parents(true, section("grpc")))
	// A wildcard on the route's side meets a concrete listener name: the listener's wins.
	h.gwObj(httpGVR, "HTTPRoute", "wild", enabled(), map[string]any{"hostnames": strs("*.gw.lan"), "parentRefs": []any{section("admin")}}, parents(true, section("admin")))
	// Two parents: their addresses are merged.
	h.gwObj(httpGVR, "HTTPRoute", "both", enabled(), map[string]any{"hostnames": strs("both.gw.lan"), "parentRefs": []any{section("web"), later}},
		parents(true, section("web"), later))
	// A route from another namespace: the listener admits only its own (allowedRoutes Same).
	other := createNamespace(t, h.cp)
	foreign := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "namespace": h.ns}
	outsider := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "outsider", "namespace": other, "annotations": map[string]any{"router-hosts.fzymgc.house/enabled": "true"}},
		"spec":     map[string]any{"hostnames": strs("outsider.gw.lan"), "parentRefs": []any{foreign}}}}
	routes := dynamic.NewForConfigOrDie(h.cp.Config).Resource(httpGVR)
	got, err := routes.Namespace(other).Create(context.Background(), outsider, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Object["status"] = parents(true, foreign)
	if _, err := routes.Namespace(other).UpdateStatus(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.gwObj(tlsGVR, "TLSRoute", "db", enabled(), map[string]any{"hostnames": strs("db.tls.gw.lan"), "parentRefs": []any{section("tls")},
		"rules": []any{map[string]any{"backendRefs": []any{map[string]any{"name": "db", "port": int64(5432)}}}}}, parents(true, section("tls")))

	h.waitHost("db.tls.gw.lan", "10.44.0.1", "fd00::44")
	h.waitHost("grpc.gw.lan", "10.44.0.1", "fd00::44")
	h.waitHost("held.lan")
	h.waitHost("admin.gw.lan", "10.44.0.1", "fd00::44")
	h.waitHost("both.gw.lan", "10.44.0.1", "fd00::44")
	h.sync()
	for host, n := range map[string]int{"a.gw.lan": 2, "grpc.gw.lan": 2, "db.tls.gw.lan": 2, "admin.gw.lan": 2, "both.gw.lan": 2,
		"b.other.lan": 0, "refused.gw.lan": 0, "held.lan": 0, "outsider.gw.lan": 0} {
		if got := len(h.entries(host)); got != n {
			t.Errorf("%s: %d entries, want %d", host, got, n)
		}
	}
	for _, e := range h.entries("grpc.gw.lan") {
		if !e.HasTag("kind:GRPCRoute") {
			t.Errorf("grpc.gw.lan tags %v, want kind:GRPCRoute", e.Tags)
		}
	}

	// The second Gateway gets its address: the route it opted in follows.
	h.setGWStatus(gwGVR, &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "later"}}}, addresses("10.44.0.2"))
	h.waitHost("held.lan", "10.44.0.2")
	h.waitHost("both.gw.lan", "10.44.0.1", "10.44.0.2", "fd00::44")
	h.sync()
	if e := h.entries("held.lan"); len(e) != 1 || e[0].IP != "10.44.0.2" {
		t.Fatalf("held.lan = %v after its Gateway got an address", e)
	}
	if n := len(h.entries("both.gw.lan")); n != 3 {
		t.Fatalf("both.gw.lan has %d entries; want the addresses of both parents, IPv4 and IPv6", n)
	}

	h.srv.Service().ResetCalls()
	for i := 0; i < 3; i++ {
		h.sync()
	}
	if w := h.writes(); w != 0 {
		t.Fatalf("%d writes in three quiet syncs", w)
	}

	// The route's hostnames change: the old name waits out its grace period.
	res := dynamic.NewForConfigOrDie(h.cp.Config).Resource(httpGVR).Namespace(h.ns)
	cur, err := res.Get(context.Background(), web.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedSlice(cur.Object, strs("c.gw.lan"), "spec", "hostnames")
	if _, err := res.Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitHost("c.gw.lan", "10.44.0.1", "fd00::44")
	h.sync()
	if len(h.entries("c.gw.lan")) != 2 {
		t.Fatal("c.gw.lan not written")
	}
	for _, e := range h.entries("a.gw.lan") {
		if _, marked := e.TagValue("pending-deletion:"); !marked {
			t.Fatalf("a.gw.lan %v not marked for deletion", e)
		}
	}
}

// TestGatewayCRDsInstalledAfterStart: the operator starts on a cluster without the Gateway
// API, syncs the rest, and picks the routes up once the CRDs are installed, with no restart.
func TestGatewayCRDsInstalledAfterStart(t *testing.T) {
	h := newHarness(t, options{sources: []string{"ingress", "gateway"}, ownControlPlane: true})
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.45.0.1"), "web.lan"))
	h.waitHost("web.lan", "10.45.0.1")
	h.sync()
	if len(h.entries("web.lan")) != 1 {
		t.Fatal("the Ingress was not synced on a cluster without the Gateway API")
	}
	installGatewayAPI(t, h.cp)
	h.gwObj(gwGVR, "Gateway", "gw", nil, map[string]any{"gatewayClassName": "example", "listeners": []any{
		map[string]any{"name": "web", "protocol": "HTTP", "port": int64(80)}}}, addresses("10.45.0.2"))
	gw := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}
	h.gwObj(httpGVR, "HTTPRoute", "late", enabled(), map[string]any{"hostnames": strs("late.lan"), "parentRefs": []any{gw}}, parents(true, gw))
	h.waitHost("late.lan", "10.45.0.2") // discovery looks again every 200 ms here
	h.sync()
	if len(h.entries("late.lan")) != 1 {
		t.Fatal("an HTTPRoute created after the CRDs were installed was not synced")
	}
}
