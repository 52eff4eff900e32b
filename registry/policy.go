package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// policy holds every change --policy forbids (plan.Policy.Forbids) after the plan, as external-dns
// does, and, lest the address be doubled, a change re-pointing an entry to a held deletion's.
func (r *Registry) policy(_ *changesIn, changes []plan.Change) changed {
	p := r.cfg.Policy
	if !slices.ContainsFunc(changes, func(c plan.Change) bool { return p.Forbids(c.Action) }) {
		return changed{changes: changes}
	}
	kept := map[string]bool{} // "hostname address" a held deletion keeps served
	for i := range changes {
		if c := &changes[i]; c.Action == plan.Delete && p.Forbids(c.Action) {
			kept[strings.ToLower(c.Old.Hostname)+" "+c.Old.IP] = true
		}
	}
	v := changed{changes: make([]plan.Change, 0, len(changes))}
	for _, c := range changes {
		doubles := c.New != nil && c.Old != nil && kept[strings.ToLower(c.New.Hostname)+" "+c.New.IP] && c.New.IP != c.Old.IP
		if p.Forbids(c.Action) || doubles {
			v.held = append(v.held, Held{Change: c, Reason: ReasonPolicy, Policy: p})
			continue
		}
		v.changes = append(v.changes, c)
	}
	return v
}
