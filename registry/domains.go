package registry

import "github.com/router-hosts-operator/router-hosts-operator/endpoint"

// domains drops the claims on hostnames outside the managed domains (--domain-filter,
// --exclude-domains) with no conflict and no problem: as with external-dns, a filter is the
// user's choice, which no Event repeats. This cluster's entries of such a hostname go as those
// no claim wants, and Decision.Unmanaged tells the claims it dropped.
func (r *Registry) domains(_ *claimsIn, eps []*endpoint.Endpoint) verdicts {
	kept, _ := r.inDomains(eps)
	return verdicts{endpoints: kept}
}

// inDomains splits claims into those on hostnames within the managed domains and the others;
// kept is claims itself when none is outside.
func (r *Registry) inDomains(claims []*endpoint.Endpoint) (kept, outside []*endpoint.Endpoint) {
	for i, ep := range claims {
		if r.filter.Match(ep.Hostname) {
			if outside != nil {
				kept = append(kept, ep)
			}
			continue
		}
		if outside == nil {
			kept = append(make([]*endpoint.Endpoint, 0, len(claims)), claims[:i]...)
		}
		outside = append(outside, ep)
	}
	if outside == nil {
		return claims, nil
	}
	return kept, outside
}
