package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// The actions of sharing (docs/ownership.md, "One name, several clusters"), each one UpdateHost.
const (
	// ActionCoOwn writes this cluster's co-owner tag on another cluster's line it wants too.
	ActionCoOwn plan.Action = "co-own"
	// ActionWithdraw takes this cluster's co-owner tag off a line it no longer wants.
	ActionWithdraw plan.Action = "withdraw"
	// ActionHandOver gives a line this cluster no longer wants to a cluster that co-owns it.
	ActionHandOver plan.Action = "hand-over"
)

// CoOwnerTag is the co-owner tag of the cluster name and identity (id may be "").
func CoOwnerTag(name, id string) string {
	if id == "" {
		return PrefixCoOwner + name
	}
	return PrefixCoOwner + name + IdentitySeparator + id
}

// ownCoOwner reports whether t is a co-owner tag of this installation: of its identity, under
// whatever cluster name (a rename rewrites it at the next write); of its name without one.
func (r *Registry) ownCoOwner(t string) bool {
	v, ok := strings.CutPrefix(t, PrefixCoOwner)
	if !ok || r.cfg.ClusterID == "" {
		return ok && t == r.coOwner
	}
	_, id := splitCluster(v)
	return id == r.cfg.ClusterID
}
func (r *Registry) hasOwnCoOwner(tags []string) bool { return slices.ContainsFunc(tags, r.ownCoOwner) }

// bothConsent reports whether both sides of a hostname consent to share it: the one check.
func bothConsent(ours, theirs bool) bool { return mutation == "no-consent" || ours && theirs }

// shared reports whether the operator wrote TagShared on rec: a user's shared:true is no consent.
func (s *State) shared(rec *endpoint.Record) bool { return s.parser.parse(rec).Shared() }

// consents reports whether every one of recs, one side's entries of a hostname, is shared.
func (s *State) consents(recs []endpoint.Record) bool {
	for i := range recs {
		if !s.shared(&recs[i]) {
			return false
		}
	}
	return true
}
func (s *State) consentsOwn(recs []*endpoint.Record) bool {
	return !slices.ContainsFunc(recs, func(rec *endpoint.Record) bool { return !s.shared(rec) })
}

// coOwners are the co-owner tags of other installations on an entry of this cluster, in order.
func (r *Registry) coOwners(v *view) []string {
	var out []string
	for _, t := range v.op {
		if strings.HasPrefix(t, PrefixCoOwner) && !r.ownCoOwner(t) {
			out = append(out, t)
		}
	}
	return out
}

// coOwned are, as plan input, the other clusters' lines of desired's hostnames this cluster
// wants too or co-owns; never a line another adopted, which is the user's.
func (r *Registry) coOwned(st *State, desired []*endpoint.Endpoint, settled map[string]bool) []plan.Current {
	var out []plan.Current
	seen := map[string]bool{}
	add := func(rec *endpoint.Record) {
		if !seen[rec.ID] {
			seen[rec.ID] = true
			keep := slices.DeleteFunc(slices.Clone(rec.Tags), r.ownCoOwner)
			out = append(out, plan.Current{Record: *rec, Owner: endpoint.OwnerCoOwned, Keep: keep, Trail: []string{r.coOwner}})
		}
	}
	for _, ep := range desired {
		if !ep.Shared {
			continue
		}
		for i := range st.Foreign[ep.Hostname] {
			rec := &st.Foreign[ep.Hostname][i]
			if st.shared(rec) && !rec.HasTag(TagPreExisting) && slices.Contains(ep.Targets, rec.IP) {
				add(rec)
			}
		}
	}
	for i := range st.CoOwned {
		if rec := &st.CoOwned[i]; !settled[strings.ToLower(rec.Hostname)] {
			add(rec)
		}
	}
	return out
}

// doublesCoOwned reports whether another cluster's shared line of rec's hostname and address is
// older (by ULID) than rec: both clusters read alike that it stays, co-owned, and rec goes.
func doublesCoOwned(st *State, rec *endpoint.Record) bool {
	for _, f := range st.Foreign[strings.ToLower(rec.Hostname)] {
		if f.IP == rec.IP && f.ID < rec.ID && st.shared(&f) && !f.HasTag(TagPreExisting) {
			return true
		}
	}
	return false
}

// share names sharing's writes: co-own or withdraw, an update of another cluster's line; hand-over,
// a delete of a line others co-own, when this cluster claims the hostname shared or not at all.
func (r *Registry) share(in *changesIn, changes []plan.Change) changed {
	out := make([]plan.Change, 0, len(changes))
	var unshared map[string]bool // the hostnames this cluster claims without sharing them
	for _, c := range changes {
		switch c.Action {
		case plan.Update:
			// Co-own or withdraw, unless the update writes the line as this cluster's own (taken up).
			if had, has := r.hasOwnCoOwner(c.Old.Tags), r.hasOwnCoOwner(c.New.Tags); had != has {
				if v := viewOf(c.New); r.classOf(&v) != endpoint.OwnerThis {
					c.Action = ActionWithdraw
					if has {
						c.Action = ActionCoOwn
					}
				}
			}
		case plan.Delete:
			// A duplicate's address stays served by the line it doubles: it simply goes.
			if v := in.st.view(c.Old); !c.Duplicate && !v.has(TagPreExisting) {
				if co := r.coOwners(&v); len(co) > 0 {
					if unshared == nil {
						unshared = map[string]bool{}
						for _, ep := range in.desired {
							if !ep.Shared {
								unshared[strings.ToLower(ep.Hostname)] = true
							}
						}
					}
					if bothConsent(!unshared[strings.ToLower(c.Old.Hostname)], true) {
						c = plan.Change{Action: ActionHandOver, Old: c.Old, New: r.handedOver(c.Old, co)}
					}
				}
			}
		}
		out = append(out, c)
	}
	return changed{changes: out}
}

// handedOver is rec given to its first co-owner: its owner tags and the others' co-owner tags only.
func (r *Registry) handedOver(rec *endpoint.Record, co []string) *endpoint.Record {
	n := *rec
	name, id := splitCluster(strings.TrimPrefix(co[0], PrefixCoOwner))
	n.Tags = []string{TagOwner, ClusterTag(name)}
	if id != "" {
		n.Tags = append(n.Tags, IdentityTag(id))
	}
	n.Tags = append(n.Tags, TagShared)
	for _, t := range co[1:] {
		if _, other := splitCluster(strings.TrimPrefix(t, PrefixCoOwner)); t != co[0] && (id == "" || other != id) {
			n.Tags = append(n.Tags, t)
		}
	}
	n.Aliases, n.Comment = nil, commentPrefix+"handed over by cluster "+r.cfg.ClusterName
	return &n
}
