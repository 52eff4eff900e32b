package registry

import "github.com/router-hosts-operator/router-hosts-operator/endpoint"

// reservedTags reports each reserved tag among the claims' tags, which is dropped.
func (r *Registry) reservedTags(_ *claimsIn, eps []*endpoint.Endpoint) verdicts {
	v := verdicts{endpoints: eps}
	for _, ep := range eps {
		for _, t := range ep.Tags {
			if err := CheckUserTag(t); err != nil {
				v.problems = append(v.problems, Problem{Source: ep.Sources[0], Kind: ProblemReservedTag, Tag: t, Message: err.Error() + "; dropped"})
			}
		}
	}
	return v
}
