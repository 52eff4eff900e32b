// Package controller runs the operator's one loop: read every source and the server's entries,
// plan, apply ownership policy, write. It is level-triggered: each sync starts from the full
// state, so a missed event or a crash costs at most one sync, never correctness.
package controller

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// Source lists the endpoints the cluster wants, from informer caches, and reports changes.
type Source interface {
	Endpoints(ctx context.Context) ([]*endpoint.Endpoint, error)
	AddEventHandler(handler func())
}

// Provider reads and writes the router-hosts server.
type Provider interface {
	Records(ctx context.Context) ([]endpoint.Record, error)
	ApplyChanges(ctx context.Context, changes []plan.Change) error
}

// Config wires the loop.
type Config struct {
	Sources  []Source
	Registry *registry.Registry
	Provider Provider
	Policy   plan.Policy
	// Interval is the period of full resyncs.
	Interval time.Duration
	// MinEventSyncInterval is the least time between the starts of two event-triggered syncs,
	// so that a burst of changes coalesces into one more sync.
	MinEventSyncInterval time.Duration
	// DryRun prints the plan to Out instead of writing it.
	DryRun bool
	Out    io.Writer
	Log    logrus.FieldLogger
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// batchWindow is how long an event after a quiet period waits for companions (an Ingress and
// its Service often change together) before the sync starts.
const batchWindow = 50 * time.Millisecond

// expirySlack is added to a grace-period expiry before the sync that acts on it, so that the
// sync's own clock reading is safely past it.
const expirySlack = 100 * time.Millisecond

// Controller is the sync loop.
type Controller struct {
	cfg     Config
	log     logrus.FieldLogger
	trigger chan struct{}
}

// New returns a controller; it registers itself with every source for change notifications.
func New(cfg Config) *Controller {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	c := &Controller{cfg: cfg, log: cfg.Log, trigger: make(chan struct{}, 1)}
	for _, s := range cfg.Sources {
		s.AddEventHandler(c.notify)
	}
	return c
}

// notify records that something changed without ever blocking an informer: one pending
// trigger is enough, since the next sync reads everything anyway.
func (c *Controller) notify() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// Outcome summarises one sync.
type Outcome struct {
	Changes []plan.Change
	// NextExpiry is when the earliest pending deletion falls due; zero when none.
	NextExpiry time.Time
	Pending    int
}

// SyncOnce runs one full sync. Any failed read abandons the sync before planning, because a
// source or server that answered nothing must never look like "delete everything".
func (c *Controller) SyncOnce(ctx context.Context) (*Outcome, error) {
	start := c.cfg.Now()
	var eps []*endpoint.Endpoint
	for i, s := range c.cfg.Sources {
		got, err := s.Endpoints(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading source %d: %w", i, err)
		}
		eps = append(eps, got...)
	}
	records, err := c.cfg.Provider.Records(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing router-hosts entries: %w", err)
	}
	reg := c.cfg.Registry
	st := reg.Classify(records)
	desired := reg.Desired(eps, st)
	changes := (&plan.Plan{Current: reg.Current(st), Desired: desired, Policy: c.cfg.Policy}).Calculate()
	res := reg.Apply(c.cfg.Now(), st, desired, changes)
	out := &Outcome{Changes: res.Changes, NextExpiry: res.NextExpiry, Pending: res.Pending}
	log := c.log.WithFields(logrus.Fields{
		"endpoints": len(eps), "hostnames": len(desired), "entries": len(records),
		"owned": len(st.Owned), "foreign": st.ForeignCount(), "changes": len(res.Changes), "pending_deletions": res.Pending,
	})
	if c.cfg.DryRun {
		for i := range res.Changes {
			fmt.Fprintln(c.cfg.Out, res.Changes[i].String())
		}
		if len(res.Changes) == 0 {
			fmt.Fprintln(c.cfg.Out, "no changes")
		}
		log.Info("dry run: plan printed, nothing written")
		return out, nil
	}
	if len(res.Changes) > 0 {
		if err := c.cfg.Provider.ApplyChanges(ctx, res.Changes); err != nil {
			return out, fmt.Errorf("applying %d changes: %w", len(res.Changes), err)
		}
		log.WithField("duration", c.cfg.Now().Sub(start).Round(time.Millisecond)).Info("sync applied changes")
	} else {
		log.WithField("duration", c.cfg.Now().Sub(start).Round(time.Millisecond)).Debug("sync: nothing to change")
	}
	return out, nil
}

// Run syncs until ctx ends: at once, then every Interval, soon after any source event, and
// when a pending deletion falls due. Syncs never overlap; a failed sync is retried with capped
// exponential backoff. It returns nil when ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	var (
		next      = c.cfg.Now()
		lastStart time.Time
		failures  int
		timer     = time.NewTimer(0)
	)
	defer timer.Stop()
	for {
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return nil
		case <-c.trigger:
			// An event: sync after a short batching window, but not sooner than the minimum
			// spacing after the last start, and not before a failure backoff ends.
			at := c.cfg.Now().Add(batchWindow)
			if e := lastStart.Add(c.cfg.MinEventSyncInterval); at.Before(e) {
				at = e
			}
			if failures == 0 && at.Before(next) {
				next = at
			}
			continue
		case <-timer.C:
		}
		lastStart = c.cfg.Now()
		out, err := c.SyncOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		next = lastStart.Add(c.cfg.Interval)
		if err != nil {
			failures++
			backoff := c.backoff(failures)
			c.log.WithError(err).WithFields(logrus.Fields{"retry_in": backoff, "failures": failures}).Error("sync failed")
			next = c.cfg.Now().Add(backoff)
			continue
		}
		failures = 0
		if !out.NextExpiry.IsZero() && out.NextExpiry.Before(next) {
			// Wake up when the grace period ends, not at the next interval.
			next = out.NextExpiry.Add(expirySlack)
		}
	}
}

// backoff doubles from one second up to the resync interval.
func (c *Controller) backoff(failures int) time.Duration {
	d := time.Second
	for i := 1; i < failures && d < c.cfg.Interval; i++ {
		d *= 2
	}
	if d > c.cfg.Interval {
		d = c.cfg.Interval
	}
	return d
}
