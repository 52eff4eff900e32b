package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// stubSource and recordingProvider exercise the loop's timing and failure rules only; the
// integration suite runs the real source and provider.
type stubSource struct {
	mu      sync.Mutex
	eps     []*endpoint.Endpoint
	err     error
	handler func()
	// starts, when set, is told the time of every read: every sync starts with one.
	starts chan time.Time
}

func (s *stubSource) Endpoints(context.Context) ([]*endpoint.Endpoint, error) {
	if s.starts != nil {
		s.starts <- time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eps, s.err
}
func (s *stubSource) AddEventHandler(h func()) { s.handler = h }

type recordingProvider struct {
	lists   atomic.Int64
	applies atomic.Int64
	starts  chan time.Time
	listErr error
}

func (p *recordingProvider) Records(context.Context) ([]endpoint.Record, error) {
	p.lists.Add(1)
	if p.starts != nil {
		p.starts <- time.Now()
	}
	return nil, p.listErr
}
func (p *recordingProvider) ApplyChanges(context.Context, []plan.Change) error {
	p.applies.Add(1)
	return nil
}

func newTestController(t *testing.T, src Source, prov Provider, minEvent time.Duration) *Controller {
	t.Helper()
	reg, err := registry.New(registry.Config{ClusterName: "t", GracePeriod: time.Minute, Log: logrus.New()})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	return New(Config{Sources: []Source{src}, Registry: reg, Provider: prov, Interval: time.Hour, MinEventSyncInterval: minEvent, Log: log})
}

func TestFailedSourceStopsBeforeReadingServer(t *testing.T) {
	src := &stubSource{err: errors.New("cache not synced")}
	prov := &recordingProvider{}
	c := newTestController(t, src, prov, time.Second)
	if _, err := c.SyncOnce(context.Background()); err == nil {
		t.Fatal("SyncOnce succeeded with a failing source")
	}
	if prov.lists.Load() != 0 || prov.applies.Load() != 0 {
		t.Fatalf("provider was called: %d lists, %d applies", prov.lists.Load(), prov.applies.Load())
	}
}

func TestFailedListAppliesNothing(t *testing.T) {
	src := &stubSource{eps: []*endpoint.Endpoint{{Hostname: "a.lan", Targets: []string{"10.0.0.1"}, Sources: []endpoint.SourceRef{{Kind: "Ingress", UID: "u"}}}}}
	prov := &recordingProvider{listErr: errors.New("unavailable")}
	c := newTestController(t, src, prov, time.Second)
	if _, err := c.SyncOnce(context.Background()); err == nil {
		t.Fatal("SyncOnce succeeded with a failing list")
	}
	if prov.applies.Load() != 0 {
		t.Fatal("changes applied after a failed list")
	}
}

func TestEventAfterQuietPeriodSyncsAtOnceAndBurstsCoalesce(t *testing.T) {
	src := &stubSource{starts: make(chan time.Time, 100)}
	prov := &recordingProvider{}
	c := newTestController(t, src, prov, 300*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	<-src.starts // the initial sync
	time.Sleep(400 * time.Millisecond)

	sent := time.Now()
	src.handler()
	got := <-src.starts
	if d := got.Sub(sent); d > 200*time.Millisecond {
		t.Fatalf("event after a quiet period waited %v", d)
	}
	// A burst right after a sync: one more sync, not before the minimum spacing.
	for i := 0; i < 20; i++ {
		src.handler()
		time.Sleep(5 * time.Millisecond)
	}
	next := <-src.starts
	// The spacing holds between the controller's own starts; the provider sees each start a
	// little later (after the sources are read), so a late first sighting shortens the gap it
	// measures by that lag. 10 ms allows for scheduling on a loaded machine; a broken spacing
	// (a sync right after the burst's first event) would show about 50 ms.
	if d := next.Sub(got); d < 290*time.Millisecond {
		t.Fatalf("burst sync started %v after the previous one, want about 300ms or more", d)
	}
	select {
	case extra := <-src.starts:
		t.Fatalf("burst caused a third sync at %v", extra.Sub(next))
	case <-time.After(500 * time.Millisecond):
	}
	cancel()
	<-done
}

func TestBackoff(t *testing.T) {
	c := New(Config{Interval: 10 * time.Second})
	for failures, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 30: 10 * time.Second} {
		if got := c.backoff(failures); got != want {
			t.Errorf("backoff(%d) = %v, want %v", failures, got, want)
		}
	}
}

func TestRunSyncsWhenAGracePeriodEnds(t *testing.T) {
	svc := inmemory.NewService(inmemory.NewStore())
	conn, stop, err := inmemory.Dial(svc)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	prov := routerhosts.NewFromConn(conn, routerhosts.Options{Log: log})
	// An entry this cluster owns that no source wants any more.
	if err := prov.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Create,
		New: &endpoint.Record{Hostname: "old.lan", IP: "10.0.0.1", Tags: []string{"k8s-operator", "cluster:t"}}}}); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(registry.Config{ClusterName: "t", GracePeriod: 500 * time.Millisecond, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Sources: []Source{&stubSource{}}, Registry: reg, Provider: prov, Interval: time.Hour, MinEventSyncInterval: time.Second, Log: log})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.Run(ctx) }()
	start := time.Now()
	for svc.Store().Len() != 0 {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the entry was not deleted within 5 s of a 500 ms grace period (interval is 1 h)")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("deleted after %v, before the grace period ended", d)
	}
}

// refusingProvider keeps entries in memory and refuses every write for one hostname, as the
// server refuses an invalid entry.
type refusingProvider struct {
	mu      sync.Mutex
	recs    []endpoint.Record
	refuse  string
	tries   map[string]int
	listErr error
	lists   atomic.Int64
}

func (p *refusingProvider) Records(context.Context) ([]endpoint.Record, error) {
	p.lists.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]endpoint.Record(nil), p.recs...), p.listErr
}

func (p *refusingProvider) ApplyChanges(_ context.Context, cs []plan.Change) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for i := range cs {
		c := &cs[i]
		p.tries[c.Hostname()]++
		if c.Hostname() == p.refuse {
			errs = append(errs, &plan.ChangeError{Change: c, Err: errors.New("InvalidArgument"), Refused: true})
			continue
		}
		if c.Action == plan.Create {
			n := *c.New
			n.ID = c.New.Hostname
			p.recs = append(p.recs, n)
		}
	}
	return errors.Join(errs...)
}

func (p *refusingProvider) count(host string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tries[host]
}

func claimOf(host string) *endpoint.Endpoint {
	return &endpoint.Endpoint{Hostname: host, Targets: []string{"10.0.0.1"}, Sources: []endpoint.SourceRef{{Kind: "Ingress", Namespace: "d", Name: host, UID: host}}}
}

func TestRefusedWriteNeverSlowsTheOthers(t *testing.T) {
	src := &stubSource{eps: []*endpoint.Endpoint{claimOf("bad.lan")}}
	prov := &refusingProvider{refuse: "bad.lan", tries: map[string]int{}}
	c := newTestController(t, src, prov, 20*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	waitUntil(t, time.Second, func() bool { return prov.count("bad.lan") == 1 })

	// A new object right after the refusal syncs within the batching window, not after a
	// failure backoff, and the refused hostname is not retried by event-triggered syncs.
	for i, host := range []string{"good.lan", "good2.lan", "good3.lan"} {
		src.mu.Lock()
		src.eps = append(src.eps, claimOf(host))
		src.mu.Unlock()
		sent := time.Now()
		src.handler()
		waitUntil(t, time.Second, func() bool { return prov.count(host) == 1 })
		if d := time.Since(sent); d > 300*time.Millisecond {
			t.Fatalf("change %d after a refused write took %v", i, d)
		}
	}
	if n := prov.count("bad.lan"); n != 1 {
		t.Fatalf("the refused hostname was tried %d times by event-triggered syncs; want it left to the interval", n)
	}
	// The user fixes (here: changes) the refused object: that is a new change, sent at once.
	src.mu.Lock()
	src.eps[0] = claimOf("bad.lan")
	src.eps[0].Targets = []string{"10.0.0.2"}
	src.mu.Unlock()
	src.handler()
	waitUntil(t, time.Second, func() bool { return prov.count("bad.lan") == 2 })
	// A full sync (the interval's) retries it.
	cancel()
	<-done
	if _, err := c.SyncOnce(context.Background()); err == nil {
		t.Fatal("SyncOnce hid a refused write")
	}
	if n := prov.count("bad.lan"); n != 3 {
		t.Fatalf("full sync tried the refused hostname %d times in all, want 3", n)
	}
}

func TestAuthenticationFailureWaitsForNewCredentials(t *testing.T) {
	src := &stubSource{eps: []*endpoint.Endpoint{claimOf("a.lan")}}
	prov := &refusingProvider{tries: map[string]int{}, listErr: fmt.Errorf("ListHosts: %w: tls: unknown certificate authority", provider.ErrAuthentication)}
	c := newTestController(t, src, prov, 20*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	waitUntil(t, time.Second, func() bool { return prov.lists.Load() == 1 })
	// A transient failure would be retried after 1 s; events do not cut the wait either.
	src.handler()
	time.Sleep(1500 * time.Millisecond)
	if n := prov.lists.Load(); n != 1 {
		t.Fatalf("%d ListHosts while authentication fails and the certificate is unchanged; want no retry before the interval", n)
	}
	prov.mu.Lock()
	prov.listErr = nil
	prov.mu.Unlock()
	sent := time.Now()
	c.CredentialsChanged()
	waitUntil(t, time.Second, func() bool { return prov.count("a.lan") == 1 })
	if d := time.Since(sent); d > 300*time.Millisecond {
		t.Fatalf("sync after a certificate change took %v", d)
	}
	cancel()
	<-done
}

func TestAFailedSyncIsRetriedWhenTheServerAnswers(t *testing.T) {
	src := &stubSource{eps: []*endpoint.Endpoint{claimOf("a.lan")}}
	prov := &refusingProvider{tries: map[string]int{}, listErr: errors.New("ListHosts: Unavailable: connection refused")}
	c := newTestController(t, src, prov, 20*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	waitUntil(t, time.Second, func() bool { return prov.lists.Load() == 1 })
	// The backoff after the first failure is a second; the server's return cuts it short,
	// once per run of failures: the retry fails too, and a second return waits the backoff.
	c.ServerReachable()
	waitUntil(t, 300*time.Millisecond, func() bool { return prov.lists.Load() == 2 })
	c.ServerReachable()
	time.Sleep(500 * time.Millisecond)
	if n := prov.lists.Load(); n != 2 {
		t.Fatalf("%d ListHosts after a second return within one run of failures; want the backoff", n)
	}
	prov.mu.Lock()
	prov.listErr = nil
	prov.mu.Unlock()
	waitUntil(t, 3*time.Second, func() bool { return prov.count("a.lan") == 1 })
	// A new run of failures may be cut short again.
	prov.mu.Lock()
	prov.listErr = errors.New("ListHosts: Unavailable: connection refused")
	prov.mu.Unlock()
	src.handler()
	waitUntil(t, 2*time.Second, func() bool { return prov.lists.Load() == 4 })
	prov.mu.Lock()
	prov.listErr = nil
	prov.mu.Unlock()
	sent := time.Now()
	c.ServerReachable()
	waitUntil(t, time.Second, func() bool { return prov.lists.Load() == 5 })
	if d := time.Since(sent); d > 300*time.Millisecond {
		t.Fatalf("sync after the server came back took %v", d)
	}
	// Without a failure to retry, the news starts no sync.
	lists := prov.lists.Load()
	c.ServerReachable()
	time.Sleep(200 * time.Millisecond)
	if n := prov.lists.Load(); n != lists {
		t.Fatalf("%d ListHosts after ServerReachable in steady state, want none", n-lists)
	}
	cancel()
	<-done
}

func waitUntil(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// knownStateRig is a controller on the in-memory server with a settable clock, for the rules
// of event-triggered syncs that plan from the known state.
type knownStateRig struct {
	c   *Controller
	svc *inmemory.Service
	src *stubSource
	now time.Time
}

func newKnownStateRig(t *testing.T) *knownStateRig {
	t.Helper()
	svc := inmemory.NewService(inmemory.NewStore())
	conn, stop, err := inmemory.Dial(svc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	reg, err := registry.New(registry.Config{ClusterName: "t", GracePeriod: time.Minute, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	r := &knownStateRig{svc: svc, src: &stubSource{}, now: time.Now()}
	prov := routerhosts.NewFromConn(conn, routerhosts.Options{Log: log, StillApplies: reg.StillApplies})
	r.c = New(Config{Sources: []Source{r.src}, Registry: reg, Provider: prov, Interval: time.Hour, Log: log, Now: func() time.Time { return r.now }})
	return r
}

func (r *knownStateRig) want(eps ...*endpoint.Endpoint) {
	r.src.mu.Lock()
	defer r.src.mu.Unlock()
	r.src.eps = eps
}

func (r *knownStateRig) sync(t *testing.T, full bool) *Outcome {
	t.Helper()
	out, err := r.c.sync(context.Background(), full)
	var refused *RefusedError
	if err != nil && !errors.As(err, &refused) {
		t.Fatalf("sync: %v", err)
	}
	return out
}

func at(host string, ips ...string) *endpoint.Endpoint {
	e := claimOf(host)
	e.Targets = ips
	return e
}

func TestEventSyncsPlanFromTheKnownState(t *testing.T) {
	r := newKnownStateRig(t)
	r.want(at("a.lan", "10.0.0.1"))
	r.sync(t, true)
	r.svc.ResetCalls()

	// A change: one UpdateHost, no ListHosts; the stored version is known, so the next
	// change needs no re-read either.
	r.want(at("a.lan", "10.0.0.2"))
	if out := r.sync(t, false); out.Fresh || len(out.Changes) != 1 {
		t.Fatalf("outcome = %+v, want one change planned from the known state", out)
	}
	r.want(at("a.lan", "10.0.0.3"))
	r.sync(t, false)
	r.sync(t, false)
	if c := r.svc.CallCounts(); c["ListHosts"] != 0 || c["UpdateHost"] != 2 || c["GetHost"] != 0 {
		t.Fatalf("calls = %v, want two UpdateHost and nothing else", c)
	}
	if e := r.svc.Store().Lookup("a.lan"); len(e) != 1 || e[0].GetIpAddress() != "10.0.0.3" {
		t.Fatalf("server has %v", e)
	}

	// The hostname goes: the mark may be sent from the known state, the deletion may not.
	r.want()
	r.sync(t, false)
	r.now = r.now.Add(2 * time.Minute)
	r.svc.ResetCalls()
	out := r.sync(t, false)
	if !out.NeedFresh || len(out.Changes) != 0 || r.svc.Calls("DeleteHost") != 0 {
		t.Fatalf("outcome %+v, calls %v: a deletion due must wait for a fresh read", out, r.svc.CallCounts())
	}
	if out := r.sync(t, true); !out.Fresh || len(out.Changes) != 1 || out.Changes[0].Action != plan.Delete {
		t.Fatalf("fresh sync = %+v, want the deletion", out)
	}
}

// TestADuplicateIsDeletedBeforeItsAddressIsTaken: an adopted entry that takes over the address
// of an entry the operator created never stands beside it. An event sync, which may not
// delete, sends nothing for the hostname; the fresh read that follows deletes the created
// entry before re-pointing the adopted one. (Found by the soak.)
func TestADuplicateIsDeletedBeforeItsAddressIsTaken(t *testing.T) {
	r := newKnownStateRig(t)
	hand, err := r.svc.Store().Add(&pb.AddHostRequest{IpAddress: "192.168.1.9", Hostname: "a.lan", Tags: []string{"manual"}})
	if err != nil {
		t.Fatal(err)
	}
	r.want(at("a.lan", "10.0.0.1", "10.0.0.2"))
	r.sync(t, true) // adopts the hand-made entry for 10.0.0.1, creates 10.0.0.2
	if e := r.svc.Store().Lookup("a.lan"); len(e) != 2 {
		t.Fatalf("server has %v", e)
	}
	r.want(at("a.lan", "10.0.0.2"))
	r.svc.ResetCalls()
	if out := r.sync(t, false); !out.NeedFresh || len(out.Changes) != 0 || r.svc.WriteCalls() != 0 {
		t.Fatalf("event sync: %+v, calls %v; want nothing sent for a.lan until a fresh read", out, r.svc.CallCounts())
	}
	r.c.stale.Store(true) // as Run does on NeedFresh
	out := r.sync(t, false)
	if !out.Fresh || len(out.Changes) != 2 || out.Changes[0].Action != plan.Delete || !out.Changes[0].Duplicate {
		t.Fatalf("fresh sync: %+v; want the created entry deleted at once and the adopted one re-pointed", out.Changes)
	}
	if e := r.svc.Store().Lookup("a.lan"); len(e) != 1 || e[0].GetId() != hand.GetId() || e[0].GetIpAddress() != "10.0.0.2" {
		t.Fatalf("server has %v, want the adopted entry alone at 10.0.0.2", e)
	}
}

func TestAStaleKnownStateIsReadAgain(t *testing.T) {
	r := newKnownStateRig(t)
	r.want(at("a.lan", "10.0.0.1"))
	r.sync(t, true)
	// Someone deletes the entry; the known state still has it.
	e := r.svc.Store().Lookup("a.lan")[0]
	if err := r.svc.Store().Delete(e.GetId(), nil); err != nil {
		t.Fatal(err)
	}
	r.want(at("a.lan", "10.0.0.2"))
	if out := r.sync(t, false); out.Fresh || !out.NeedFresh {
		t.Fatalf("outcome = %+v; an update that met no entry must ask for a fresh read", out)
	}
	if out := r.sync(t, false); !out.Fresh {
		t.Fatal("the sync after a stale write did not read the server")
	}
	if e := r.svc.Store().Lookup("a.lan"); len(e) != 1 || e[0].GetIpAddress() != "10.0.0.2" {
		t.Fatalf("server has %v", e)
	}

	// An entry made by hand after the last read, with an address of its own: a create from the
	// known state would put a second line beside it for good, so creates wait for the fresh
	// read, which adopts the hand-made line and re-points it.
	r.svc.ResetCalls()
	if _, err := r.svc.Store().Add(&pb.AddHostRequest{IpAddress: "10.0.0.8", Hostname: "b.lan", Tags: []string{"manual"}}); err != nil {
		t.Fatal(err)
	}
	r.want(at("a.lan", "10.0.0.2"), at("b.lan", "10.0.0.9"))
	if out := r.sync(t, false); !out.NeedFresh || len(out.Changes) != 0 || r.svc.Calls("AddHost") != 0 {
		t.Fatalf("outcome = %+v, calls %v; a create must wait for a fresh read", out, r.svc.CallCounts())
	}
	if out := r.sync(t, true); len(out.Changes) != 1 || out.Changes[0].Action != plan.Adopt {
		t.Fatalf("fresh sync = %+v, want the adoption", out.Changes)
	}
	if e := r.svc.Store().Lookup("b.lan"); len(e) != 1 || e[0].GetIpAddress() != "10.0.0.9" {
		t.Fatalf("b.lan entries = %v, want the hand-made line re-pointed and nothing beside it", e)
	}
}

func TestARefusedDeleteIsHeldBackWithoutReadingTheServerAgain(t *testing.T) {
	r := newKnownStateRig(t)
	r.want(at("a.lan", "10.0.0.1"))
	r.sync(t, true)
	r.want()
	r.sync(t, true) // marked
	r.now = r.now.Add(2 * time.Minute)
	r.svc.SetFault(inmemory.MethodDelete, status.Error(codes.FailedPrecondition, "locked"), 0)
	r.sync(t, true) // the deletion falls due and is refused
	r.svc.ResetCalls()
	for i := 0; i < 3; i++ {
		if out := r.sync(t, false); out.NeedFresh {
			t.Fatalf("event sync %d asks for a fresh read for a deletion refused before: %+v", i, out)
		}
	}
	if c := r.svc.CallCounts(); c["DeleteHost"] != 0 || c["ListHosts"] > 1 {
		t.Fatalf("calls = %v; the refused deletion waits for the interval", c)
	}
}

func TestTheIntervalsFullReadIsNotPostponedByEvents(t *testing.T) {
	r := newKnownStateRig(t)
	r.c.cfg.MinEventSyncInterval, r.c.cfg.Now = 20*time.Millisecond, time.Now
	live := *r.c.settings()
	live.Interval = 300 * time.Millisecond
	r.c.live.Store(&live)
	r.want(at("a.lan", "10.0.0.1"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.c.Run(ctx); close(done) }()
	// An event every 50 ms for 1.2 s: event-triggered syncs plan from the known state, and the
	// full read still comes every 300 ms.
	for end := time.Now().Add(1200 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		r.src.handler()
	}
	cancel()
	<-done
	if n := r.svc.Calls("ListHosts"); n < 3 || n > 6 {
		t.Fatalf("%d ListHosts in 1.2 s at a 300 ms interval with events every 50 ms; want about 4", n)
	}
}
