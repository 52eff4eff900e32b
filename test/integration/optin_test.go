package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// TestIngressClassMode: with --ingress-class, every Ingress of the class is managed without its
// annotation (spec.ingressClassName or the legacy annotation); other classes still need the
// annotation; "false" opts one out, also later, which marks its entry like any hostname that
// goes.
func TestIngressClassMode(t *testing.T) {
	h := newHarness(t, options{ingressClasses: []string{"lan"}, ipResolution: []string{"static:10.71.0.1"}})
	class := func(name string) *string { return &name }
	app := ingress(h.ns, "app", nil, "app.class.lan")
	app.Spec.IngressClassName = class("lan")
	app = h.create(app)
	h.create(ingress(h.ns, "legacy", map[string]string{"kubernetes.io/ingress.class": "lan"}, "legacy.class.lan"))
	public := ingress(h.ns, "public", nil, "public.class.lan")
	public.Spec.IngressClassName = class("public")
	h.create(public)
	out := ingress(h.ns, "out", map[string]string{source.AnnotationEnabled: "false"}, "out.class.lan")
	out.Spec.IngressClassName = class("lan")
	h.create(out)
	annotated := ingress(h.ns, "annotated", enabled(), "annotated.class.lan")
	annotated.Spec.IngressClassName = class("public")
	h.create(annotated)

	h.waitHost("app.class.lan", "10.71.0.1")
	h.waitHost("legacy.class.lan", "10.71.0.1")
	h.waitHost("annotated.class.lan", "10.71.0.1")
	h.sync()
	for host, n := range map[string]int{"app.class.lan": 1, "legacy.class.lan": 1, "annotated.class.lan": 1, "public.class.lan": 0, "out.class.lan": 0} {
		if got := len(h.entries(host)); got != n {
			t.Errorf("%s: %d entries, want %d", host, got, n)
		}
	}

	// Opting out later: the hostname goes, through its grace period.
	app.Annotations = map[string]string{source.AnnotationEnabled: "false"}
	if _, err := h.cp.Client.NetworkingV1().Ingresses(h.ns).Update(context.Background(), app, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitGone("app.class.lan")
	h.sync()
	if _, marked := h.one("app.class.lan").TagValue("pending-deletion:"); !marked {
		t.Fatal("the opted-out Ingress's entry is not marked for deletion")
	}
}

// TestGatewayNameMode: with --gateway-name, every route attached to that Gateway is managed
// without annotations; a route annotated "false" opts out; a route of another Gateway still
// needs an annotation.
func TestGatewayNameMode(t *testing.T) {
	installGatewayAPI(t, cp)
	h := newHarness(t, options{sources: []string{"gateway"}, gatewayNames: []string{"{ns}/lan-gw"}, grace: time.Minute})
	listeners := map[string]any{"gatewayClassName": "example", "listeners": []any{
		map[string]any{"name": "web", "protocol": "HTTP", "port": int64(80), "hostname": "*.gwn.lan"}}}
	h.gwObj(gwGVR, "Gateway", "lan-gw", nil, listeners, addresses("10.72.0.1"))
	h.gwObj(gwGVR, "Gateway", "other-gw", nil, listeners, addresses("10.72.0.2"))
	named := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "lan-gw"}
	other := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "other-gw"}
	h.gwObj(httpGVR, "HTTPRoute", "app", nil, map[string]any{"hostnames": strs("app.gwn.lan"), "parentRefs": []any{named}}, parents(true, named))
	h.gwObj(httpGVR, "HTTPRoute", "out", map[string]string{source.AnnotationEnabled: "false"},
		map[string]any{"hostnames": strs("out.gwn.lan"), "parentRefs": []any{named}}, parents(true, named))
	h.gwObj(httpGVR, "HTTPRoute", "elsewhere", nil, map[string]any{"hostnames": strs("elsewhere.gwn.lan"), "parentRefs": []any{other}}, parents(true, other))
	h.gwObj(httpGVR, "HTTPRoute", "annotated", enabled(), map[string]any{"hostnames": strs("annotated.gwn.lan"), "parentRefs": []any{other}}, parents(true, other))

	h.waitHost("app.gwn.lan", "10.72.0.1")
	h.waitHost("annotated.gwn.lan", "10.72.0.2")
	h.sync()
	for host, n := range map[string]int{"app.gwn.lan": 1, "annotated.gwn.lan": 1, "out.gwn.lan": 0, "elsewhere.gwn.lan": 0} {
		if got := len(h.entries(host)); got != n {
			t.Errorf("%s: %d entries, want %d", host, got, n)
		}
	}
}
