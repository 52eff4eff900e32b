package registry

import (
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Ownership is whose one entry is and what the operator's tags on it say, as a sync decided
// it: for people (explain, list), never for a rule.
type Ownership struct {
	Class endpoint.Owner
	// Cluster and ClusterID are the owning installation's, as its tags name them (empty for a
	// hand-made entry).
	Cluster, ClusterID string
	// Sources are the UIDs of the objects that want the entry's address; Namespace and Kinds
	// the namespace holding the name and the kinds claiming it.
	Sources   []string
	Namespace string
	Kinds     []string
	// Marked: the entry carries a deletion mark; it goes at Due (zero when the mark cannot be
	// read).
	Marked bool
	Due    time.Time
	// UserTags are the tags that are not the operator's, verbatim.
	UserTags []string
	// Shared: the entry's hostname is shared with other clusters (TagShared); CoOwners are the
	// other clusters that want its line too, as their co-owner tags name them.
	Shared   bool
	CoOwners []string
	// LastSeen is the owning installation's newest heartbeat, zero when none is read;
	// Release the command that lets a silent installation go.
	LastSeen time.Time
	Release  string
}

// Ownerships says whose each of st's entries is, by entry ID, as the decision that made st
// decided (st settles the open cases: an earlier version's entry, a rename, a namesake);
// silent are the installations it found silent.
func (r *Registry) Ownerships(st *State, silent []SilentCluster) map[string]Ownership {
	bySilent := map[string]SilentCluster{}
	for _, s := range silent {
		bySilent[s.Cluster+IdentitySeparator+s.ClusterID] = s
	}
	out := make(map[string]Ownership, len(st.Owned)+len(st.Foreign)+len(st.Unowned))
	for i := range st.Owned {
		v := st.view(&st.Owned[i])
		o := r.ownership(&v)
		o.Class = endpoint.OwnerThis
		if v.has(TagPreExisting) {
			o.Class = endpoint.OwnerAdopted
		}
		_, o.Marked = v.value(PrefixPending)
		o.Due, _ = r.due(&v)
		out[st.Owned[i].ID] = o
	}
	for _, recs := range st.Foreign {
		for i := range recs {
			v := viewOf(&recs[i])
			o := r.ownership(&v)
			s, silent := bySilent[o.Cluster+IdentitySeparator+o.ClusterID]
			switch {
			case silent:
				o.Class, o.LastSeen, o.Release = endpoint.OwnerSilentCluster, s.LastSeen, s.ReleaseCommand()
			case r.hasOwnCoOwner(recs[i].Tags):
				o.Class = endpoint.OwnerCoOwned
			case r.classOf(&v) == endpoint.OwnerNamesake:
				o.Class = endpoint.OwnerNamesake
			default:
				o.Class = endpoint.OwnerOtherCluster
			}
			out[recs[i].ID] = o
		}
	}
	for _, recs := range st.Unowned {
		for i := range recs {
			out[recs[i].ID] = Ownership{Class: endpoint.OwnerHandMade, UserTags: recs[i].Tags}
		}
	}
	return out
}

// ownership is what the operator's tags in v name.
func (r *Registry) ownership(v *view) Ownership {
	o := Ownership{Sources: v.values(PrefixSource), Kinds: v.values(PrefixKind), UserTags: v.user, Shared: v.has(TagShared)}
	for _, t := range r.coOwners(v) {
		o.CoOwners = append(o.CoOwners, strings.TrimPrefix(t, PrefixCoOwner))
	}
	o.Namespace, _ = v.value(PrefixNamespace)
	if names := v.clusterNames(); len(names) > 0 {
		o.Cluster = names[0]
	}
	o.ClusterID, _ = v.clusterID()
	return o
}
