package registry

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// namespaceBudget holds a namespace to its budget of entries as the router would store them after
// the plan (docs/ownership.md, Budgets): the entries it has stay, and what it adds goes by the oldest
// claim while within; then a new hostname waits, a grown one keeps as many addresses as it has entries.
func (r *Registry) namespaceBudget(in *claimsIn, merged []*endpoint.Endpoint) verdicts {
	limit, bound := r.cfg.Budgets.EntriesPerNamespace, len(in.st.Owned)
	for i := 0; limit > 0 && i < len(merged); i++ {
		bound += len(merged[i].Targets)
	}
	if limit == 0 || bound <= limit { // within the budget whichever namespace holds what
		return verdicts{endpoints: merged}
	}
	projected, has, wanted := map[string]int{}, map[string]int{}, make(map[string]bool, len(merged))
	for _, m := range merged {
		ns, n := m.Sources[0].Namespace, len(in.owned[m.Hostname])
		wanted[m.Hostname] = true
		projected[ns] += max(n, len(m.Targets))
		has[ns] += n
	}
	for h, recs := range in.owned {
		if wanted[h] {
			continue
		}
		for _, rec := range recs {
			ns := namespaceOf(in.st.view(rec))
			projected[ns]++
			has[ns]++
		}
	}
	var growing []int
	for i, m := range merged {
		if projected[m.Sources[0].Namespace] > limit && len(m.Targets) > len(in.owned[m.Hostname]) {
			growing = append(growing, i)
		}
	}
	sort.SliceStable(growing, func(a, b int) bool { return olderClaim(merged[growing[a]], merged[growing[b]]) })
	cut := map[int]*endpoint.Endpoint{} // by index, each merged endpoint cut to its entries' number
	for _, i := range growing {
		m := merged[i]
		ns, n := m.Sources[0].Namespace, len(in.owned[m.Hostname])
		if add := len(m.Targets) - n; has[ns]+add <= limit {
			has[ns] += add
			continue
		}
		cut[i] = withAddresses(m, in.owned[m.Hostname], n)
	}
	if len(cut) == 0 {
		return verdicts{endpoints: merged}
	}
	res := verdicts{endpoints: make([]*endpoint.Endpoint, 0, len(merged))}
	var left []endpoint.SourceRef  // the objects that do not get all they claim, in the order met
	hosts := map[string][]string{} // what each does not get, by UID
	for i, m := range merged {
		c, isCut := cut[i]
		if !isCut {
			res.endpoints = append(res.endpoints, m)
			continue
		}
		what := m.Hostname
		if c != nil {
			res.endpoints = append(res.endpoints, c)
			what = fmt.Sprintf("%d of %s's %d addresses", len(m.Targets)-len(c.Targets), m.Hostname, len(m.Targets))
		}
		for _, s := range m.Sources {
			if hosts[s.UID] == nil {
				left = append(left, s)
			}
			hosts[s.UID] = append(hosts[s.UID], what)
		}
	}
	for _, s := range left {
		h := hosts[s.UID]
		names := strings.Join(h[:min(len(h), 3)], ", ")
		if len(h) > 3 {
			names += fmt.Sprintf(" and %d more", len(h)-3)
		}
		res.problems = append(res.problems, Problem{Source: s, Kind: ProblemOverBudget, Message: fmt.Sprintf(
			"namespace %s is at its budget of %d entries (entries marked for deletion count until they are gone): %s not written; the entries it has stay", s.Namespace, limit, names)})
	}
	return res
}

// withAddresses is m cut to n addresses, its entries' first (a moved address is still re-pointed);
// nil for none. A copy, so that its merge, kept, does not settle the hostname unplanned later.
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
