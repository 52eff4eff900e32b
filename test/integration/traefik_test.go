package integration

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

var (
	irNew     = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
	irtcpNew  = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutetcps"}
	irLegacy  = schema.GroupVersionResource{Group: "traefik.containo.us", Version: "v1alpha1", Resource: "ingressroutes"}
	irtcpLegy = schema.GroupVersionResource{Group: "traefik.containo.us", Version: "v1alpha1", Resource: "ingressroutetcps"}
)

func kindOf(gvr schema.GroupVersionResource) string {
	if gvr.Resource == "ingressroutetcps" {
		return "IngressRouteTCP"
	}
	return "IngressRoute"
}

// route creates an opted-in Traefik route with the given match rules.
func (h *harness) route(gvr schema.GroupVersionResource, name string, ann map[string]string, matches ...string) *unstructured.Unstructured {
	h.t.Helper()
	var routes []any
	for _, m := range matches {
		routes = append(routes, map[string]any{"match": m, "kind": "Rule"})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kindOf(gvr),
		"metadata": map[string]any{"name": name, "namespace": h.ns},
		"spec":     map[string]any{"routes": routes},
	}}
	u.SetAnnotations(ann)
	got, err := dynamic.NewForConfigOrDie(h.cp.Config).Resource(gvr).Namespace(h.ns).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create %s %s: %v", gvr.Resource, name, err)
	}
	return got
}

// hostMapping creates a HostMapping with the given spec.
func (h *harness) hostMapping(name string, spec map[string]any) *unstructured.Unstructured {
	h.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
		"metadata": map[string]any{"name": name, "namespace": h.ns}, "spec": spec,
	}}
	got, err := h.hmClient().Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create HostMapping %s: %v", name, err)
	}
	return got
}

func (h *harness) hmClient() dynamic.ResourceInterface {
	return dynamic.NewForConfigOrDie(h.cp.Config).Resource(source.HostMappingGVR).Namespace(h.ns)
}

func (h *harness) getHM(name string) *unstructured.Unstructured {
	h.t.Helper()
	u, err := h.hmClient().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return u
}

func ipsOf(recs []endpoint.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.IP)
	}
	sort.Strings(out)
	return out
}

func TestTraefik(t *testing.T) {
	t.Run("starts without Traefik CRDs and picks them up later", func(t *testing.T) {
		// A cluster of its own: the shared one has Traefik's CRDs from the start.
		h := newHarness(t, options{sources: []string{"ingress", "traefik", "hostmapping"}, ownControlPlane: true})
		h.create(ingress(h.ns, "web", enabled("ip-address", "10.20.0.1"), "web.lan"))
		h.hostMapping("nas", map[string]any{"hostname": "nas.lan", "ipAddress": "10.20.0.2"})
		h.waitHost("web.lan", "10.20.0.1")
		h.waitHost("nas.lan", "10.20.0.2")
		h.sync()
		if len(h.entries("web.lan")) != 1 || len(h.entries("nas.lan")) != 1 {
			t.Fatal("Ingress and HostMapping not synced on a cluster without Traefik CRDs")
		}
		_, file, _, _ := runtimeCaller()
		if err := h.cp.InstallCRDs(filepath.Join(filepath.Dir(file), "testdata", "traefik")); err != nil {
			t.Fatal(err)
		}
		h.route(irNew, "late", enabled("ip-address", "10.20.0.3"), "Host(`late.lan`)")
		h.waitHost("late.lan", "10.20.0.3") // discovery re-checks every 200 ms here
		h.sync()
		if len(h.entries("late.lan")) != 1 {
			t.Fatal("IngressRoute created after the CRDs were installed was not synced")
		}
	})

	t.Run("hostnames from match rules, both groups, both kinds", func(t *testing.T) {
		h := newHarness(t, options{sources: []string{"traefik"}, ipResolution: []string{"static:10.21.0.9"}})
		h.route(irNew, "or", enabled(), "Host(`a.lan`) || Host(`b.lan`)")
		h.route(irNew, "multi", enabled(), "Host(`c.lan`, `d.lan`) && PathPrefix(`/`)", "HostRegexp(`{x:[a-z]+}.lan`)")
		h.route(irtcpNew, "db", enabled(), "HostSNI(`db.lan`)", "HostSNI(`*`)")
		h.route(irLegacy, "old", enabled(), "Host(`legacy.lan`)")
		h.route(irtcpLegy, "oldtcp", enabled(), "HostSNI(`legacy-tcp.lan`)")
		h.route(irNew, "off", nil, "Host(`off.lan`)")
		// Same namespace and name, different kinds: independent objects.
		h.route(irNew, "same", enabled(), "Host(`same-http.lan`)")
		h.route(irtcpNew, "same", enabled(), "HostSNI(`same-tcp.lan`)")
		h.waitSource(func(eps []*endpoint.Endpoint) bool { return len(eps) == 9 })
		h.sync()
		for _, host := range []string{"a.lan", "b.lan", "c.lan", "d.lan", "db.lan", "legacy.lan", "legacy-tcp.lan", "same-http.lan", "same-tcp.lan"} {
			e := h.entries(host)
			if len(e) != 1 || e[0].IP != "10.21.0.9" {
				t.Errorf("%s: entries %v, want one at the static address", host, e)
			}
		}
		if len(h.entries("off.lan")) != 0 {
			t.Error("a route without the opt-in annotation was synced")
		}
		if e := h.entries("legacy-tcp.lan"); len(e) == 1 && !e[0].HasTag("kind:IngressRouteTCP") {
			t.Errorf("legacy-tcp.lan tags = %v, want kind:IngressRouteTCP", e[0].Tags)
		}
	})
}

func TestHostMappingLifecycleAndStatus(t *testing.T) {
	h := newHarness(t, options{sources: []string{"hostmapping"}, grace: time.Minute})
	hm := h.hostMapping("printer", map[string]any{"hostname": "Printer.lan", "ipAddress": "10.22.0.1",
		"aliases": []any{"print.lan", "lp.lan"}, "tags": []any{"office"}})
	h.waitHost("printer.lan", "10.22.0.1")
	h.sync()
	e := h.one("printer.lan")
	if !reflect.DeepEqual(e.Aliases, []string{"lp.lan", "print.lan"}) || !e.HasTag("office") || !e.HasTag("kind:HostMapping") {
		t.Fatalf("entry = %+v", e)
	}
	h.statusWritten()
	st := h.getHM("printer")
	checkStatus(t, st, true, e.ID, "Success")

	// Two no-op syncs write no status.
	rv := st.GetResourceVersion()
	h.sync()
	h.sync()
	h.statusWritten()
	if got := h.getHM("printer").GetResourceVersion(); got != rv {
		t.Fatalf("no-op syncs wrote the status (resourceVersion %s → %s)", rv, got)
	}

	// Removing aliases and tags from the spec removes them from the entry.
	cur := h.getHM("printer")
	_ = unstructured.SetNestedSlice(cur.Object, []any{}, "spec", "aliases")
	unstructured.RemoveNestedField(cur.Object, "spec", "tags")
	if _, err := h.hmClient().Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		return len(eps) == 1 && len(eps[0].Aliases) == 0 && len(eps[0].Tags) == 0
	})
	h.sync()
	e = h.one("printer.lan")
	if len(e.Aliases) != 0 || e.HasTag("office") {
		t.Fatalf("after clearing aliases and tags: %+v", e)
	}
	h.statusWritten()
	if g, _, _ := unstructured.NestedInt64(h.getHM("printer").Object, "status", "observedGeneration"); g != 2 {
		t.Fatalf("observedGeneration = %d, want 2", g)
	}

	// The upstream operator's field name works too, and the status says which address it gave:
	// kubectl get shows it, with the Ready condition GitOps tools read.
	h.hostMapping("legacy", map[string]any{"hostname": "legacy-hm.lan", "ip": "10.22.0.2"})
	h.waitHost("legacy-hm.lan", "10.22.0.2")
	h.sync()
	if len(h.entries("legacy-hm.lan")) != 1 {
		t.Fatal("spec.ip was not honoured")
	}
	h.statusWritten()
	for name, addr := range map[string]string{"printer": "10.22.0.1", "legacy": "10.22.0.2"} {
		cols := tableRow(t, "/apis/router-hosts.fzymgc.house/v1alpha1/namespaces/"+h.ns+"/hostmappings/"+name)
		if !strings.Contains(cols["Addresses"], addr) || cols["Ready"] != "True" {
			t.Errorf("kubectl get hostmapping %s: %v, want Addresses %s and Ready True", name, cols, addr)
		}
		if got, _, _ := unstructured.NestedStringSlice(h.getHM(name).Object, "status", "addresses"); !slices.Equal(got, []string{addr}) {
			t.Errorf("%s status.addresses = %v, want [%s]", name, got, addr)
		}
	}

	// The CRD's schema refuses bad objects at admission.
	for _, bad := range []map[string]any{
		{"hostname": "bad_host.lan"},
		{"hostname": "ok.lan", "ipAddress": "10.0.0.300"},
		{"ipAddress": "10.0.0.1"},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
			"metadata": map[string]any{"generateName": "bad-", "namespace": h.ns}, "spec": bad}}
		if _, err := h.hmClient().Create(context.Background(), u, metav1.CreateOptions{}); err == nil {
			t.Errorf("the apiserver accepted HostMapping spec %v", bad)
		}
	}

	// Delete: marked, then removed after the grace period.
	if err := h.hmClient().Delete(context.Background(), hm.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitGone("printer.lan")
	h.sync()
	if _, marked := h.one("printer.lan").TagValue("pending-deletion:"); !marked {
		t.Fatal("deleted HostMapping's entry is not marked")
	}
	h.clock.Step(2 * time.Minute)
	h.sync()
	if len(h.entries("printer.lan")) != 0 {
		t.Fatal("entry outlived the grace period")
	}
}

func checkStatus(t *testing.T, u *unstructured.Unstructured, synced bool, id, reason string) {
	t.Helper()
	gotSynced, _, _ := unstructured.NestedBool(u.Object, "status", "synced")
	gotID, _, _ := unstructured.NestedString(u.Object, "status", "routerHostsId")
	gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	last, _, _ := unstructured.NestedString(u.Object, "status", "lastSyncTime")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var gotReason string
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == "Synced" {
			gotReason, _ = m["reason"].(string)
		}
	}
	if gotSynced != synced || gotID != id || gotReason != reason || gen != u.GetGeneration() || last == "" {
		t.Fatalf("status = %v; want synced=%v id=%s reason=%s observedGeneration=%d", u.Object["status"], synced, id, reason, u.GetGeneration())
	}
}

func dynamicHM(ns string) dynamic.ResourceInterface {
	return dynamic.NewForConfigOrDie(cp.Config).Resource(source.HostMappingGVR).Namespace(ns)
}
