package registry

import (
	"maps"
	"slices"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// aliases drops the aliases merged endpoints lose by names.go's rule, reported on their claims.
func (r *Registry) aliases(in *claimsIn, merged []*endpoint.Endpoint) verdicts {
	var claimants map[string][]int // alias → the merged endpoints that carry it
	for i, m := range merged {
		for _, a := range m.Aliases {
			lazy(&claimants)[a] = append(claimants[a], i)
		}
	}
	if claimants == nil {
		return verdicts{endpoints: merged}
	}
	var v verdicts
	hostNS := make(map[string]string, len(merged))
	for _, m := range merged {
		hostNS[m.Hostname] = m.Sources[0].Namespace
	}
	lost := map[*endpoint.Endpoint][]string{}
	for _, a := range slices.Sorted(maps.Keys(claimants)) {
		winner, text := r.aliasWinner(in, a, merged, claimants[a], hostNS)
		for _, i := range claimants[a] {
			m := merged[i]
			if ns := m.Sources[0].Namespace; winner == "" || ns != winner {
				for _, c := range in.byHost[m.Hostname] {
					if c.Sources[0].Namespace == ns && slices.Contains(c.Aliases, a) {
						v.conflicts = append(v.conflicts, Conflict{Hostname: a, Loser: c.Sources[0], Winner: text, Alias: true})
					}
				}
				lost[m] = append(lost[m], a)
			}
		}
	}
	v.endpoints = sendOn(merged, func(m *endpoint.Endpoint) *endpoint.Endpoint {
		if lost[m] == nil {
			return m
		}
		c := *m
		c.Aliases = without(m.Aliases, lost[m])
		return &c
	})
	return v
}

// aliasWinner is the namespace keeping alias a ("" if none of merged[idx]) and its holder in words.
func (r *Registry) aliasWinner(in *claimsIn, a string, merged []*endpoint.Endpoint, idx []int, hostNS map[string]string) (winner, text string) {
	st, owned, car := in.st, in.owned, in.car
	theirs := car.foreign[a]
	older := func(rec *endpoint.Record) bool { return rec.ID <= theirs.ID }
	switch {
	case len(st.Foreign[a]) > 0 && len(owned[a]) == 0:
		return "", r.ownerText(&st.Foreign[a][0])
	case theirs != nil && !slices.ContainsFunc(owned[a], older) && !slices.ContainsFunc(car.owned[a], older):
		// Another cluster's, unless an older entry of ours carries it (both read the IDs alike).
		return "", r.ownerText(theirs)
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
	oldest := merged[idx[0]]
	for _, i := range idx {
		asking = append(asking, merged[i].Sources[0].Namespace)
		if olderClaim(merged[i], oldest) {
			oldest = merged[i]
		}
	}
	if winner = aliasHolder(car.owned[a], asking, st); winner == "" {
		winner = oldest.Sources[0].Namespace
	}
	return winner, "namespace " + winner
}
