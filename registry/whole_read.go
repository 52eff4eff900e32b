package registry

import (
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// wholeRead holds, in a sync planned from the known state, what only a whole read may send: a delete
// or release could remove an entry no longer the operator's, a create of a hostname not searched
// double a hand-made line, and a hostname whose duplicate waits waits whole (lest two lines share an address).
func (r *Registry) wholeRead(in *changesIn, changes []plan.Change) changed {
	if !in.read.Partial {
		return changed{changes: changes}
	}
	waiting := map[string]bool{}
	lone, several := "", false // the hostname of every create, when they are all of one
	for _, c := range changes {
		h := strings.ToLower(c.Hostname())
		if c.Duplicate {
			waiting[h] = true
		}
		if c.Action == plan.Create && h != lone {
			several = several || lone != ""
			lone = h
		}
	}
	searched := in.read.Searched
	if searched == "" && in.read.SearchesLone && !several {
		searched = lone
	}
	v := changed{changes: changes[:0:0]}
	for _, c := range changes {
		h := strings.ToLower(c.Hostname())
		if c.Action == plan.Delete || c.Action == plan.Release || c.Action == ActionHandOver || waiting[h] || (c.Action == plan.Create && h != searched) {
			v.held = append(v.held, Held{Change: c, Reason: ReasonWholeReadNeeded})
			v.wholeRead = append(v.wholeRead, c)
			continue
		}
		v.changes = append(v.changes, c)
	}
	return v
}
