// Package health serves /healthz, /readyz and /routerz. Liveness means the sync loop is not
// wedged; readiness means the process works (its caches are filled), leader or standby. The
// router's state is kept out of both, as external-dns keeps its provider's: a router outage
// must not mark every replica NotReady, which stalls `helm install --wait`, rollouts and GitOps
// health. /routerz, the RouterHostsConfig's conditions, the events and the metrics say whether
// router-hosts answers.
package health

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
)

// Checker tracks the loop and answers the probes.
type Checker struct {
	// wedgedAfter is how long without a sync attempt counts as wedged, in nanoseconds.
	wedgedAfter atomic.Int64
	lastSync    atomic.Int64
	leading     atomic.Bool
	synced      func() bool
	clock       clock.PassiveClock

	mu     sync.Mutex
	router routerState
	// noRouter is why no router is named yet; empty once one is.
	noRouter string
}

// routerState is what the syncs learnt of router-hosts: when it last answered, and since when
// and why it has not, when the last call failed.
type routerState struct {
	answered time.Time // zero until a sync reaches it
	// failing is when the current run of failed calls began; zero when the last call worked.
	failing time.Time
	err     string
	auth    bool
}

// New returns a Checker. interval is the resync interval: a leader that has not attempted a
// sync for three intervals plus a minute is wedged. synced reports whether the informer
// caches are filled. clk tells the time (nil: the real clock); it is the loop's, so that ages
// agree with its syncs.
func New(interval time.Duration, synced func() bool, clk clock.PassiveClock) *Checker {
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Checker{synced: synced, clock: clk}
	c.SetInterval(interval)
	c.lastSync.Store(c.clock.Now().UnixNano())
	return c
}

// SetInterval follows a change of the resync interval (a RouterHostsConfig's).
func (c *Checker) SetInterval(interval time.Duration) {
	c.wedgedAfter.Store(int64(3*interval + time.Minute))
}

// SetLeading records whether this replica runs the loop; a standby is never wedged.
func (c *Checker) SetLeading(leading bool) {
	if leading {
		c.lastSync.Store(c.clock.Now().UnixNano())
	}
	c.leading.Store(leading)
}

// SetNoRouter records why no router is named yet, for /routerz; "" once one is. A leader
// that waits for a router is not wedged: it has nothing to sync, and its clock of syncs starts
// when a router is named.
func (c *Checker) SetNoRouter(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if why == "" && c.noRouter != "" {
		c.lastSync.Store(c.clock.Now().UnixNano())
	}
	c.noRouter = why
}

// Report notes a sync attempt, and what it learnt of router-hosts; it is a
// controller.Reporter. A sync that failed at the server says it did not answer; one that got
// through and called it (read it or wrote to it) says it answered, refusals included. A sync
// that failed before reaching it, or needed no call, says nothing new.
func (c *Checker) Report(_ context.Context, r *controller.Report) {
	now := c.clock.Now()
	c.lastSync.Store(now.UnixNano())
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case r.Step == controller.StepList || r.Step == controller.StepApply:
		if r.Err == nil || errors.Is(r.Err, context.Canceled) {
			return // a stopped sync (shutdown, lost leadership) says nothing of the router
		}
		if c.router.failing.IsZero() {
			c.router.failing = now
		}
		c.router.err, c.router.auth = firstLine(r.Err.Error()), r.AuthFailed
	case r.Step == controller.StepDone && (r.Read == planner.ReadServer || r.Read == planner.ReadHost || len(r.Changes) > 0):
		c.router = routerState{answered: now}
	}
}

// firstLine is an error's first line: the failed writes of a large sync are joined one per
// line, and one says enough.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " (and more)"
	}
	return s
}

// Healthz fails when the leader's loop has not attempted a sync for too long.
func (c *Checker) Healthz(w http.ResponseWriter, _ *http.Request) {
	since := c.clock.Since(time.Unix(0, c.lastSync.Load()))
	c.mu.Lock()
	waiting := c.noRouter != ""
	c.mu.Unlock()
	if c.leading.Load() && !waiting && since > time.Duration(c.wedgedAfter.Load()) {
		http.Error(w, fmt.Sprintf("sync loop wedged: no sync attempt for %s", since.Round(time.Second)), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// Readyz is ready when the caches are synced, whatever the router's state; the body says
// whether this replica leads.
func (c *Checker) Readyz(w http.ResponseWriter, _ *http.Request) {
	if !c.synced() {
		http.Error(w, "informer caches not synced", http.StatusServiceUnavailable)
		return
	}
	role := "standby"
	if c.leading.Load() {
		role = "leader"
	}
	fmt.Fprintf(w, "ok (%s)\n", role)
}

// Routerz says whether router-hosts answered the loop's last call to it, and how long ago, for
// a person or a blackbox probe, never for the kubelet. It calls nothing itself: the answer is
// what the syncs learnt, so that a loop of requests is no loop of calls to the router, and
// nobody who can reach the port can make the operator call it. A refused certificate is named
// AuthenticationFailed, the reason the status conditions use, because it needs a new
// certificate or CA rather than patience. Only the leader calls router-hosts, so a standby
// knows nothing to tell.
func (c *Checker) Routerz(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	noRouter := c.noRouter
	c.mu.Unlock()
	if noRouter != "" {
		http.Error(w, "no router named yet, waiting: "+noRouter, http.StatusServiceUnavailable)
		return
	}
	if !c.leading.Load() {
		http.Error(w, "unknown: this replica is a standby; only the leader calls router-hosts", http.StatusServiceUnavailable)
		return
	}
	c.mu.Lock()
	st := c.router
	c.mu.Unlock()
	now := c.clock.Now()
	ago := func(t time.Time) string { return now.Sub(t).Round(time.Second).String() + " ago" }
	switch {
	case !st.failing.IsZero():
		since := st.failing.UTC().Format(time.RFC3339) + " (" + ago(st.failing)
		if !st.answered.IsZero() {
			since += "; last answered " + ago(st.answered)
		}
		since += ")"
		if st.auth {
			http.Error(w, "AuthenticationFailed: "+st.err+"; since "+since, http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "router-hosts not reachable since "+since+": "+st.err, http.StatusServiceUnavailable)
	case st.answered.IsZero():
		http.Error(w, "unknown: no sync has reached router-hosts yet", http.StatusServiceUnavailable)
	default:
		fmt.Fprintf(w, "ok (answered %s)\n", ago(st.answered))
	}
}
