package registry

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// namespaceBudget holds a namespace to its budget of entries: what it would have after the
// plan, counted as the router stores it (each hostname's addresses, or its entries when it has
// more, marked ones included, and the entries of hostnames it let go until they are gone). The
// entries a namespace has always stay; what it adds (a new hostname, more addresses for one it
// has) is admitted in the order of the oldest claim while the namespace stays within, and the
// rest waits: a new hostname is not written, a grown one keeps as many addresses as it has
// entries (those it has first, so that a moved address is still re-pointed). The hostnames
// changed are those cut, whose merge must not be reused (it would settle the hostname
// unplanned once the namespace has room again).
func (r *Registry) namespaceBudget(in *claimsIn, merged []*endpoint.Endpoint) verdicts {
	limit := r.cfg.Budgets.EntriesPerNamespace
	if limit == 0 {
		return verdicts{endpoints: merged}
	}
	// Within the budget whichever namespace holds what: nothing to count per namespace.
	bound := len(in.st.Owned)
	for _, m := range merged {
		bound += len(m.Targets)
	}
	if bound <= limit {
		return verdicts{endpoints: merged}
	}
	cut := namespaceCuts(in, merged, limit)
	if len(cut) == 0 {
		return verdicts{endpoints: merged}
	}
	res := verdicts{endpoints: make([]*endpoint.Endpoint, 0, len(merged))}
	var left leftOut
	for i, m := range merged {
		c, isCut := cut[i]
		if !isCut {
			res.endpoints = append(res.endpoints, m)
			continue
		}
		if c != nil {
			res.endpoints = append(res.endpoints, c)
		}
		res.changed = append(res.changed, m.Hostname)
		what := m.Hostname
		if c != nil {
			what = fmt.Sprintf("%d of %s's %d addresses", len(m.Targets)-len(c.Targets), m.Hostname, len(m.Targets))
		}
		left.add(m.Sources, what)
	}
	for _, o := range left.objects {
		res.problems = append(res.problems, Problem{Source: o.src, Kind: ProblemOverBudget,
			Message: fmt.Sprintf("namespace %s is at its budget of %d entries (entries marked for deletion count until they are gone): %s not written; the entries it has stay",
				o.src.Namespace, limit, o.names())})
	}
	return res
}

// namespaceCuts are the merged endpoints (by index) cut to fit their namespace's budget: each
// to as many addresses as its hostname has entries (nil for none), by the rule above.
func namespaceCuts(in *claimsIn, merged []*endpoint.Endpoint, limit int) map[int]*endpoint.Endpoint {
	owned := in.owned
	projected, has := map[string]int{}, map[string]int{}
	wanted := make(map[string]bool, len(merged))
	for _, m := range merged {
		ns, n := m.Sources[0].Namespace, len(owned[m.Hostname])
		wanted[m.Hostname] = true
		projected[ns] += max(n, len(m.Targets))
		has[ns] += n
	}
	for h, recs := range owned {
		if wanted[h] {
			continue
		}
		for _, rec := range recs {
			v := in.st.view(rec)
			ns, _ := v.value(PrefixNamespace)
			projected[ns]++
			has[ns]++
		}
	}
	var growing []int
	for i, m := range merged {
		if projected[m.Sources[0].Namespace] > limit && len(m.Targets) > len(owned[m.Hostname]) {
			growing = append(growing, i)
		}
	}
	sort.SliceStable(growing, func(a, b int) bool { return olderClaim(merged[growing[a]], merged[growing[b]]) })
	cut := map[int]*endpoint.Endpoint{}
	for _, i := range growing {
		m := merged[i]
		ns, n := m.Sources[0].Namespace, len(owned[m.Hostname])
		if add := len(m.Targets) - n; has[ns]+add <= limit {
			has[ns] += add
			continue
		}
		cut[i] = withAddresses(m, owned[m.Hostname], n)
	}
	return cut
}

// leftOut gathers, per object, the hostnames it does not get in full: one problem each.
type leftOut struct {
	objects []*objectLeftOut
	byUID   map[string]*objectLeftOut
}

type objectLeftOut struct {
	src   endpoint.SourceRef
	hosts []string
}

func (l *leftOut) add(sources []endpoint.SourceRef, what string) {
	if l.byUID == nil {
		l.byUID = map[string]*objectLeftOut{}
	}
	for _, s := range sources {
		o := l.byUID[s.UID]
		if o == nil {
			o = &objectLeftOut{src: s}
			l.byUID[s.UID] = o
			l.objects = append(l.objects, o)
		}
		o.hosts = append(o.hosts, what)
	}
}

// names are a few of the object's hostnames, and how many more.
func (o *objectLeftOut) names() string {
	names := strings.Join(o.hosts[:min(len(o.hosts), 3)], ", ")
	if len(o.hosts) > 3 {
		names += fmt.Sprintf(" and %d more", len(o.hosts)-3)
	}
	return names
}

// withAddresses is m cut to n addresses, those its entries have first; nil for none.
func withAddresses(m *endpoint.Endpoint, recs []*endpoint.Record, n int) *endpoint.Endpoint {
	if n == 0 {
		return nil
	}
	keep := make([]string, 0, n)
	for _, ip := range m.Targets {
		if len(keep) < n && slices.ContainsFunc(recs, func(r *endpoint.Record) bool { return r.IP == ip }) {
			keep = append(keep, ip)
		}
	}
	for _, ip := range m.Targets {
		if len(keep) < n && !slices.Contains(keep, ip) {
			keep = append(keep, ip)
		}
	}
	c := *m
	c.Targets = endpoint.SortedUnique(keep)
	c.TargetTags = make(map[string][]string, len(c.Targets))
	for _, ip := range c.Targets {
		c.TargetTags[ip] = m.TargetTags[ip]
	}
	return &c
}

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
