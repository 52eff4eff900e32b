// Package dnscheck proves that the router answers: it asks the router's DNS server for the
// names the operator wrote and compares the answers with what it wrote. A router-hosts write
// returns OK before the router's resolver serves it, and whether it ever does depends on the
// router regenerating its files and running its reload hook, after the reply and with only a
// log line when either fails; so "written" and "answering" are two facts, and this package
// checks the second.
//
// The Checker is a controller.Reporter. After each sync it knows every name this cluster owns
// (hostnames and aliases) and the addresses written, and it asks the server (--verify-dns) for
// each name's A records (IPv4) or AAAA records (IPv6), only the types the name was written
// with:
//
//   - a grace (DefaultGrace) after a write that changed the name's addresses, or after it was
//     deleted;
//   - and every name once per interval (the operator's --interval), one question at a time,
//     spread across the interval. The pacing keeps two questions apart by the interval divided
//     by the questions of one round over every name (a second when that is more), so that a
//     round of 1,000 names of one type over a minute is 1,000 questions a minute, one every
//     60 ms, and the checks after a burst of writes, or of names not answering, take their
//     turns from that budget instead of adding to it.
//
// A name that does not answer as written for longer than the grace is not answering: Missing
// (NXDOMAIN or no data) or Wrong (other addresses). A name this cluster deleted that still
// answers with an address it deleted, for longer than the grace, is StillAnswering. Each such
// episode is counted in the router_hosts_operator_names_not_answering gauge under its reason
// (missing, wrong, still_answering), logged, and warned of once on the objects that claim the
// name (a NotAnswering or StillAnswering Warning event); it ends when the name answers as
// written (or, deleted, stops answering), which is logged. A server that does not answer at
// all (no answer in time, SERVFAIL, REFUSED) is no finding on any name: it is its own state,
// logged and in the router_hosts_operator_verify_dns_up gauge, and the names keep the findings
// their last answers gave.
//
// The Checker runs on a goroutine of its own (Run) with an injected clock: Report only hands
// the sync's report over, and no check ever calls router-hosts or holds up the sync loop.
//
// For other readers:
//
//   - (*Checker).State(hostname) Answer is the checker's latest word on a name;
//     (*Checker).Server() the server it asks ("" when the check is off), and
//     (*Checker).ServerDown() why the server does not answer, nil when it does.
//   - Check(ctx, server, hostname, want) Result asks once, for a command that checks one name
//     (explain, list): want are the addresses written; none asks whether the name answers at
//     all.
package dnscheck

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/dnsquery"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// The checker's defaults and bounds.
const (
	// DefaultGrace is how long a name has after a write to answer as written: the router
	// reloads its DNS after the write's reply, on a runner that may merge it with later writes.
	DefaultGrace = 5 * time.Second
	// DefaultTimeout is how long the server has to answer one question; the router's DNS is
	// on the local network, where an answer takes milliseconds.
	DefaultTimeout = 2 * time.Second
	// DefaultInterval is the round over every name when none is given: the operator's
	// --interval default.
	DefaultInterval = time.Minute
	// maxSpacing bounds the wait between two questions, so that a check after a write waits
	// for the pacing of a few names no longer than this; minSpacing keeps an interval far
	// shorter than the names need from making a burst.
	maxSpacing = time.Second
	minSpacing = time.Millisecond
	// downAfter failed questions in a row make the server not answering: one lost UDP
	// packet is not an outage.
	downAfter = 3
)

// The reasons of the checker's Warning events.
const (
	// ReasonNotAnswering: a name this cluster wrote does not answer as written.
	ReasonNotAnswering = "NotAnswering"
	// ReasonStillAnswering: a name this cluster deleted still answers.
	ReasonStillAnswering = "StillAnswering"
)

// Warner posts a Warning event on an object (events.Recorder, source.Warner).
type Warner interface {
	Warn(ref endpoint.SourceRef, reason, message string)
}

// Metrics are the gauges and counters the checker keeps (metrics.Metrics).
type Metrics interface {
	// SetNamesNotAnswering sets the names not answering as written under a reason (Labels).
	SetNamesNotAnswering(reason string, n int)
	// SetVerifyDNSUp says whether the server answers; ClearVerifyDNSUp that nothing is known
	// (the check is off, or this replica does not lead).
	SetVerifyDNSUp(up bool)
	ClearVerifyDNSUp()
	// CountVerifyDNSQuery counts one question by its outcome (QueryResults).
	CountVerifyDNSQuery(result string)
}

// Config configures a Checker; only Log is required.
type Config struct {
	// Server is the router's DNS server, host:port; "" turns the check off.
	Server string
	// Interval is the round over every name (default DefaultInterval); Grace how long a
	// name has to answer as written (default DefaultGrace); Timeout how long one question
	// waits (default DefaultTimeout).
	Interval, Grace, Timeout time.Duration
	// Clock is the checker's time: its timers, the questions' timeouts and every time it
	// records. Tests drive a fake one; nil is the real clock.
	Clock clock.WithDelayedExecution
	Log   logrus.FieldLogger
	// Metrics, Warner and Changed are told what the checker finds; each may be nil. Changed is
	// called, on the checker's goroutine, when a name's finding or the server's state changed,
	// so that a status writer can read State again.
	Metrics Metrics
	Warner  Warner
	Changed func()
}

// Checker checks the router's DNS for the names this cluster owns, beside the sync loop.
type Checker struct {
	clk     clock.WithDelayedExecution
	log     logrus.FieldLogger
	metrics Metrics
	warner  Warner
	changed func()
	timeout time.Duration
	grace   time.Duration
	// query is dnsquery.Query; tests replace it.
	query queryFunc
	// waiting, when set, is told when Run waits for the next check (zero: for a report).
	waiting func(time.Time)
	wake    chan struct{}

	mu sync.Mutex
	// server and interval are the settings in use; reset says they changed since the loop
	// last looked.
	server   string
	interval time.Duration
	reset    bool
	// latest is the latest sync's report not digested yet, and pending the writes of every
	// sync since the last digest.
	latest  *controller.Report
	pending writes
	// names are the names checked, queue them by when they are due.
	names map[string]*name
	queue queue
	// next is the earliest a question may be asked, by the pacing.
	next time.Time
	// failures counts the failed questions in a row; downErr is why the server does not
	// answer, nil while it does.
	failures int
	downErr  error
	answered bool
	// reported counts the names reported, by label.
	reported map[string]int
}

// New returns a checker; it checks nothing until Run.
func New(cfg Config) *Checker {
	c := &Checker{clk: cfg.Clock, log: cfg.Log, metrics: cfg.Metrics, warner: cfg.Warner, changed: cfg.Changed,
		timeout: cfg.Timeout, grace: cfg.Grace, query: dnsquery.Query, wake: make(chan struct{}, 1),
		server: cfg.Server, interval: cfg.Interval, names: map[string]*name{}, reported: map[string]int{},
		pending: writes{touched: map[string]bool{}}}
	if c.clk == nil {
		c.clk = clock.RealClock{}
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.grace <= 0 {
		c.grace = DefaultGrace
	}
	if c.interval <= 0 {
		c.interval = DefaultInterval
	}
	return c
}

// Report takes a sync's outcome (controller.Reporter) and returns at once: it keeps the report
// and the names its writes touched for the checker's goroutine. A sync that read no entries
// (it failed before) says nothing of them.
func (c *Checker) Report(_ context.Context, r *controller.Report) {
	// Off, nothing is kept: a server named later is asked from the sync its setting starts.
	if r.Entries == nil || c.Server() == "" {
		return
	}
	w := writesOf(r)
	c.mu.Lock()
	c.latest = r
	c.pending.merge(w)
	c.mu.Unlock()
	c.signal()
}

// SetServer makes the checker ask server ("" turns the check off) from its next step; every
// finding of another server is dropped and each name asked again.
func (c *Checker) SetServer(server string) {
	c.mu.Lock()
	if c.server != server {
		c.server, c.reset = server, true
	}
	c.mu.Unlock()
	c.signal()
}

// SetInterval sets the round over every name.
func (c *Checker) SetInterval(d time.Duration) {
	if d <= 0 {
		d = DefaultInterval
	}
	c.mu.Lock()
	c.interval = d
	c.mu.Unlock()
	c.signal()
}

// Server is the DNS server asked, "" when the check is off.
func (c *Checker) Server() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.server
}

// ServerDown is why the server does not answer, nil while it does (or before it was asked).
func (c *Checker) ServerDown() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.downErr
}

// Answer is the checker's word on one name.
type Answer struct {
	// Result is the last answer: its finding is Unchecked before the first, and since the
	// last write unless the name is reported (then its last bad answer stands until it answers
	// as written); a question that got no answer leaves the answer before it.
	Result
	// Reported says the name has not answered as written for longer than the grace, since
	// Since: it is counted in the metric and its objects were warned.
	Reported bool
	Since    time.Time
	// Checked is when the last answer came.
	Checked time.Time
}

// State is the checker's word on hostname: Unchecked for a name it does not check.
func (c *Checker) State(hostname string) Answer {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.names[key(hostname)]
	if n == nil {
		return Answer{Result: Result{Name: key(hostname)}}
	}
	return Answer{Result: n.last, Reported: n.reported, Since: n.badSince, Checked: n.checked}
}

// Run checks until ctx ends, then forgets every name and finding: the replica that leads next
// starts from its own syncs. Run it only while the replica leads, as the sync loop.
func (c *Checker) Run(ctx context.Context) {
	defer c.stop()
	for {
		at := c.step(ctx)
		if ctx.Err() != nil {
			return
		}
		var timer clock.Timer
		var fire <-chan time.Time
		if !at.IsZero() {
			wait := at.Sub(c.clk.Now())
			if wait <= 0 {
				continue
			}
			timer = c.clk.NewTimer(wait)
			fire = timer.C()
		}
		if c.waiting != nil {
			c.waiting(at)
		}
		select {
		case <-ctx.Done():
		case <-c.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

func (c *Checker) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// step digests what the syncs reported, asks about the name that is due if the pacing allows,
// and returns when the next question may be asked: zero when there is nothing to ask.
func (c *Checker) step(ctx context.Context) time.Time {
	now := c.clk.Now()
	c.mu.Lock()
	c.applySettings()
	if c.server == "" {
		c.mu.Unlock()
		return time.Time{}
	}
	r, w := c.latest, c.pending
	c.latest, c.pending = nil, writes{touched: map[string]bool{}}
	c.digest(r, w, now)
	n, at := c.due()
	server := c.server
	c.mu.Unlock()
	if n == nil || at.After(now) {
		return at
	}
	a := c.ask(ctx, server, n)
	if ctx.Err() != nil {
		return time.Time{}
	}
	c.mu.Lock()
	notify := c.record(n, a, now, server)
	_, at = c.due()
	c.mu.Unlock()
	if notify && c.changed != nil {
		c.changed()
	}
	return at
}

// due is the name due first and when it may be asked: when it is due, or later when the
// pacing says so.
func (c *Checker) due() (*name, time.Time) {
	if len(c.queue) == 0 {
		return nil, time.Time{}
	}
	n := c.queue[0]
	if n.due.Before(c.next) {
		return n, c.next
	}
	return n, n.due
}

// spacing is the least time between two questions: an interval spread over one round's
// questions, at most maxSpacing.
func (c *Checker) spacing() time.Duration {
	q := 0
	for _, n := range c.queue {
		q += n.queries()
	}
	return min(max(c.interval/time.Duration(max(q, 1)), minSpacing), maxSpacing)
}

// ask puts n's questions to server, each within the timeout on the checker's clock.
func (c *Checker) ask(ctx context.Context, server string, n *name) answer {
	qctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := c.clk.AfterFunc(c.timeout, func() { cancel(fmt.Errorf("no answer in %s", c.timeout)) })
	defer timer.Stop()
	a := ask(qctx, c.query, server, n.host, n.types)
	if c.metrics != nil {
		for _, res := range a.results {
			c.metrics.CountVerifyDNSQuery(res)
		}
	}
	return a
}

// record takes n's answer, asked at now, and schedules its next question; it reports whether
// a finding or the server's state changed.
func (c *Checker) record(n *name, a answer, now time.Time, server string) (changed bool) {
	c.next = now.Add(c.spacing() * time.Duration(max(n.queries(), 1)))
	if a.err != nil {
		changed = c.serverFailed(a.err, server)
		// No finding: ask again a grace later, or at the round when it was answered since.
		n.due = now.Add(c.grace)
		if n.answered {
			n.due = now.Add(c.interval)
		}
		heap.Fix(&c.queue, n.index)
		return changed
	}
	changed = c.serverAnswered(server)
	res := judge(n.host, n.want, n.gone, n.beside, a)
	changed = changed || res.Finding != n.last.Finding || !slices.Equal(res.Got, n.last.Got)
	n.last, n.checked = res, now
	if !res.Finding.Bad() {
		n.answered, n.badSince, n.backoff = true, time.Time{}, 0
		if n.reported {
			c.endEpisode(n, server)
		}
		if res.Finding == Gone || len(n.want) == 0 {
			c.forget(n.host, n, "deleted and no longer answering")
			return true
		}
		n.gone = nil // what was deleted no longer answers
		n.types = typesOf(n.want, nil)
		n.due = now.Add(c.interval)
		heap.Fix(&c.queue, n.index)
		return changed
	}
	if n.badSince.IsZero() {
		n.badSince = now
		if !n.answered {
			n.badSince = n.changed // it never answered as written since the write
		}
	}
	switch {
	case now.Sub(n.badSince) < c.grace:
		n.due = n.badSince.Add(c.grace)
	default:
		if !n.reported {
			c.startEpisode(n, server)
		} else if n.reportedAs != res.Finding {
			c.count(n.reportedAs.Label(), -1)
			n.reportedAs = res.Finding
			c.count(n.reportedAs.Label(), +1)
		}
		// Asked again soon, so that the end is seen soon, then less often.
		n.backoff = min(max(2*n.backoff, c.grace), c.interval)
		n.due = now.Add(n.backoff)
	}
	heap.Fix(&c.queue, n.index)
	return changed
}

// startEpisode reports n: counted, logged and warned of on its objects, once.
func (c *Checker) startEpisode(n *name, server string) {
	n.reported, n.reportedAs = true, n.last.Finding
	c.count(n.reportedAs.Label(), +1)
	msg, reason := c.message(n, server)
	c.nameLog(n, server).Warn(msg)
	if c.warner != nil {
		for _, ref := range n.refs {
			c.warner.Warn(ref, reason, msg)
		}
	}
}

// message is what a report of n says, and the reason of its event.
func (c *Checker) message(n *name, server string) (string, string) {
	if n.last.Finding == StillAnswering {
		return fmt.Sprintf("the router's DNS %s still answers %s with %s, deleted by this cluster more than %s ago: "+
			"the router's DNS has not been reloaded since", server, n.host, addrsText(n.last.Got), c.grace), ReasonStillAnswering
	}
	return fmt.Sprintf("the router's DNS %s does not answer as written for more than %s: %s; "+
		"router-hosts has the entry, but the router's DNS does not serve it (a failed reload hook, or a failed regeneration of its file)",
		server, c.grace, n.last), ReasonNotAnswering
}

// endEpisode ends n's report: uncounted and logged.
func (c *Checker) endEpisode(n *name, server string) {
	c.count(n.reportedAs.Label(), -1)
	n.reported = false
	c.nameLog(n, server).WithField("since", n.badSince).Info("the router's DNS answers as written again")
}

// forget stops checking n, ending its report.
func (c *Checker) forget(host string, n *name, why string) {
	if n.reported {
		c.count(n.reportedAs.Label(), -1)
		c.log.WithFields(logrus.Fields{"hostname": host, "why": why}).Info("no longer checking the router's DNS for a name")
	}
	if n.index >= 0 {
		heap.Remove(&c.queue, n.index)
	}
	delete(c.names, host)
}

func (c *Checker) nameLog(n *name, server string) logrus.FieldLogger {
	objs := make([]string, len(n.refs))
	for i, r := range n.refs {
		objs[i] = r.String()
	}
	return c.log.WithFields(logrus.Fields{"hostname": n.host, "verdict": n.last.Finding.String(), "want": addrsText(n.want),
		"got": addrsText(n.last.Got), "dns_server": server, "objects": objs})
}

// count moves the gauge of label by d.
func (c *Checker) count(label string, d int) {
	c.reported[label] += d
	if c.metrics != nil {
		c.metrics.SetNamesNotAnswering(label, c.reported[label])
	}
}

// serverFailed counts a question that got no answer; downAfter in a row make the server not
// answering, which is logged once. It reports whether that state changed.
func (c *Checker) serverFailed(err error, server string) bool {
	c.failures++
	if c.failures < downAfter || c.downErr != nil {
		return false
	}
	c.downErr = err
	c.log.WithError(err).WithFields(logrus.Fields{"dns_server": server, "failed": c.failures}).
		Warn("the router's DNS does not answer; no name is judged until it does, and each keeps its last finding")
	if c.metrics != nil {
		c.metrics.SetVerifyDNSUp(false)
	}
	return true
}

// serverAnswered ends a failure of the server; it reports whether the state changed.
func (c *Checker) serverAnswered(server string) bool {
	c.failures = 0
	was, first := c.downErr, !c.answered
	c.downErr, c.answered = nil, true
	if was == nil && !first {
		return false
	}
	if was != nil {
		c.log.WithField("dns_server", server).Info("the router's DNS answers again")
	}
	if c.metrics != nil {
		c.metrics.SetVerifyDNSUp(true)
	}
	return was != nil
}

// applySettings puts a changed server in use: every name is asked again, from a grace on.
func (c *Checker) applySettings() {
	if !c.reset {
		return
	}
	c.reset = false
	c.dropFindings()
	if c.server == "" {
		c.clearAll()
		return
	}
	now := c.clk.Now()
	for _, n := range c.names {
		n.rewritten(now, c.grace)
	}
	heap.Init(&c.queue)
}

// dropFindings ends every report and forgets what the server's state was.
func (c *Checker) dropFindings() {
	for _, n := range c.names {
		n.reported = false
	}
	for label := range c.reported {
		c.reported[label] = 0
		if c.metrics != nil {
			c.metrics.SetNamesNotAnswering(label, 0)
		}
	}
	c.failures, c.downErr, c.answered = 0, nil, false
	if c.metrics != nil {
		c.metrics.ClearVerifyDNSUp()
	}
}

// clearAll forgets every name, and the reports not digested yet.
func (c *Checker) clearAll() {
	c.names, c.queue, c.next = map[string]*name{}, nil, time.Time{}
	c.latest, c.pending = nil, writes{touched: map[string]bool{}}
}

// stop forgets everything when Run ends.
func (c *Checker) stop() {
	c.mu.Lock()
	c.dropFindings()
	c.clearAll()
	c.mu.Unlock()
	if c.changed != nil {
		c.changed()
	}
}
