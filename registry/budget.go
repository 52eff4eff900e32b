package registry

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// namespaceBudget leaves out the new hostnames of a namespace over its budget of entries:
// its hostnames that have entries stay as the plan makes them, and the new ones are admitted in
// the order of their oldest claim while the namespace stays within. The hostnames changed are
// those left out, whose merge must not be reused (it would settle the hostname unplanned once
// the namespace has room again).
func (r *Registry) namespaceBudget(merged []*endpoint.Endpoint, owned map[string][]*endpoint.Record) reshaped {
	limit := r.cfg.Budgets.EntriesPerNamespace
	if limit == 0 {
		return reshaped{merged: merged}
	}
	count := map[string]int{}
	for _, m := range merged {
		count[m.Sources[0].Namespace] += len(m.Targets)
	}
	over := false
	for _, n := range count {
		over = over || n > limit
	}
	if !over {
		return reshaped{merged: merged}
	}
	used := map[string]int{}
	var fresh []int
	for i, m := range merged {
		ns := m.Sources[0].Namespace
		switch {
		case count[ns] <= limit:
		case len(owned[m.Hostname]) > 0:
			used[ns] += len(m.Targets)
		default:
			fresh = append(fresh, i)
		}
	}
	sort.SliceStable(fresh, func(a, b int) bool { return olderClaim(merged[fresh[a]], merged[fresh[b]]) })
	left := map[int]bool{}
	for _, i := range fresh {
		m := merged[i]
		ns := m.Sources[0].Namespace
		if used[ns]+len(m.Targets) <= limit {
			used[ns] += len(m.Targets)
			continue
		}
		left[i] = true
	}
	// One problem per object, naming a few of the hostnames it does not get.
	type leftOut struct {
		src   endpoint.SourceRef
		hosts []string
	}
	var objects []*leftOut
	byUID := map[string]*leftOut{}
	res := reshaped{merged: make([]*endpoint.Endpoint, 0, len(merged)-len(left))}
	for i, m := range merged {
		if !left[i] {
			res.merged = append(res.merged, m)
			continue
		}
		res.changed = append(res.changed, m.Hostname)
		for _, s := range m.Sources {
			o := byUID[s.UID]
			if o == nil {
				o = &leftOut{src: s}
				byUID[s.UID] = o
				objects = append(objects, o)
			}
			o.hosts = append(o.hosts, m.Hostname)
		}
	}
	for _, o := range objects {
		names := strings.Join(o.hosts[:min(len(o.hosts), 3)], ", ")
		if len(o.hosts) > 3 {
			names += fmt.Sprintf(" and %d more", len(o.hosts)-3)
		}
		res.problems = append(res.problems, Problem{Source: o.src, Reason: ProblemOverBudget,
			Message: fmt.Sprintf("namespace %s is at its budget of %d entries: %s not written; the entries it has stay", o.src.Namespace, limit, names)})
	}
	return res
}

// Ration splits a sync's changes into those it sends and those it leaves to the syncs that
// follow (at once), within the budget of writes per sync. It takes a hostname's changes
// together, since they are planned against each other (a duplicate deleted while another entry
// takes its address), and takes hostnames in turns: each namespace in turn gets one, and within
// a namespace each object in turn, so that one object, namespace or source with thousands of
// changes cannot keep the rest of the cluster waiting. What it sends is in that order, which
// the provider keeps within each kind of write; within the budget, the plan's order stands.
func (r *Registry) Ration(changes []plan.Change) (send, deferred []plan.Change) {
	limit := r.cfg.Budgets.WritesPerSync
	if limit == 0 || len(changes) <= limit {
		return changes, nil
	}
	type group struct{ start, end int }
	// groups by namespace, then by object, in the plan's order.
	byNS := map[string]map[string][]group{}
	for start := 0; start < len(changes); {
		end := start + 1
		for end < len(changes) && changes[end].Hostname() == changes[start].Hostname() {
			end++
		}
		ns, obj := turnOf(&changes[start])
		if byNS[ns] == nil {
			byNS[ns] = map[string][]group{}
		}
		byNS[ns][obj] = append(byNS[ns][obj], group{start, end})
		start = end
	}
	// Each namespace's hostnames in its objects' turns; then every namespace's first, every
	// namespace's second, and so on.
	type turn struct {
		round, ns int
		g         group
	}
	var turns []turn
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
				turns = append(turns, turn{round, k, objs[o][0]})
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

// turnOf is whose turn a change is taken in: the namespace and the object named on the entry
// it writes (the entry it removes, for a delete or release).
func turnOf(c *plan.Change) (namespace, object string) {
	rec := c.New
	if rec == nil || c.Action == plan.Release {
		rec = c.Old
	}
	v := viewOf(rec)
	namespace, _ = v.value(PrefixNamespace)
	object, _ = v.value(PrefixSource)
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
