package registry

import (
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
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
}

// apply turns the plan's changes into what is safe to write at in.now, by the change stages
// in their order (changeStages). Whatever a stage holds back is in Held, with its reason; the
// problems are those of the objects a stage held back.
func (r *Registry) apply(in *changesIn, changes []plan.Change) (Verdict, []Problem) {
	res := Verdict{}
	var problems []Problem
	for _, s := range changeStages {
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
		if v.twin != nil {
			res.Twin = v.twin
		}
		if v.braked != nil {
			res.Braked = v.braked
		}
		if v.rates != nil {
			res.Rates = v.rates
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

// takeUp holds back the updates that only give an entry this installation's tags beyond the
// first takeUpPerSync of the sync: the take-up trickles in after an upgrade.
func (r *Registry) takeUp(in *changesIn, changes []plan.Change) changed {
	if !slices.ContainsFunc(changes, func(c plan.Change) bool { return c.Action == plan.Update }) {
		return changed{changes: changes}
	}
	v := changed{changes: make([]plan.Change, 0, len(changes))}
	n := 0
	for _, c := range changes {
		if c.Action == plan.Update && r.takeUpOnly(in.st, &c) {
			if n == takeUpPerSync {
				v.takeUpLeft++
				v.held = append(v.held, Held{Change: c, Reason: ReasonTakeUpPaced})
				continue
			}
			n++
		}
		v.changes = append(v.changes, c)
	}
	return v
}

// grace turns a planned delete into a durable pending-deletion mark; only a mark older than its
// grace period deletes the entry or, for an adopted one, releases it to the user as it was
// found. A duplicate (another entry serves its address), or an entry on a name another cluster
// holds (foreignHolder), is deleted at once. An update of a marked entry lifts the mark: an
// unmark.
func (r *Registry) grace(in *changesIn, changes []plan.Change) changed {
	if !slices.ContainsFunc(changes, func(c plan.Change) bool { return c.Action == plan.Update || c.Action == plan.Delete }) {
		return changed{changes: changes} // creates and adoptions only: a cold start
	}
	v := changed{changes: make([]plan.Change, 0, len(changes))}
	for _, c := range changes {
		if c.Action == plan.Update && in.st.marked(c.Old) {
			c.Action = plan.Unmark
		}
		if c.Action != plan.Delete {
			v.changes = append(v.changes, c)
			continue
		}
		if cv := in.st.view(c.Old); (c.Duplicate || yielded(in.st, c.Old)) && !cv.has(TagPreExisting) {
			// Its address stays served by another entry, or its name by the cluster that holds
			// it: no grace period to wait out.
			v.changes = append(v.changes, c)
			continue
		}
		out, due := r.retire(in.now, in.st, c.Old)
		if out != nil && retiring(out) && in.st.witness.Waits(c.Old.ID) {
			// Due, but a twin may want the entry: the next whole reads give it time to lift
			// the mark (twins.go).
			v.held = append(v.held, Held{Change: c, Reason: ReasonGracePeriod})
			continue
		}
		if out != nil {
			v.changes = append(v.changes, *out)
		}
		if !due.IsZero() {
			if out == nil {
				v.held = append(v.held, Held{Change: c, Reason: ReasonGracePeriod, Due: due})
			}
			if v.next.IsZero() || due.Before(v.next) {
				v.next = due
			}
		}
	}
	return v
}

// retire decides what a planned delete of rec means now: a mark, nothing yet, or the
// deletion (release) itself. It returns the change, if any, and when the mark falls due if
// that is still in the future.
func (r *Registry) retire(now time.Time, st *State, rec *endpoint.Record) (*plan.Change, time.Time) {
	v := st.view(rec)
	due, marked := r.due(&v)
	if !marked {
		// Not yet marked (or the mark was mangled by hand): start the grace period now.
		n := *rec
		n.Tags = markedTags(rec.Tags, &v, PrefixPending+now.UTC().Format(time.RFC3339))
		if st.parser.Parse(rec).class == namesake {
			// An entry of an identity this cluster had before is marked under this one: left
			// with the old, it would be the only entry of it, naming no object here, and so
			// a namesake's, never deleted.
			n.Tags = r.withOwnIdentity(n.Tags)
		}
		return &plan.Change{Action: plan.Mark, Old: rec, New: &n}, now.Add(r.gracePeriod(&v))
	}
	if now.Before(due) {
		return nil, due
	}
	if v.has(TagPreExisting) {
		return &plan.Change{Action: plan.Release, Old: rec, New: released(rec, &v)}, time.Time{}
	}
	return &plan.Change{Action: plan.Delete, Old: rec}, time.Time{}
}

// released is an adopted entry given back: the user's own tags in their order, no tag of the
// operator's, and the address, spelling and aliases recorded in its loan. The comment was never
// changed. An entry adopted before loans were recorded keeps its address and aliases.
func released(rec *endpoint.Record, v *view) *endpoint.Record {
	n := *rec
	n.Tags = append([]string{}, v.user...)
	if v.loan != nil {
		n.IP, n.Hostname, n.Aliases = v.loan.ip, v.loan.hostname, append([]string{}, v.loan.aliases...)
	}
	return &n
}

// due is when the deletion mark on an entry falls due: the mark's time plus the entry's grace
// period. marked is false when the entry carries no mark, or one mangled by hand.
func (r *Registry) due(v *view) (due time.Time, marked bool) {
	raw, ok := v.value(PrefixPending)
	markedAt, err := time.Parse(time.RFC3339, raw)
	if !ok || err != nil {
		return time.Time{}, false
	}
	return markedAt.Add(r.gracePeriod(v)), true
}

// gracePeriod is the entry's own grace-period tag if it has one (so a per-object override
// survives the object), else the configured default; never above the maximum, so that
// lowering it takes effect on entries written before.
func (r *Registry) gracePeriod(v *view) time.Duration {
	if s, ok := v.value(PrefixGracePeriod); ok {
		if d, err := time.ParseDuration(s + "s"); err == nil && d >= 0 {
			return r.ten.capGrace(d)
		}
	}
	return r.cfg.GracePeriod
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

// withOwnIdentity is tags with this cluster's name and identity as the operator's cluster tags,
// in the design's form, in place of another identity's.
func (r *Registry) withOwnIdentity(tags []string) []string {
	rec := endpoint.Record{Tags: tags}
	v := viewOf(&rec)
	rec.Tags = withOwnTag(rec.Tags, &v, PrefixCluster, r.clusterTag)
	v = viewOf(&rec)
	return withOwnTag(rec.Tags, &v, PrefixClusterID, IdentityTag(r.cfg.ClusterID))
}

// markedTags is tags with mark as the operator's only pending-deletion tag.
func markedTags(tags []string, v *view, mark string) []string {
	return withOwnTag(tags, v, PrefixPending, mark)
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
