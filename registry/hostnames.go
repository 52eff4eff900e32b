package registry

import "github.com/router-hosts-operator/router-hosts-operator/endpoint"

// hostnames turns down claims on hostnames not ours that an alias or a hand-made entry holds.
func (r *Registry) hostnames(in *claimsIn, eps []*endpoint.Endpoint) verdicts {
	car := in.car
	if car.owned == nil && car.foreign == nil && car.hand == nil && r.ten.adopters == nil && len(car.noAdopt) == 0 {
		return verdicts{endpoints: eps}
	}
	var asking map[string][]string // the namespaces asking for each alias an owned entry carries
	if car.owned != nil {
		for _, ep := range eps {
			for _, a := range ep.Aliases {
				if car.owned[a] != nil {
					lazy(&asking)[a] = append(asking[a], ep.Sources[0].Namespace)
				}
			}
		}
	}
	var v verdicts
	v.endpoints = sendOn(eps, func(ep *endpoint.Endpoint) *endpoint.Endpoint {
		if len(in.owned[ep.Hostname]) > 0 {
			return ep
		}
		if winner := r.hostnameHolder(in, ep, asking[ep.Hostname]); winner != "" {
			v.conflicts = append(v.conflicts, Conflict{Hostname: ep.Hostname, Loser: ep.Sources[0], Winner: winner})
			return nil
		}
		return ep
	})
	return v
}

// hostnameHolder is who holds ep's hostname against it by the rule of names.go, in words, ""
// when none does; asking are the namespaces that ask for it as an alias.
func (r *Registry) hostnameHolder(in *claimsIn, ep *endpoint.Endpoint, asking []string) string {
	h, ns, st, car := ep.Hostname, ep.Sources[0].Namespace, in.st, in.car
	holder := aliasHolder(car.owned[h], asking, st)
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
		return "a hand-made entry, which namespace " + ns + " may not adopt"
	}
	return ""
}
