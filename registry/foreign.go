package registry

import "github.com/router-hosts-operator/router-hosts-operator/endpoint"

// foreign turns down the claims on a hostname another cluster holds (foreignHolder).
func (r *Registry) foreign(in *claimsIn, eps []*endpoint.Endpoint) verdicts {
	if len(in.st.Foreign) == 0 {
		return verdicts{endpoints: eps}
	}
	var v verdicts
	v.endpoints = sendOn(eps, func(ep *endpoint.Endpoint) *endpoint.Endpoint {
		if theirs, ours := in.st.Foreign[ep.Hostname], in.owned[ep.Hostname]; len(theirs) > 0 {
			if holder := in.st.foreignHolder(theirs, ours, ep.Shared && in.st.consentsOwn(ours)); holder != nil {
				v.conflicts = append(v.conflicts, Conflict{Hostname: ep.Hostname, Loser: ep.Sources[0], Winner: r.ownerText(holder)})
				return nil
			}
		}
		return ep
	})
	return v
}
