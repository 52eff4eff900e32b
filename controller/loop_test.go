package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// loop runs the controller's loop on a fake clock. The test learns every schedule the loop
// waits on and moves the clock to it: nothing sleeps, and nothing depends on how fast the
// machine is.
type loop struct {
	t      *testing.T
	c      *Controller
	clock  *testingclock.FakeClock
	scheds chan Schedule
}

var loopT0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// startLoop runs cfg's loop, with an hour's interval and a registry of cluster t (a minute's
// grace) unless cfg says otherwise.
func startLoop(t *testing.T, cfg Config) *loop {
	t.Helper()
	l := &loop{t: t, clock: testingclock.NewFakeClock(loopT0), scheds: make(chan Schedule, 1000)}
	cfg.Clock, cfg.Scheduled = l.clock, func(s Schedule) { l.scheds <- s }
	if cfg.Log == nil {
		log := logrus.New()
		log.SetLevel(logrus.PanicLevel)
		cfg.Log = log
	}
	if cfg.Registry == nil {
		reg, err := registry.New(registry.Config{ClusterName: "t", GracePeriod: time.Minute, Log: cfg.Log})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Registry = reg
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Hour
	}
	l.c = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// waits returns the next schedule the loop waits on. The limit only catches a loop that hangs.
func (l *loop) waits() Schedule {
	l.t.Helper()
	select {
	case s := <-l.scheds:
		return s
	case <-time.After(10 * time.Second):
		l.t.Fatal("the loop never came to wait")
	}
	return Schedule{}
}

// waitsFor skips the schedules the loop waited on until one that cond accepts.
func (l *loop) waitsFor(cond func(Schedule) bool) Schedule {
	l.t.Helper()
	for {
		if s := l.waits(); cond(s) {
			return s
		}
	}
}

// at is loopT0 plus d.
func at(d time.Duration) time.Time { return loopT0.Add(d) }

// is reports whether a schedule waits for a sync of mode at t.
func is(t time.Time, mode planner.Mode) func(Schedule) bool {
	return func(s Schedule) bool { return s.Next.Equal(t) && s.Mode == mode }
}

// countingSource counts its reads: every sync starts with one.
type countingSource struct {
	stubSource
	reads atomic.Int64
}

func (s *countingSource) Endpoints(ctx context.Context) ([]*endpoint.Endpoint, error) {
	s.reads.Add(1)
	return s.stubSource.Endpoints(ctx)
}

func TestEventAfterQuietPeriodSyncsAtOnceAndBurstsCoalesce(t *testing.T) {
	src := &countingSource{}
	l := startLoop(t, Config{Sources: []EndpointSource{src}, Provider: &recordingProvider{}, MinEventSyncInterval: 300 * time.Millisecond})
	l.waitsFor(is(at(time.Hour), planner.Full)) // after the first sync
	l.clock.Step(10 * time.Second)              // a quiet period

	src.handler()
	l.waitsFor(is(at(time.Hour), planner.Full))
	if n := src.reads.Load(); n != 2 {
		t.Fatalf("%d syncs after an event that followed a quiet period, want it synced at once", n)
	}
	// A burst right after that sync: one more sync, no sooner than the spacing.
	for range 20 {
		src.handler()
	}
	s := l.waitsFor(is(at(10*time.Second+300*time.Millisecond), planner.Event))
	l.clock.SetTime(s.Next.Add(-time.Millisecond))
	if n := src.reads.Load(); n != 2 {
		t.Fatalf("%d syncs before the spacing ended", n)
	}
	l.clock.SetTime(s.Next)
	l.waitsFor(is(at(time.Hour), planner.Full))
	if n := src.reads.Load(); n != 3 {
		t.Fatalf("%d syncs for a burst, want one more", n)
	}
}

func TestRunSyncsWhenAGracePeriodEnds(t *testing.T) {
	svc, conn := inmemory.DialTest(t)
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	prov := routerhosts.NewFromConn(conn, routerhosts.Options{Log: log})
	reg, err := registry.New(registry.Config{ClusterName: "t", GracePeriod: 5 * time.Second, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	// An entry this cluster writes for an object, which is then deleted.
	src := &stubSource{eps: []*endpoint.Endpoint{claimOf("old.lan")}}
	l := startLoop(t, Config{Sources: []EndpointSource{src}, Registry: reg, Provider: prov, MinEventSyncInterval: time.Second, Log: log})
	first := l.waitsFor(func(Schedule) bool { return svc.Store().Len() == 1 })
	src.mu.Lock()
	src.eps = nil
	src.mu.Unlock()
	l.clock.SetTime(first.Next)
	// The full sync marks it; the loop wakes when the grace period ends, not at the interval.
	s := l.waits()
	if want := first.Next.Add(5*time.Second + expirySlack); !s.Next.Equal(want) || svc.Store().Len() != 1 {
		t.Fatalf("after the mark: next sync at t0%+v with %d entries, want at t0%+v", s.Next.Sub(loopT0), svc.Store().Len(), want.Sub(loopT0))
	}
	l.clock.SetTime(s.Next)
	l.waitsFor(is(s.Next.Add(time.Hour), planner.Full)) // an interval after that full sync
	if n := svc.Store().Len(); n != 0 {
		t.Fatalf("%d entries after the grace period", n)
	}
}

func TestRefusedWriteNeverSlowsTheOthers(t *testing.T) {
	src := &stubSource{eps: []*endpoint.Endpoint{claimOf("bad.lan")}}
	prov := &refusingProvider{refuse: "bad.lan", tries: map[string]int{}}
	l := startLoop(t, Config{Sources: []EndpointSource{src}, Provider: prov, MinEventSyncInterval: 20 * time.Millisecond})
	// A refusal is no failure: the next sync is the interval's, not a backoff's.
	l.waitsFor(is(at(time.Hour), planner.Full))
	if n := prov.count("bad.lan"); n != 1 {
		t.Fatalf("bad.lan tried %d times", n)
	}
	// New objects after the refusal sync at once, and event-triggered syncs leave the refused
	// hostname to the interval.
	for i, host := range []string{"good.lan", "good2.lan", "good3.lan"} {
		l.clock.Step(time.Second)
		src.mu.Lock()
		src.eps = append(src.eps, claimOf(host))
		src.mu.Unlock()
		src.handler()
		l.waitsFor(is(at(time.Hour), planner.Full))
		if n := prov.count(host); n != 1 {
			t.Fatalf("change %d after a refused write: %s tried %d times, want once at once", i, host, n)
		}
	}
	if n := prov.count("bad.lan"); n != 1 {
		t.Fatalf("the refused hostname was tried %d times by event-triggered syncs; want it left to the interval", n)
	}
	// The user changes the refused object: that is a new change, sent at once.
	l.clock.Step(time.Second)
	src.mu.Lock()
	src.eps[0] = claimOf("bad.lan")
	src.eps[0].Targets = []string{"10.0.0.2"}
	src.mu.Unlock()
	src.handler()
	l.waitsFor(is(at(time.Hour), planner.Full))
	if n := prov.count("bad.lan"); n != 2 {
		t.Fatalf("bad.lan tried %d times after it changed, want 2", n)
	}
	// The interval's full sync tries it again.
	l.clock.SetTime(at(time.Hour))
	l.waitsFor(is(at(2*time.Hour), planner.Full))
	if n := prov.count("bad.lan"); n != 3 {
		t.Fatalf("the full sync tried the refused hostname %d times in all, want 3", n)
	}
}

func TestAuthenticationFailureWaitsForNewCredentials(t *testing.T) {
	src := &stubSource{eps: []*endpoint.Endpoint{claimOf("a.lan")}}
	prov := &refusingProvider{tries: map[string]int{}, listErr: fmt.Errorf("ListHosts: %w: tls: unknown certificate authority", provider.ErrAuthentication)}
	l := startLoop(t, Config{Sources: []EndpointSource{src}, Provider: prov, MinEventSyncInterval: 20 * time.Millisecond})
	// Not retried before the interval: neither a backoff nor an event cuts the wait.
	l.waitsFor(is(at(time.Hour), planner.Full))
	l.clock.Step(2 * time.Second)
	src.handler()
	l.waitsFor(is(at(time.Hour), planner.Full))
	if n := prov.lists.Load(); n != 1 {
		t.Fatalf("%d ListHosts while authentication fails and the certificate is unchanged; want no retry before the interval", n)
	}
	// New certificate files: a sync at once.
	prov.mu.Lock()
	prov.listErr = nil
	prov.mu.Unlock()
	l.c.CredentialsChanged()
	l.waitsFor(is(at(2*time.Second+time.Hour), planner.Full))
	if n := prov.count("a.lan"); n != 1 {
		t.Fatalf("a.lan written %d times after the certificate changed, want once at once", n)
	}
}

func TestAFailedSyncIsRetriedWhenTheServerAnswers(t *testing.T) {
	src := &stubSource{eps: []*endpoint.Endpoint{claimOf("a.lan")}}
	down := errors.New("ListHosts: Unavailable: connection refused")
	prov := &refusingProvider{tries: map[string]int{}, listErr: down}
	setErr := func(err error) { prov.mu.Lock(); prov.listErr = err; prov.mu.Unlock() }
	l := startLoop(t, Config{Sources: []EndpointSource{src}, Provider: prov, MinEventSyncInterval: 20 * time.Millisecond})
	l.waitsFor(is(at(time.Second), planner.Full)) // the first failure's backoff
	// The server's return cuts it short, once per run of failures: the retry fails too, and
	// a second return waits out the backoff.
	l.clock.Step(100 * time.Millisecond)
	l.c.ServerReachable()
	l.waitsFor(is(at(100*time.Millisecond+2*time.Second), planner.Full))
	l.c.ServerReachable()
	l.waitsFor(is(at(100*time.Millisecond+2*time.Second), planner.Full))
	if n := prov.lists.Load(); n != 2 {
		t.Fatalf("%d ListHosts after a second return within one run of failures; want the backoff", n)
	}
	setErr(nil)
	l.clock.SetTime(at(100*time.Millisecond + 2*time.Second))
	l.waitsFor(is(at(100*time.Millisecond+2*time.Second+time.Hour), planner.Full))
	if n := prov.count("a.lan"); n != 1 {
		t.Fatalf("a.lan written %d times", n)
	}
	// A new run of failures may be cut short again.
	setErr(down)
	l.clock.Step(10 * time.Second)
	src.handler()
	l.waitsFor(is(at(12100*time.Millisecond+time.Second), planner.Full))
	setErr(nil)
	l.c.ServerReachable()
	l.waitsFor(is(at(12100*time.Millisecond+time.Hour), planner.Full))
	if n := prov.lists.Load(); n != 5 {
		t.Fatalf("%d ListHosts, want the failed event sync retried at once on the server's return", n)
	}
	// Without a failure to retry, the news starts no sync.
	l.c.ServerReachable()
	l.waitsFor(is(at(12100*time.Millisecond+time.Hour), planner.Full))
	if n := prov.lists.Load(); n != 5 {
		t.Fatalf("%d ListHosts after ServerReachable in steady state, want none", n)
	}
}

func TestTheIntervalsFullReadIsNotPostponedByEvents(t *testing.T) {
	r := newKnownStateRig(t)
	r.want(claimAt("a.lan", "10.0.0.1"))
	l := startLoop(t, Config{Sources: []EndpointSource{r.src}, Registry: r.c.cfg.Registry, Provider: r.c.cfg.Provider, Interval: 300 * time.Millisecond,
		MinEventSyncInterval: 20 * time.Millisecond})
	l.waitsFor(is(at(300*time.Millisecond), planner.Full))
	// An event every 50 ms for 1.2 s: event-triggered syncs plan from the known state, and the
	// full read still comes every 300 ms.
	for i := 1; i <= 24; i++ {
		l.clock.SetTime(at(time.Duration(i) * 50 * time.Millisecond))
		r.src.handler()
		next := at(time.Duration(i/6+1) * 300 * time.Millisecond)
		l.waitsFor(is(next, planner.Full))
	}
	if n := r.svc.Calls("ListHosts"); n != 5 {
		t.Fatalf("%d ListHosts in 1.2 s at a 300 ms interval with events every 50 ms; want 5 (at 0, 300, 600, 900 and 1,200 ms)", n)
	}
}

// TestARequestedSyncIsTheLoops: SyncNow is answered by a full sync of the loop that starts
// after the request, at once even during a failure's backoff.
func TestARequestedSyncIsTheLoops(t *testing.T) {
	src := &stubSource{eps: []*endpoint.Endpoint{claimOf("a.lan")}}
	down := errors.New("ListHosts: Unavailable: connection refused")
	prov := &refusingProvider{tries: map[string]int{}, listErr: down}
	l := startLoop(t, Config{Sources: []EndpointSource{src}, Provider: prov, MinEventSyncInterval: time.Second})
	l.waitsFor(is(at(time.Second), planner.Full)) // the first failure's backoff
	if err := l.c.SyncNow(context.Background()); err == nil || !errors.Is(err, down) {
		t.Fatalf("SyncNow during an outage: %v, want the sync's error", err)
	}
	if n := prov.lists.Load(); n != 2 {
		t.Fatalf("%d reads, want the request's sync at once", n)
	}
	prov.mu.Lock()
	prov.listErr = nil
	prov.mu.Unlock()
	if err := l.c.SyncNow(context.Background()); err != nil {
		t.Fatalf("SyncNow: %v", err)
	}
	if n := prov.count("a.lan"); n != 1 {
		t.Fatalf("a.lan written %d times, want once by the request's sync", n)
	}
	// A caller that stops waiting gets its context's error; the loop goes on.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.c.SyncNow(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("SyncNow with a cancelled context: %v", err)
	}
}

// TestAStaleWriteIsPlannedAgainOnceFromAWholeRead: a write the server refuses because the
// entry changed since it was read is followed at once by one sync, which reads the whole
// server and writes the change on the entry as it is now. A writer that keeps winning the race
// gets that one sync and no more: the loop goes back to its schedule, the hostname is reported
// as failed, and the syncs that follow read the whole server until a write goes through.
func TestAStaleWriteIsPlannedAgainOnceFromAWholeRead(t *testing.T) {
	// start runs the loop with a.lan written, and another writer that edits the entry just
	// before each of the operator's next `wins` UpdateHosts; move points the claim at ip and
	// returns the reports of the syncs that follow, up to the loop's wait for the interval.
	start := func(t *testing.T, wins int64) (r *knownStateRig, l *loop, move func(ip string) []*Report) {
		r = newKnownStateRig(t)
		rec := &reportRecorder{}
		r.want(claimAt("a.lan", "10.0.0.1"))
		l = startLoop(t, Config{Sources: []EndpointSource{r.src}, Registry: r.c.cfg.Registry, Provider: r.c.cfg.Provider, Reporters: []Reporter{rec},
			MinEventSyncInterval: 20 * time.Millisecond})
		l.waitsFor(is(at(time.Hour), planner.Full))
		r.svc.WinUpdatesOf("a.lan").Store(wins)
		move = func(ip string) []*Report {
			t.Helper()
			l.clock.Step(10 * time.Second)
			r.svc.ResetCalls()
			before := len(rec.reports)
			r.want(claimAt("a.lan", ip))
			r.src.handler()
			l.waitsFor(is(at(time.Hour), planner.Full))
			return rec.reports[before:]
		}
		t.Cleanup(func() { r.svc.SetBefore(nil) })
		return r, l, move
	}
	ipOf := func(r *knownStateRig) string { return r.svc.Store().Lookup("a.lan")[0].GetIpAddress() }
	// said is what each sync read, whether it asked for another at once, and what failed.
	said := func(reps []*Report) string {
		var out []string
		for _, rep := range reps {
			out = append(out, fmt.Sprintf("{read %s, again %v, failed %d}", rep.Read, rep.Again, len(rep.Failed)))
		}
		return strings.Join(out, " ")
	}

	t.Run("another writer wins once", func(t *testing.T) {
		r, _, move := start(t, 1)
		reps := move("10.0.0.2")
		if len(reps) != 2 || !reps[0].Again || len(reps[0].Failed) != 0 || reps[1].Read != planner.ReadServer || reps[1].Again || len(reps[1].Failed) != 0 {
			t.Fatalf("%d syncs %s; want the stale one asking for one more at once, not failed, and that one reading the whole server", len(reps), said(reps))
		}
		if c := r.svc.CallCounts(); c["UpdateHost"] != 2 || c["ListHosts"] != 1 || c["GetHost"] != 0 || ipOf(r) != "10.0.0.2" {
			t.Fatalf("calls %v, address %s; want the refused UpdateHost, one ListHosts, and the move written", c, ipOf(r))
		}
	})
	t.Run("another writer keeps winning", func(t *testing.T) {
		r, l, move := start(t, 1000)
		reps := move("10.0.0.2")
		if _, failed := reps[len(reps)-1].Failed["a.lan"]; len(reps) != 2 || !reps[0].Again || len(reps[0].Failed) != 0 ||
			reps[1].Read != planner.ReadServer || reps[1].Again || !failed {
			t.Fatalf("%d syncs %s; want one more at once, then the hostname reported failed and no sync at once", len(reps), said(reps))
		}
		if c := r.svc.CallCounts(); c["UpdateHost"] != 2 || c["ListHosts"] != 1 || ipOf(r) != "10.0.0.1" {
			t.Fatalf("calls %v, address %s; want two refused UpdateHosts and one ListHosts", c, ipOf(r))
		}
		// The next event's sync reads the whole server, and asks for none at once.
		reps = move("10.0.0.3")
		if c := r.svc.CallCounts(); len(reps) != 1 || reps[0].Read != planner.ReadServer || reps[0].Again || c["UpdateHost"] > 1 {
			t.Fatalf("%d syncs %s, calls %v; want one, reading the whole server", len(reps), said(reps), c)
		}
		// Once the other writer stops, the interval's sync writes the change.
		r.svc.SetBefore(nil)
		l.clock.SetTime(at(time.Hour))
		l.waitsFor(is(at(2*time.Hour), planner.Full))
		if ipOf(r) != "10.0.0.3" {
			t.Fatalf("after the other writer stopped: address %s; want the move written", ipOf(r))
		}
	})
}
