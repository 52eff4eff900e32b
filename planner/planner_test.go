package planner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func newReg(t *testing.T) *registry.Registry {
	t.Helper()
	r, err := registry.New(registry.Config{ClusterName: "home", GracePeriod: 5 * time.Minute, Log: logrus.New()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func claim(host, ns, name, uid string, age time.Duration, ips ...string) *endpoint.Endpoint {
	return &endpoint.Endpoint{Hostname: host, Targets: ips, Sources: []endpoint.SourceRef{{Kind: "Ingress", Namespace: ns, Name: name, UID: uid, CreationTimestamp: t0.Add(-age)}}}
}

func owned(id, host, ip string, extra ...string) endpoint.Record {
	return endpoint.Record{ID: id, Hostname: host, IP: ip, Version: "1", Tags: append([]string{"k8s-operator", "cluster:home"}, extra...)}
}

// server is the in-memory router-hosts server, with the operator's provider on it.
type server struct {
	svc  *inmemory.Service
	prov *routerhosts.Provider
}

func newServer(t *testing.T) *server {
	t.Helper()
	svc, conn := inmemory.DialTest(t)
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	return &server{svc: svc, prov: routerhosts.NewFromConn(conn, routerhosts.Options{Log: log})}
}

// sync plans, writes and learns, as the controller does.
func (s *server) sync(t *testing.T, p *Planner, mode Mode, eps ...*endpoint.Endpoint) *Sync {
	t.Helper()
	sy, err := p.Plan(context.Background(), eps, mode)
	if err != nil {
		t.Fatal(err)
	}
	p.Learn(sy, s.prov.ApplyChanges(context.Background(), sy.Changes), nil)
	return sy
}

// byHand adds an entry as a person would, with the router's CLI.
func (s *server) byHand(t *testing.T, host, ip string) {
	t.Helper()
	if err := plan.ErrorOf(s.prov.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Create,
		New: &endpoint.Record{Hostname: host, IP: ip, Tags: []string{"mine"}}}})); err != nil {
		t.Fatal(err)
	}
}

func actions(cs []plan.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Action)+" "+c.Hostname())
	}
	return out
}

// TestSyncModes: what each kind of sync reads of the server, for each kind of change, and
// what it sends. Every case starts from web.lan written and known.
func TestSyncModes(t *testing.T) {
	web := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	moved := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.2")
	nas := claim("nas.lan", "default", "nas", "uid-2", time.Hour, "10.0.0.5")
	db := claim("db.lan", "default", "db", "uid-3", time.Hour, "10.0.0.6")
	cases := []struct {
		name     string
		mode     Mode
		forget   bool   // the known state is in doubt (a failed write, a reconfiguration)
		hand     string // a hostname someone adds by hand at 10.0.0.5 first
		marked   bool   // web.lan was let go and its grace period is over
		eps      []*endpoint.Endpoint
		read     ReadKind
		lists    int64 // ListHosts calls
		searches int64 // SearchHosts calls
		plans    int   // the times the registry and the plan ran (0: once)
		ahead    bool  // the search ran beside the decision, not after it
		sent     []string
		fresh    bool // NeedFresh: a read of the whole server must follow
	}{
		{name: "the interval reads the whole server", mode: Full, eps: []*endpoint.Endpoint{web}, read: ReadServer, lists: 1},
		{name: "an event with nothing new reads nothing", mode: Event, eps: []*endpoint.Endpoint{web}, read: ReadKnown},
		{name: "a new address is written from the known state", mode: Event, eps: []*endpoint.Endpoint{moved}, read: ReadKnown, sent: []string{"update web.lan"}},
		{name: "a new hostname is searched and created in the same sync", mode: Event, eps: []*endpoint.Endpoint{web, nas}, read: ReadHost, searches: 1, ahead: true, sent: []string{"create nas.lan"}},
		{name: "a new hostname written by hand meanwhile is adopted, not doubled", mode: Event, hand: "nas.lan", eps: []*endpoint.Endpoint{web, nas}, read: ReadHost, searches: 1, ahead: true, plans: 2, sent: []string{"adopt nas.lan"}},
		{name: "new hostnames read the whole server", mode: Event, eps: []*endpoint.Endpoint{web, nas, db}, read: ReadServer, lists: 1, plans: 2, sent: []string{"create db.lan", "create nas.lan"}},
		{name: "a hostname let go is marked from the known state", mode: Event, eps: nil, read: ReadKnown, sent: []string{"mark web.lan"}},
		{name: "a deletion due waits for a read of the whole server", mode: Event, marked: true, eps: nil, read: ReadKnown, fresh: true},
		{name: "a full sync sends the deletion due", mode: Full, marked: true, eps: nil, read: ReadServer, lists: 1, sent: []string{"delete web.lan"}},
		{name: "an event sync in doubt reads the whole server", mode: Event, forget: true, eps: []*endpoint.Endpoint{moved}, read: ReadServer, lists: 1, sent: []string{"update web.lan"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			clk := testingclock.NewFakeClock(t0)
			p := New(newReg(t), s.prov, clk)
			s.sync(t, p, Full, web)
			if tc.marked {
				s.sync(t, p, Event)
				clk.Step(6 * time.Minute)
			}
			if tc.hand != "" {
				s.byHand(t, tc.hand, "10.0.0.5")
			}
			if tc.forget {
				p.Reset()
			}
			s.svc.ResetCalls()
			sy, err := p.Plan(context.Background(), tc.eps, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if sy.Read != tc.read || sy.NeedFresh != tc.fresh {
				t.Errorf("read %s, need fresh %v; want %s, %v", sy.Read, sy.NeedFresh, tc.read, tc.fresh)
			}
			if l, q := s.svc.Calls(inmemory.MethodList), s.svc.Calls(inmemory.MethodSearch); l != tc.lists || q != tc.searches {
				t.Errorf("ListHosts %d, SearchHosts %d; want %d, %d", l, q, tc.lists, tc.searches)
			}
			if sy.ahead != tc.ahead {
				t.Errorf("searched ahead of the decision: %v, want %v", sy.ahead, tc.ahead)
			}
			// A search that finds what was known of the hostname leaves the first plan standing.
			if want := max(tc.plans, 1); sy.plans != want {
				t.Errorf("planned %d times, want %d", sy.plans, want)
			}
			if got := actions(sy.Changes); !slices.Equal(got, tc.sent) {
				t.Errorf("sent %v, want %v", got, tc.sent)
			}
			// What it sends goes through, and the server ends with one line per address.
			results := s.prov.ApplyChanges(context.Background(), sy.Changes)
			if err := plan.ErrorOf(results); err != nil {
				t.Fatal(err)
			}
			if again := p.Learn(sy, results, nil); again != tc.fresh {
				t.Errorf("Learn asks for another sync: %v, want %v", again, tc.fresh)
			}
			recs, err := s.prov.Records(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, r := range recs {
				if k := r.Hostname + " " + r.IP; seen[k] {
					t.Errorf("two entries for %s", k)
				} else {
					seen[k] = true
				}
			}
		})
	}
}

// TestTheKnownStateFollowsTheWrites: after a sync's writes, the next event sync plans from
// what they stored, with no read; an entry changed by hand since is put back by the next full
// sync; a write that met a newer entry asks for a read of the whole server.
func TestTheKnownStateFollowsTheWrites(t *testing.T) {
	s := newServer(t)
	p := New(newReg(t), s.prov, testingclock.NewFakeClock(t0))
	web := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	s.sync(t, p, Full, web)
	moved := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.2")
	s.sync(t, p, Event, moved)
	s.svc.ResetCalls()
	if sy := s.sync(t, p, Event, moved); sy.Read != ReadKnown || len(sy.Changes) != 0 || s.svc.Calls(inmemory.MethodList) != 0 {
		t.Fatalf("the sync after an update: read %s, sent %v", sy.Read, actions(sy.Changes))
	}
	// Someone re-points it by hand: the known state does not know, the next full sync does.
	recs, _ := s.prov.Records(context.Background())
	hand := recs[0]
	hand.IP = "10.0.0.9"
	if err := plan.ErrorOf(s.prov.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Update, Old: &recs[0], New: &hand}})); err != nil {
		t.Fatal(err)
	}
	if sy := s.sync(t, p, Event, moved); len(sy.Changes) != 0 {
		t.Fatalf("an event sync saw a hand edit it cannot know of: %v", actions(sy.Changes))
	}
	if sy := s.sync(t, p, Full, moved); !slices.Equal(actions(sy.Changes), []string{"update web.lan"}) {
		t.Fatalf("the full sync after a hand edit sent %v", actions(sy.Changes))
	}
	// A write that fails puts the known state in doubt: the next sync reads the server.
	s.svc.SetFault(inmemory.MethodUpdate, status.Error(codes.Unavailable, "down"), 1)
	again := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.3")
	if sy := s.sync(t, p, Event, again); sy.Read != ReadKnown || len(sy.Changes) != 1 {
		t.Fatalf("the move: read %s, sent %v", sy.Read, actions(sy.Changes))
	}
	if sy := s.sync(t, p, Event, again); sy.Read != ReadServer || !slices.Equal(actions(sy.Changes), []string{"update web.lan"}) {
		t.Fatalf("the sync after a failed write read %s, sent %v; want the server read and the move sent", sy.Read, actions(sy.Changes))
	}
}

// TestAReadThatFailsSendsNothing: a server that cannot be listed or searched is an error, and
// nothing is planned from it; the known state is untouched by the failure.
func TestAReadThatFailsSendsNothing(t *testing.T) {
	web := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	nas := claim("nas.lan", "default", "nas", "uid-2", time.Hour, "10.0.0.5")
	for _, method := range []string{inmemory.MethodList, inmemory.MethodSearch} {
		t.Run(method, func(t *testing.T) {
			s := newServer(t)
			p := New(newReg(t), s.prov, testingclock.NewFakeClock(t0))
			s.sync(t, p, Full, web)
			s.svc.SetFault(method, status.Error(codes.Unavailable, "down"), 0)
			mode := Full
			if method == inmemory.MethodSearch {
				mode = Event
			}
			if sy, err := p.Plan(context.Background(), []*endpoint.Endpoint{nas}, mode); err == nil || sy != nil {
				t.Fatalf("a failed %s planned %v", method, sy)
			}
			s.svc.SetFault(method, nil, 0)
			if sy := s.sync(t, p, Full, web, nas); !slices.Equal(actions(sy.Changes), []string{"create nas.lan"}) {
				t.Fatalf("once the server answers: %v", actions(sy.Changes))
			}
		})
	}
}

// TestARefusedChangeWaitsForTheInterval: an event sync skips a change refused before,
// exactly as planned then; a full sync sends it again.
func TestARefusedChangeWaitsForTheInterval(t *testing.T) {
	s := newServer(t)
	p := New(newReg(t), s.prov, testingclock.NewFakeClock(t0))
	web := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	s.svc.SetFault(inmemory.MethodAdd, status.Error(codes.InvalidArgument, "no"), 1)
	sy := s.sync(t, p, Full, web)
	if len(sy.Changes) != 1 {
		t.Fatalf("first sync sent %v", actions(sy.Changes))
	}
	if sy := s.sync(t, p, Event, web); len(sy.Changes) != 0 || sy.Refused["web.lan"] == nil {
		t.Fatalf("an event sync sent %v, refused %v; want it skipped as refused", actions(sy.Changes), sy.Refused)
	}
	if sy := s.sync(t, p, Full, web); !slices.Equal(actions(sy.Changes), []string{"create web.lan"}) {
		t.Fatalf("the interval sent %v", actions(sy.Changes))
	}
}

// TestAStaleWriteIsPlannedAgainFromAWholeRead: a write that met an entry newer than it was
// planned from (another writer edited it between the read and the write) asks for a sync at
// once, which reads the whole server and sends the change on the entry as it is now: it is
// never skipped as refused. One sync at once per run of syncs that meet newer entries.
func TestAStaleWriteIsPlannedAgainFromAWholeRead(t *testing.T) {
	s := newServer(t)
	p := New(newReg(t), s.prov, testingclock.NewFakeClock(t0))
	s.sync(t, p, Full, claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1"))
	moved := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.2")
	// The other writer edits the entry just before each of the next `wins` UpdateHosts.
	wins := s.svc.WinUpdatesOf("web.lan")
	step := func(mode Mode) (*Sync, bool, []plan.Result) {
		t.Helper()
		sy, err := p.Plan(context.Background(), []*endpoint.Endpoint{moved}, mode)
		if err != nil {
			t.Fatal(err)
		}
		results := s.prov.ApplyChanges(context.Background(), sy.Changes)
		return sy, p.Learn(sy, results, nil), results
	}
	stale := func(results []plan.Result) bool {
		return len(results) == 1 && results[0].Err != nil && results[0].Err.Stale
	}

	wins.Store(2)
	if sy, again, results := step(Full); sy.Read != ReadServer || !stale(results) || !again {
		t.Fatalf("a stale write after a whole read: read %s, stale %v, again %v; want a sync at once", sy.Read, stale(results), again)
	}
	// The sync at once reads the whole server and sends the change again; the other writer
	// wins again, and no further sync at once follows.
	sy, again, results := step(Event)
	if sy.Read != ReadServer || len(sy.Refused) != 0 || !slices.Equal(actions(sy.Changes), []string{"update web.lan"}) || !stale(results) || again {
		t.Fatalf("the sync at once: read %s, refused %v, sent %v, stale %v, again %v; want a whole read, the change sent, no sync at once",
			sy.Read, sy.Refused, actions(sy.Changes), stale(results), again)
	}
	// The next sync (an event's) still reads the whole server, and the change goes through.
	sy, again, results = step(Event)
	if sy.Read != ReadServer || len(sy.Refused) != 0 || !slices.Equal(actions(sy.Changes), []string{"update web.lan"}) || plan.ErrorOf(results) != nil || again {
		t.Fatalf("the next sync: read %s, refused %v, sent %v, error %v, again %v; want the change written from a whole read",
			sy.Read, sy.Refused, actions(sy.Changes), plan.ErrorOf(results), again)
	}
	if e := s.svc.Store().Lookup("web.lan"); len(e) != 1 || e[0].GetIpAddress() != "10.0.0.2" {
		t.Fatalf("server has %v", e)
	}
}
