package registry

import (
	"cmp"
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// writesPerSync holds what goes beyond the budget of writes per sync for the syncs that follow at
// once (Verdict.Deferred): a hostname's changes go together, in turns by namespace and within one
// by object, so that no flood keeps the rest waiting; within the budget, the plan's order stands.
func (r *Registry) writesPerSync(_ *changesIn, changes []plan.Change) changed {
	limit := r.cfg.Budgets.WritesPerSync
	if limit == 0 || len(changes) <= limit {
		return changed{changes: changes}
	}
	type turn struct { // a hostname's changes[start:end]; nth: its place among its object's
		ns, obj                string
		nth, round, start, end int
	}
	changes = byHostname(changes)
	var turns []turn
	nth := map[[2]string]int{}
	for start, end := 0, 0; start < len(changes); start = end {
		for end = start + 1; end < len(changes) && changes[end].Hostname() == changes[start].Hostname(); end++ {
		}
		ns, obj := turnOf(&changes[start])
		turns = append(turns, turn{ns: ns, obj: obj, nth: nth[[2]string{ns, obj}], start: start, end: end})
		nth[[2]string{ns, obj}]++
	}
	// Each namespace's in its objects' turns, then every namespace's first, every one's second...
	slices.SortStableFunc(turns, func(a, b turn) int {
		return cmp.Or(strings.Compare(a.ns, b.ns), a.nth-b.nth, strings.Compare(a.obj, b.obj))
	})
	for i := 1; i < len(turns); i++ {
		if turns[i].ns == turns[i-1].ns {
			turns[i].round = turns[i-1].round + 1
		}
	}
	slices.SortStableFunc(turns, func(a, b turn) int { return cmp.Or(a.round-b.round, strings.Compare(a.ns, b.ns)) })
	v := changed{changes: make([]plan.Change, 0, limit)}
	for _, t := range turns {
		if v.deferred == 0 && (len(v.changes) == 0 || len(v.changes)+t.end-t.start <= limit) {
			v.changes = append(v.changes, changes[t.start:t.end]...)
			continue
		}
		v.deferred += t.end - t.start
		for _, c := range changes[t.start:t.end] {
			v.deferredCreates = v.deferredCreates || c.Action == plan.Create
			v.held = append(v.held, Held{Change: c, Reason: ReasonOverBudget})
		}
	}
	return v
}

// byHostname is changes with each hostname's together: sorted, in a copy, if they are not.
func byHostname(changes []plan.Change) []plan.Change {
	if !slices.IsSortedFunc(changes, func(a, b plan.Change) int { return strings.Compare(a.Hostname(), b.Hostname()) }) {
		changes = slices.Clone(changes)
		plan.Sort(changes)
	}
	return changes
}

// turnOf is whose turn c is taken in and whose budgets it spends: the namespace of the entry it
// writes (removes, for a delete or release), and the first object whose source: tag it puts on or
// takes off, else the entry's first, so that one joining or leaving another's entry pays.
func turnOf(c *plan.Change) (namespace, object string) {
	rec := c.New
	if rec == nil || c.Action == plan.Release {
		rec = c.Old
	}
	v := viewOf(rec)
	namespace, _ = v.value(PrefixNamespace)
	object, _ = v.value(PrefixSource)
	if c.Old != nil && c.New != nil {
		old, cur := viewOf(c.Old), viewOf(c.New)
		before, after := old.values(PrefixSource), cur.values(PrefixSource)
		if i := slices.IndexFunc(after, func(u string) bool { return !slices.Contains(before, u) }); i >= 0 {
			return namespace, after[i]
		}
		if i := slices.IndexFunc(before, func(u string) bool { return !slices.Contains(after, u) }); i >= 0 {
			return namespace, before[i]
		}
	}
	return namespace, object
}
