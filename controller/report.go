package controller

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// Step names where a sync stopped: a step of the loop (read the sources, list the router,
// write), not a registry stage.
type Step uint8

// The steps. StepDone means the sync got through, though some writes may have been refused
// (Report.Failed); the others name the step that failed as a whole.
const (
	StepDone Step = iota
	StepSource
	StepList
	StepApply
)

// String is the step's name in metrics and logs.
func (s Step) String() string {
	switch s {
	case StepSource:
		return "source"
	case StepList:
		return "list"
	case StepApply:
		return "apply"
	}
	return "done"
}

// Object is what the sources made of one object in a sync.
type Object struct {
	Endpoints []*endpoint.Endpoint
	Problems  []endpoint.Problem
}

// FailureKind says what kept a write from happening, in the terms an observer reports.
type FailureKind uint8

// The kinds of failure.
const (
	// FailureRefused: the server, or the operator's own checks, turned the change down.
	FailureRefused FailureKind = iota
	// FailureUnreachable: the server could not be reached or did not answer in time.
	FailureUnreachable
	// FailureAuthentication: the server refused the TLS authentication.
	FailureAuthentication
)

// Failure is why one hostname's write did not happen.
type Failure struct {
	Err  error
	Kind FailureKind
}

func failureOf(ce *plan.ChangeError) Failure {
	switch {
	case ce.Refused:
		return Failure{Err: ce, Kind: FailureRefused}
	case errors.Is(ce, provider.ErrAuthentication):
		return Failure{Err: ce, Kind: FailureAuthentication}
	}
	return Failure{Err: ce, Kind: FailureUnreachable}
}

// Report is what a sync produced, translated for the reporters (and returned by SyncOnce).
type Report struct {
	// Cluster is the cluster name the sync ran as (a RouterHostsConfig may change it), and
	// ClusterID the installation's identity ("" when ownership is by name alone).
	Cluster, ClusterID string
	// Desired holds the merged endpoint of every managed hostname, with the objects that won it.
	Desired []*endpoint.Endpoint
	// Endpoints are the sources' endpoints the sync read on hostnames the registry manages, so
	// that a sync that failed at the server can still be reported on the objects it concerns
	// (by the last decision's domains). Unmanaged are the others, which the registry dropped in
	// silence (registry.Decision.Unmanaged).
	Endpoints []*endpoint.Endpoint
	Unmanaged []*endpoint.Endpoint
	// Objects is what the sources made of each object, by UID: all its endpoints (whatever the
	// domain filter) and the problems found in its input, for observers that report an
	// object's state.
	Objects map[string]Object
	// Entries are the entries this cluster owns per hostname once the writes are done.
	Entries map[string][]endpoint.Record
	// Failed says why each hostname whose write failed or was refused did not get it,
	// including the writes refused before that an event sync skipped until the interval.
	Failed map[string]Failure
	// Step says where a failed sync stopped, StepDone when it did not; Err is its error.
	Step Step
	Err  error
	// AuthFailed says the server refused the TLS authentication (a client certificate it does
	// not accept, or a server certificate our CA does not verify).
	AuthFailed bool
	// Changes are the writes the sync planned; Results[i] is what became of Changes[i] (the
	// entry as stored, or the error that stopped it). Results is nil in a dry run, which
	// writes nothing. Deferred is the number of changes left to the syncs that follow, beyond
	// the budget of writes per sync.
	Changes  []plan.Change
	Results  []plan.Result
	Deferred int
	// Paced is the number of changes held back by the write-rate budgets, written when they
	// allow (NextExpiry).
	Paced int
	// CompactedEvents are the events the sync's compactions took out of the server's log;
	// OwnEvents is the largest event count of an entry this installation alone owns, as the
	// registry knows it (registry.Verdict.OwnEvents).
	CompactedEvents, OwnEvents int64
	// Pending is the number of owned entries marked for deletion; Foreign the number owned by
	// other clusters.
	Pending, Foreign int
	// Namesakes are the other installations writing this cluster's name; Unclaimed the entries
	// an earlier version wrote under it that no object here wants while a namesake shows.
	Namesakes []registry.Namesake
	Unclaimed int
	// Former are the identities this installation had before whose entries it takes up.
	Former []registry.Namesake
	// Held are the changes the registry's change stages held back, each with its stage and
	// reason; State the server's entries sorted by owner, as the sync read them.
	Held  []registry.Held
	State *registry.State
	// Braked is the mass deletion the brake holds, nil when none; TakeUpLeft the entries of an
	// earlier version, or an earlier identity, still to be given the identity.
	Braked     *registry.Braked
	TakeUpLeft int
	// Twin is another writer of this identity, nil when none shows.
	Twin *registry.Twin
	// Silent are the other installations whose heartbeats are older than the threshold.
	Silent []registry.SilentCluster
	// SourceEndpoints counts the endpoints each source returned, by source index.
	SourceEndpoints []int
	// Conflicts are the claims the registry turned down; Problems the parts of claims it
	// dropped (reserved tags).
	Conflicts []registry.Conflict
	Problems  []registry.Problem
	// Started and Duration time the sync; ListDuration is the part spent reading the server,
	// its share of a no-op sync, and Read what was read.
	Started      time.Time
	Duration     time.Duration
	ListDuration time.Duration
	Read         planner.ReadKind
	// Mode is the kind of sync.
	Mode planner.Mode
	// Again says another sync follows at once: the planner found its known state out of date,
	// left out what only a read of the whole server may send or deferred changes beyond the
	// budget, or entries were removed while other namespaces' claims waited for the hostname,
	// and those claims can now be written.
	Again bool
	// NextExpiry is when the earliest pending deletion falls due; zero when none.
	NextExpiry time.Time
	// ChangedAt is when the earliest cluster change this sync read arrived, zero when it read
	// none (an interval's sync of an unchanged cluster): Started+Duration less ChangedAt is
	// how long the change took to reach the router, when the sync wrote it.
	ChangedAt time.Time
}

// reportOf is the report of a sync that planned, translated from what it read (in), what it
// planned (sy), what became of the writes (results, one per change of sy; nil when nothing was
// written) and whether another sync follows at once (again), at end.
func reportOf(in *reading, sy *planner.Sync, results []plan.Result, again bool, end time.Time) *Report {
	failed := map[string]Failure{}
	for host, err := range sy.Refused {
		failed[host] = Failure{Err: err, Kind: FailureRefused}
	}
	for _, ce := range plan.Failures(results) {
		// A write that met an entry newer than planned from is no failure of the user's when
		// the sync that follows at once plans it again from a fresh read; one that keeps
		// meeting newer entries is. A change not started is the sync's failure as a whole
		// (Err), not its hostname's.
		if (!ce.Stale || !again) && !errors.Is(ce.Err, plan.ErrNotStarted) {
			failed[ce.Change.Hostname()] = failureOf(ce)
		}
	}
	st := sy.State
	rep := &Report{Cluster: sy.Cluster, ClusterID: sy.ClusterID, Desired: sy.Desired, Endpoints: in.managed(), Unmanaged: sy.Unmanaged, Objects: objectsOf(in.sources),
		Entries: entriesAfter(withCoOwned(st), sy.Changes, results), Failed: failed, Results: results,
		Changes: sy.Changes, Deferred: sy.Deferred, Paced: sy.Paced, OwnEvents: sy.OwnEvents, Pending: sy.Pending, Foreign: st.ForeignCount(), SourceEndpoints: in.counts, Conflicts: sy.Conflicts,
		Namesakes: st.Namesakes, Unclaimed: st.Unclaimed, Former: st.Former, Braked: sy.Braked, TakeUpLeft: sy.TakeUpLeft, Twin: sy.Twin, Silent: sy.Silent,
		Problems: sy.Problems, Held: sy.Held, State: st, Started: in.started, Duration: end.Sub(in.started), ListDuration: sy.ReadDuration, Read: sy.Read,
		Mode: in.mode, ChangedAt: in.changed, Again: again, NextExpiry: sy.NextExpiry}
	if whole, _ := plan.SplitRefused(results); whole != nil {
		rep.Err, rep.Step, rep.AuthFailed = plan.ErrorOf(results), StepApply, errors.Is(whole, provider.ErrAuthentication)
	}
	return rep
}

// reportOfFailedRead is the report of a sync whose read failed at step (StepSource or
// StepList) with err, at end.
func reportOfFailedRead(in *reading, step Step, err error, end time.Time) *Report {
	rep := &Report{Err: err, Step: step, Mode: in.mode, Started: in.started, Duration: end.Sub(in.started)}
	if step == StepList {
		// The sources answered: observers can still report on the objects concerned.
		rep.AuthFailed = errors.Is(err, provider.ErrAuthentication)
		rep.Endpoints, rep.Objects, rep.SourceEndpoints = in.managed(), objectsOf(in.sources), in.counts
	}
	return rep
}

// errorOf is the error of a sync that planned: its writes' failure as a whole, else the
// hostnames whose writes were refused (a RefusedError), nil when every write went through.
func errorOf(rep *Report) error {
	if rep.Step == StepApply {
		return fmt.Errorf("applying %d changes: %w", len(rep.Changes), rep.Err)
	}
	if len(rep.Failed) == 0 {
		return nil
	}
	hosts := make([]string, 0, len(rep.Failed))
	for h := range rep.Failed {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	errs := make([]error, 0, len(hosts))
	for _, h := range hosts {
		errs = append(errs, rep.Failed[h].Err)
	}
	return &RefusedError{Hostnames: hosts, Err: errors.Join(errs...)}
}

// RefusedError is the error of a sync whose only failures were writes the server (or the
// operator's own validation) refused: the sync itself worked, and the loop goes on at its
// usual pace.
type RefusedError struct {
	Hostnames []string
	Err       error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%d hostnames refused (%s): %v", len(e.Hostnames), strings.Join(e.Hostnames, ", "), e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// managed are in's endpoints on hostnames the registry manages.
func (in *reading) managed() []*endpoint.Endpoint {
	if len(in.unmanaged) == 0 {
		return in.endpoints
	}
	out := make([]*endpoint.Endpoint, 0, len(in.endpoints))
	for _, ep := range in.endpoints {
		if !in.unmanaged[ep.Hostname] {
			out = append(out, ep)
		}
	}
	return out
}

// objectsOf is what the sources made of each object, by UID. Only the report needs it, so a
// sync builds it after its writes.
func objectsOf(read []sourceRead) map[string]Object {
	n := 0
	for _, r := range read {
		n += len(r.endpoints)
	}
	objects := make(map[string]Object, n)
	for _, r := range read {
		for _, ep := range r.endpoints {
			uid := ep.Sources[0].UID
			o := objects[uid]
			o.Endpoints = append(o.Endpoints, ep)
			objects[uid] = o
		}
		for uid, p := range r.problems {
			o := objects[uid]
			o.Problems = p
			objects[uid] = o
		}
	}
	return objects
}

// withCoOwned is st's entries this cluster wants: its own, and the other clusters' lines it
// co-owns, which serve its objects as its own entries do.
func withCoOwned(st *registry.State) []endpoint.Record {
	if len(st.CoOwned) == 0 {
		return st.Owned
	}
	return append(slices.Clip(st.Owned), st.CoOwned...)
}

// entriesAfter is the owned entries per hostname once the changes that went through are
// applied, each as the server stored it: results[i] is what became of changes[i], and with no
// results nothing was written.
func entriesAfter(owned []endpoint.Record, changes []plan.Change, results []plan.Result) map[string][]endpoint.Record {
	// The changes are few beside the entries: index them, then walk the entries once.
	gone := map[string]bool{}
	now := map[string]*endpoint.Record{}
	for i := range results {
		ch, res := &changes[i], &results[i]
		switch {
		case res.Err != nil:
		case ch.New == nil, ch.Action == plan.Release, ch.Action == registry.ActionHandOver, ch.Action == registry.ActionWithdraw:
			gone[ch.Old.ID] = true
		case res.Stored != nil && res.Stored.ID != "":
			now[res.Stored.ID] = res.Stored
		}
	}
	out := make(map[string][]endpoint.Record, len(owned))
	add := func(r *endpoint.Record) {
		rs := append(out[r.Hostname], *r)
		if n := len(rs); n > 1 && rs[n-1].IP < rs[n-2].IP {
			sort.Slice(rs, func(i, j int) bool { return rs[i].IP < rs[j].IP })
		}
		out[r.Hostname] = rs
	}
	for i := range owned {
		r := &owned[i]
		if gone[r.ID] {
			continue
		}
		if n, ok := now[r.ID]; ok {
			r = n
			delete(now, r.ID)
		}
		add(r)
	}
	for _, r := range now {
		if !gone[r.ID] {
			add(r)
		}
	}
	return out
}
