package registry

import "github.com/router-hosts-operator/router-hosts-operator/endpoint"

// inDomains splits claims into those on hostnames within the managed domains (--domain-filter,
// --exclude-domains) and the others, which Decide sets aside; kept is claims itself when none
// is outside.
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
