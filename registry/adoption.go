package registry

import (
	"slices"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// adoption finds the hand-made entries of each merged hostname the plan may adopt (adoptable).
// An address one it may not adopt serves already is left out: the name resolves to it, and a
// line of the operator's beside the user's would double it (AddHost refuses the exact pair).
func (r *Registry) adoption(in *claimsIn, merged []*endpoint.Endpoint) verdicts {
	if len(in.st.Unowned) == 0 {
		return verdicts{endpoints: merged}
	}
	var v verdicts
	v.endpoints = sendOn(merged, func(m *endpoint.Endpoint) *endpoint.Endpoint {
		var served []string
		for _, rec := range in.st.Unowned[m.Hostname] {
			switch {
			case r.adoptable(m, &rec):
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

// adoptable reports whether the namespace that won ep may adopt rec, a hand-made entry of its
// hostname: one without TagNoAdopt.
func (r *Registry) adoptable(ep *endpoint.Endpoint, rec *endpoint.Record) bool {
	return !rec.HasTag(TagNoAdopt) && r.ten.mayAdopt(ep.Sources[0].Namespace)
}
