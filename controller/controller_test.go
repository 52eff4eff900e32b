package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	testingclock "k8s.io/utils/clock/testing"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/plan/plantest"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
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
func (p *recordingProvider) Search(context.Context, string) ([]endpoint.Record, error) {
	return nil, p.listErr
}
func (p *recordingProvider) ApplyChanges(_ context.Context, cs []plan.Change) []plan.Result {
	p.applies.Add(1)
	return plantest.Written(cs...)
}

func newTestController(t *testing.T, src EndpointSource, prov Provider, minEvent time.Duration) *Controller {
	t.Helper()
	reg, err := registry.New(registry.Config{ClusterName: "t", GracePeriod: time.Minute, Log: logrus.New()})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	return New(Config{Sources: []EndpointSource{src}, Registry: reg, Provider: prov, Interval: time.Hour, MinEventSyncInterval: minEvent, Log: log})
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

// shortProvider returns one result fewer than it was given changes.
type shortProvider struct{ recordingProvider }

func (p *shortProvider) ApplyChanges(ctx context.Context, cs []plan.Change) []plan.Result {
	return p.recordingProvider.ApplyChanges(ctx, cs)[1:]
}

// TestResultsThatDoNotPairFailTheSync: a provider that returns another number of results than
// it was given changes credits none of them; the sync fails as a whole and says why.
func TestResultsThatDoNotPairFailTheSync(t *testing.T) {
	src := &stubSource{eps: []*endpoint.Endpoint{claimOf("a.lan"), claimOf("b.lan")}}
	prov := &shortProvider{}
	c := newTestController(t, src, prov, time.Second)
	rep, err := c.SyncOnce(context.Background())
	if err == nil || !strings.Contains(err.Error(), "returned 1 results for 2 changes") {
		t.Fatalf("err = %v, want the provider's results unpaired", err)
	}
	if rep.Step != StepApply || len(rep.Results) != 2 || len(plan.Failures(rep.Results)) != 2 || len(rep.Entries) != 0 {
		t.Fatalf("stage %v, results %+v, entries %v; want every change failed and no entry credited", rep.Step, rep.Results, rep.Entries)
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

// TestTheDomainFilterIsTheRegistrys: the controller hands the registry every endpoint the
// sources read; the report's Endpoints are those the registry manages and Unmanaged the others,
// while Objects has every object. A sync whose read of the server fails reports on the objects
// the last decision managed.
func TestTheDomainFilterIsTheRegistrys(t *testing.T) {
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	reg, err := registry.New(registry.Config{ClusterName: "t", GracePeriod: time.Minute, DomainFilter: []string{"in.lan"}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	in, out := claimOf("a.in.lan"), claimOf("b.out.lan")
	prov, rec := &recordingProvider{}, &reportRecorder{}
	c := New(Config{Sources: []EndpointSource{&stubSource{eps: []*endpoint.Endpoint{in, out}}}, Reporters: []Reporter{rec}, Registry: reg,
		Provider: prov, Interval: time.Hour, Log: log})
	rep, err := c.SyncOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Endpoints) != 1 || rep.Endpoints[0] != in || len(rep.Unmanaged) != 1 || rep.Unmanaged[0] != out || len(rep.Objects) != 2 {
		t.Fatalf("endpoints %v, unmanaged %v, objects %d; want a.in.lan, b.out.lan and both objects", rep.Endpoints, rep.Unmanaged, len(rep.Objects))
	}
	if len(rep.Changes) != 1 || rep.Changes[0].Hostname() != "a.in.lan" {
		t.Fatalf("changes %v, want a.in.lan created alone", rep.Changes)
	}
	prov.listErr = errors.New("unavailable")
	if _, err := c.SyncOnce(context.Background()); err == nil {
		t.Fatal("SyncOnce succeeded with a failing list")
	}
	if failed := rec.reports[len(rec.reports)-1]; failed.Step != StepList || len(failed.Endpoints) != 1 || failed.Endpoints[0] != in || len(failed.Objects) != 2 {
		t.Fatalf("failed read: step %v, endpoints %v, objects %d; want a.in.lan's alone, and both objects", failed.Step, failed.Endpoints, len(failed.Objects))
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

// Search answers from what Records would; the records are few. It counts as a read.
func (p *refusingProvider) Search(ctx context.Context, host string) ([]endpoint.Record, error) {
	p.lists.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []endpoint.Record
	for _, r := range p.recs {
		if strings.EqualFold(r.Hostname, host) {
			out = append(out, r)
		}
	}
	return out, p.listErr
}

func (p *refusingProvider) ApplyChanges(_ context.Context, cs []plan.Change) []plan.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	results := make([]plan.Result, len(cs))
	for i := range cs {
		c := &cs[i]
		p.tries[c.Hostname()]++
		if c.Hostname() == p.refuse {
			results[i].Err = &plan.ChangeError{Change: *c, Err: errors.New("InvalidArgument"), Refused: true}
			continue
		}
		// Stored as planned: a create's result carries no ID, so the known state does not
		// learn it and the next event sync reads the server.
		results[i] = plantest.Written(*c)[0]
		if c.Action == plan.Create {
			n := *c.New
			n.ID = c.New.Hostname
			p.recs = append(p.recs, n)
		}
	}
	return results
}

func (p *refusingProvider) count(host string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tries[host]
}

func claimOf(host string) *endpoint.Endpoint {
	return &endpoint.Endpoint{Hostname: host, Targets: []string{"10.0.0.1"}, Sources: []endpoint.SourceRef{{Kind: "Ingress", Namespace: "d", Name: host, UID: host}}}
}

// knownStateRig is a controller on the in-memory server with a settable clock, for the rules
// of event-triggered syncs that plan from the known state.
type knownStateRig struct {
	c     *Controller
	svc   *inmemory.Service
	src   *stubSource
	clock *testingclock.FakeClock
}

func newKnownStateRig(t *testing.T) *knownStateRig {
	t.Helper()
	svc, conn := inmemory.DialTest(t)
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	reg, err := registry.New(registry.Config{ClusterName: "t", GracePeriod: time.Minute, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	r := &knownStateRig{svc: svc, src: &stubSource{}, clock: testingclock.NewFakeClock(time.Now())}
	prov := routerhosts.NewFromConn(conn, routerhosts.Options{Log: log})
	r.c = New(Config{Sources: []EndpointSource{r.src}, Registry: reg, Provider: prov, Interval: time.Hour, Log: log, Clock: r.clock})
	return r
}

func (r *knownStateRig) want(eps ...*endpoint.Endpoint) {
	r.src.mu.Lock()
	defer r.src.mu.Unlock()
	r.src.eps = eps
}

func (r *knownStateRig) sync(t *testing.T, full bool) *Report {
	t.Helper()
	mode := planner.Event
	if full {
		mode = planner.Full
	}
	out, err := r.c.sync(context.Background(), mode)
	var refused *RefusedError
	if err != nil && !errors.As(err, &refused) {
		t.Fatalf("sync: %v", err)
	}
	return out
}

func claimAt(host string, ips ...string) *endpoint.Endpoint {
	e := claimOf(host)
	e.Targets = ips
	return e
}

func TestEventSyncsPlanFromTheKnownState(t *testing.T) {
	r := newKnownStateRig(t)
	r.want(claimAt("a.lan", "10.0.0.1"))
	r.sync(t, true)
	r.svc.ResetCalls()

	// A change: one UpdateHost, no ListHosts; the stored version is known, so the next
	// change needs no re-read either.
	r.want(claimAt("a.lan", "10.0.0.2"))
	if out := r.sync(t, false); out.Read == planner.ReadServer || len(out.Changes) != 1 {
		t.Fatalf("outcome = %+v, want one change planned from the known state", out)
	}
	r.want(claimAt("a.lan", "10.0.0.3"))
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
	r.clock.Step(2 * time.Minute)
	r.svc.ResetCalls()
	out := r.sync(t, false)
	if !out.Again || len(out.Changes) != 0 || r.svc.Calls("DeleteHost") != 0 {
		t.Fatalf("outcome %+v, calls %v: a deletion due must wait for a fresh read", out, r.svc.CallCounts())
	}
	if out := r.sync(t, true); out.Read != planner.ReadServer || len(out.Changes) != 1 || out.Changes[0].Action != plan.Delete {
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
	r.want(claimAt("a.lan", "10.0.0.1", "10.0.0.2"))
	r.sync(t, true) // adopts the hand-made entry for 10.0.0.1, creates 10.0.0.2
	if e := r.svc.Store().Lookup("a.lan"); len(e) != 2 {
		t.Fatalf("server has %v", e)
	}
	r.want(claimAt("a.lan", "10.0.0.2"))
	r.svc.ResetCalls()
	if out := r.sync(t, false); !out.Again || len(out.Changes) != 0 || r.svc.WriteCalls() != 0 {
		t.Fatalf("event sync: %+v, calls %v; want nothing sent for a.lan until a fresh read", out, r.svc.CallCounts())
	}
	out := r.sync(t, false)
	if out.Read != planner.ReadServer || len(out.Changes) != 2 || out.Changes[0].Action != plan.Delete || !out.Changes[0].Duplicate {
		t.Fatalf("fresh sync: %+v; want the created entry deleted at once and the adopted one re-pointed", out.Changes)
	}
	if e := r.svc.Store().Lookup("a.lan"); len(e) != 1 || e[0].GetId() != hand.GetId() || e[0].GetIpAddress() != "10.0.0.2" {
		t.Fatalf("server has %v, want the adopted entry alone at 10.0.0.2", e)
	}
}

func TestAStaleKnownStateIsReadAgain(t *testing.T) {
	r := newKnownStateRig(t)
	r.want(claimAt("a.lan", "10.0.0.1"))
	r.sync(t, true)
	// Someone deletes the entry; the known state still has it.
	e := r.svc.Store().Lookup("a.lan")[0]
	if err := r.svc.Store().Delete(e.GetId(), nil); err != nil {
		t.Fatal(err)
	}
	r.want(claimAt("a.lan", "10.0.0.2"))
	if out := r.sync(t, false); out.Read == planner.ReadServer || !out.Again {
		t.Fatalf("outcome = %+v; an update that met no entry must ask for a fresh read", out)
	}
	if out := r.sync(t, false); out.Read != planner.ReadServer {
		t.Fatal("the sync after a stale write did not read the server")
	}
	if e := r.svc.Store().Lookup("a.lan"); len(e) != 1 || e[0].GetIpAddress() != "10.0.0.2" {
		t.Fatalf("server has %v", e)
	}

	// An entry made by hand after the last read, with an address of its own: a create from the
	// known state would put a second line beside it for good, so the event sync searches the
	// server for the new hostname, adopts the hand-made line and re-points it.
	r.svc.ResetCalls()
	if _, err := r.svc.Store().Add(&pb.AddHostRequest{IpAddress: "10.0.0.8", Hostname: "b.lan", Tags: []string{"manual"}}); err != nil {
		t.Fatal(err)
	}
	r.want(claimAt("a.lan", "10.0.0.2"), claimAt("b.lan", "10.0.0.9"))
	if out := r.sync(t, false); out.Read != planner.ReadHost || len(out.Changes) != 1 || out.Changes[0].Action != plan.Adopt ||
		r.svc.Calls("AddHost") != 0 || r.svc.Calls("ListHosts") != 0 {
		t.Fatalf("outcome = %+v, calls %v; want b.lan searched and its line adopted", out, r.svc.CallCounts())
	}
	if e := r.svc.Store().Lookup("b.lan"); len(e) != 1 || e[0].GetIpAddress() != "10.0.0.9" {
		t.Fatalf("b.lan entries = %v, want the hand-made line re-pointed and nothing beside it", e)
	}
}

func TestARefusedDeleteWaitsForTheIntervalWithoutReadingTheServerAgain(t *testing.T) {
	r := newKnownStateRig(t)
	r.want(claimAt("a.lan", "10.0.0.1"))
	r.sync(t, true)
	r.want()
	r.sync(t, true) // marked
	r.clock.Step(2 * time.Minute)
	r.svc.SetFault(inmemory.MethodDelete, status.Error(codes.FailedPrecondition, "locked"), 0)
	r.sync(t, true) // the deletion falls due and is refused
	r.svc.ResetCalls()
	for i := 0; i < 3; i++ {
		if out := r.sync(t, false); out.Again {
			t.Fatalf("event sync %d asks for a fresh read for a deletion refused before: %+v", i, out)
		}
	}
	if c := r.svc.CallCounts(); c["DeleteHost"] != 0 || c["ListHosts"] > 1 {
		t.Fatalf("calls = %v; the refused deletion waits for the interval", c)
	}
}

// reportRecorder keeps every report.
type reportRecorder struct{ reports []*Report }

func (r *reportRecorder) Report(_ context.Context, rep *Report) { r.reports = append(r.reports, rep) }

// TestChangeLatencyRunsFromTheChangeToItsWrite: a report's ChangedAt is when the earliest
// change the sync read arrived, so that an observer can time a change to the router; a sync
// that leaves the write to the one that follows hands the time on to it.
func TestChangeLatencyRunsFromTheChangeToItsWrite(t *testing.T) {
	r := newKnownStateRig(t)
	rec := &reportRecorder{}
	r.c.cfg.Reporters = append(r.c.cfg.Reporters, rec)
	last := func() *Report { return rec.reports[len(rec.reports)-1] }

	r.want(claimAt("a.lan", "10.0.0.1"))
	r.sync(t, true)
	if !last().ChangedAt.IsZero() {
		t.Fatalf("a sync no change woke reports ChangedAt %v", last().ChangedAt)
	}

	changed := r.clock.Now()
	r.want(claimAt("a.lan", "10.0.0.2"))
	r.src.handler() // the informer's event
	r.clock.Step(30 * time.Millisecond)
	r.src.handler() // a later one does not move the start
	if out := r.sync(t, false); len(out.Changes) != 1 {
		t.Fatalf("outcome %+v, want the update", out)
	}
	if got := last().ChangedAt; !got.Equal(changed) || last().Mode != planner.Event {
		t.Fatalf("ChangedAt %v mode %v, want %v (the first event) and an event sync", got, last().Mode, changed)
	}
	r.sync(t, false)
	if !last().ChangedAt.IsZero() {
		t.Fatalf("the change was counted twice: ChangedAt %v", last().ChangedAt)
	}

	// The entry was deleted by hand: the event sync's update meets no entry, and the read of
	// the whole server that follows at once writes the change; it reports the change's time.
	e := r.svc.Store().Lookup("a.lan")[0]
	if err := r.svc.Store().Delete(e.GetId(), nil); err != nil {
		t.Fatal(err)
	}
	changed = r.clock.Now()
	r.want(claimAt("a.lan", "10.0.0.3"))
	r.src.handler()
	r.clock.Step(20 * time.Millisecond)
	if out := r.sync(t, false); !out.Again {
		t.Fatalf("outcome %+v, want a fresh read asked for", out)
	}
	if out := r.sync(t, false); out.Read != planner.ReadServer || len(out.Changes) != 1 || out.Changes[0].Action != plan.Create {
		t.Fatalf("outcome %+v, want the entry created again", out)
	}
	if got := last().ChangedAt; !got.Equal(changed) {
		t.Fatalf("the sync that wrote the change reports ChangedAt %v, want %v", got, changed)
	}
}

// againRecorder keeps what each report said of Again when it was told, since the report it
// holds is the one the sync returns.
type againRecorder struct{ told []bool }

func (r *againRecorder) Report(_ context.Context, rep *Report) { r.told = append(r.told, rep.Again) }

// TestTheReportersAreToldAnotherSyncFollows: a sync that removes an entry while another
// namespace's claim is turned down asks for another sync at once (that claim may now be
// written), and the reporters are told so: Again is decided before the report is made.
func TestTheReportersAreToldAnotherSyncFollows(t *testing.T) {
	r := newKnownStateRig(t)
	rec := &againRecorder{}
	r.c.cfg.Reporters = append(r.c.cfg.Reporters, rec)
	rival := claimAt("x.lan", "10.0.0.9")
	rival.Sources = []endpoint.SourceRef{{Kind: "Ingress", Namespace: "e", Name: "rival", UID: "rival", CreationTimestamp: time.Unix(1, 0)}}
	r.want(claimAt("x.lan", "10.0.0.1"), rival, claimAt("y.lan", "10.0.0.2"))
	if out := r.sync(t, true); len(out.Conflicts) != 1 || out.Again {
		t.Fatalf("first sync: conflicts %v, again %v; want the rival turned down and no sync at once", out.Conflicts, out.Again)
	}
	r.want(claimAt("x.lan", "10.0.0.1"), rival)
	if out := r.sync(t, true); len(out.Changes) != 1 || out.Changes[0].Action != plan.Mark || out.Again {
		t.Fatalf("y.lan gone: %v, again %v; want it marked and no sync at once", out.Changes, out.Again)
	}
	r.clock.Step(2 * time.Minute)
	out := r.sync(t, true)
	if len(out.Changes) != 1 || out.Changes[0].Action != plan.Delete || !out.Again {
		t.Fatalf("y.lan due: %v, again %v; want it deleted and another sync at once", out.Changes, out.Again)
	}
	if got := rec.told; len(got) != 3 || got[0] || got[1] || !got[2] {
		t.Fatalf("the reporters were told Again %v, want false, false, true", got)
	}
}

// TestADryRunSaysWhatIsHeldAndWhy: a dry run prints, beside the changes it would send, each
// change a registry stage holds back, with the stage, its reason and the fact behind it, and
// writes nothing.
func TestADryRunSaysWhatIsHeldAndWhy(t *testing.T) {
	r := newKnownStateRig(t)
	r.want(claimOf("gone.lan"))
	r.sync(t, true)
	r.want(claimOf("new.lan"))
	r.sync(t, true) // creates new.lan, marks gone.lan
	before := r.svc.Store().List()
	markedAt := r.clock.Now()
	r.clock.Step(20 * time.Second)
	var out strings.Builder
	r.c.cfg.DryRun, r.c.cfg.Out = true, &out
	r.want(claimOf("new.lan"), claimAt("other.lan", "10.0.0.2"))
	r.sync(t, true)
	got := out.String()
	due := markedAt.Add(time.Minute).UTC().Format(time.RFC3339)
	for _, want := range []string{"create  other.lan 10.0.0.2", "held by grace (GracePeriod, goes at " + due + "): delete  gone.lan 10.0.0.1 id="} {
		if !strings.Contains(got, want) {
			t.Errorf("the dry run printed:\n%s\nwant a line with %q", got, want)
		}
	}
	if after := r.svc.Store().List(); len(after) != len(before) {
		t.Errorf("a dry run wrote: %d entries, were %d", len(after), len(before))
	}
}
