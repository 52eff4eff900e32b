package registry

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// writesPerSync holds what goes beyond the budget of writes per sync for the syncs that follow
// at once (Verdict.Deferred). A hostname's changes, planned against each other, go together,
// and hostnames go in turns: each namespace in turn, and within one each object in turn, so
// that no object, namespace or source with thousands of changes keeps the rest waiting.
// Within the budget, the plan's order stands.
func (r *Registry) writesPerSync(_ *changesIn, changes []plan.Change) changed {
	limit := r.cfg.Budgets.WritesPerSync
	if limit == 0 || len(changes) <= limit {
		return changed{changes: changes}
	}
	// A hostname's changes, changes[start:end], by namespace and object in the plan's order.
	type turn struct{ round, ns, start, end int }
	changes = byHostname(changes)
	byNS := map[string]map[string][]turn{}
	for start, end := 0, 0; start < len(changes); start = end {
		for end = start + 1; end < len(changes) && changes[end].Hostname() == changes[start].Hostname(); end++ {
		}
		ns, obj := turnOf(&changes[start])
		if byNS[ns] == nil {
			byNS[ns] = map[string][]turn{}
		}
		byNS[ns][obj] = append(byNS[ns][obj], turn{start: start, end: end})
	}
	// Each namespace's in its objects' turns, then every namespace's first, every one's second...
	var turns []turn
	for k, ns := range slices.Sorted(maps.Keys(byNS)) {
		objs, round := byNS[ns], 0
		keys := slices.Sorted(maps.Keys(objs))
		for left := true; left; {
			left = false
			for _, o := range keys {
				if len(objs[o]) > 0 {
					turns = append(turns, turn{round, k, objs[o][0].start, objs[o][0].end})
					objs[o], round, left = objs[o][1:], round+1, true
				}
			}
		}
	}
	slices.SortStableFunc(turns, func(a, b turn) int { return cmp.Or(a.round-b.round, a.ns-b.ns) })
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

// byHostname is changes with each hostname's next to each other: sorted, in a copy, if they
// are not.
func byHostname(changes []plan.Change) []plan.Change {
	if !slices.IsSortedFunc(changes, func(a, b plan.Change) int { return strings.Compare(a.Hostname(), b.Hostname()) }) {
		changes = slices.Clone(changes)
		plan.Sort(changes)
	}
	return changes
}

// turnOf is whose turn a change is taken in, and whose budgets it spends: the namespace of the
// entry it writes (removes, for a delete or release) and the object that causes it: the first
// whose source: tag it puts on or takes off, else the first the entry names. So an object that
// joins or leaves another's entry pays for that write.
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
