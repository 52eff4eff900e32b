package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// policy holds every change --policy forbids (plan.Policy.Forbids), as external-dns applies its
// policy after the plan: upsert-only deletes nothing, create-only changes no entry (an adoption
// edits one). A change re-pointing an entry to the address of a held deletion is held with it,
// or the address would be doubled.
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
