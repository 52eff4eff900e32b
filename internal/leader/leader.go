// Package leader elects one leader among the operator's replicas on a coordination.k8s.io
// Lease. It follows client-go's leaderelection with a LeaseLock, and writes the Lease's fields
// as that does, so that replicas of either kind hand the Lease over to each other; client-go's
// package would link the typed clients of every API group into the binary.
package leader

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
)

// Config is one election: the Lease (Name, in the namespace of Client), who this replica is,
// and the timings and callbacks of client-go's LeaderElectionConfig.
type Config struct {
	Client          kube.LeaseClient
	Namespace, Name string
	Identity        string
	// LeaseDuration is how long a standby waits after the last renewal it saw before it takes
	// the Lease; RenewDeadline how long the leader keeps trying to renew before it stops
	// leading; RetryPeriod the wait between two tries.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Clock is nil for the real one.
	Clock clock.Clock

	// OnStartedLeading runs in a goroutine of its own when this replica takes the Lease; its
	// context ends when it stops leading. OnStoppedLeading, when set, runs when Run returns;
	// OnNewLeader, when set, is told of every new holder, this replica included.
	OnStartedLeading func(context.Context)
	OnStoppedLeading func()
	OnNewLeader      func(identity string)
}

// record is what the Lease says of its holder.
type record struct {
	holder          string
	durationSeconds int32
	acquire, renew  time.Time
	transitions     int32
}

func recordOf(s coordinationv1.LeaseSpec) record {
	var r record
	if s.HolderIdentity != nil {
		r.holder = *s.HolderIdentity
	}
	if s.LeaseDurationSeconds != nil {
		r.durationSeconds = *s.LeaseDurationSeconds
	}
	if s.AcquireTime != nil {
		r.acquire = s.AcquireTime.Time
	}
	if s.RenewTime != nil {
		r.renew = s.RenewTime.Time
	}
	if s.LeaseTransitions != nil {
		r.transitions = *s.LeaseTransitions
	}
	return r
}

func (r record) spec() coordinationv1.LeaseSpec {
	return coordinationv1.LeaseSpec{HolderIdentity: &r.holder, LeaseDurationSeconds: &r.durationSeconds,
		AcquireTime: &metav1.MicroTime{Time: r.acquire}, RenewTime: &metav1.MicroTime{Time: r.renew}, LeaseTransitions: &r.transitions}
}

// equal compares records as the apiserver keeps them, to the microsecond.
func (r record) equal(o record) bool {
	return r.holder == o.holder && r.durationSeconds == o.durationSeconds && r.transitions == o.transitions &&
		r.acquire.Truncate(time.Microsecond).Equal(o.acquire.Truncate(time.Microsecond)) &&
		r.renew.Truncate(time.Microsecond).Equal(o.renew.Truncate(time.Microsecond))
}

type elector struct {
	cfg   Config
	clock clock.Clock
	desc  string
	// lease is the Lease as last read or written, whose resourceVersion makes every update
	// conditional on nobody having written it since.
	lease *coordinationv1.Lease
	// observed is the Lease's record as last seen changed, at observedAt by this clock: a
	// holder's Lease expires a lease duration after a standby last saw it change.
	observed   record
	observedAt time.Time
	reported   string
}

// Run takes the Lease when it is free or expired, runs OnStartedLeading, and renews the
// Lease until ctx ends or a renewal fails for RenewDeadline; then it releases the Lease (if
// it held it) and returns. It runs in the calling goroutine; every step does.
func Run(ctx context.Context, cfg Config) {
	e := &elector{cfg: cfg, clock: cfg.Clock, desc: cfg.Namespace + "/" + cfg.Name}
	if e.clock == nil {
		e.clock = clock.RealClock{}
	}
	if cfg.OnStoppedLeading != nil {
		defer cfg.OnStoppedLeading()
	}
	if !e.acquire(ctx) {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go cfg.OnStartedLeading(ctx)
	e.renew(ctx)
}

// acquire tries every RetryPeriod (with jitter) until it holds the Lease or ctx ends.
func (e *elector) acquire(ctx context.Context) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := klog.FromContext(ctx)
	log.Info("Attempting to acquire leader lease...", "lock", e.desc)
	succeeded := false
	wait.JitterUntilWithContext(ctx, func(ctx context.Context) {
		succeeded = e.tryAcquireOrRenew(ctx)
		e.reportTransition()
		if !succeeded {
			log.V(4).Info("Failed to acquire lease", "lock", e.desc)
			return
		}
		log.Info("Successfully acquired lease", "lock", e.desc)
		cancel()
	}, e.cfg.RetryPeriod, 1.2, true)
	return succeeded
}

// renew renews the Lease every RetryPeriod until ctx ends or it fails for RenewDeadline, then
// releases it.
func (e *elector) renew(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := klog.FromContext(ctx)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		err := wait.PollUntilContextTimeout(ctx, e.cfg.RetryPeriod, e.cfg.RenewDeadline, true, func(ctx context.Context) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			return e.tryAcquireOrRenew(ctx), nil
		})
		e.reportTransition()
		if err == nil {
			log.V(5).Info("Successfully renewed lease", "lock", e.desc)
			return
		}
		log.Info("Failed to renew lease", "lock", e.desc, "err", err)
		cancel()
	}, e.cfg.RetryPeriod)
	e.release(log)
}

func (e *elector) isLeader() bool { return e.observed.holder == e.cfg.Identity }

func (e *elector) valid(now time.Time) bool {
	return e.observedAt.Add(time.Duration(e.observed.durationSeconds) * time.Second).After(now)
}

func (e *elector) observe(r record) {
	e.observed, e.observedAt = r, e.clock.Now()
}

// tryAcquireOrRenew writes this replica into the Lease if it holds it already, or if the
// Lease is free, expired or missing.
func (e *elector) tryAcquireOrRenew(ctx context.Context) bool {
	log := klog.FromContext(ctx)
	now := e.clock.Now()
	want := record{holder: e.cfg.Identity, durationSeconds: int32(e.cfg.LeaseDuration / time.Second), acquire: now, renew: now}

	// The leader renews without reading first; only a conflict sends it the slow way.
	if e.isLeader() && e.valid(now) && e.lease != nil {
		want.acquire, want.transitions = e.observed.acquire, e.observed.transitions
		err := e.update(ctx, want)
		if err == nil {
			e.observe(want)
			return true
		}
		log.V(2).Info("Failed to update lease optimistically, falling back to slow path", "lock", e.desc, "err", err)
	}

	lease, err := e.cfg.Client.Get(ctx, e.cfg.Name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			log.Error(err, "Error retrieving lease lock", "lock", e.desc)
			return false
		}
		created, err := e.cfg.Client.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.cfg.Name}, Spec: want.spec()}, metav1.CreateOptions{})
		if err != nil {
			log.Error(err, "Error initially creating lease lock", "lock", e.desc)
			return false
		}
		e.lease = created
		e.observe(want)
		return true
	}
	e.lease = lease
	if cur := recordOf(lease.Spec); !cur.equal(e.observed) {
		e.observe(cur)
	}
	if e.observed.holder != "" && e.valid(now) && !e.isLeader() {
		log.V(4).Info("Lease is held by and has not yet expired", "lock", e.desc, "holder", e.observed.holder)
		return false
	}
	if e.isLeader() {
		want.acquire, want.transitions = e.observed.acquire, e.observed.transitions
	} else {
		want.transitions = e.observed.transitions + 1
	}
	if err := e.update(ctx, want); err != nil {
		log.Error(err, "Failed to update lease", "lock", e.desc)
		return false
	}
	e.observe(want)
	return true
}

// update writes r into the Lease as last read or written, conditional on its resourceVersion.
func (e *elector) update(ctx context.Context, r record) error {
	l := e.lease.DeepCopy()
	l.Spec = r.spec()
	updated, err := e.cfg.Client.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	e.lease = updated
	return nil
}

// release empties the Lease's holder, with a lease duration of a second, so that a standby
// takes it at its next try rather than a lease duration later.
func (e *elector) release(log klog.Logger) {
	ctx, cancel := context.WithTimeout(klog.NewContext(context.Background(), log), e.cfg.RenewDeadline)
	defer cancel()
	for {
		lease, err := e.cfg.Client.Get(ctx, e.cfg.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				log.Info("lease lock not found", "lock", e.desc)
			} else {
				log.Error(err, "error retrieving resource lock", "lock", e.desc)
			}
			return
		}
		e.lease = lease
		if !e.isLeader() {
			return
		}
		now := e.clock.Now()
		r := record{transitions: recordOf(lease.Spec).transitions, durationSeconds: 1, acquire: now, renew: now}
		if err := e.update(ctx, r); err != nil {
			if apierrors.IsConflict(err) && ctx.Err() == nil {
				log.V(4).Info("Conflict when releasing lease, retrying", "lock", e.desc)
				continue
			}
			log.Error(err, "Failed to release lease", "lock", e.desc)
			return
		}
		e.observe(r)
		return
	}
}

// reportTransition tells OnNewLeader of a holder not told of before.
func (e *elector) reportTransition() {
	if e.observed.holder == e.reported {
		return
	}
	e.reported = e.observed.holder
	if e.cfg.OnNewLeader != nil {
		go e.cfg.OnNewLeader(e.reported)
	}
}
