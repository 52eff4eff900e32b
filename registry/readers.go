package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// SourceUIDs returns the UIDs of the objects that want rec's address, read from the tags the
// operator wrote; observers use it instead of parsing tags.
func SourceUIDs(rec *endpoint.Record) []string {
	v := viewOf(rec)
	return v.values(PrefixSource)
}

// NamespaceAndKinds returns the namespace and the kinds named on rec by the operator, and
// whether it adopted the entry (a loan it gives back when no object wants the name any more).
func NamespaceAndKinds(rec *endpoint.Record) (namespace string, kinds []string, adopted bool) {
	v := viewOf(rec)
	namespace, _ = v.value(PrefixNamespace)
	return namespace, v.values(PrefixKind), v.has(TagPreExisting)
}

// ours reports whether the operator's tags make the entry this cluster's: its identity, or
// (no identity configured, or an entry of an earlier version) its name and no other, since an
// entry that names two clusters was written by hand and belongs to neither. A sync decides an
// earlier version's entry of another name by its claims (resolveOpen); outside a sync only
// the name counts.
func (r *Registry) ours(v *view) bool {
	switch r.classOf(v) {
	case endpoint.OwnerThis, endpoint.OwnerRenamed:
		return true
	case endpoint.OwnerEarlierVersion:
		return !slices.ContainsFunc(v.clusterNames(), func(n string) bool { return n != r.cfg.ClusterName })
	}
	return false
}

// OwnedAmong reports which entries of one read are this cluster's, with no object to claim
// any: the rule a sync uses for an earlier version's entry of this cluster's name (no
// identity), which is this cluster's only while no other identity writes the name, since it
// may be that namesake's.
// The external-dns webhook answers GET /records by it, so that external-dns, which deletes what
// it does not publish, never sees another webhook's entry.
func (r *Registry) OwnedAmong(records []endpoint.Record) func(*endpoint.Record) bool {
	shows := false
	for i := range records {
		v := viewOf(&records[i])
		if r.classOf(&v) == endpoint.OwnerNamesake {
			shows = true
			break
		}
	}
	return func(rec *endpoint.Record) bool {
		v := viewOf(rec)
		if shows && r.classOf(&v) == endpoint.OwnerEarlierVersion {
			return false
		}
		return r.ours(&v)
	}
}

// Marked reports whether rec carries a pending-deletion mark the operator wrote.
func Marked(rec *endpoint.Record) bool {
	v := viewOf(rec)
	_, marked := v.value(PrefixPending)
	return marked
}

// ObjectUIDs are the UIDs the entries record of the objects their comments name ("Kind
// namespace/name"), read from the entries one object alone wants: a plan without the cluster
// gives a manifest's object the UID its entries know, so that it is taken for the object that
// wrote them. An object named with two UIDs (deleted and made again) is left out.
func ObjectUIDs(records []endpoint.Record) map[string]string {
	out := map[string]string{}
	twice := map[string]bool{}
	for i := range records {
		name, ok := strings.CutPrefix(records[i].Comment, commentPrefix)
		uids := SourceUIDs(&records[i])
		if !ok || len(uids) != 1 || strings.Contains(name, " (+") || twice[name] {
			continue
		}
		if prev, seen := out[name]; seen && prev != uids[0] {
			delete(out, name)
			twice[name] = true
			continue
		}
		out[name] = uids[0]
	}
	return out
}

// HeartbeatOnly reports whether an update from old to cur changes nothing but the heartbeat's
// tags: the installation's own renewal, which its loop writes on its schedule whatever the
// cluster holds.
func HeartbeatOnly(old, cur *endpoint.Record) bool {
	if old == nil || cur == nil || old.IP != cur.IP || old.Hostname != cur.Hostname || old.Comment != cur.Comment || !slices.Equal(old.Aliases, cur.Aliases) {
		return false
	}
	rest := func(tags []string) []string {
		var out []string
		for _, t := range tags {
			if !strings.HasPrefix(t, PrefixAlive) && !strings.HasPrefix(t, PrefixAliveEvery) && !strings.HasPrefix(t, PrefixAliveInterval) {
				out = append(out, t)
			}
		}
		slices.Sort(out)
		return out
	}
	return !slices.Equal(old.Tags, cur.Tags) && slices.Equal(rest(old.Tags), rest(cur.Tags))
}
