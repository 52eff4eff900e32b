package registry

import (
	"slices"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// adoption finds the hand-made entries the plan may adopt; an address one it may not adopt serves
// is left out: the operator's line beside it would double it (AddHost refuses the exact pair).
func (r *Registry) adoption(in *claimsIn, merged []*endpoint.Endpoint) verdicts {
	if len(in.st.Unowned) == 0 {
		return verdicts{endpoints: merged}
	}
	var v verdicts
	v.endpoints = sendOn(merged, func(m *endpoint.Endpoint) *endpoint.Endpoint {
		var served []string
		for _, rec := range in.st.Unowned[m.Hostname] {
			switch {
			case !rec.HasTag(TagNoAdopt) && r.ten.mayAdopt(m.Sources[0].Namespace):
				lazy(&v.adopt)[m.Hostname] = append(v.adopt[m.Hostname], rec)
			case slices.Contains(m.Targets, rec.IP):
				served = append(served, rec.IP)
			}
		}
		if served == nil {
			return m
		}
		c := *m
		c.Targets = without(m.Targets, served)
		c.TargetTags = make(map[string][]string, len(c.Targets))
		for _, ip := range c.Targets {
			c.TargetTags[ip] = m.TargetTags[ip]
		}
		return &c
	})
	return v
}
