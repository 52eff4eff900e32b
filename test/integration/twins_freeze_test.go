package integration

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// handEdit re-points host's entry by hand, as a person's UpdateHost would.
func handEdit(t *testing.T, h *harness, host, ip string) {
	t.Helper()
	e := entriesByHost(h.srv.Store())[host]
	if e == nil {
		t.Fatalf("no entry of %s to edit", host)
	}
	if _, err := h.srv.Store().Update(&pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: proto.String(e.GetVersion()), IpAddress: proto.String(ip)}); err != nil {
		t.Fatalf("editing %s by hand: %v", host, err)
	}
}

// TestTwoHandEditsHoldOnlyTheEntryEdited: a person re-points one entry by hand twice. The
// first edit is corrected; the second makes the entry contested, and it is held as edited.
// Nothing else is: an Ingress deleted in another namespace is gone from the router after its
// grace period.
func TestTwoHandEditsHoldOnlyTheEntryEdited(t *testing.T) {
	h := newHarness(t, options{})
	other := createNamespace(t, h.cp)
	label := map[string]string{"freeze": h.ns}
	web := ingress(h.ns, "web", enabled("ip-address", "10.62.0.1"), "web.freeze.lan")
	web.Labels = label
	h.create(web)
	gone := ingress(other, "gone", enabled("ip-address", "10.62.0.2"), "gone.freeze.lan")
	gone.Labels = label
	gone = h.create(gone)
	p := startOperator(t, h, kubeconfig, "--interval=1s", "--grace-period=3s", "--min-event-sync-interval=200ms",
		"--namespace=", "--label-filter=freeze="+h.ns, "--leader-election-namespace="+h.ns)
	waitFor(t, 30*time.Second, func() bool {
		m := entriesByHost(h.srv.Store())
		return m["web.freeze.lan"] != nil && m["gone.freeze.lan"] != nil
	})

	// The first hand edit is corrected at the next interval.
	handEdit(t, h, "web.freeze.lan", "10.62.9.9")
	waitFor(t, 30*time.Second, func() bool { return entriesByHost(h.srv.Store())["web.freeze.lan"].GetIpAddress() == "10.62.0.1" })
	// The second makes the entry contested: it stays as edited, and the operator says so.
	handEdit(t, h, "web.freeze.lan", "10.62.9.9")
	waitFor(t, 30*time.Second, func() bool { return p.metric(t, "router_hosts_operator_twin_entries") > 0 })

	// An Ingress deleted in another namespace goes after its grace period all the same.
	h.delete(gone)
	deleted := time.Now()
	waitFor(t, 30*time.Second, func() bool { return entriesByHost(h.srv.Store())["gone.freeze.lan"] == nil })
	// A mark's time is written to the second, so it may fall due up to a second early.
	if d := time.Since(deleted); d < 2*time.Second {
		t.Fatalf("gone.freeze.lan went %v after its Ingress, before its grace period", d)
	}
	if got := entriesByHost(h.srv.Store())["web.freeze.lan"].GetIpAddress(); got != "10.62.9.9" {
		t.Fatalf("the contested entry was written: at %s, want it held at the edited 10.62.9.9", got)
	}
}

// TestTwinsOnOneIdentityKeepEachOthersNames: two installations pinned to one --cluster-id,
// each reading its own namespace, with a grace period shorter than their interval. Each takes
// the other's entry for an orphan of its own and marks it; the other lifts the mark before it
// falls due, and neither name ever leaves the router.
func TestTwinsOnOneIdentityKeepEachOthersNames(t *testing.T) {
	h := newHarness(t, options{})
	w := watchNames(t, h)
	other := createNamespace(t, h.cp)
	h.create(ingress(h.ns, "a", enabled("ip-address", "10.63.0.1"), "a.twins6.lan"))
	h.create(ingress(other, "b", enabled("ip-address", "10.63.0.2"), "b.twins6.lan"))
	flags := func(ns string) []string {
		return []string{"--interval=1s", "--grace-period=300ms", "--min-event-sync-interval=200ms", "--cluster-id=cccccccc",
			"--namespace=" + ns, "--leader-election-namespace=" + ns}
	}
	a := startOperator(t, h, kubeconfig, flags(h.ns)...)
	b := startOperator(t, h, kubeconfig, flags(other)...)
	names := []string{"a.twins6.lan", "b.twins6.lan"}
	waitFor(t, 30*time.Second, func() bool {
		m := entriesByHost(h.srv.Store())
		return m[names[0]] != nil && m[names[1]] != nil
	})
	w.watch(names...)
	for _, p := range []*process{a, b} {
		start := p.metric(t, "router_hosts_operator_sync_duration_seconds_count")
		waitFor(t, 60*time.Second, func() bool { return p.metric(t, "router_hosts_operator_sync_duration_seconds_count") >= start+12 })
	}
	w.check(t)
}
