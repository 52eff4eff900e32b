package registry

import (
	"slices"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// aliases decides every alias of the merged endpoints by the rule above, and returns them with
// the aliases they lost taken out (as copies). byHost are the claims each was merged from, so
// that a conflict is reported on the objects that asked for the alias.
func (r *Registry) aliases(in *claimsIn, merged []*endpoint.Endpoint) verdicts {
	var claimants map[string][]int // alias → the merged endpoints that carry it
	for i, m := range merged {
		for _, a := range m.Aliases {
			if claimants == nil {
				claimants = map[string][]int{}
			}
			claimants[a] = append(claimants[a], i)
		}
	}
	if claimants == nil {
		return verdicts{endpoints: merged}
	}
	var res verdicts
	hostNS := make(map[string]string, len(merged))
	for _, m := range merged {
		hostNS[m.Hostname] = m.Sources[0].Namespace
	}
	lost := map[int][]string{}
	as := make([]string, 0, len(claimants))
	for a := range claimants {
		as = append(as, a)
	}
	slices.Sort(as)
	for _, a := range as {
		idx := claimants[a]
		winner, text := r.aliasWinner(in, a, merged, idx, hostNS)
		for _, i := range idx {
			m := merged[i]
			ns := m.Sources[0].Namespace
			if winner != "" && ns == winner {
				continue
			}
			// Reported on the objects that asked for the alias.
			for _, c := range in.byHost[m.Hostname] {
				if c.Sources[0].Namespace == ns && slices.Contains(c.Aliases, a) {
					res.conflicts = append(res.conflicts, Conflict{Hostname: a, Loser: c.Sources[0], Winner: text, Alias: true})
				}
			}
			lost[i] = append(lost[i], a)
		}
	}
	if len(lost) == 0 {
		res.endpoints = merged
		return res
	}
	res.endpoints = make([]*endpoint.Endpoint, len(merged))
	for i, m := range merged {
		res.endpoints[i] = m
		if l := lost[i]; l != nil {
			c := *m
			c.Aliases = without(m.Aliases, l)
			res.endpoints[i] = &c
		}
	}
	return res
}

// aliasWinner decides alias a, which the merged endpoints idx carry, by the rule above: the
// namespace that keeps it ("" when none of them does) and who holds it, in words.
func (r *Registry) aliasWinner(in *claimsIn, a string, merged []*endpoint.Endpoint, idx []int, hostNS map[string]string) (winner, text string) {
	st, owned, car := in.st, in.owned, in.car
	ours := len(owned[a]) > 0 || car.owned[a] != nil
	switch {
	case len(st.Foreign[a]) > 0 && len(owned[a]) == 0:
		// Another cluster's hostname: an alias yields to it, as within a cluster.
		return "", r.ownerText(&st.Foreign[a][0])
	case car.foreign[a] != nil && (!ours || car.foreign[a].ID < firstID(owned[a], car.owned[a])):
		// Another cluster's alias: ours yields unless we carry it, and when both do (two
		// clusters that added it at once) the older entry keeps it, which both clusters read
		// alike.
		return "", r.ownerText(car.foreign[a])
	case len(st.Unowned[a]) > 0:
		return "", "the hand-made entry " + st.Unowned[a][0].Hostname
	case car.hand[a] != "":
		return "", "the hand-made entry " + car.hand[a]
	case hostNS[a] != "":
		return hostNS[a], "namespace " + hostNS[a]
	case len(owned[a]) > 0:
		winner = firstNamespace(owned[a], st)
		return winner, "namespace " + winner
	}
	var asking []string
	for _, i := range idx {
		asking = append(asking, merged[i].Sources[0].Namespace)
	}
	if winner = aliasHolder(car.owned[a], asking, st); winner == "" {
		oldest := merged[idx[0]]
		for _, i := range idx[1:] {
			if olderClaim(merged[i], oldest) {
				oldest = merged[i]
			}
		}
		winner = oldest.Sources[0].Namespace
	}
	return winner, "namespace " + winner
}

// firstID is the lowest ID among the entries.
func firstID(lists ...[]*endpoint.Record) string {
	best := ""
	for _, l := range lists {
		for _, rec := range l {
			if best == "" || rec.ID < best {
				best = rec.ID
			}
		}
	}
	return best
}

// firstNamespace is the namespace named on the first of entries in order that names one.
func firstNamespace(entries []*endpoint.Record, st *State) string {
	best := ""
	for _, rec := range entries {
		v := st.view(rec)
		if ns, ok := v.value(PrefixNamespace); ok && (best == "" || ns < best) {
			best = ns
		}
	}
	return best
}
