package registry

import (
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Decision is everything the registry decided in one sync, each decision with its reason: the
// entries by owner, the endpoints the cluster is to have with the claims and parts of claims
// the claim stages refused, the plan, and what the change stages made of it.
type Decision struct {
	State *State
	// Desired holds the merged endpoint of every managed hostname; Conflicts the claims the
	// claim stages turned down and Problems the parts of claims they dropped, each with its
	// stage.
	Desired   []*endpoint.Endpoint
	Conflicts []Conflict
	Problems  []Problem
	// Plan is the plan's changes as it made them, before the change stages; Planned the
	// hostnames it looked at (the others were settled).
	Plan    []plan.Change
	Planned int
	// Verdict is what the change stages made of the plan: the writes to send, and the changes
	// held back with their reasons.
	Verdict
	// Now is the clock reading the sync decided by.
	Now time.Time
}

// Caches are what a caller keeps from one decision to the next so that a sync among
// thousands of unchanged hostnames is cheap. Any may be nil: the registry decides the same
// without them.
type Caches struct {
	// Parser hands back an entry's parsed tags; Witness what other writers were seen doing.
	Parser  Parser
	Witness Witness
	// Merges hands back merges made before and keeps the new ones.
	Merges MergeCache
	// Settle: leave out of the plan the hostnames Merges says are settled. Only a sync that
	// plans from a state it did not read whole may (a whole read plans every hostname).
	Settle bool
}

// MergeCache keeps the merges desired makes, and says which hostnames are settled: the plan,
// being pure, would find nothing to change for them.
type MergeCache interface {
	Merges
	// Keep takes the merges one decision made afresh, and forgets those it found no longer
	// hold (Merge.Conflicted).
	Keep(made []Merge)
	// Settled are the hostnames of desired the plan need not look at.
	Settled(desired []*endpoint.Endpoint, st *State) map[string]bool
}

// Decide is one sync's decision at time now, from one read of the router's entries and the
// sources' endpoints (claims): it sorts the entries by owner (classify), runs the claim stages
// (desired), plans, and runs the change stages (apply). One clock reading decides both whose
// grace period has ended (a holder that let go) and which marks fall due.
func (r *Registry) Decide(now time.Time, records []endpoint.Record, claims []*endpoint.Endpoint, c Caches) Decision {
	st := r.classify(records, claims, c.Parser, c.Witness)
	var merges Merges
	if c.Merges != nil {
		merges = c.Merges
	}
	w := r.desired(now, claims, st, merges)
	var settled map[string]bool
	if c.Merges != nil {
		c.Merges.Keep(w.Merges)
		if c.Settle {
			settled = c.Merges.Settled(w.Endpoints, st)
		}
	}
	toPlan := w.Endpoints
	if len(settled) > 0 {
		toPlan = make([]*endpoint.Endpoint, 0, len(w.Endpoints)-len(settled))
		for _, ep := range w.Endpoints {
			if !settled[ep.Hostname] {
				toPlan = append(toPlan, ep)
			}
		}
	}
	changes := (&plan.Plan{Current: r.current(st, toPlan, settled), Desired: toPlan, Policy: r.cfg.Policy}).Calculate()
	return Decision{State: st, Desired: w.Endpoints, Conflicts: w.Conflicts, Problems: w.Problems,
		Plan: changes, Planned: len(toPlan), Verdict: r.apply(now, st, changes), Now: now}
}
