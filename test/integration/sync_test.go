package integration

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

func TestOnlyAnnotatedIngressesGetEntriesWithExactTags(t *testing.T) {
	h := newHarness(t, options{})
	web := h.create(ingress(h.ns, "web", enabled("ip-address", "10.1.0.1", "tags", "team-a,bad tag", "aliases", "WWW.web.lan,bad_alias"), "web.lan"))
	h.create(ingress(h.ns, "plain", nil, "plain.lan"))
	h.create(ingress(h.ns, "off", map[string]string{"router-hosts.fzymgc.house/enabled": "false", "router-hosts.fzymgc.house/ip-address": "10.1.0.2"}, "off.lan"))
	h.waitHost("web.lan", "10.1.0.1")
	h.sync()

	got := h.one("web.lan")
	// The identity is the one derived from this cluster's kube-system namespace and the Lease.
	ks, err := h.cp.Client.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := registry.Identity(string(ks.UID), "default", "router-hosts-operator")
	wantTags := []string{"cluster-id:" + id, "cluster:test", "k8s-operator", "kind:Ingress", "namespace:" + h.ns, "source:" + string(web.UID), "team-a"}
	if tags := endpoint.SortedUnique(withoutHeartbeat(got.Tags)); !reflect.DeepEqual(tags, wantTags) {
		t.Errorf("tags = %q\nwant   %q", tags, wantTags)
	}
	if got.IP != "10.1.0.1" || !reflect.DeepEqual(got.Aliases, []string{"www.web.lan"}) {
		t.Errorf("entry = %+v", got)
	}
	if got.Comment != "router-hosts-operator: Ingress "+h.ns+"/web" {
		t.Errorf("comment = %q", got.Comment)
	}
	if n := len(h.entries("plain.lan")) + len(h.entries("off.lan")); n != 0 {
		t.Errorf("unannotated or disabled Ingresses got %d entries", n)
	}
	if adds := h.srv.Service().Calls("AddHost"); adds != 1 {
		t.Errorf("AddHost calls = %d, want 1", adds)
	}
}

func TestIPResolutionSources(t *testing.T) {
	h := newHarness(t, options{ipResolution: []string{"ingress-status", "service:{ns}/traefik", "static:10.9.9.9"}})

	h.create(ingress(h.ns, "a", enabled("ip-address", "10.2.0.1,fd00::1"), "annotated.lan"))
	status := h.create(ingress(h.ns, "s", enabled(), "status.lan"))
	h.setStatus(status, "10.2.0.2")
	h.create(ingress(h.ns, "static", enabled(), "static.lan"))
	h.waitHost("static.lan", "10.9.9.9")
	// A Service appears: Ingresses without status now resolve through it instead of static.
	_, err := cp.Client.CoreV1().Services(h.ns).Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "traefik"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}, ExternalIPs: []string{"10.2.0.3"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.waitHost("static.lan", "10.2.0.3")
	h.waitHost("status.lan", "10.2.0.2")
	h.waitHost("annotated.lan", "10.2.0.1", "fd00::1")
	h.sync()
	ips := func(host string) []string {
		var out []string
		for _, r := range h.entries(host) {
			out = append(out, r.IP)
		}
		sort.Strings(out)
		return out
	}
	for host, want := range map[string][]string{
		"annotated.lan": {"10.2.0.1", "fd00::1"}, "status.lan": {"10.2.0.2"}, "static.lan": {"10.2.0.3"},
	} {
		if got := ips(host); !reflect.DeepEqual(got, want) {
			t.Errorf("%s IPs = %v, want %v", host, got, want)
		}
	}
	// Static is the last resort: with the Service gone the chain falls through to it.
	if err := cp.Client.CoreV1().Services(h.ns).Delete(context.Background(), "traefik", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitHost("static.lan", "10.9.9.9")
	h.sync()
	if got := ips("static.lan"); !reflect.DeepEqual(got, []string{"10.9.9.9"}) {
		t.Errorf("static.lan IPs = %v, want the static fallback", got)
	}
}

func TestIPChangeUpdatesInPlaceAndTagChangeSendsOnlyTags(t *testing.T) {
	h := newHarness(t, options{})
	ing := h.create(ingress(h.ns, "app", enabled("ip-address", "10.3.0.1"), "app.lan"))
	h.waitHost("app.lan", "10.3.0.1")
	h.sync()
	before := h.one("app.lan")

	h.update(ing, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.3.0.2" })
	h.waitHost("app.lan", "10.3.0.2")
	h.srv.Service().ResetCalls()
	h.sync()
	after := h.one("app.lan")
	if after.ID != before.ID || after.IP != "10.3.0.2" {
		t.Fatalf("IP change: before %+v after %+v; want the same ID with the new IP", before, after)
	}
	if c := h.srv.Service().CallCounts(); c["UpdateHost"] != 1 || c["AddHost"] != 0 || c["DeleteHost"] != 0 {
		t.Fatalf("IP change calls = %v, want one UpdateHost", c)
	}

	h.update(ing, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/tags"] = "blue" })
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		return len(eps) == 1 && reflect.DeepEqual(eps[0].Tags, []string{"blue"})
	})
	h.srv.Service().ResetCalls()
	h.sync()
	tagged := h.one("app.lan")
	if c := h.srv.Service().CallCounts(); c["UpdateHost"] != 1 || h.writes() != 1 {
		t.Fatalf("tag change calls = %v, want exactly one UpdateHost", c)
	}
	// Each field sent in an UpdateHost is one server event: a bump of one proves only tags went.
	if bump := version(t, tagged) - version(t, after); bump != 1 {
		t.Fatalf("tag change bumped the version by %d, want 1 (only the tags field sent)", bump)
	}
	if !tagged.HasTag("blue") || tagged.IP != "10.3.0.2" {
		t.Fatalf("after tag change: %+v", tagged)
	}
}

func TestNoOpSyncsWriteNothing(t *testing.T) {
	h := newHarness(t, options{})
	for i, host := range []string{"a.lan", "b.lan", "c.lan"} {
		h.create(ingress(h.ns, "n"+string(rune('a'+i)), enabled("ip-address", "10.4.0.1", "aliases", "x-"+host), host))
	}
	h.waitHost("c.lan", "10.4.0.1")
	h.waitHost("a.lan", "10.4.0.1")
	h.waitHost("b.lan", "10.4.0.1")
	h.sync()
	h.srv.Service().ResetCalls()
	for i := 0; i < 3; i++ {
		if out := h.sync(); len(out.Changes) != 0 {
			t.Fatalf("no-op sync %d planned %v", i, out.Changes)
		}
	}
	c := h.srv.Service().CallCounts()
	if h.writes() != 0 || c["ListHosts"] != 3 || c["GetHost"] != 0 {
		t.Fatalf("three no-op syncs made calls %v; want 3 ListHosts and no writes", c)
	}
	t.Logf("three no-op syncs: %d write RPCs, calls %v", h.writes(), c)
}

func TestOtherClustersEntryIsUntouched(t *testing.T) {
	h := newHarness(t, options{})
	seed(t, h, endpoint.Record{Hostname: "shared.lan", IP: "10.6.0.9", Tags: []string{"k8s-operator", "cluster:other", "source:x"}})
	seed(t, h, endpoint.Record{Hostname: "gone.lan", IP: "10.6.0.8", Tags: []string{"k8s-operator", "cluster:other"}})
	before := h.entries("shared.lan")
	h.create(ingress(h.ns, "claim", enabled("ip-address", "10.6.0.1"), "shared.lan"))
	h.waitHost("shared.lan", "10.6.0.1")
	h.srv.Service().ResetCalls()
	h.sync()
	h.clock.Step(time.Hour)
	h.sync()
	if h.writes() != 0 {
		t.Fatalf("wrote %d times; another cluster's entries must never be written", h.writes())
	}
	if after := h.entries("shared.lan"); !reflect.DeepEqual(after, before) {
		t.Fatalf("shared.lan changed: %v → %v", before, after)
	}
	if len(h.entries("gone.lan")) != 1 {
		t.Fatal("another cluster's entry was deleted")
	}
}

func TestMarkExpireDeleteAndUnmark(t *testing.T) {
	h := newHarness(t, options{grace: 5 * time.Minute})
	keep := h.create(ingress(h.ns, "keep", enabled("ip-address", "10.7.0.1"), "keep.lan"))
	drop := h.create(ingress(h.ns, "drop", enabled("ip-address", "10.7.0.2"), "drop.lan"))
	h.waitHost("keep.lan", "10.7.0.1")
	h.waitHost("drop.lan", "10.7.0.2")
	h.sync()
	keepID := h.one("keep.lan").ID

	h.delete(keep)
	h.delete(drop)
	h.waitGone("keep.lan")
	h.waitGone("drop.lan")
	out := h.sync()
	if len(out.Changes) != 2 || out.Pending != 2 || out.NextExpiry.IsZero() {
		t.Fatalf("outcome = %+v, want two marks", out)
	}
	if _, ok := h.one("drop.lan").TagValue("pending-deletion:"); !ok {
		t.Fatal("drop.lan is not marked")
	}
	// keep.lan comes back before expiry: same entry, mark removed.
	h.create(ingress(h.ns, "keep", enabled("ip-address", "10.7.0.1"), "keep.lan"))
	h.waitHost("keep.lan", "10.7.0.1")
	h.clock.Step(time.Minute)
	out = h.sync()
	if len(out.Changes) != 1 || out.Changes[0].Action != plan.Unmark {
		t.Fatalf("changes = %v, want one unmark", out.Changes)
	}
	k := h.one("keep.lan")
	if _, marked := k.TagValue("pending-deletion:"); marked || k.ID != keepID {
		t.Fatalf("keep.lan = %+v; want the same entry without the mark", k)
	}
	// Not yet due: nothing happens.
	h.srv.Service().ResetCalls()
	h.sync()
	if h.writes() != 0 || len(h.entries("drop.lan")) != 1 {
		t.Fatalf("before expiry: %d writes", h.writes())
	}
	h.clock.Step(5 * time.Minute)
	out = h.sync()
	if len(out.Changes) != 1 || out.Changes[0].Action != plan.Delete || len(h.entries("drop.lan")) != 0 {
		t.Fatalf("after expiry: changes %v, drop.lan entries %d", out.Changes, len(h.entries("drop.lan")))
	}
}

func TestPerObjectGracePeriodOutlivesTheObject(t *testing.T) {
	h := newHarness(t, options{grace: time.Hour})
	ing := h.create(ingress(h.ns, "short", enabled("ip-address", "10.8.0.1", "grace-period", "30"), "short.lan"))
	h.waitHost("short.lan", "10.8.0.1")
	h.sync()
	h.delete(ing)
	h.waitGone("short.lan")
	out := h.sync() // mark; the object is gone, its 30 s live on in the entry's tags
	if want := h.clock.Now().Add(30 * time.Second); out.NextExpiry.Sub(want).Abs() > time.Second {
		t.Fatalf("next expiry %v, want about %v", out.NextExpiry, want)
	}
	h.clock.Step(31 * time.Second)
	h.sync()
	if n := len(h.entries("short.lan")); n != 0 {
		t.Fatalf("entry survived its own 30 s grace period (default is 1 h): %d entries", n)
	}
}

func version(t *testing.T, r endpoint.Record) int {
	t.Helper()
	var v int
	for _, c := range r.Version {
		if c < '0' || c > '9' {
			t.Fatalf("version %q is not a counter", r.Version)
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// seed writes an entry straight to the server, as a person or another cluster would.
func seed(t *testing.T, h *harness, r endpoint.Record) {
	t.Helper()
	if err := plan.ErrorOf(h.prov.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Create, New: &r}})); err != nil {
		t.Fatalf("seed %s: %v", r.Hostname, err)
	}
}
