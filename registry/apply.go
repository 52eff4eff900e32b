package registry

import (
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Verdict is the registry's verdict on one plan; the planner's Sync carries it on.
type Verdict struct {
	// Changes are the writes to send, sorted like the plan's.
	Changes []plan.Change
	// NextExpiry is the earliest time a pending deletion falls due after this sync, zero when
	// none is pending; the controller schedules a sync then so deletions happen on time.
	NextExpiry time.Time
	// Pending is the number of owned entries marked for deletion once Changes are applied.
	Pending int
	// Braked is the mass deletion the brake held, nil when none.
	Braked *Braked
	// Twin is another writer of this identity, nil when none shows (twins.go).
	Twin *Twin
	// Silent are the other installations whose heartbeats are older than their threshold.
	Silent []SilentCluster
	// TakeUpLeft is the number of entries of an earlier version still to be given the
	// identity by the syncs that follow.
	TakeUpLeft int
	// Held are the changes of the plan a change stage did not send, each with its reason.
	Held []Held
	// Rates are the write-rate allowances, at this sync's time and before its writes, of the
	// objects and namespaces it would write: Record charges them with what went through and
	// hands them back beside those the sync did not touch.
	Rates Rates
	// Paced is the number of changes the write-rate budgets held back: the sync at NextExpiry
	// writes their hostnames' state then. Deferred is the number beyond the budget of writes
	// per sync, left to the syncs that follow at once; DeferredCreates: some of them create,
	// so the next sync reads the whole server anyway.
	Paced, Deferred int
	DeferredCreates bool
	// WholeRead are the changes held because only a sync that reads the whole server may send
	// them (the sync was planned from the known state): the caller reads and decides again.
	WholeRead []plan.Change
	// Answers take the release probes off this cluster's entries, each a write of its own,
	// whatever else the sync holds: a dry run sends these and nothing else, so that a release
	// beside an operator tried out with --dry-run learns that it runs and refuses.
	Answers []plan.Change
}

// runChangeStages turns the plan's changes into what is safe to write at in.now, by the change
// stages of table in their order. Whatever a stage holds back is in Held, with its reason; the
// problems are those of the objects a stage held back.
func (r *Registry) runChangeStages(table []changeStage, in *changesIn, changes []plan.Change) (Verdict, []Problem) {
	res := Verdict{}
	var problems []Problem
	for _, s := range table {
		v := s.run(r, in, changes)
		changes = v.changes
		for _, h := range v.held {
			h.Stage = s.name
			res.Held = append(res.Held, h)
		}
		if !v.next.IsZero() && (res.NextExpiry.IsZero() || v.next.Before(res.NextExpiry)) {
			res.NextExpiry = v.next
		}
		res.TakeUpLeft += v.takeUpLeft
		res.Paced += v.paced
		res.Deferred += v.deferred
		res.DeferredCreates = res.DeferredCreates || v.deferredCreates
		res.WholeRead = append(res.WholeRead, v.wholeRead...)
		res.Answers = append(res.Answers, v.answers...)
		if v.twin != nil {
			res.Twin = v.twin
		}
		if v.braked != nil {
			res.Braked = v.braked
		}
		if v.rates != nil {
			res.Rates = v.rates
		}
		if v.silent != nil {
			res.Silent = v.silent
		}
		for _, p := range v.problems {
			p.Stage, p.Reason = s.name, p.Kind.reason()
			problems = append(problems, p)
		}
	}
	plan.Sort(changes)
	res.Changes = changes
	res.Pending = r.pendingAfter(in.st, changes)
	return res, problems
}

// pendingAfter counts owned entries that carry a mark once changes are applied.
func (r *Registry) pendingAfter(st *State, changes []plan.Change) int {
	marked := map[string]bool{}
	for i := range st.Owned {
		rec := &st.Owned[i]
		v := st.view(rec)
		if _, ok := v.value(PrefixPending); ok {
			marked[rec.ID] = true
		}
	}
	for _, c := range changes {
		switch c.Action {
		case plan.Mark:
			marked[c.Old.ID] = true
		case plan.Unmark, plan.Update, plan.Delete, plan.Release:
			delete(marked, c.Old.ID)
		}
	}
	return len(marked)
}

// withOwnTag is tags with tag as the operator's only tag of prefix (a reserved one): inside its
// block on an adopted entry (right after TagPreExisting), at the end otherwise. A user's own
// tag of that shape stays where it is.
func withOwnTag(tags []string, v *view, prefix, tag string) []string {
	out := make([]string, 0, len(tags)+1)
	for i, t := range tags {
		inBlock := v.blockStart < 0 || (i >= v.blockStart && i < v.blockStart+len(v.op))
		if inBlock && strings.HasPrefix(t, prefix) {
			continue
		}
		out = append(out, t)
		if i == v.blockStart {
			out = append(out, tag)
		}
	}
	if v.blockStart < 0 {
		out = append(out, tag)
	}
	return out
}
