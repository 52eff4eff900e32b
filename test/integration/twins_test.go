package integration

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// nameWatch follows every state the router goes through (the test server's write hook) and
// remembers any moment a hostname it was told to watch had no entry.
type nameWatch struct {
	mu     sync.Mutex
	names  []string
	lost   []string
	writes int
}

func watchNames(t *testing.T, h *harness) *nameWatch {
	w := &nameWatch{}
	h.srv.Store().SetOnWrite(func(live []*pb.HostEntry) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.writes++
		for _, n := range w.names {
			if !slices.ContainsFunc(live, func(e *pb.HostEntry) bool { return e.GetHostname() == n }) {
				w.lost = append(w.lost, fmt.Sprintf("%s after write %d", n, w.writes))
			}
		}
	})
	t.Cleanup(func() { h.srv.Store().SetOnWrite(nil) })
	return w
}

// watch adds names that must answer from now on.
func (w *nameWatch) watch(names ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.names = append(w.names, names...)
}

// unwatch stops watching every name.
func (w *nameWatch) unwatch() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.names = nil
}

func (w *nameWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lost) > 0 {
		t.Fatalf("names went missing: %v", w.lost)
	}
}

func (w *nameWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// quietFor fails unless nothing is written to the router while both processes sync n times.
func quietFor(t *testing.T, w *nameWatch, ps ...*process) {
	t.Helper()
	from := w.count()
	for _, p := range ps {
		start := p.metric(t, "router_hosts_operator_sync_duration_seconds_count")
		waitFor(t, 20*time.Second, func() bool { return p.metric(t, "router_hosts_operator_sync_duration_seconds_count") >= start+3 })
	}
	if n := w.count() - from; n != 0 {
		t.Fatalf("%d writes reached the router while it should be quiet", n)
	}
}

// TestTwinsHoldAndSayItThenAPinnedIdentityParts: two releases of the operator in one
// namespace, leader election off, so both fall back to the same Lease name and one identity:
// twins. Each manages its own Ingresses (by label), and both manage one, at addresses of their
// own. Each takes the other's entries for its own, so each re-points the shared name and marks
// the other's; the other undoes it. Within a few intervals both see it, say so (the log, the
// twin_entries metric) with the fix, and stop: nothing is written any more, no name is lost, and
// with one of them stopped for several grace periods, just after it wrote a new name, the other
// deletes nothing. Pinning
// --cluster-id on one of them parts them: it takes up its own entries in place and neither
// writes the other's.
func TestTwinsHoldAndSayItThenAPinnedIdentityParts(t *testing.T) {
	h := newHarness(t, options{})
	w := watchNames(t, h)
	mk := func(name, team string, annotations ...string) {
		ing := ingress(h.ns, name, enabled(annotations...), name+".twins.lan")
		ing.Labels = map[string]string{"team": team}
		h.create(ing)
	}
	mk("a-only", "a", "ip-address", "10.60.0.1")
	mk("b-only", "b", "ip-address", "10.60.0.2")
	mk("shared", "both")
	flags := func(team, ip string, more ...string) []string {
		return append([]string{"--interval=1s", "--grace-period=3s", "--min-event-sync-interval=200ms", "--label-filter=team in (" + team + ",both)",
			"--ip-resolution=static:" + ip, "--leader-election-namespace=" + h.ns}, more...)
	}
	a := startOperator(t, h, kubeconfig, flags("a", "10.60.9.1")...)
	b := startOperator(t, h, kubeconfig, flags("b", "10.60.9.2")...)
	names := []string{"a-only.twins.lan", "b-only.twins.lan", "shared.twins.lan"}
	waitFor(t, 30*time.Second, func() bool {
		m := entriesByHost(h.srv.Store())
		return m[names[0]] != nil && m[names[1]] != nil && m[names[2]] != nil
	})
	w.watch(names...)

	// They find each other out within a few intervals, and both say so.
	for _, p := range []*process{a, b} {
		waitFor(t, 30*time.Second, func() bool { return p.metric(t, "router_hosts_operator_twin_entries") > 0 })
		// The log reaches the test through a pipe, after the metric.
		if !eventually(10*time.Second, func() bool {
			log := p.logText()
			return strings.Contains(log, "reason=TwinInstallation") && strings.Contains(log, "Pin --cluster-id")
		}) {
			t.Fatalf("no TwinInstallation warning with the fix in the log:\n%s", p.logText())
		}
	}
	// Then nothing is written, and every name answers.
	quietFor(t, w, a, b)
	w.check(t)
	if n := w.count(); n > 20 {
		t.Errorf("the twins wrote %d times before they stopped", n)
	}

	// b writes a new name and is away at once, for several grace periods: a, which never saw
	// that name wanted, may mark it but deletes nothing of b's.
	mk("b-new", "b", "ip-address", "10.60.0.3")
	waitFor(t, 30*time.Second, func() bool { return entriesByHost(h.srv.Store())["b-new.twins.lan"] != nil })
	stop(t, b)
	w.watch("b-new.twins.lan")
	before := entriesByHost(h.srv.Store())
	start := a.metric(t, "router_hosts_operator_sync_duration_seconds_count")
	waitFor(t, 30*time.Second, func() bool { return a.metric(t, "router_hosts_operator_sync_duration_seconds_count") >= start+12 })
	got := entriesByHost(h.srv.Store())
	for n, e := range before {
		if g := got[n]; g == nil || g.GetId() != e.GetId() || g.GetIpAddress() != e.GetIpAddress() {
			t.Fatalf("with b away, a changed %s: %v, was %v", n, g, e)
		}
		if n != "b-new.twins.lan" && !sameContent(map[string]*pb.HostEntry{n: got[n]}, map[string]*pb.HostEntry{n: e}) {
			t.Fatalf("with b away, a rewrote %s: %v, was %v", n, got[n], e)
		}
	}
	w.check(t)
	w.unwatch()
	w.watch(names...)

	// The fix: b back with an identity of its own. It takes up what its objects want, in place;
	// from then on neither writes the other's entries.
	b = startOperator(t, h, kubeconfig, flags("b", "10.60.9.2", "--cluster-id=bbbbbbbb")...)
	waitFor(t, 30*time.Second, func() bool {
		e := entriesByHost(h.srv.Store())["b-only.twins.lan"]
		return e != nil && slices.Contains(e.GetTags(), registry.IdentityTag("bbbbbbbb"))
	})
	waitFor(t, 30*time.Second, func() bool { return b.metric(t, "router_hosts_operator_twin_entries") == 0 })
	quietFor(t, w, a, b)
	w.check(t)
	after := entriesByHost(h.srv.Store())
	for _, n := range names {
		if after[n].GetId() != before[n].GetId() {
			t.Errorf("%s was written again (ID %s, was %s); a pinned identity takes entries up in place", n, after[n].GetId(), before[n].GetId())
		}
	}
	if slices.Contains(after["a-only.twins.lan"].GetTags(), registry.IdentityTag("bbbbbbbb")) {
		t.Errorf("b took up a's entry: %v", after["a-only.twins.lan"].GetTags())
	}
	for _, e := range after {
		if hasPrefixTag(e, registry.PrefixPending) {
			t.Errorf("%s is marked for deletion: %v", e.GetHostname(), e.GetTags())
		}
	}
}

// TestAChangedIdentityKeepsTheClustersNames: the operator's Lease is renamed (another release
// name, another namespace, leader election turned off: its identity changes the same way). Its
// entries under the old identity name only objects of this cluster, so the new identity takes
// them up in place, with no gap and nothing written again, and says which identity changed to
// which and how to keep the old; from then on an address change is written and a deleted
// object's entry goes, as before. No advice to rename is given: it would not help.
func TestAChangedIdentityKeepsTheClustersNames(t *testing.T) {
	h := newHarness(t, options{})
	w := watchNames(t, h)
	web := h.create(ingress(h.ns, "web", enabled("ip-address", "10.61.0.1"), "web.lan"))
	gone := h.create(ingress(h.ns, "gone", enabled("ip-address", "10.61.0.2"), "gone.lan"))
	flags := []string{"--interval=1s", "--grace-period=2s", "--min-event-sync-interval=200ms", "--leader-elect", "--leader-election-namespace=" + h.ns}
	p := startOperator(t, h, kubeconfig, append(flags, "--leader-election-id=op")...)
	waitFor(t, 30*time.Second, func() bool { return len(h.srv.Store().List()) == 2 })
	before := entriesByHost(h.srv.Store())
	oldID := ""
	for _, tag := range before["web.lan"].GetTags() {
		if id, ok := strings.CutPrefix(tag, registry.PrefixClusterID); ok {
			oldID = id
		}
	}
	stop(t, p)
	w.watch("web.lan", "gone.lan")

	calls := h.srv.Service().CallCounts()
	p = startOperator(t, h, kubeconfig, append(flags, "--leader-election-id=op-renamed")...)
	var newID string
	waitFor(t, 30*time.Second, func() bool {
		e := entriesByHost(h.srv.Store())["web.lan"]
		for _, tag := range e.GetTags() {
			if id, ok := strings.CutPrefix(tag, registry.PrefixClusterID); ok && id != oldID {
				newID = id
			}
		}
		return newID != "" && entriesByHost(h.srv.Store())["gone.lan"].GetVersion() != before["gone.lan"].GetVersion()
	})
	w.check(t)
	now := h.srv.Service().CallCounts()
	if d := now[inmemory.MethodUpdate] - calls[inmemory.MethodUpdate]; d != 2 || now[inmemory.MethodAdd] != calls[inmemory.MethodAdd] || now[inmemory.MethodDelete] != calls[inmemory.MethodDelete] {
		t.Fatalf("the take-up: calls %v, were %v; want one UpdateHost an entry and nothing else", now, calls)
	}
	for host, e := range entriesByHost(h.srv.Store()) {
		if e.GetId() != before[host].GetId() || e.GetIpAddress() != before[host].GetIpAddress() {
			t.Fatalf("%s was not taken up in place: %v, was %v", host, e, before[host])
		}
	}
	// The warning follows the sync's writes, and the log reaches the test through a pipe.
	told := func() bool {
		log := p.logText()
		return strings.Contains(log, "reason=IdentityChanged") && strings.Contains(log, "--cluster-id="+oldID) && strings.Contains(log, "cluster-id "+newID)
	}
	if !eventually(10*time.Second, told) {
		t.Fatalf("no IdentityChanged warning naming %s → %s and how to keep %s:\n%s", oldID, newID, oldID, p.logText())
	}
	log := p.logText()
	if strings.Contains(log, "a name of its own") {
		t.Fatalf("the operator advised a rename, which cannot help:\n%s", log)
	}

	// The cluster's entries are its own again: an address change is written, a deleted object's
	// entry goes after its grace period.
	h.update(web, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.61.0.9" })
	h.delete(gone)
	waitFor(t, 30*time.Second, func() bool {
		m := entriesByHost(h.srv.Store())
		return m["web.lan"].GetIpAddress() == "10.61.0.9" && m["gone.lan"] == nil
	})
}

// TestAChangedIdentityTakesUpANameWhoseObjectWent: the operator is stopped, an Ingress is
// deleted while it is away, and it comes back with its Lease renamed, so another identity. The
// entries of the old identity name an object that still lives here, which proves the identity
// this cluster's former one: the live name is taken up in place at once. The entry whose
// Ingress went may be an idle copy's until the old identity has been quiet longer than a
// running copy takes to renew its heartbeat (--silent-cluster-after=8s: every 2s, plus two
// intervals); then it is taken up too, marked under the new identity, and goes after its
// grace period, as any name whose object went.
func TestAChangedIdentityTakesUpANameWhoseObjectWent(t *testing.T) {
	h := newHarness(t, options{})
	w := watchNames(t, h)
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.62.0.1"), "web.lan"))
	gone := h.create(ingress(h.ns, "gone", enabled("ip-address", "10.62.0.2"), "gone.lan"))
	flags := []string{"--interval=1s", "--grace-period=3s", "--min-event-sync-interval=200ms", "--silent-cluster-after=8s",
		"--leader-elect", "--leader-election-namespace=" + h.ns}
	p := startOperator(t, h, kubeconfig, append(flags, "--leader-election-id=op")...)
	waitFor(t, 30*time.Second, func() bool {
		m := entriesByHost(h.srv.Store())
		return len(m) == 2 && (hasPrefixTag(m["web.lan"], registry.PrefixAlive) || hasPrefixTag(m["gone.lan"], registry.PrefixAlive))
	})
	before := entriesByHost(h.srv.Store())
	stop(t, p)

	// While the operator is away, gone.lan's Ingress is deleted; then the Lease is renamed.
	h.delete(gone)
	w.watch("web.lan")
	p = startOperator(t, h, kubeconfig, append(flags, "--leader-election-id=op-renamed")...)
	oldID := identityTag(before["web.lan"])
	var marked *pb.HostEntry
	waitFor(t, 60*time.Second, func() bool {
		e := entriesByHost(h.srv.Store())["gone.lan"]
		if e != nil && hasPrefixTag(e, registry.PrefixPending) {
			marked = e
		}
		return marked != nil
	})
	newID := identityTag(marked)
	if newID == "" || newID == oldID || marked.GetId() != before["gone.lan"].GetId() {
		t.Fatalf("gone.lan marked as %v; want the same entry marked under the new identity (was %s)", marked, oldID)
	}
	waitFor(t, 30*time.Second, func() bool { return entriesByHost(h.srv.Store())["gone.lan"] == nil })
	w.check(t)
	web := entriesByHost(h.srv.Store())["web.lan"]
	if web.GetId() != before["web.lan"].GetId() || identityTag(web) != newID || hasPrefixTag(web, registry.PrefixPending) {
		t.Fatalf("web.lan %v; want it taken up in place under %s, was %v", web, newID, before["web.lan"])
	}
	if log := p.logText(); !strings.Contains(log, "reason=IdentityChanged") {
		t.Errorf("no IdentityChanged warning:\n%s", log)
	}
}

// identityTag is the identity an entry carries in its cluster-id: tag, "" for none.
func identityTag(e *pb.HostEntry) string {
	for _, tag := range e.GetTags() {
		if id, ok := strings.CutPrefix(tag, registry.PrefixClusterID); ok {
			return id
		}
	}
	return ""
}
