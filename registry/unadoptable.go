package registry

import (
	"slices"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// unadoptable leaves out of each merged endpoint the addresses that a hand-made entry of its
// hostname serves and its namespace may not adopt: the name resolves to them already, and a
// line of the operator's beside the user's would double it (AddHost refuses the exact pair).
// The hostnames changed are those whose endpoint lost an address.
func (r *Registry) unadoptable(in *claimsIn, merged []*endpoint.Endpoint) verdicts {
	st, car := in.st, in.car
	if len(st.Unowned) == 0 || (r.ten.adopters == nil && len(car.noAdopt) == 0) {
		return verdicts{endpoints: merged}
	}
	var (
		res verdicts
		out []*endpoint.Endpoint
	)
	for i, m := range merged {
		var served []string
		for k := range st.Unowned[m.Hostname] {
			rec := &st.Unowned[m.Hostname][k]
			if !r.adoptable(m, rec) && slices.Contains(m.Targets, rec.IP) {
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
		res.changed = append(res.changed, m.Hostname)
		out = append(out, &c)
	}
	res.endpoints = merged
	if out != nil {
		res.endpoints = out
	}
	return res
}
