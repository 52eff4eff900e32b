package integration

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestOneNameSeveralClusters lives through sharing as a homelab with two clusters does, each
// with an apiserver of its own, on one router: two clusters share a name with an address each;
// a claim without consent is refused on both sides; both want one address and the router keeps
// one line, which stays while either wants it; a name moves from a to b with the router polled
// throughout; one cluster's release touches only its entries; a cluster goes silent, is
// reported, and is released.
func TestOneNameSeveralClusters(t *testing.T) {
	// a's syncs are the test's; its --interval of 1s is what its heartbeat tells release.
	a := newHarness(t, options{cluster: "a", ipResolution: []string{"static:10.85.0.1"}, interval: time.Second,
		extraArgs: []string{"--cluster-id=aaaaaaa2", "--silent-cluster-after=1h"}})
	b := newHarness(t, options{cluster: "b", ipResolution: []string{"static:10.85.0.2"},
		extraArgs: []string{"--cluster-id=bbbbbbb2", "--silent-cluster-after=1h"}, server: a.srv, ownControlPlane: true})
	addresses := func(host string) []string {
		var out []string
		for _, e := range a.entries(host) {
			out = append(out, e.IP)
		}
		slices.Sort(out)
		return out
	}
	both := func() (ca, cb []plan.Change) {
		return a.sync().Changes, b.sync().Changes
	}
	settle := func(what string) {
		t.Helper()
		for range 5 {
			if ca, cb := both(); len(ca)+len(cb) == 0 {
				return
			}
		}
		t.Fatalf("%s: the clusters do not settle", what)
	}

	// 1. Two clusters share a name: both addresses are on the router, and at rest neither writes.
	a.create(ingress(a.ns, "web", enabled("shared", "true"), "web.share.lan"))
	a.waitHost("web.share.lan", "10.85.0.1")
	b.create(ingress(b.ns, "web", enabled("shared", "true"), "web.share.lan"))
	b.waitHost("web.share.lan", "10.85.0.2")
	settle("a shared name")
	if got := addresses("web.share.lan"); !slices.Equal(got, []string{"10.85.0.1", "10.85.0.2"}) {
		t.Fatalf("web.share.lan has %v, want both clusters' addresses", got)
	}
	before := a.writes()
	both()
	if n := a.writes() - before; n != 0 {
		t.Errorf("a shared name at rest: %d writes", n)
	}

	// 2. A claim without consent is refused, on both sides in turn.
	for _, tc := range []struct {
		host          string
		holder, other *harness
		holderName    string
		holderShares  bool
		holderIP      string
		otherIP       string
	}{
		{"lone.share.lan", a, b, "a", false, "10.85.0.1", "10.85.0.2"}, // the holder did not share; the newcomer does
		{"mine.share.lan", b, a, "b", true, "10.85.0.2", "10.85.0.1"},  // the holder shares; the newcomer does not
	} {
		ann := enabled()
		if tc.holderShares {
			ann = enabled("shared", "true")
		}
		tc.holder.create(ingress(tc.holder.ns, strings.Split(tc.host, ".")[0], ann, tc.host))
		tc.holder.waitHost(tc.host, tc.holderIP)
		tc.holder.sync()
		other := enabled("shared", "true")
		if tc.holderShares {
			other = enabled()
		}
		tc.other.create(ingress(tc.other.ns, strings.Split(tc.host, ".")[0], other, tc.host))
		tc.other.waitHost(tc.host, tc.otherIP)
		rep := tc.other.sync()
		if !slices.ContainsFunc(rep.Conflicts, func(c registry.Conflict) bool {
			return c.Hostname == tc.host && c.Winner == "cluster "+tc.holderName && c.Reason == registry.ReasonHostnameConflict
		}) {
			t.Errorf("%s: conflicts %+v, want the name held by cluster %s", tc.host, rep.Conflicts, tc.holderName)
		}
		if got := a.entries(tc.host); len(got) != 1 {
			t.Errorf("%s: %v, want the holder's entry alone", tc.host, got)
		}
	}

	// 3. The same address from both clusters: one line, which stays while either wants it.
	sameA := a.create(ingress(a.ns, "same", enabled("shared", "true", "ip-address", "10.85.9.9"), "same.share.lan"))
	a.waitHost("same.share.lan", "10.85.9.9")
	b.create(ingress(b.ns, "same", enabled("shared", "true", "ip-address", "10.85.9.9"), "same.share.lan"))
	b.waitHost("same.share.lan", "10.85.9.9")
	settle("the same address")
	line := a.one("same.share.lan")
	if !line.HasTag(registry.CoOwnerTag("b", "bbbbbbb2")) || !line.HasTag("cluster:a") {
		t.Fatalf("the line %v: want a's, co-owned by b", line)
	}
	a.delete(sameA)
	a.waitGone("same.share.lan")
	for range 3 {
		a.clock.Step(6 * time.Minute)
		for _, h := range []*harness{a, b} {
			h.sync()
			if got := a.entries("same.share.lan"); len(got) != 1 || got[0].ID != line.ID {
				t.Fatalf("after a sync the line is %v: it must stay, in place, while b wants it", got)
			}
		}
	}
	if e := a.one("same.share.lan"); !e.HasTag("cluster:b") || e.HasTag("cluster:a") || e.HasTag(registry.CoOwnerTag("b", "bbbbbbb2")) {
		t.Errorf("the line %v: want it b's alone", e)
	}

	// 4. A move from a to b with no gap, the router polled throughout.
	moveA := a.create(ingress(a.ns, "move", enabled(), "move.share.lan"))
	a.waitHost("move.share.lan", "10.85.0.1")
	a.sync()
	ctx, stop := context.WithCancel(context.Background())
	var (
		mu    sync.Mutex
		gaps  int
		polls int
		poll  sync.WaitGroup
	)
	poll.Add(1)
	go func() {
		defer poll.Done()
		for ctx.Err() == nil {
			recs, err := a.prov.Records(ctx)
			if err == nil {
				n := 0
				for _, r := range recs {
					if r.Hostname == "move.share.lan" {
						n++
					}
				}
				mu.Lock()
				polls++
				if n == 0 {
					gaps++
				}
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	// Beside the poller, every sync of the move is followed by a read of the router.
	moveSettle := func(what string) {
		t.Helper()
		for range 5 {
			wrote := 0
			for name, h := range map[string]*harness{"a": a, "b": b} {
				wrote += len(h.sync().Changes)
				if len(a.entries("move.share.lan")) == 0 {
					t.Fatalf("%s: after a sync of %s the router has no address for move.share.lan", what, name)
				}
			}
			if wrote == 0 {
				return
			}
		}
		t.Fatalf("%s: the clusters do not settle", what)
	}
	moveA = a.update(moveA, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/shared"] = "true" })
	a.waitSource(func(eps []*endpoint.Endpoint) bool { return sharedIn(eps, "move.share.lan") })
	moveSettle("a's object annotated shared")
	b.create(ingress(b.ns, "move", enabled("shared", "true"), "move.share.lan"))
	b.waitHost("move.share.lan", "10.85.0.2")
	moveSettle("b's object created")
	if got := addresses("move.share.lan"); !slices.Equal(got, []string{"10.85.0.1", "10.85.0.2"}) {
		t.Errorf("move.share.lan has %v while both want it", got)
	}
	a.delete(moveA)
	a.waitGone("move.share.lan")
	moveSettle("a's object deleted")
	if got := addresses("move.share.lan"); !slices.Equal(got, []string{"10.85.0.1", "10.85.0.2"}) {
		t.Errorf("move.share.lan has %v within a's grace period, want a's address still there", got)
	}
	a.clock.Step(6 * time.Minute)
	moveSettle("a's grace period over")
	stop()
	poll.Wait()
	if got := addresses("move.share.lan"); !slices.Equal(got, []string{"10.85.0.2"}) {
		t.Errorf("move.share.lan has %v after a's grace period, want b's address alone", got)
	}
	if gaps > 0 || polls == 0 {
		t.Errorf("the router was read %d times during the move and had no address for the name %d times", polls, gaps)
	}

	// 5. A cluster goes silent (a's operator stops), b reports it after the threshold, then a is
	// released: only a's entries go, b's and the line b owns stay.
	b.clock.Step(2 * time.Hour)
	rep := b.sync()
	if len(rep.Silent) != 1 || rep.Silent[0].Cluster != "a" || rep.Silent[0].ClusterID != "aaaaaaa2" || rep.Silent[0].Entries == 0 {
		t.Fatalf("b reports silent %+v, want cluster a", rep.Silent)
	}
	bBefore := map[string][]string{}
	for _, host := range []string{"web.share.lan", "mine.share.lan", "same.share.lan", "move.share.lan"} {
		bBefore[host] = addresses(host)
	}
	var out bytes.Buffer
	cmd := exec.Command(operatorBin, strings.Fields(rep.Silent[0].ReleaseCommand())[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = operatorEnv(a), &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("release a: %v\n%s", err, out.String())
	}
	if got := addresses("web.share.lan"); !slices.Equal(got, []string{"10.85.0.2"}) {
		t.Errorf("after a's release web.share.lan has %v, want b's address alone", got)
	}
	if got := a.entries("lone.share.lan"); len(got) != 0 {
		t.Errorf("after a's release lone.share.lan is %v", got)
	}
	for _, host := range []string{"mine.share.lan", "same.share.lan", "move.share.lan"} {
		if got := addresses(host); !slices.Equal(got, bBefore[host]) {
			t.Errorf("a's release changed b's %s: %v, was %v", host, got, bBefore[host])
		}
	}
	if rep := b.sync(); len(rep.Silent) != 0 {
		t.Errorf("after the release b still reports silent %+v", rep.Silent)
	}
}

// sharedIn reports whether eps has host, shared.
func sharedIn(eps []*endpoint.Endpoint, host string) bool {
	return slices.ContainsFunc(eps, func(e *endpoint.Endpoint) bool { return e.Hostname == host && e.Shared })
}

// withoutHeartbeat is tags less the installation's heartbeat, which rides on one of its entries
// (registry/life.go): the tests of what an entry says about its objects look past it.
func withoutHeartbeat(tags []string) []string {
	return slices.DeleteFunc(slices.Clone(tags), func(t string) bool {
		return strings.HasPrefix(t, registry.PrefixAlive) || strings.HasPrefix(t, registry.PrefixAliveEvery) || strings.HasPrefix(t, registry.PrefixAliveInterval)
	})
}

// TestAWithdrawnConsentNeverWinsAName lives through issue 48's second case as it happened: a
// shares app; a tenant namespace of cluster b shares it on the same address and co-owns a's
// line; a moves to another address and hands its old line to the tenant; the tenant drops
// shared, then re-points the name. a's Ingress asks for the name the whole time: it is never
// turned down, its line stays after every sync, and the tenant, which withdrew its consent,
// gets HostnameConflict and its line leaves after its grace period.
func TestAWithdrawnConsentNeverWinsAName(t *testing.T) {
	a := newHarness(t, options{cluster: "a", extraArgs: []string{"--cluster-id=aaaaaaa3"}})
	b := newHarness(t, options{cluster: "b", extraArgs: []string{"--cluster-id=bbbbbbb3"}, server: a.srv, ownControlPlane: true})
	const host = "app.consent.lan"
	line := func(ip string) (endpoint.Record, bool) {
		for _, e := range a.entries(host) {
			if e.IP == ip {
				return e, true
			}
		}
		return endpoint.Record{}, false
	}
	// aHolds syncs one cluster and checks that a still holds its address and is not turned down.
	aHolds := func(h *harness, step, ip string) *controller.Report {
		t.Helper()
		rep := h.sync()
		if h == a && len(rep.Conflicts) > 0 {
			t.Errorf("%s: a, which still shares the name, is turned down: %+v", step, rep.Conflicts)
		}
		if _, ok := line(ip); !ok {
			t.Fatalf("%s: after a sync of %s a's line %s %s is gone: %v", step, map[*harness]string{a: "a", b: "b"}[h], host, ip, a.entries(host))
		}
		return rep
	}

	// 1. a shares app; the tenant shares it on the same address and co-owns a's line.
	appA := a.create(ingress(a.ns, "app", enabled("shared", "true", "ip-address", "10.86.0.5"), host))
	a.waitHost(host, "10.86.0.5")
	aHolds(a, "a shares app", "10.86.0.5")
	appB := b.create(ingress(b.ns, "app", enabled("shared", "true", "ip-address", "10.86.0.5"), host))
	b.waitHost(host, "10.86.0.5")
	aHolds(b, "the tenant shares app", "10.86.0.5")
	old := a.one(host)
	if !onCluster(old, "a") || !old.HasTag(registry.CoOwnerTag("b", "bbbbbbb3")) {
		t.Fatalf("the line %v: want a's, co-owned by b", old)
	}

	// 2. a moves to another address: its old line is handed to the tenant, in place.
	a.update(appA, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.86.1.1" })
	a.waitHost(host, "10.86.1.1")
	for range 2 {
		aHolds(a, "a moves", "10.86.1.1")
		aHolds(b, "a moves", "10.86.1.1")
	}
	if e, ok := line("10.86.0.5"); !ok || e.ID != old.ID || !onCluster(e, "b") || onCluster(e, "a") {
		t.Fatalf("the old line is %v (found %v): want it handed to b in place", e, ok)
	}

	// 3. The tenant drops shared. Its line is the oldest of the name, but it withdrew its
	// consent: it is turned down, and a keeps its line and the name.
	appB = b.update(appB, func(i *networkingv1.Ingress) { delete(i.Annotations, "router-hosts.fzymgc.house/shared") })
	b.waitSource(func(eps []*endpoint.Endpoint) bool {
		return slices.ContainsFunc(eps, func(e *endpoint.Endpoint) bool { return e.Hostname == host }) && !sharedIn(eps, host)
	})
	rep := aHolds(b, "the tenant drops shared", "10.86.1.1")
	if !slices.ContainsFunc(rep.Conflicts, func(c registry.Conflict) bool {
		return c.Hostname == host && c.Winner == "cluster a" && c.Reason == registry.ReasonHostnameConflict
	}) {
		t.Errorf("the tenant's conflicts %+v: want the name held by cluster a", rep.Conflicts)
	}
	aHolds(a, "the tenant drops shared", "10.86.1.1")
	if _, ok := line("10.86.0.5"); !ok {
		t.Errorf("the tenant's shared line went at once: it leaves after its grace period")
	}

	// 4. The tenant re-points the name; a's grace periods and the tenant's pass. The name stays
	// a's: no address of the tenant's is written, and its old line leaves.
	b.update(appB, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.86.2.2" })
	b.waitHost(host, "10.86.2.2")
	for range 3 {
		a.clock.Step(3 * time.Minute)
		b.clock.Step(3 * time.Minute)
		for _, h := range []*harness{a, b} {
			rep := aHolds(h, "the tenant re-points", "10.86.1.1")
			if h == b && !slices.ContainsFunc(rep.Conflicts, func(c registry.Conflict) bool { return c.Hostname == host && c.Winner == "cluster a" }) {
				t.Errorf("the tenant's conflicts %+v: want the name held by cluster a", rep.Conflicts)
			}
			if _, ok := line("10.86.2.2"); ok {
				t.Fatalf("the tenant wrote its address on a's name: %v", a.entries(host))
			}
		}
	}
	got := a.entries(host)
	if len(got) != 1 || got[0].IP != "10.86.1.1" || !onCluster(got[0], "a") {
		t.Errorf("%s is %v: want a's line alone", host, got)
	}
}
