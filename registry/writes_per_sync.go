package registry

import (
	"slices"
	"sort"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// writesPerSync holds what goes beyond the budget of writes per sync, for the syncs that
// follow at once (Verdict.Deferred). It takes a hostname's changes together, since they are
// planned against each other (a duplicate deleted while another entry takes its address), and
// takes hostnames in turns: each namespace in turn gets one, and within a namespace each object
// in turn, so that one object, namespace or source with thousands of changes cannot keep the
// rest of the cluster waiting. What it sends is in that order, which the provider keeps within
// each kind of write; within the budget, the plan's order stands.
func (r *Registry) writesPerSync(_ *changesIn, changes []plan.Change) changed {
	send, deferred := r.ration(changes)
	v := changed{changes: send, deferred: len(deferred)}
	for _, c := range deferred {
		v.deferredCreates = v.deferredCreates || c.Action == plan.Create
		v.held = append(v.held, Held{Change: c, Reason: ReasonOverBudget})
	}
	return v
}

// ration splits changes into those a sync sends and those it defers (writesPerSync).
func (r *Registry) ration(changes []plan.Change) (send, deferred []plan.Change) {
	limit := r.cfg.Budgets.WritesPerSync
	if limit == 0 || len(changes) <= limit {
		return changes, nil
	}
	// A hostname's changes must be next to each other.
	if !slices.IsSortedFunc(changes, func(a, b plan.Change) int { return strings.Compare(a.Hostname(), b.Hostname()) }) {
		changes = slices.Clone(changes)
		plan.Sort(changes)
	}
	turns := turnsOf(changes)
	send = make([]plan.Change, 0, limit)
	k := 0
	for ; k < len(turns); k++ {
		g := turns[k].g
		if len(send) > 0 && len(send)+g.end-g.start > limit {
			break
		}
		send = append(send, changes[g.start:g.end]...)
	}
	deferred = make([]plan.Change, 0, len(changes)-len(send))
	for _, t := range turns[k:] {
		deferred = append(deferred, changes[t.g.start:t.g.end]...)
	}
	return send, deferred
}

// writeGroup is one hostname's changes, changes[start:end]; writeTurn its place in the order
// Ration sends them in.
type writeGroup struct{ start, end int }

type writeTurn struct {
	round, ns int
	g         writeGroup
}

// turnsOf orders the hostnames' groups of changes: each namespace's hostnames in its objects'
// turns; then every namespace's first, every namespace's second, and so on.
func turnsOf(changes []plan.Change) []writeTurn {
	// groups by namespace, then by object, in the plan's order.
	byNS := map[string]map[string][]writeGroup{}
	for start := 0; start < len(changes); {
		end := start + 1
		for end < len(changes) && changes[end].Hostname() == changes[start].Hostname() {
			end++
		}
		ns, obj := turnOf(&changes[start])
		if byNS[ns] == nil {
			byNS[ns] = map[string][]writeGroup{}
		}
		byNS[ns][obj] = append(byNS[ns][obj], writeGroup{start, end})
		start = end
	}
	var turns []writeTurn
	namespaces := sortedKeys(byNS)
	for k, ns := range namespaces {
		objs := byNS[ns]
		keys := sortedKeys(objs)
		round := 0
		for left := true; left; {
			left = false
			for _, o := range keys {
				if len(objs[o]) == 0 {
					continue
				}
				turns = append(turns, writeTurn{round, k, objs[o][0]})
				objs[o] = objs[o][1:]
				round++
				left = true
			}
		}
	}
	sort.SliceStable(turns, func(i, j int) bool {
		if turns[i].round != turns[j].round {
			return turns[i].round < turns[j].round
		}
		return turns[i].ns < turns[j].ns
	})
	return turns
}

// turnOf is whose turn a change is taken in, and whose budgets it spends: the namespace of the
// entry it writes (the entry it removes, for a delete or release) and the object that causes
// it: the first whose source: tag it puts on or takes off, or, when it changes none, the first
// the entry names. An object that joins or leaves another's entry pays for that write.
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

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
