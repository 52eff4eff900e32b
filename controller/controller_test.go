package controller

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
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
}

func (s *stubSource) Endpoints(context.Context) ([]*endpoint.Endpoint, error) {
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
	src := &stubSource{}
	prov := &recordingProvider{starts: make(chan time.Time, 100)}
	c := newTestController(t, src, prov, 300*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	<-prov.starts // the initial sync
	time.Sleep(400 * time.Millisecond)

	sent := time.Now()
	src.handler()
	got := <-prov.starts
	if d := got.Sub(sent); d > 200*time.Millisecond {
		t.Fatalf("event after a quiet period waited %v", d)
	}
	// A burst right after a sync: one more sync, not before the minimum spacing.
	for i := 0; i < 20; i++ {
		src.handler()
		time.Sleep(5 * time.Millisecond)
	}
	next := <-prov.starts
	// The spacing holds between the controller's own starts; the provider sees each start a
	// little later (after the sources are read), so a late first sighting shortens the gap it
	// measures by that lag. 10 ms allows for scheduling on a loaded machine; a broken spacing
	// (a sync right after the burst's first event) would show about 50 ms.
	if d := next.Sub(got); d < 290*time.Millisecond {
		t.Fatalf("burst sync started %v after the previous one, want about 300ms or more", d)
	}
	select {
	case extra := <-prov.starts:
		t.Fatalf("burst caused a third sync at %v", extra.Sub(next))
	case <-time.After(500 * time.Millisecond):
	}
	cancel()
	<-done
}

func TestBackoff(t *testing.T) {
	c := &Controller{cfg: Config{Interval: 10 * time.Second}}
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
