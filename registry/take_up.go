package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// takeUpPerSync is how many entries of an earlier version a sync gives the identity when
// nothing else about them changes, so that an upgrade does not rewrite every entry at once.
const takeUpPerSync = 50

// takeUp holds back the take-up updates (takeUpOnly) beyond the first takeUpPerSync of the sync.
func (r *Registry) takeUp(in *changesIn, changes []plan.Change) changed {
	if !slices.ContainsFunc(changes, func(c plan.Change) bool { return c.Action == plan.Update }) {
		return changed{changes: changes}
	}
	v, n := changed{changes: make([]plan.Change, 0, len(changes))}, 0
	for _, c := range changes {
		if r.takeUpOnly(in.st, &c) {
			if n++; n > takeUpPerSync {
				v.takeUpLeft++
				v.held = append(v.held, Held{Change: c, Reason: ReasonTakeUpPaced})
				continue
			}
		}
		v.changes = append(v.changes, c)
	}
	return v
}

// takeUpOnly reports whether c only gives this installation's cluster: and cluster-id: tags, in
// the design's form, to an earlier version's entry or one of an identity it had before.
func (r *Registry) takeUpOnly(st *State, c *plan.Change) bool {
	if c.Action != plan.Update || c.Fields() != endpoint.Fields(endpoint.FieldTags) || !slices.Contains(c.New.Tags, r.clusterTag) {
		return false
	}
	if cl := st.parser.parse(c.Old).class; cl != endpoint.OwnerEarlierVersion && cl != endpoint.OwnerThis && cl != endpoint.OwnerNamesake {
		return false
	}
	clusterTags := func(t string) bool {
		return strings.HasPrefix(t, PrefixCluster) || strings.HasPrefix(t, PrefixClusterID)
	}
	oldRest := slices.DeleteFunc(slices.Clone(c.Old.Tags), clusterTags)
	newRest := slices.DeleteFunc(slices.Clone(c.New.Tags), clusterTags)
	return len(oldRest) == len(newRest) && endpoint.SameUnion(oldRest, newRest)
}
