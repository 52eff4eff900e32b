// Package controller runs the operator's one loop: read every source and the server's entries,
// plan, decide by the ownership rules, write. It is level-triggered: each sync starts from the full
// state, so a missed event or a crash costs at most one sync, never correctness.
package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// EndpointSource is what the loop needs of a source: the endpoints the cluster wants, from
// informer caches, and a word when they change.
type EndpointSource interface {
	Endpoints(ctx context.Context) ([]*endpoint.Endpoint, error)
	AddEventHandler(handler func())
}

// Provider reads and writes the router-hosts server.
type Provider interface {
	planner.Reader
	// ApplyChanges returns one result per change, at the change's index, and never writes
	// into the changes.
	ApplyChanges(ctx context.Context, changes []plan.Change) []plan.Result
}

// Compactor is a Provider that folds entries' event logs on the server (routerhosts'); the
// loop sends it the entries a decision names (registry.Verdict.Compact).
type Compactor interface {
	Compact(ctx context.Context, ids []string) ([]provider.Compaction, error)
}

// Reporter is told the outcome of every sync (report.go), e.g. to write the status of
// HostMappings. It runs after the writes or the failed read, never in dry-run mode.
type Reporter interface {
	Report(ctx context.Context, r *Report)
}

// ProblemSource is a source that tells the problems of its objects' input.
type ProblemSource interface {
	Problems() map[string][]endpoint.Problem
}

// Config wires the loop.
type Config struct {
	Sources []EndpointSource
	// Reporters are told the outcome of each sync.
	Reporters []Reporter
	Registry  *registry.Registry
	Provider  Provider
	// Interval is the period of full resyncs.
	Interval time.Duration
	// MinEventSyncInterval is the least time between the starts of two event-triggered syncs,
	// so that a burst of changes coalesces into one more sync.
	MinEventSyncInterval time.Duration
	// DryRun prints the plan to Out instead of writing it; it answers a release probe alone.
	DryRun bool
	Out    io.Writer
	Log    logrus.FieldLogger
	// Clock is the time source: every sync's clock reading and the loop's timers. Tests drive
	// a fake one (k8s.io/utils/clock/testing) instead of sleeping.
	Clock clock.Clock
	// Scheduled, when set, is told every schedule the loop waits on, once its timer is set:
	// when the next sync starts and what kind it is. Tests step their clock to it.
	Scheduled func(Schedule)
}

// Controller is the sync loop.
type Controller struct {
	cfg Config
	log logrus.FieldLogger
	// news holds the Triggers that arrived since the loop last looked, and wake tells it
	// there are some: news never blocks its sender, and a burst is one wake-up.
	news atomic.Uint32
	wake chan struct{}
	// changedAt is when the earliest cluster change no sync has read yet arrived (Unix
	// nanoseconds, 0 for none): the start of a change's latency, which the sync that writes it
	// reports.
	changedAt atomic.Int64
	// requests are the callers of SyncNow waiting for the loop's next full sync.
	requestsMu sync.Mutex
	requests   []chan error

	// syncing is held for the whole of each sync, so that Reconfigure changes nothing a sync
	// in flight reads; the planner is only touched under it.
	syncing sync.Mutex
	planner *planner.Planner
	live    atomic.Pointer[LoopSettings]

	// unmanaged are the hostnames the last decision found outside the managed domains: a sync
	// whose read of the server fails reports on the other objects alone, as one that decides.
	unmanaged map[string]bool
	// noCompaction is the server's answer that it does not compact for the operator, said once:
	// the loop compacts no more while the process lives (touched under syncing).
	noCompaction error
}

// LoopSettings are the loop's part of the settings, which may change while it runs; the
// registry's are applied with it (Reconfigure's apply).
type LoopSettings struct {
	// Interval is the period of full resyncs.
	Interval time.Duration
}

// Reconfigure runs apply between two syncs, where nothing reads what it changes, and on
// success takes s and starts a sync that reads the server at once. apply's error is returned
// and the settings in use are kept.
func (c *Controller) Reconfigure(apply func() error, s LoopSettings) error {
	if s.Interval <= 0 {
		return fmt.Errorf("interval %s is not positive", s.Interval)
	}
	c.syncing.Lock()
	defer c.syncing.Unlock()
	if apply != nil {
		if err := apply(); err != nil {
			return err
		}
	}
	c.live.Store(&s)
	// What the planner learnt was learnt under other settings.
	c.planner.Reset()
	c.tell(TriggerReconfigured)
	return nil
}

// settings are the settings in use.
func (c *Controller) settings() *LoopSettings { return c.live.Load() }

// New returns a controller; it registers itself with every source for change notifications.
func New(cfg Config) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
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
	c := &Controller{cfg: cfg, log: cfg.Log, wake: make(chan struct{}, 1), planner: planner.New(cfg.Registry, cfg.Provider, cfg.Clock)}
	c.live.Store(&LoopSettings{Interval: cfg.Interval})
	for _, s := range cfg.Sources {
		s.AddEventHandler(c.notify)
	}
	return c
}

// ServerReachable tells the loop that the server answers again, so that a sync waiting out
// the backoff of a failure runs at once: a router that comes back from a reboot gets the
// changes made meanwhile within a moment of answering.
func (c *Controller) ServerReachable() { c.tell(TriggerReachable) }

// notify records that something changed without ever blocking an informer: one pending
// trigger is enough, since the next sync reads everything anyway.
func (c *Controller) notify() {
	c.changedSince(c.cfg.Clock.Now())
	c.tell(TriggerChanged)
}

// unread puts back the time of the changes a sync read but did not write, zero for none.
func (c *Controller) unread(changed time.Time) {
	if !changed.IsZero() {
		c.changedSince(changed)
	}
}

// changedSince notes a change at t unless an earlier one is still unread.
func (c *Controller) changedSince(t time.Time) {
	for {
		old := c.changedAt.Load()
		if (old != 0 && old <= t.UnixNano()) || c.changedAt.CompareAndSwap(old, t.UnixNano()) {
			return
		}
	}
}

// CredentialsChanged tells the loop that the TLS files changed, so that a sync waiting out an
// authentication failure runs at once instead of at the next interval.
func (c *Controller) CredentialsChanged() { c.tell(TriggerCredentials) }

// SyncNow asks the running loop for a full sync and waits for it: a sync that starts after
// the request, so that it reads what the caller changed before asking. It returns the sync's
// error, or ctx's if the caller stops waiting first; the sync then still runs.
func (c *Controller) SyncNow(ctx context.Context) error {
	answer := make(chan error, 1)
	c.requestsMu.Lock()
	c.requests = append(c.requests, answer)
	c.requestsMu.Unlock()
	c.tell(TriggerRequested)
	select {
	case err := <-answer:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// takeRequests are the requests a full sync starting now answers.
func (c *Controller) takeRequests() []chan error {
	c.requestsMu.Lock()
	defer c.requestsMu.Unlock()
	r := c.requests
	c.requests = nil
	return r
}

// errStopped answers the requests of a loop that stops.
var errStopped = errors.New("the operator is stopping")

// tell hands the loop news without blocking.
func (c *Controller) tell(t Trigger) {
	for {
		old := c.news.Load()
		if c.news.CompareAndSwap(old, old|uint32(t)) {
			break
		}
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// SyncOnce runs one full sync: it reads the server, and retries refused writes too. Any failed
// read abandons the sync before planning, because a source or server that answered nothing
// must never look like "delete everything". It runs beside the loop, if one runs: for --once
// and tests; a caller beside a running loop asks it with SyncNow. The report is nil when a
// read failed.
func (c *Controller) SyncOnce(ctx context.Context) (*Report, error) {
	return c.sync(ctx, planner.Full)
}

// Inspect reads the sources and the whole server once and returns what the registry decided,
// each decision with its reason (Report.Held, Report.State), writing nothing and telling no
// reporter: what explain and list print. Unlike a dry run it answers no release probe, so it
// is read-only on the router.
func (c *Controller) Inspect(ctx context.Context) (*Report, error) {
	c.syncing.Lock()
	defer c.syncing.Unlock()
	in := c.begin(planner.Full)
	if err := c.readSources(ctx, in); err != nil {
		return nil, fmt.Errorf("reading the sources: %w", err)
	}
	sy, err := c.plan(ctx, in)
	if err != nil {
		return nil, err
	}
	return reportOf(in, sy, nil, false, c.cfg.Clock.Now()), nil
}

// sync runs one sync of the given mode the way external-dns's RunOnce does: read the sources,
// plan (the planner reads the server), write, report. A failed read is reported and ends the
// sync with no report returned, since nothing was planned to schedule by.
func (c *Controller) sync(ctx context.Context, mode planner.Mode) (*Report, error) {
	c.syncing.Lock()
	defer c.syncing.Unlock()
	in := c.begin(mode)
	if err := c.readSources(ctx, in); err != nil {
		return nil, c.abandon(ctx, in, StepSource, err)
	}
	sy, err := c.plan(ctx, in)
	if err != nil {
		return nil, c.abandon(ctx, in, StepList, err)
	}
	log := c.planLog(in, sy)
	if c.cfg.DryRun {
		c.print(sy)
		c.answerProbes(ctx, sy, log)
		log.Info("dry run: plan printed, nothing written")
		return reportOf(in, sy, nil, false, c.cfg.Clock.Now()), nil
	}
	results := c.write(ctx, in, sy, log)
	compacted := c.compact(ctx, sy, results, log)
	again := c.learn(in, sy, results, compacted)
	rep := reportOf(in, sy, results, again, c.cfg.Clock.Now())
	rep.CompactedEvents = foldedEvents(compacted)
	c.report(ctx, rep)
	return rep, errorOf(rep)
}

// reading is what a sync knows before it plans.
type reading struct {
	mode planner.Mode
	// started is when the sync started, sourcesRead when it had read the sources.
	started, sourcesRead time.Time
	// changed is when the earliest cluster change the sync reads arrived, zero for none.
	changed time.Time
	// endpoints are the sources' endpoints, the ones planned; sources what each source gave,
	// and counts how many endpoints it returned; unmanaged the hostnames outside the managed
	// domains, as the registry decided them last.
	endpoints []*endpoint.Endpoint
	sources   []sourceRead
	counts    []int
	unmanaged map[string]bool
}

// sourceRead is what one source gave a sync.
type sourceRead struct {
	endpoints []*endpoint.Endpoint
	problems  map[string][]endpoint.Problem
}

// begin starts a sync: the cluster changes noted before this point are the ones it reads.
func (c *Controller) begin(mode planner.Mode) *reading {
	in := &reading{mode: mode, unmanaged: c.unmanaged}
	if at := c.changedAt.Swap(0); at != 0 {
		in.changed = time.Unix(0, at)
	}
	in.started = c.cfg.Clock.Now()
	return in
}

// readSources reads every source into in; a failed source leaves in as it was.
func (c *Controller) readSources(ctx context.Context, in *reading) error {
	var eps []*endpoint.Endpoint
	read := make([]sourceRead, len(c.cfg.Sources))
	counts := make([]int, len(c.cfg.Sources))
	for i, s := range c.cfg.Sources {
		got, err := s.Endpoints(ctx)
		if err != nil {
			return fmt.Errorf("reading source %d: %w", i, err)
		}
		counts[i] = len(got)
		read[i].endpoints = got
		if ps, ok := s.(ProblemSource); ok {
			read[i].problems = ps.Problems()
		}
		eps = append(eps, got...)
	}
	in.endpoints, in.sources, in.counts = eps, read, counts
	in.sourcesRead = c.cfg.Clock.Now()
	return nil
}

// plan has the planner decide in's endpoints, and keeps the hostnames the registry found
// outside the managed domains.
func (c *Controller) plan(ctx context.Context, in *reading) (*planner.Sync, error) {
	sy, err := c.planner.Plan(ctx, in.endpoints, in.mode)
	if err != nil {
		return nil, err
	}
	var unmanaged map[string]bool
	for _, ep := range sy.Unmanaged {
		if unmanaged == nil {
			unmanaged = map[string]bool{}
		}
		unmanaged[ep.Hostname] = true
	}
	c.unmanaged, in.unmanaged = unmanaged, unmanaged
	return sy, nil
}

// abandon ends a sync whose read failed at step: the changes it read are left to the next,
// and the reporters are told. It returns err.
func (c *Controller) abandon(ctx context.Context, in *reading, step Step, err error) error {
	c.unread(in.changed)
	c.report(ctx, reportOfFailedRead(in, step, err, c.cfg.Clock.Now()))
	return err
}

// planLog is the sync's log with what it read and planned.
func (c *Controller) planLog(in *reading, sy *planner.Sync) logrus.FieldLogger {
	st := sy.State
	return c.log.WithFields(logrus.Fields{"mode": in.mode, "read": sy.Read,
		"source_duration": in.sourcesRead.Sub(in.started).Round(time.Microsecond), "list_duration": sy.ReadDuration.Round(time.Microsecond),
		"plan_duration": c.cfg.Clock.Now().Sub(in.sourcesRead.Add(sy.ReadDuration)).Round(time.Microsecond),
		"endpoints":     len(in.endpoints) - len(sy.Unmanaged), "hostnames": len(sy.Desired), "planned": sy.Planned, "entries": sy.Entries,
		"owned": len(st.Owned), "foreign": st.ForeignCount(), "changes": len(sy.Changes), "pending_deletions": sy.Pending,
	})
}

// print writes a dry run's plan to Out.
func (c *Controller) print(sy *planner.Sync) {
	for i := range sy.Changes {
		fmt.Fprintln(c.cfg.Out, sy.Changes[i].String())
	}
	if len(sy.Changes) == 0 {
		fmt.Fprintln(c.cfg.Out, "no changes")
	}
	for i := range sy.Held {
		fmt.Fprintln(c.cfg.Out, heldLine(&sy.Held[i]))
	}
	if sy.Deferred > 0 {
		fmt.Fprintf(c.cfg.Out, "%d more changes follow in the next syncs (the budget of writes per sync)\n", sy.Deferred)
	}
	if sy.Braked != nil {
		fmt.Fprintf(c.cfg.Out, "held: %s\n", sy.Braked.Message())
	}
}

// answerProbes sends a dry run's one kind of write: the answers to a release probe, so that a
// release run beside an operator tried out with --dry-run learns that it runs and refuses.
func (c *Controller) answerProbes(ctx context.Context, sy *planner.Sync, log logrus.FieldLogger) {
	answers := sy.Answers
	if len(answers) == 0 {
		return
	}
	if err := plan.ErrorOf(c.cfg.Provider.ApplyChanges(ctx, answers)); err != nil {
		log.WithError(err).Warn("dry run: a release probe could not be answered")
		return
	}
	log.WithField("entries", len(answers)).Warn("dry run: a release probe was answered (the one write of a dry run): `release` runs beside this operator and must not go ahead")
}

// write sends the plan's changes; it returns the provider's results, one per change.
func (c *Controller) write(ctx context.Context, in *reading, sy *planner.Sync, log logrus.FieldLogger) []plan.Result {
	if len(sy.Changes) == 0 {
		log.WithField("duration", c.cfg.Clock.Now().Sub(in.started).Round(time.Millisecond)).Debug("sync: nothing to change")
		return nil
	}
	start := c.cfg.Clock.Now()
	results := c.cfg.Provider.ApplyChanges(ctx, sy.Changes)
	if len(results) != len(sy.Changes) {
		// Pairing by index is the provider's contract: a provider that breaks it must not have
		// results credited to the wrong changes, so none is credited and the sync fails.
		results = unpaired(sy.Changes, len(results))
	}
	if len(plan.Failures(results)) == 0 {
		log.WithFields(logrus.Fields{"apply_duration": c.cfg.Clock.Now().Sub(start).Round(time.Microsecond),
			"duration": c.cfg.Clock.Now().Sub(in.started).Round(time.Millisecond)}).Info("sync applied changes")
	}
	return results
}

// compact folds the event logs of the entries the decision named (sy.Compact), after the
// writes and only when every one went through and nothing waits for a later sync (paced,
// deferred, left to a whole read), one entry at a time, and stops as soon as a cluster change
// arrives: so it never comes before a change, and a change waits at most one call for the sync
// that writes it (the whole read after names the rest again). It returns what became of each
// it sent, for the planner's Learn, which charges them to the write-rate budgets. A server that
// does not compact for the operator is said once, and asked no more while the process lives.
func (c *Controller) compact(ctx context.Context, sy *planner.Sync, results []plan.Result, log logrus.FieldLogger) []registry.Compacted {
	comp, ok := c.cfg.Provider.(Compactor)
	if !ok || len(sy.Compact) == 0 || c.noCompaction != nil || len(plan.Failures(results)) > 0 ||
		sy.Paced > 0 || sy.Deferred > 0 || sy.NeedFresh || len(sy.WholeRead) > 0 || len(sy.Refused) > 0 {
		return nil
	}
	out := make([]registry.Compacted, 0, len(sy.Compact))
	var failed error
	for _, id := range sy.Compact {
		if c.changedAt.Load() != 0 || ctx.Err() != nil {
			break
		}
		got, err := comp.Compact(ctx, []string{id})
		for _, g := range got {
			out = append(out, registry.Compacted{ID: g.ID, EventsBefore: g.EventsBefore, EventsAfter: g.EventsAfter, Version: g.Version, Err: g.Err})
		}
		if errors.Is(err, provider.ErrCompactionUnsupported) {
			c.noCompaction = err
			log.WithError(err).Warn("router-hosts does not compact the operator's entries (a server before 0.10.7, or a certificate without the right): " +
				"their event logs are left as they are until the operator restarts; the syncs go on")
			return out
		}
		if err != nil && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		log.WithError(failed).Info("compaction: some entries were not compacted; the next whole read names them again")
	}
	log.WithFields(logrus.Fields{"entries": len(out), "events": foldedEvents(out)}).Debug("compacted the event logs of own entries")
	return out
}

// foldedEvents are the events compactions took out of the server's log.
func foldedEvents(compacted []registry.Compacted) int64 {
	n := int64(0)
	for _, c := range compacted {
		if c.Err == nil && c.EventsBefore > c.EventsAfter {
			n += c.EventsBefore - c.EventsAfter
		}
	}
	return n
}

// unpaired are the results of changes whose provider returned n results for them: every change
// failed, as with a server that answered nonsense, since none can be told apart.
func unpaired(changes []plan.Change, n int) []plan.Result {
	err := fmt.Errorf("the provider returned %d results for %d changes", n, len(changes))
	out := make([]plan.Result, len(changes))
	for i := range changes {
		out[i].Err = &plan.ChangeError{Change: changes[i], Err: err}
	}
	return out
}

// learn tells the planner what became of the writes and compactions, and reports whether another sync follows
// at once: the planner asks for one, or entries were removed while claims waited for them
// (other namespaces' for the hostname, or a namespace's at its budget of entries), and those
// claims can now be written.
func (c *Controller) learn(in *reading, sy *planner.Sync, results []plan.Result, compacted []registry.Compacted) (again bool) {
	fresh := c.planner.Learn(sy, results, compacted)
	if whole, _ := plan.SplitRefused(results); fresh || whole != nil {
		// The sync that follows (at once, or after the backoff) writes what this one left out
		// or could not send: the change's latency runs on until then.
		c.unread(in.changed)
	}
	waiting := len(sy.Conflicts) > 0 || slices.ContainsFunc(sy.Problems, func(p registry.Problem) bool { return p.Kind == registry.ProblemOverBudget })
	return fresh || (waiting && removedAny(sy.Changes, results))
}

// removedAny reports whether a delete or release went through; results[i] is what became of
// changes[i].
func removedAny(changes []plan.Change, results []plan.Result) bool {
	for i := range results {
		if a := changes[i].Action; (a == plan.Delete || a == plan.Release || a == registry.ActionHandOver) && results[i].Err == nil {
			return true
		}
	}
	return false
}

// report tells every reporter, unless the sync is a dry run.
func (c *Controller) report(ctx context.Context, r *Report) {
	if c.cfg.DryRun {
		return
	}
	for _, rep := range c.cfg.Reporters {
		rep.Report(ctx, r)
	}
}

// Run syncs until ctx ends: at once, then as the Schedule says (every interval, soon after
// any source event, when a pending deletion falls due, after a failure's backoff). Syncs never
// overlap. Refused writes are not failures of the sync and are tried again by the next
// interval's sync. Every timer comes from the Clock. It returns nil when ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	// A loop starts each time this replica comes to lead: what it learnt while it led before
	// (the server's state, what it wrote and saw others write) is not the server's any more.
	c.syncing.Lock()
	c.planner.Reset()
	c.syncing.Unlock()
	defer func() {
		for _, r := range c.takeRequests() {
			r <- errStopped
		}
	}()
	s := NewSchedule(c.cfg.Clock.Now(), c.settings().Interval, c.cfg.MinEventSyncInterval)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.wake:
			s = c.triggered(s)
			continue
		default:
		}
		if wait := s.Next.Sub(c.cfg.Clock.Now()); wait > 0 {
			timer := c.cfg.Clock.NewTimer(wait)
			if c.cfg.Scheduled != nil {
				c.cfg.Scheduled(s)
			}
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-c.wake:
				timer.Stop()
				s = c.triggered(s)
				continue
			case <-timer.C():
			}
		}
		start := c.cfg.Clock.Now()
		s = s.Starting(start)
		var answer []chan error
		if s.Mode == planner.Full {
			answer = c.takeRequests()
		}
		rep, err := c.sync(ctx, s.Mode)
		for _, a := range answer {
			a <- err
		}
		if ctx.Err() != nil {
			return nil
		}
		r := Ended{Mode: s.Mode, Started: start, Planned: rep != nil}
		var refused *RefusedError
		switch {
		case errors.As(err, &refused):
			c.log.WithError(err).WithField("retry_in", s.Interval).Warn("writes refused; the rest is synced, those hostnames are retried at the interval")
		case errors.Is(err, provider.ErrAuthentication):
			r.Outcome = OutcomeAuthentication
		case err != nil:
			r.Outcome = OutcomeFailed
		}
		if rep != nil && (err == nil || refused != nil) {
			r.Again, r.NextExpiry = rep.Again, rep.NextExpiry
		}
		s = s.Done(r, c.cfg.Clock.Now())
		switch r.Outcome {
		case OutcomeAuthentication:
			c.log.WithError(err).WithField("retry_in", s.Next.Sub(c.cfg.Clock.Now()).Round(time.Second)).
				Error("AuthenticationFailed: " + provider.AuthFailure(err) + "; retrying when the certificate files change or at the interval")
		case OutcomeFailed:
			c.log.WithError(err).WithFields(logrus.Fields{"retry_in": s.Next.Sub(c.cfg.Clock.Now()), "failures": s.failures}).Error("sync failed")
		}
	}
}

// triggered is the schedule after the news that woke the loop.
func (c *Controller) triggered(s Schedule) Schedule {
	t := Trigger(c.news.Swap(0))
	if t&TriggerReconfigured != 0 {
		s.Interval = c.settings().Interval
	}
	return s.Triggered(t, c.cfg.Clock.Now())
}

// heldLine is the dry run's line of a change held: the change, the stage that held it and why.
func heldLine(h *registry.Held) string {
	why := h.Reason
	switch {
	case h.Reason == registry.ReasonPolicy:
		why += ", --policy=" + string(h.Policy)
	case !h.Due.IsZero():
		why += ", goes at " + h.Due.UTC().Format(time.RFC3339)
	case h.Token != "":
		why += ", confirm with " + h.Token
	case h.Contested:
		why += ", contested"
	}
	return "held by " + h.Stage + " (" + why + "): " + h.Change.String()
}
