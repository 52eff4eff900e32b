package registry

import (
	"fmt"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// hostnames turns down the hostname claims the rule above decides before the merge: on a
// hostname another cluster's or a hand-made entry carries as an alias, on one another
// namespace's entry carries as an alias it still asks for, and on a hand-made entry the
// claim's namespace may not adopt (or that says no-adopt), when no entry of this cluster holds
// the hostname.
func (r *Registry) hostnames(in *claimsIn, eps []*endpoint.Endpoint) verdicts {
	owned, car := in.owned, in.car
	adoptRules := r.ten.adopters != nil || len(car.noAdopt) > 0
	if car.owned == nil && car.foreign == nil && car.hand == nil && !adoptRules {
		return verdicts{endpoints: eps}
	}
	// asking are the namespaces that ask for each alias an entry of theirs carries.
	var asking map[string][]string
	if car.owned != nil {
		for _, ep := range eps {
			for _, a := range ep.Aliases {
				if car.owned[a] != nil {
					if asking == nil {
						asking = map[string][]string{}
					}
					asking[a] = append(asking[a], ep.Sources[0].Namespace)
				}
			}
		}
	}
	var (
		res verdicts
		out []*endpoint.Endpoint
	)
	for i, ep := range eps {
		h, src := ep.Hostname, ep.Sources[0]
		winner := ""
		if len(owned[h]) == 0 {
			winner = r.hostnameHolder(in, ep, asking[h])
		}
		if winner == "" {
			if out != nil {
				out = append(out, ep)
			}
			continue
		}
		res.conflicts = append(res.conflicts, Conflict{Hostname: h, Loser: src, Winner: winner})
		if out == nil {
			out = append(make([]*endpoint.Endpoint, 0, len(eps)), eps[:i]...)
		}
	}
	res.endpoints = eps
	if out != nil {
		res.endpoints = out
	}
	return res
}

// hostnameHolder is who holds ep's hostname, which no entry of this cluster has, against
// ep's claim, in words: another cluster's or a hand-made entry that carries it as an alias,
// another namespace that asks for it as an alias its entry carries, or a hand-made entry the
// claim's namespace may not adopt; "" when the claim may go on to the merge. asking are the
// namespaces that ask for the hostname as an alias.
func (r *Registry) hostnameHolder(in *claimsIn, ep *endpoint.Endpoint, asking []string) string {
	h, ns, st, car := ep.Hostname, ep.Sources[0].Namespace, in.st, in.car
	holder := ""
	if car.owned[h] != nil {
		holder = aliasHolder(car.owned[h], asking, st)
	}
	switch {
	case car.foreign[h] != nil && len(st.Foreign[h]) == 0 && car.owned[h] == nil:
		return r.ownerText(car.foreign[h])
	case car.hand[h] != "":
		return "the hand-made entry " + car.hand[h]
	case holder != "" && holder != ns:
		return "namespace " + holder
	case len(st.Unowned[h]) > 0 && car.noAdopt[h]:
		return "a hand-made entry tagged " + TagNoAdopt
	case len(st.Unowned[h]) > 0 && !r.ten.mayAdopt(ns):
		return fmt.Sprintf("a hand-made entry, which namespace %s may not adopt", ns)
	}
	return ""
}
