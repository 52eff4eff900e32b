package leader

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/router-hosts-operator/router-hosts-operator/internal/kube/clientset"
)

const ns, name = "ops", "op"

// replica runs an election of this package until its context is cancelled; leading is set
// while it leads, done closed when Run returned.
type replica struct {
	cancel  context.CancelFunc
	leading atomic.Bool
	done    chan struct{}
}

func run(t *testing.T, cs *fake.Clientset, id string) *replica {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		Run(ctx, Config{Client: clientset.Leases(cs)(ns), Namespace: ns, Name: name, Identity: id,
			LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 50 * time.Millisecond,
			OnStartedLeading: func(ctx context.Context) { r.leading.Store(true); <-ctx.Done(); r.leading.Store(false) },
			OnStoppedLeading: func() {},
		})
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lease(t *testing.T, cs *fake.Clientset) coordinationv1.LeaseSpec {
	t.Helper()
	l, err := cs.CoordinationV1().Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Spec
}

func holder(s coordinationv1.LeaseSpec) string {
	if s.HolderIdentity == nil {
		return ""
	}
	return *s.HolderIdentity
}

// TestOneLeadsAndHandsOverOnRelease: of two replicas one leads, the other stands by while the
// Lease is renewed; the leader's release on shutdown hands the Lease over at once.
func TestOneLeadsAndHandsOverOnRelease(t *testing.T) {
	cs := fake.NewClientset()
	a := run(t, cs, "a")
	waitFor(t, "a to lead", a.leading.Load)
	b := run(t, cs, "b")
	time.Sleep(1500 * time.Millisecond) // longer than the lease duration: a renews it
	if b.leading.Load() || holder(lease(t, cs)) != "a" {
		t.Fatalf("b leads (%v) or the Lease is %q's, while a renews it", b.leading.Load(), holder(lease(t, cs)))
	}
	if s := lease(t, cs); *s.LeaseDurationSeconds != 1 || *s.LeaseTransitions != 0 || s.AcquireTime == nil || s.RenewTime == nil || !s.RenewTime.After(s.AcquireTime.Time) {
		t.Fatalf("a's Lease: %+v", s)
	}
	released := time.Now()
	a.cancel()
	<-a.done
	waitFor(t, "b to lead", b.leading.Load)
	if took := time.Since(released); took > 500*time.Millisecond {
		t.Errorf("b took the released Lease after %v, want at its next try", took)
	}
	if s := lease(t, cs); holder(s) != "b" || *s.LeaseTransitions != 1 {
		t.Fatalf("the Lease after the handover: holder %q, transitions %d; want b, 1", holder(s), *s.LeaseTransitions)
	}
}

// TestAnExpiredLeaseIsTaken: a holder that stopped renewing (a replica killed) loses the Lease
// a lease duration after it was last seen renewed.
func TestAnExpiredLeaseIsTaken(t *testing.T) {
	cs := fake.NewClientset()
	gone, dur, now := "gone", int32(1), metav1.NowMicro()
	if _, err := cs.CoordinationV1().Leases(ns).Create(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &gone, LeaseDurationSeconds: &dur, AcquireTime: &now, RenewTime: &now}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b := run(t, cs, "b")
	waitFor(t, "b to lead", b.leading.Load)
	if took := time.Since(start); took < time.Second {
		t.Fatalf("b took a live Lease after %v, before it expired", took)
	}
}

// TestHandsOverWithClientGo: the Lease is written as client-go's LeaseLock writes it, so that
// a rolling update from a replica that elects with client-go hands over, and back.
func TestHandsOverWithClientGo(t *testing.T) {
	cs := fake.NewClientset()
	var old atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Client: cs.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: "old"}},
			ReleaseOnCancel: true, LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 50 * time.Millisecond,
			Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(ctx context.Context) { old.Store(true); <-ctx.Done() }, OnStoppedLeading: func() {}},
		})
	}()
	waitFor(t, "client-go's elector to lead", old.Load)
	n := run(t, cs, "new")
	time.Sleep(1500 * time.Millisecond)
	if n.leading.Load() {
		t.Fatal("took the Lease client-go's elector renews")
	}
	cancel()
	<-done
	waitFor(t, "the new replica to lead", n.leading.Load)
	if s := lease(t, cs); holder(s) != "new" || *s.LeaseTransitions != 1 {
		t.Fatalf("the Lease: holder %q, transitions %d; want new, 1", holder(s), *s.LeaseTransitions)
	}

	// And back: client-go's elector waits while this one renews, and takes the released Lease.
	var back atomic.Bool
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Client: cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "older"}},
		LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 50 * time.Millisecond,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { back.Store(true) }, OnStoppedLeading: func() {}},
	})
	time.Sleep(1500 * time.Millisecond)
	if back.Load() {
		t.Fatal("client-go's elector took the Lease this one renews")
	}
	n.cancel()
	<-n.done
	waitFor(t, "client-go's elector to lead again", back.Load)
	if s := lease(t, cs); holder(s) != "older" || *s.LeaseTransitions != 2 {
		t.Fatalf("the Lease: holder %q, transitions %d; want older, 2", holder(s), *s.LeaseTransitions)
	}
}

// TestALeaderThatCannotRenewStops: a leader whose renewals fail for the renew deadline (the
// apiserver away) stops leading and Run returns, so that the operator can stand by again.
func TestALeaderThatCannotRenewStops(t *testing.T) {
	cs := fake.NewClientset()
	var away atomic.Bool
	// Added before anything runs: the fake's reactor chain is not safe to change meanwhile.
	cs.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if away.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	a := run(t, cs, "a")
	waitFor(t, "a to lead", a.leading.Load)
	away.Store(true)
	waitFor(t, "a to stop leading", func() bool { return !a.leading.Load() })
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the leader lost the Lease")
	}
}
