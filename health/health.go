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
	"sync/atomic"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
)

// Checker tracks the loop and answers the probes.
type Checker struct {
	// wedgedAfter is how long without a sync attempt counts as wedged, in nanoseconds.
	wedgedAfter atomic.Int64
	lastSync    atomic.Int64
	leading     atomic.Bool
	synced      func() bool
	ping        func(ctx context.Context) error
	now         func() time.Time
}

// New returns a Checker. interval is the resync interval: a leader that has not attempted a
// sync for three intervals plus a minute is wedged. synced reports whether the informer
// caches are filled; ping asks router-hosts whether it is ready.
func New(interval time.Duration, synced func() bool, ping func(ctx context.Context) error) *Checker {
	c := &Checker{synced: synced, ping: ping, now: time.Now}
	c.SetInterval(interval)
	c.lastSync.Store(c.now().UnixNano())
	return c
}

// SetInterval follows a change of the resync interval (a RouterHostsConfig's).
func (c *Checker) SetInterval(interval time.Duration) {
	c.wedgedAfter.Store(int64(3*interval + time.Minute))
}

// SetLeading records whether this replica runs the loop; a standby is never wedged.
func (c *Checker) SetLeading(leading bool) {
	if leading {
		c.lastSync.Store(c.now().UnixNano())
	}
	c.leading.Store(leading)
}

// Report notes a sync attempt; it is a controller.Reporter.
func (c *Checker) Report(context.Context, *controller.Report) { c.lastSync.Store(c.now().UnixNano()) }

// Healthz fails when the leader's loop has not attempted a sync for too long.
func (c *Checker) Healthz(w http.ResponseWriter, _ *http.Request) {
	since := c.now().Sub(time.Unix(0, c.lastSync.Load()))
	if c.leading.Load() && since > time.Duration(c.wedgedAfter.Load()) {
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

// Routerz answers whether router-hosts answers its Readiness RPC just now, for a person or a
// blackbox probe, never for the kubelet. A refused certificate is named AuthenticationFailed,
// the reason the status conditions use, because it needs a new certificate or CA rather than
// patience.
func (c *Checker) Routerz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := c.ping(ctx); err != nil {
		if errors.Is(err, provider.ErrAuthentication) {
			http.Error(w, "AuthenticationFailed: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "router-hosts not reachable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}
