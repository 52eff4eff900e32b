package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Sharing a hostname between clusters. A cluster holds a hostname while it has entries of it
// (foreignHolder); another cluster may write addresses of its own for that hostname only when
// both consent: its claims are shared (the shared annotation, spec.shared) and every entry of
// the hostname the other clusters wrote carries TagShared among the operator's tags. Where both
// have entries and only one consents, that one holds the hostname, whichever entry is older.
// Each cluster then writes, marks and deletes its own entries only, by its own grace periods,
// brake and release.
//
// The router keeps one line per (address, hostname), so two clusters that want one address
// share one line. The cluster that wrote it (its writer) keeps it; the other writes its
// co-owner tag on it (PrefixCoOwner) and writes nothing else there. The line goes only when
// neither wants it:
//   - a co-owner that no longer wants it takes its tag off at once (the writer still wants it);
//   - a writer that no longer wants it, or is released, hands it over to its first co-owner
//     instead of deleting it: one UpdateHost that gives the line that cluster's name and
//     identity, which it then writes as any entry of its own. The name never stops answering
//     from that address.

// The actions of sharing, as dry-run lines and logs name them; the provider sends each as one
// UpdateHost.
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

// ownCoOwner reports whether t is a co-owner tag of this installation: its identity, under
// whatever cluster name it wrote it (a rename rewrites it at the next write of the line); its
// name when it has no identity.
func (r *Registry) ownCoOwner(t string) bool {
	v, ok := strings.CutPrefix(t, PrefixCoOwner)
	if !ok {
		return false
	}
	if r.cfg.ClusterID == "" {
		return t == r.coOwner
	}
	_, id := splitCluster(v)
	return id == r.cfg.ClusterID
}

// hasOwnCoOwner reports whether tags carry a co-owner tag of this installation.
func (r *Registry) hasOwnCoOwner(tags []string) bool { return slices.ContainsFunc(tags, r.ownCoOwner) }

// bothConsent reports whether two sides of a hostname both consent to share it. It is the one
// point where consent is checked: a foreign claim, an entry yielded to another cluster and a
// hand-over all ask it.
func bothConsent(ours, theirs bool) bool {
	return mutation == "no-consent" || ours && theirs
}

// shared reports whether the operator wrote TagShared on rec: the consent of the cluster that
// wrote it. A shared:true the user wrote on an adopted entry, outside the operator's block, is
// the user's tag and no consent.
func (s *State) shared(rec *endpoint.Record) bool { return s.parser.parse(rec).Shared() }

// consents reports whether every one of recs, one side's entries of a hostname, carries the
// operator's TagShared: that side's consent to share the name (none for no entries at all).
func (s *State) consents(recs []endpoint.Record) bool {
	for i := range recs {
		if !s.shared(&recs[i]) {
			return false
		}
	}
	return true
}

// consentsOwn is consents for this cluster's entries.
func (s *State) consentsOwn(recs []*endpoint.Record) bool {
	return !slices.ContainsFunc(recs, func(rec *endpoint.Record) bool { return !s.shared(rec) })
}

// coOwners are the co-owner tags of other installations on an entry of this cluster, in the
// entry's order (one of its own, which no write of this version leaves there, is not kept).
func (r *Registry) coOwners(v *view) []string {
	var out []string
	for _, t := range v.op {
		if strings.HasPrefix(t, PrefixCoOwner) && !r.ownCoOwner(t) {
			out = append(out, t)
		}
	}
	return out
}

// coOwned are the other clusters' lines of the hostnames of desired that this cluster wants
// too, and those that carry its co-owner tag, as plan input: each keeps every tag but this
// cluster's co-owner tag, which is its Trail. A line another cluster adopted is a loan of the
// user's and is never co-owned (its address is served all the same).
func (r *Registry) coOwned(st *State, desired []*endpoint.Endpoint, settled map[string]bool) []plan.Current {
	var out []plan.Current
	seen := map[string]bool{}
	add := func(rec *endpoint.Record) {
		if seen[rec.ID] {
			return
		}
		seen[rec.ID] = true
		keep := slices.DeleteFunc(slices.Clone(rec.Tags), r.ownCoOwner)
		out = append(out, plan.Current{Record: *rec, Owner: endpoint.OwnerCoOwned, Keep: keep, Trail: []string{r.coOwner}})
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

// sharedHosts are the lowercase hostnames of desired that are shared and that other clusters
// have entries of: where this cluster may co-own their lines. Nil when there are none.
func (r *Registry) sharedHosts(st *State, desired []*endpoint.Endpoint) map[string]bool {
	if len(st.Foreign) == 0 {
		return nil
	}
	var out map[string]bool
	for _, ep := range desired {
		if ep.Shared && len(st.Foreign[ep.Hostname]) > 0 {
			if out == nil {
				out = map[string]bool{}
			}
			out[ep.Hostname] = true
		}
	}
	return out
}

// doublesCoOwned reports whether another cluster's shared line of rec's hostname and address is
// older than rec. The server refuses a second line of one address and hostname only on
// AddHost: two clusters that put one address on a shared name in one moment (one re-pointing
// an entry, which UpdateHost lets through) both hold a line of it. Both decide alike from the
// IDs (ULIDs, which sort by the time the server made them): the older line stays and the
// other's cluster co-owns it, deleting its own at once, since the address stays served.
func doublesCoOwned(st *State, rec *endpoint.Record) bool {
	for _, f := range st.Foreign[strings.ToLower(rec.Hostname)] {
		if f.IP == rec.IP && f.ID < rec.ID && st.shared(&f) && !f.HasTag(TagPreExisting) {
			return true
		}
	}
	return false
}

// share names the plan's writes that sharing makes: an update of another cluster's line is
// the co-owner tag put on (co-own) or taken off (withdraw); a delete of a line of this cluster
// another cluster co-owns is its hand-over to that cluster, at once, since the line still
// serves a cluster that wants it. A hand-over needs both consents: the co-owner's is its tag,
// and this cluster's is that it claims the hostname shared, or not at all; otherwise the line
// leaves as any other.
func (r *Registry) share(in *changesIn, changes []plan.Change) changed {
	out := make([]plan.Change, 0, len(changes))
	var unshared map[string]bool // the hostnames this cluster claims without sharing them
	for _, c := range changes {
		switch c.Action {
		case plan.Update:
			// An update that puts this cluster's co-owner tag on or takes it off is of another
			// cluster's line, unless it writes the line as this cluster's own: a line of its
			// identity that carried the tag (co-owned under a rename) is taken up, not withdrawn.
			had, has := r.hasOwnCoOwner(c.Old.Tags), r.hasOwnCoOwner(c.New.Tags)
			if had != has {
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
						unshared = unsharedClaims(in.desired)
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

// unsharedClaims are the lowercase hostnames of desired whose claims do not share them.
func unsharedClaims(desired []*endpoint.Endpoint) map[string]bool {
	out := map[string]bool{}
	for _, ep := range desired {
		if !ep.Shared {
			out[strings.ToLower(ep.Hostname)] = true
		}
	}
	return out
}

// handedOver is the line rec given to the first of its co-owners: that cluster's owner tags
// (its name and identity, TagShared) and the other co-owners' tags. Its aliases and the
// objects' tags were this cluster's, and go; the new owner writes its own at its next sync.
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
	n.Aliases = nil
	n.Comment = commentPrefix + "handed over by cluster " + r.cfg.ClusterName
	return &n
}
