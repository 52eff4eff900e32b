package planner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// installation is one of two twins on one router (one identity): a cluster and its copy.
type installation struct {
	name string
	p    *Planner
	eps  []*endpoint.Endpoint
	last *Sync
}

func newTwin(t *testing.T, srv *server, clk *testingclock.FakeClock, name string, eps ...*endpoint.Endpoint) *installation {
	t.Helper()
	r, err := registry.New(registry.Config{ClusterName: "home", ClusterID: "aaaaaaaa", GracePeriod: 5 * time.Minute, Log: logrus.New()})
	if err != nil {
		t.Fatal(err)
	}
	return &installation{name: name, p: New(r, srv.prov, clk), eps: eps}
}

// sync runs one interval's full sync of tw and returns its writes.
func (tw *installation) sync(t *testing.T, srv *server) []plan.Change {
	t.Helper()
	tw.last = srv.sync(t, tw.p, Full, tw.eps...)
	return tw.last.Changes
}

// names is every hostname on the router with its addresses and whether any is marked.
func names(t *testing.T, srv *server) map[string][]string {
	t.Helper()
	recs, err := srv.prov.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range recs {
		ip := r.IP
		if registry.Marked(&r) {
			ip += " marked"
		}
		out[r.Hostname] = append(out[r.Hostname], ip)
	}
	return out
}

// TestTwinsStopFighting: a cluster and its copy (one kube-system UID, so one identity) share a
// router, each with an object the other lacks and one they both have at different addresses.
// Each takes the other's entries for its own. Within a few intervals they see the other undo
// their writes, say so, and stop: no entry is re-pointed, marked or deleted any more, nothing
// is written at all, and a twin away for many grace periods loses no name. A new process (a
// restart) fights a round, then stops again.
func TestTwinsStopFighting(t *testing.T) {
	srv := newServer(t)
	clk := testingclock.NewFakeClock(t0)
	shared := func(ip string) *endpoint.Endpoint {
		return claim("shared.lan", "apps", "shared", "u-shared", time.Hour, ip)
	}
	a := newTwin(t, srv, clk, "a", shared("10.0.0.1"), claim("a-only.lan", "apps", "a", "u-a", time.Hour, "10.0.0.3"))
	b := newTwin(t, srv, clk, "b", shared("10.0.0.2"), claim("b-only.lan", "apps", "b", "u-b", time.Hour, "10.0.0.4"))
	all := func(t *testing.T) {
		t.Helper()
		got := names(t, srv)
		for _, h := range []string{"shared.lan", "a-only.lan", "b-only.lan"} {
			if len(got[h]) == 0 {
				t.Fatalf("%s has no entry: %v", h, got)
			}
		}
	}
	writes := 0
	for round := 0; round < 6; round++ {
		for _, tw := range []*installation{a, b} {
			writes += len(tw.sync(t, srv))
			if round > 0 || tw == b {
				all(t)
			}
		}
		clk.Step(time.Minute)
	}
	if writes > 16 {
		t.Fatalf("the twins wrote %d times before they stopped", writes)
	}
	for _, tw := range []*installation{a, b} {
		if tw.last.Twin == nil || tw.last.Twin.ClusterID != "aaaaaaaa" {
			t.Fatalf("%s does not report the twin: %+v", tw.name, tw.last.Twin)
		}
	}
	// Settled: several intervals, nothing written by either.
	for round := 0; round < 5; round++ {
		for _, tw := range []*installation{a, b} {
			if w := tw.sync(t, srv); len(w) != 0 {
				t.Fatalf("round %d: %s wrote %v", round, tw.name, actions(w))
			}
		}
		clk.Step(time.Minute)
	}
	before := names(t, srv)
	// b is away for three grace periods: a writes nothing, and b's name stays.
	for round := 0; round < 15; round++ {
		if w := a.sync(t, srv); len(w) != 0 {
			t.Fatalf("with b away, a wrote %v", actions(w))
		}
		clk.Step(time.Minute)
	}
	if got := names(t, srv); len(got) != len(before) || !slices.Equal(got["b-only.lan"], before["b-only.lan"]) {
		t.Fatalf("with b away: %v, was %v", got, before)
	}
	// a restarts: its new process has seen nothing, fights a round or two and stops.
	a.p = New(a.p.reg, srv.prov, clk)
	writes = 0
	for round := 0; round < 6; round++ {
		for _, tw := range []*installation{a, b} {
			writes += len(tw.sync(t, srv))
			all(t)
		}
		clk.Step(time.Minute)
	}
	if writes > 8 {
		t.Fatalf("after a restart the twins wrote %d times", writes)
	}
	for _, tw := range []*installation{a, b} {
		if w := tw.sync(t, srv); len(w) != 0 {
			t.Fatalf("after a restart, %s still writes %v", tw.name, actions(w))
		}
	}
}

// TestAHandEditIsNoTwin: a person re-pointing an owned entry by hand is corrected at the next
// full sync, as ever, and is no twin; so is an edit much later, and a release probe.
func TestAHandEditIsNoTwin(t *testing.T) {
	srv := newServer(t)
	clk := testingclock.NewFakeClock(t0)
	tw := newTwin(t, srv, clk, "a", claim("web.lan", "apps", "web", "u-web", time.Hour, "10.0.0.1"))
	tw.sync(t, srv)
	edit := func(ip string) {
		t.Helper()
		recs, _ := srv.prov.Records(context.Background())
		n := recs[0]
		n.IP = ip
		if err := plan.ErrorOf(srv.prov.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Update, Old: &recs[0], New: &n}})); err != nil {
			t.Fatal(err)
		}
	}
	for i, wait := range []time.Duration{time.Minute, time.Hour, 2 * time.Hour} {
		clk.Step(wait)
		tw.sync(t, srv)
		edit("10.9.9.9")
		clk.Step(time.Minute)
		if w := tw.sync(t, srv); len(w) != 1 || w[0].Action != plan.Update || w[0].New.IP != "10.0.0.1" || tw.last.Twin != nil {
			t.Fatalf("edit %d: the correction %v, twin %+v", i, actions(w), tw.last.Twin)
		}
	}
}
