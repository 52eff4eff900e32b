// Package controller runs the operator's one loop: read every source and the server's entries,
// plan, apply ownership policy, write. It is level-triggered: each sync starts from the full
// state, so a missed event or a crash costs at most one sync, never correctness.
package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
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

// Reporter is told the outcome of every sync that got as far as planning, e.g. to write the
// status of HostMappings. It runs after the writes, never in dry-run mode.
type Reporter interface {
	Report(ctx context.Context, r *Report)
}

// Report is what reporters learn about a sync.
type Report struct {
	// Desired holds the merged endpoint of every managed hostname, with the objects that won it.
	Desired []*endpoint.Endpoint
	// Entries are the entries this cluster owns per hostname once the writes are done.
	Entries map[string][]endpoint.Record
	// Failed holds the error of every hostname whose write failed.
	Failed map[string]error
	// Err is set when the sync failed as a whole; ServerErr says it failed talking to
	// router-hosts (rather than reading a source).
	Err       error
	ServerErr bool
	// Stage names where a failed sync stopped: "source", "list" or "apply".
	Stage string
	// Changes are the writes the sync sent (each with its outcome in Failed).
	Changes []plan.Change
	// Pending is the number of owned entries marked for deletion; Foreign the number owned by
	// other clusters.
	Pending, Foreign int
	// SourceEndpoints counts the endpoints each source returned, by source index.
	SourceEndpoints []int
	// Conflicts are the claims the registry turned down.
	Conflicts []registry.Conflict
	// Started and Duration time the sync; ListDuration is the part spent in ListHosts, the
	// server's share of a no-op sync.
	Started      time.Time
	Duration     time.Duration
	ListDuration time.Duration
}

// Config wires the loop.
type Config struct {
	Sources []Source
	// DomainFilter limits the hostnames managed; owned entries outside it are no longer wanted.
	DomainFilter endpoint.DomainFilter
	// Reporters are told the outcome of each sync.
	Reporters []Reporter
	Registry  *registry.Registry
	Provider  Provider
	Policy    plan.Policy
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
	counts := make([]int, len(c.cfg.Sources))
	for i, s := range c.cfg.Sources {
		got, err := s.Endpoints(ctx)
		if err != nil {
			err = fmt.Errorf("reading source %d: %w", i, err)
			c.report(ctx, &Report{Err: err, Stage: "source", Started: start, Duration: c.cfg.Now().Sub(start)})
			return nil, err
		}
		counts[i] = len(got)
		for _, ep := range got {
			if c.cfg.DomainFilter.Match(ep.Hostname) {
				eps = append(eps, ep)
			}
		}
	}
	listStart := c.cfg.Now()
	sourceDuration := listStart.Sub(start)
	records, err := c.cfg.Provider.Records(ctx)
	listDuration := c.cfg.Now().Sub(listStart)
	if err != nil {
		err = fmt.Errorf("listing router-hosts entries: %w", err)
		c.report(ctx, &Report{Err: err, ServerErr: true, Stage: "list", SourceEndpoints: counts, Started: start, Duration: c.cfg.Now().Sub(start)})
		return nil, err
	}
	reg := c.cfg.Registry
	st := reg.Classify(records)
	desired := reg.Desired(eps, st)
	changes := (&plan.Plan{Current: reg.Current(st), Desired: desired, Policy: c.cfg.Policy}).Calculate()
	res := reg.Apply(c.cfg.Now(), st, desired, changes)
	out := &Outcome{Changes: res.Changes, NextExpiry: res.NextExpiry, Pending: res.Pending}
	log := c.log.WithFields(logrus.Fields{
		"source_duration": sourceDuration.Round(time.Microsecond), "list_duration": listDuration.Round(time.Microsecond),
		"plan_duration": c.cfg.Now().Sub(listStart.Add(listDuration)).Round(time.Microsecond),
		"endpoints":     len(eps), "hostnames": len(desired), "entries": len(records),
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
	var applyErr error
	if len(res.Changes) > 0 {
		applyStart := c.cfg.Now()
		applyErr = c.cfg.Provider.ApplyChanges(ctx, res.Changes)
		if applyErr == nil {
			log.WithFields(logrus.Fields{"apply_duration": c.cfg.Now().Sub(applyStart).Round(time.Microsecond),
				"duration": c.cfg.Now().Sub(start).Round(time.Millisecond)}).Info("sync applied changes")
		}
	} else {
		log.WithField("duration", c.cfg.Now().Sub(start).Round(time.Millisecond)).Debug("sync: nothing to change")
	}
	rep := &Report{Desired: desired, Entries: entriesAfter(st.Owned, res.Changes, applyErr), Failed: failedHosts(applyErr),
		Changes: res.Changes, Pending: res.Pending, Foreign: st.ForeignCount(), SourceEndpoints: counts, Conflicts: st.Conflicts,
		Started: start, Duration: c.cfg.Now().Sub(start), ListDuration: listDuration}
	if applyErr != nil {
		rep.Err, rep.Stage = applyErr, "apply"
	}
	c.report(ctx, rep)
	if applyErr != nil {
		return out, fmt.Errorf("applying %d changes: %w", len(res.Changes), applyErr)
	}
	return out, nil
}

func (c *Controller) report(ctx context.Context, r *Report) {
	if c.cfg.DryRun {
		return
	}
	for _, rep := range c.cfg.Reporters {
		rep.Report(ctx, r)
	}
}

// entriesAfter is the owned entries per hostname once the changes that succeeded are applied.
func entriesAfter(owned []endpoint.Record, changes []plan.Change, applyErr error) map[string][]endpoint.Record {
	failed := map[*plan.Change]bool{}
	for _, e := range changeErrors(applyErr) {
		failed[e.Change] = true
	}
	byID := make(map[string]endpoint.Record, len(owned))
	for _, r := range owned {
		byID[r.ID] = r
	}
	for i := range changes {
		ch := &changes[i]
		if failed[ch] {
			continue
		}
		switch {
		case ch.New == nil, ch.Action == plan.Release:
			delete(byID, ch.Old.ID)
		case ch.New.ID != "":
			byID[ch.New.ID] = *ch.New
		}
	}
	out := map[string][]endpoint.Record{}
	for _, r := range byID {
		out[r.Hostname] = append(out[r.Hostname], r)
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].IP < rs[j].IP })
	}
	return out
}

// failedHosts maps each hostname whose write failed to its error.
func failedHosts(err error) map[string]error {
	out := map[string]error{}
	for _, e := range changeErrors(err) {
		out[e.Change.Hostname()] = e
	}
	return out
}

// changeErrors finds the per-change errors inside a provider's aggregate error.
func changeErrors(err error) []*plan.ChangeError {
	if err == nil {
		return nil
	}
	var out []*plan.ChangeError
	var ce *plan.ChangeError
	if errors.As(err, &ce) {
		out = append(out, ce)
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		out = out[:0]
		for _, e := range j.Unwrap() {
			out = append(out, changeErrors(e)...)
		}
	}
	return out
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
