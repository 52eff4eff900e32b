package registry

import (
	"slices"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// adoption decides the hand-made entries of each merged endpoint's hostname: the plan may
// adopt one when the namespace that won the hostname may adopt and the entry does not carry
// TagNoAdopt (adoptable). An address that one it may not adopt already serves is left out of
// the endpoint: the name resolves to it already, and a line of the operator's beside the
// user's would double it (AddHost refuses the exact pair).
func (r *Registry) adoption(in *claimsIn, merged []*endpoint.Endpoint) verdicts {
	st := in.st
	if len(st.Unowned) == 0 {
		return verdicts{endpoints: merged}
	}
	res := verdicts{endpoints: merged}
	var out []*endpoint.Endpoint
	for i, m := range merged {
		var served []string
		for _, rec := range st.Unowned[m.Hostname] {
			switch {
			case r.adoptable(m, &rec):
				if res.adopt == nil {
					res.adopt = map[string][]endpoint.Record{}
				}
				res.adopt[m.Hostname] = append(res.adopt[m.Hostname], rec)
			case slices.Contains(m.Targets, rec.IP):
				served = append(served, rec.IP)
			}
		}
		if served == nil {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]*endpoint.Endpoint, 0, len(merged)), merged[:i]...)
		}
		c := *m
		c.Targets = without(m.Targets, served)
		c.TargetTags = make(map[string][]string, len(c.Targets))
		for _, ip := range c.Targets {
			c.TargetTags[ip] = m.TargetTags[ip]
		}
		out = append(out, &c)
	}
	if out != nil {
		res.endpoints = out
	}
	return res
}

// adoptable reports whether the namespace that won ep may adopt rec, a hand-made entry of its
// hostname.
func (r *Registry) adoptable(ep *endpoint.Endpoint, rec *endpoint.Record) bool {
	return !rec.HasTag(TagNoAdopt) && r.ten.mayAdopt(ep.Sources[0].Namespace)
}
