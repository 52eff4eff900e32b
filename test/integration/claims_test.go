package integration

import (
	"context"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

func TestSameNamespaceClaimsMerge(t *testing.T) {
	h := newHarness(t, options{})
	api := h.create(ingress(h.ns, "api", enabled("ip-address", "10.30.0.1"), "app.lan"))
	web := h.create(ingress(h.ns, "web", enabled("ip-address", "10.30.0.2"), "app.lan"))
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return len(eps) == 2 })
	h.sync()
	entries := h.entries("app.lan")
	if got := ipsOf(entries); !reflect.DeepEqual(got, []string{"10.30.0.1", "10.30.0.2"}) {
		t.Fatalf("IPs = %v, want the union of both claims", got)
	}
	// Each address carries the source tag of the object that wants it, and only that one.
	for _, e := range entries {
		mine, other := api.UID, web.UID
		if e.IP == "10.30.0.2" {
			mine, other = web.UID, api.UID
		}
		if !e.HasTag("source:"+string(mine)) || e.HasTag("source:"+string(other)) {
			t.Fatalf("entry %s = %v; want the source tag of its own object only", e.IP, e.Tags)
		}
	}
	// One claim goes: the hostname stays, its other address is marked, the source tag leaves.
	h.delete(web)
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return len(eps) == 1 })
	h.sync()
	for _, e := range h.entries("app.lan") {
		_, marked := e.TagValue("pending-deletion:")
		if e.IP == "10.30.0.1" && (marked || e.HasTag("source:"+string(web.UID))) {
			t.Fatalf("remaining claim's entry = %v", e.Tags)
		}
		if e.IP == "10.30.0.2" && !marked {
			t.Fatalf("the gone claim's address is not marked: %v", e.Tags)
		}
	}
}

func TestCrossNamespaceOldestClaimWins(t *testing.T) {
	// Every namespace is read; a label keeps other tests' objects out (and tests --label-filter).
	label := "claims-" + time.Now().Format("150405.000000")
	label = "t" + label[len(label)-6:]
	h := newHarness(t, options{sources: []string{"hostmapping"}, allNS: true, labelFilter: "test=" + label})
	other := createNamespace(t, cp)
	mk := func(ns, name, ip string, labelled bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"hostname": "shared.lan", "ipAddress": ip}}}
		if labelled {
			u.SetLabels(map[string]string{"test": label})
		}
		got, err := dynamicHM(ns).Create(context.Background(), u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	owner := mk(h.ns, "owner", "10.31.0.1", true)
	time.Sleep(1100 * time.Millisecond) // creation times have one-second resolution
	intruder := mk(other, "intruder", "10.31.0.66", true)
	mk(other, "unlabelled", "10.31.0.77", false)
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return len(eps) == 2 })
	h.sync()
	e := h.one("shared.lan")
	if e.IP != "10.31.0.1" || !e.HasTag("namespace:"+h.ns) || e.HasTag("source:"+string(intruder.GetUID())) {
		t.Fatalf("entry = %+v; want only the older claim from %s", e, h.ns)
	}
	h.statusWritten()
	getStatus := func(u *unstructured.Unstructured) string {
		got, err := dynamicHM(u.GetNamespace()).Get(context.Background(), u.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		if len(conds) == 0 {
			return ""
		}
		r, _ := conds[0].(map[string]any)["reason"].(string)
		return r
	}
	if r := getStatus(owner); r != "Success" {
		t.Errorf("owner's reason = %q", r)
	}
	if r := getStatus(intruder); r != "Conflict" {
		t.Errorf("intruder's reason = %q, want Conflict", r)
	}
}

func TestDomainFilterAndFlagChange(t *testing.T) {
	h := newHarness(t, options{grace: time.Minute})
	h.create(ingress(h.ns, "in", enabled("ip-address", "10.32.0.1"), "a.in.lan"))
	h.create(ingress(h.ns, "excluded", enabled("ip-address", "10.32.0.2"), "b.private.in.lan"))
	h.create(ingress(h.ns, "out", enabled("ip-address", "10.32.0.3"), "c.out.lan"))
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return len(eps) == 3 })
	h.sync() // no filter yet: all three
	if len(h.entries("c.out.lan")) != 1 {
		t.Fatal("c.out.lan not created without a filter")
	}
	// The operator restarts with --domain-filter and --exclude-domains.
	h.build(options{grace: time.Minute, domains: []string{"in.lan"}, excludeDomains: []string{"private.in.lan"}})
	h.sync()
	for host, wantMarked := range map[string]bool{"a.in.lan": false, "b.private.in.lan": true, "c.out.lan": true} {
		_, marked := h.one(host).TagValue("pending-deletion:")
		if marked != wantMarked {
			t.Errorf("%s marked = %v, want %v", host, marked, wantMarked)
		}
	}
	h.clock.Step(2 * time.Minute)
	// The restarted process never saw these entries wanted: a mark on such an entry waits three
	// more whole reads for a twin to lift it (docs/ownership.md, twins) before it falls due.
	for range 4 {
		h.sync()
	}
	if len(h.entries("c.out.lan"))+len(h.entries("b.private.in.lan")) != 0 || len(h.entries("a.in.lan")) != 1 {
		t.Fatal("after the grace period and three whole reads only a.in.lan should remain")
	}
}

func TestLabelFilterOnIngress(t *testing.T) {
	h := newHarness(t, options{labelFilter: "dns=internal"})
	in := ingress(h.ns, "labelled", enabled("ip-address", "10.33.0.1"), "labelled.lan")
	in.Labels = map[string]string{"dns": "internal"}
	h.create(in)
	h.create(ingress(h.ns, "plain", enabled("ip-address", "10.33.0.2"), "plain.lan"))
	h.waitHost("labelled.lan", "10.33.0.1")
	time.Sleep(200 * time.Millisecond)
	h.sync()
	if len(h.entries("labelled.lan")) != 1 || len(h.entries("plain.lan")) != 0 {
		t.Fatal("--label-filter not applied")
	}
}
