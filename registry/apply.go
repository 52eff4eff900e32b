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
	// NextExpiry is the earliest time a hold ends (a mark falls due, a paced write may go),
	// zero for none: the controller syncs then.
	NextExpiry time.Time
	// Pending is the number of owned entries marked for deletion once Changes are applied.
	Pending int
	// Braked is the mass deletion the brake held, nil when none.
	Braked *Braked
	// Twin is another writer of this identity, nil when none shows (twins.go).
	Twin *Twin
	// Silent are the other installations whose heartbeats are older than their threshold.
	Silent []SilentCluster
	// TakeUpLeft counts the earlier version's entries still to take up.
	TakeUpLeft int
	// Held are the changes of the plan a change stage did not send, each with its reason.
	Held []Held
	// Rates are the write-rate allowances of the objects and namespaces the sync would write,
	// before its writes; Record charges them.
	Rates Rates
	// Paced counts the changes the write-rate budgets held (written at NextExpiry); Deferred
	// those beyond the writes per sync, left to the syncs that follow at once, and
	// DeferredCreates whether some create (the next sync reads the whole server anyway).
	Paced, Deferred int
	DeferredCreates bool
	// WholeRead are the changes only a whole read may send: the caller reads and decides again.
	WholeRead []plan.Change
	// Answers take the release probes off this cluster's entries, each a write of its own: the
	// one write of a dry run, so that release learns the operator runs.
	Answers []plan.Change
	// Compact are the entries whose event logs the caller folds (CompactAggregates by ID) once
	// every write of Changes went through and nothing is held for later, and tells Record what
	// became of them: entries this installation alone owns past the threshold of events, and
	// those it deleted that a whole read no longer shows (compact.go). OwnEvents is the largest
	// event count of an entry it alone owns, as far as the memory knows.
	Compact   []string
	OwnEvents int64
	// compactKeys are the write-rate allowances each of Compact is charged to.
	compactKeys map[string][2]string
}

// runChangeStages turns the plan's changes into what is safe to write at in.now, by the stages
// of table in order; what a stage holds back is in Held, with its stage and reason.
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
		res.Compact = append(res.Compact, v.compact...)
		res.OwnEvents = max(res.OwnEvents, v.ownEvents)
		if v.compactKeys != nil {
			res.compactKeys = v.compactKeys
		}
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
