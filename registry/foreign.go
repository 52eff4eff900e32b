package registry

import "github.com/router-hosts-operator/router-hosts-operator/endpoint"

// foreign turns down the claims on a hostname another cluster holds against this one
// (foreignHolder): this cluster consents when the claim is shared and its entries of the
// hostname carry TagShared.
func (r *Registry) foreign(in *claimsIn, eps []*endpoint.Endpoint) verdicts {
	if len(in.st.Foreign) == 0 {
		return verdicts{endpoints: eps}
	}
	var (
		v   verdicts
		out []*endpoint.Endpoint // a copy once a claim is dropped
	)
	for i, ep := range eps {
		h := ep.Hostname
		var holder *endpoint.Record
		if theirs := in.st.Foreign[h]; len(theirs) > 0 {
			ours := in.owned[h]
			holder = in.st.foreignHolder(theirs, ours, ep.Shared && in.st.consentsOwn(ours))
		}
		if holder == nil {
			if out != nil {
				out = append(out, ep)
			}
			continue
		}
		if out == nil {
			out = append(make([]*endpoint.Endpoint, 0, len(eps)), eps[:i]...)
		}
		v.conflicts = append(v.conflicts, Conflict{Hostname: h, Loser: ep.Sources[0], Winner: r.ownerText(holder)})
	}
	v.endpoints = eps
	if out != nil {
		v.endpoints = out
	}
	return v
}
