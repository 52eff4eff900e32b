package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	testingclock "k8s.io/utils/clock/testing"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// compactRig is a controller that compacts (--compact-own-entries, past 5 events) on the
// in-memory server, beside a hand-made entry and another cluster's, both with long histories.
type compactRig struct {
	*knownStateRig
	log               *logtest.Hook
	hand, theirs      string
	store             *inmemory.Store
	handTags, theirTs []string
}

func newCompactRig(t *testing.T) *compactRig {
	t.Helper()
	svc, conn := inmemory.DialTest(t)
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.InfoLevel)
	reg, err := registry.New(registry.Config{ClusterName: "home", ClusterID: "c0ffee01", GracePeriod: time.Minute, CompactOwnEntries: true, CompactAbove: 5, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	r := &compactRig{knownStateRig: &knownStateRig{svc: svc, src: &stubSource{}, clock: testingclock.NewFakeClock(time.Now())}, log: hook, store: svc.Store()}
	prov := routerhosts.NewFromConn(conn, routerhosts.Options{Log: log})
	r.c = New(Config{Sources: []EndpointSource{r.src}, Registry: reg, Provider: prov, Interval: time.Hour, Log: log, Clock: r.clock})
	r.handTags = []string{"manual"}
	r.theirTs = []string{registry.TagOwner, registry.ClusterTag("lab"), registry.IdentityTag("0bad0bad"), registry.PrefixNamespace + "x", registry.PrefixSource + "z"}
	r.hand = r.add(t, "nas.lan", "10.0.0.4", r.handTags)
	r.theirs = r.add(t, "lab.lan", "10.0.0.5", r.theirTs)
	r.bump(t, r.hand, 20)
	r.bump(t, r.theirs, 20)
	return r
}

func (r *compactRig) add(t *testing.T, host, ip string, tags []string) string {
	t.Helper()
	e, err := r.store.Add(&pb.AddHostRequest{Hostname: host, IpAddress: ip, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	return e.GetId()
}

// bump adds n events to the entry id, each an UpdateHost that writes its tags as they are.
func (r *compactRig) bump(t *testing.T, id string, n int) {
	t.Helper()
	for range n {
		e, err := r.store.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.store.Update(&pb.UpdateHostRequest{Id: id, ExpectedVersion: proto.String(e.GetVersion()), Tags: &pb.TagsUpdate{Values: e.GetTags()}}); err != nil {
			t.Fatal(err)
		}
	}
}

// idOf is the ID of host's one entry.
func (r *compactRig) idOf(t *testing.T, host string) string {
	t.Helper()
	es := r.store.Lookup(host)
	if len(es) != 1 {
		t.Fatalf("%d entries of %s, want 1", len(es), host)
	}
	return es[0].GetId()
}

// listed is ListHosts' answer, in ID order.
func (r *compactRig) listed() []*pb.HostEntry {
	es := r.store.List()
	slices.SortFunc(es, func(a, b *pb.HostEntry) int { return strings.Compare(a.GetId(), b.GetId()) })
	return es
}

func claimFor(host, uid, ip string) *endpoint.Endpoint {
	return &endpoint.Endpoint{Hostname: host, Targets: []string{ip}, Sources: []endpoint.SourceRef{{Kind: "Ingress", Namespace: "d", Name: host, UID: uid}}}
}

// TestOwnEntriesAreCompacted: after a sync's writes, an entry of its own past the threshold has
// its log folded to one event, its version and every field as they were (ListHosts answers the
// same); a later write at the version read before goes through, and no twin is seen; an entry
// it deleted is folded once a whole read no longer shows it; a hand-made entry and another
// cluster's, with longer histories, are never touched. The report counts the events folded and
// the largest own entry's events.
func TestOwnEntriesAreCompacted(t *testing.T) {
	r := newCompactRig(t)
	r.want(claimFor("app.lan", "u1", "10.0.0.1"), claimFor("old.lan", "u2", "10.0.0.2"))
	rep := r.sync(t, true)
	if rep.CompactedEvents != 0 || r.svc.Calls(inmemory.MethodCompact) != 0 {
		t.Fatalf("compacted %d events in %d calls on creating; want none", rep.CompactedEvents, r.svc.Calls(inmemory.MethodCompact))
	}
	app, old := r.idOf(t, "app.lan"), r.idOf(t, "old.lan")
	r.bump(t, app, 10)
	before := r.listed()
	hand, theirs := r.store.EventsOf(r.hand), r.store.EventsOf(r.theirs)
	rep = r.sync(t, true)
	if got := r.store.EventsOf(app); got != 1 {
		t.Errorf("app.lan's log holds %d events after the sync, want 1", got)
	}
	if rep.CompactedEvents != 10 || rep.OwnEvents != 11 {
		t.Errorf("reported %d events compacted, the largest own entry at %d; want 10 and 11", rep.CompactedEvents, rep.OwnEvents)
	}
	if after := r.listed(); !slices.EqualFunc(before, after, func(a, b *pb.HostEntry) bool { return proto.Equal(a, b) }) {
		t.Errorf("ListHosts answered\n%v\nbefore the compaction, and\n%v\nafter", before, after)
	}
	if r.store.EventsOf(r.hand) != hand || r.store.EventsOf(r.theirs) != theirs {
		t.Errorf("the hand-made entry's log holds %d events (was %d), the other cluster's %d (was %d)",
			r.store.EventsOf(r.hand), hand, r.store.EventsOf(r.theirs), theirs)
	}
	// The operator re-points app.lan at the version it read before the compaction.
	r.want(claimFor("app.lan", "u1", "10.0.0.9"), claimFor("old.lan", "u2", "10.0.0.2"))
	rep = r.sync(t, true)
	if len(rep.Failed) > 0 || r.store.Lookup("app.lan")[0].GetIpAddress() != "10.0.0.9" {
		t.Fatalf("the update after the compaction: failed %v, app.lan at %s", rep.Failed, r.store.Lookup("app.lan")[0].GetIpAddress())
	}
	// old.lan is no longer wanted: marked, deleted after its grace period, then compacted.
	r.want(claimFor("app.lan", "u1", "10.0.0.9"))
	r.sync(t, true)
	r.clock.Step(2 * time.Minute)
	r.sync(t, true)
	if len(r.store.Lookup("old.lan")) != 0 || r.store.EventsOf(old) < 3 {
		t.Fatalf("old.lan: %d entries, its log %d events; want it deleted, its log whole", len(r.store.Lookup("old.lan")), r.store.EventsOf(old))
	}
	rep = r.sync(t, true)
	if got := r.store.EventsOf(old); got != 1 || rep.CompactedEvents < 2 {
		t.Errorf("the deleted old.lan's log holds %d events, %d compacted; want its tombstone alone", got, rep.CompactedEvents)
	}
	for range 3 {
		r.clock.Step(time.Minute)
		if rep = r.sync(t, true); rep.Twin != nil || len(rep.Failed) > 0 {
			t.Errorf("after the compactions: a twin %+v, failures %v", rep.Twin, rep.Failed)
		}
	}
	if r.store.EventsOf(r.hand) != hand || r.store.EventsOf(r.theirs) != theirs {
		t.Errorf("the hand-made entry's log holds %d events (was %d), the other cluster's %d (was %d)",
			r.store.EventsOf(r.hand), hand, r.store.EventsOf(r.theirs), theirs)
	}
	for _, e := range r.log.AllEntries() {
		if e.Level <= logrus.WarnLevel {
			t.Errorf("logged %q at %s", e.Message, e.Level)
		}
	}
}

// TestAServerThatDoesNotCompactIsSaidOnce: a server without CompactAggregates (or refusing it)
// is said once, at Warn with its answer; the operator asks it no more, and its syncs go on.
func TestAServerThatDoesNotCompactIsSaidOnce(t *testing.T) {
	for _, code := range []codes.Code{codes.Unimplemented, codes.PermissionDenied} {
		t.Run(code.String(), func(t *testing.T) {
			r := newCompactRig(t)
			r.svc.SetFault(inmemory.MethodCompact, status.Error(code, "the server's answer"), 0)
			r.want(claimFor("app.lan", "u1", "10.0.0.1"))
			r.sync(t, true)
			app := r.idOf(t, "app.lan")
			for i := range 4 {
				r.bump(t, app, 10)
				r.clock.Step(time.Minute)
				rep, err := r.c.sync(context.Background(), planner.Full)
				if err != nil || rep.CompactedEvents != 0 {
					t.Fatalf("sync %d: %v, %d events compacted", i, err, rep.CompactedEvents)
				}
			}
			if n := r.svc.Calls(inmemory.MethodCompact); n != 1 {
				t.Errorf("asked the server to compact %d times, want once", n)
			}
			var warned []string
			for _, e := range r.log.AllEntries() {
				if e.Level <= logrus.WarnLevel {
					warned = append(warned, e.Message)
					if err, _ := e.Data[logrus.ErrorKey].(error); err == nil || !strings.Contains(err.Error(), "the server's answer") {
						t.Errorf("warned %q without the server's answer (%v)", e.Message, e.Data)
					}
				}
			}
			if len(warned) != 1 {
				t.Errorf("warned %q, want once", warned)
			}
			// The entries are as they were, and further writes go.
			r.want(claimFor("app.lan", "u1", "10.0.0.9"))
			if rep := r.sync(t, true); len(rep.Failed) > 0 || r.store.Lookup("app.lan")[0].GetIpAddress() != "10.0.0.9" {
				t.Errorf("after the refusal, the update failed: %v", rep.Failed)
			}
			if r.c.noCompaction == nil {
				t.Error("the loop keeps no record of the refusal")
			}
		})
	}
}

// TestAChangeStopsTheCompactions: a cluster change that arrives while a sync compacts stops the
// compactions left, so that the sync that writes it waits for one call at most; the next
// whole read names them again.
func TestAChangeStopsTheCompactions(t *testing.T) {
	r := newCompactRig(t)
	r.want(claimFor("a.lan", "u1", "10.0.0.1"), claimFor("b.lan", "u2", "10.0.0.2"), claimFor("c.lan", "u3", "10.0.0.3"))
	r.sync(t, true)
	for _, h := range []string{"a.lan", "b.lan", "c.lan"} {
		r.bump(t, r.idOf(t, h), 10)
	}
	r.svc.SetBefore(func(method string) error {
		if method == inmemory.MethodCompact {
			r.c.notify()
		}
		return nil
	})
	rep := r.sync(t, true)
	if n := r.svc.Calls(inmemory.MethodCompact); n != 1 || rep.CompactedEvents != 10 {
		t.Fatalf("%d compactions, %d events, with a change arriving at the first; want 1 and 10", n, rep.CompactedEvents)
	}
	r.svc.SetBefore(nil)
	r.sync(t, false) // the change's sync
	r.sync(t, true)
	for _, h := range []string{"a.lan", "b.lan", "c.lan"} {
		if n := r.store.EventsOf(r.idOf(t, h)); n != 1 {
			t.Errorf("%s's log holds %d events after the next whole read, want 1", h, n)
		}
	}
}
