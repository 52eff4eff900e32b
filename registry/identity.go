package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Which cluster owns an entry. Two clusters may choose one name; the identity beside it
// (cluster-id:<id>) is the installation's, derived, and a namesake cannot share it. With an
// identity configured, an entry of this identity and name is this cluster's, one of another
// identity and name another's; the claims decide the rest (resolveOpen).

// IdentityLength is the number of hex digits of an identity: 32 bits, so that two
// installations sharing a router collide about once in four billion pairs.
const IdentityLength = 8

// Identity derives an installation's identity from the kube-system namespace's UID (which
// names the cluster and outlives every install in it) and the namespace and name of its
// leader-election Lease (which tell two installations in one cluster apart: they cannot share
// a Lease without being one group of replicas).
func Identity(kubeSystemUID, leaseNamespace, leaseName string) string {
	sum := sha256.Sum256([]byte(kubeSystemUID + "/" + leaseNamespace + "/" + leaseName))
	return hex.EncodeToString(sum[:])[:IdentityLength]
}

// checkIdentity refuses an identity that is not lowercase hex of IdentityLength digits; ""
// (no identity: ownership by name alone) is allowed.
func checkIdentity(id string) error {
	if id != "" && (len(id) != IdentityLength || strings.Trim(id, "0123456789abcdef") != "") {
		return fmt.Errorf("cluster identity %q: want %d lowercase hex digits", id, IdentityLength)
	}
	return nil
}

// classOf reads whose v's entry is, as far as its tags alone say.
func (r *Registry) classOf(v *view) endpoint.Owner {
	if !v.has(TagOwner) {
		return endpoint.OwnerHandMade
	}
	names := v.clusterNames()
	if len(names) == 0 {
		return endpoint.OwnerOtherCluster
	}
	sameName := !slices.ContainsFunc(names, func(n string) bool { return n != r.cfg.ClusterName })
	if r.cfg.ClusterID == "" {
		// No identity: ownership by name alone, as before identities.
		if sameName {
			return endpoint.OwnerThis
		}
		return endpoint.OwnerOtherCluster
	}
	ids := v.clusterIDs()
	switch {
	case len(ids) == 0:
		return endpoint.OwnerEarlierVersion
	case !slices.ContainsFunc(ids, func(id string) bool { return id != r.cfg.ClusterID }):
		if sameName {
			return endpoint.OwnerThis
		}
		return endpoint.OwnerRenamed
	case sameName:
		return endpoint.OwnerNamesake
	}
	return endpoint.OwnerOtherCluster
}

// Namesake is another installation that writes this cluster's name: its identity, how many
// of its entries the read met, and how many of those name objects of this cluster (Kin): a copy
// of this cluster (restored from an etcd backup, a cloned VM) or this cluster under an identity
// it had before, which a name of each cluster's own would not tell apart.
type Namesake struct {
	ID           string
	Entries, Kin int
}

// tally adds one entry of identity id to ns, kin when it names objects of this cluster.
func tally(ns []Namesake, id string, kin bool) []Namesake {
	k := slices.IndexFunc(ns, func(n Namesake) bool { return n.ID == id })
	if k < 0 {
		ns, k = append(ns, Namesake{ID: id}), len(ns)
	}
	ns[k].Entries++
	if kin {
		ns[k].Kin++
	}
	return ns
}

// resolveOpen decides the entries the tags alone leave open, once the whole read is sorted.
// Only a UID no other cluster has (a source: tag, never a webhook's hashed from the hostname)
// proves an entry names an object of this cluster.
//   - Another identity under this name is a former one of this cluster (a renamed Lease,
//     another release or namespace) when nothing was seen writing it and one of its entries
//     names an object here: all its entries are taken up in place. Any other's are a
//     namesake's, never written.
//   - An entry an object here wants is this cluster's, whatever name it carries (a rename, or
//     an earlier version's: takeUpPerSync at a time gives it the identity).
//   - This identity under another name is this cluster's when it is marked (it goes as
//     marked); or names no object and carries a shared line a claim here wants (handed over
//     before the rename); or names objects under a former name, one whose entries of this
//     identity an object here wants.
//   - An earlier version's entry of this name is this cluster's unless a namesake shows.
//   - Any other is another's, never written; those that may be this cluster's are Unclaimed.
func (r *Registry) resolveOpen(st *State, open []endpoint.Record, claimed func(uid string) bool, wanted func(*endpoint.Record) bool) {
	evidence := !r.cfg.HostnameUIDs || mutation == "hashed-uids-as-evidence"
	kinOf := func(uids []string) bool { return evidence && slices.ContainsFunc(uids, claimed) }
	// A former name, as a former identity, is judged per name (a twin still writing under it
	// lifts the marks).
	former, formerNames := map[string]bool{}, map[string]bool{}
	for i := range open {
		p := st.parser.parse(&open[i])
		if p.class == endpoint.OwnerNamesake {
			if id, _ := p.v.clusterID(); (kinOf(p.v.values(PrefixSource)) || st.witness.Proven(id)) && !st.witness.Alive(id) {
				former[id] = true
			}
		} else if p.class == endpoint.OwnerRenamed && slices.ContainsFunc(p.v.values(PrefixSource), claimed) {
			for _, n := range p.v.clusterNames() {
				formerNames[n] = true
			}
		}
	}
	for i := range open {
		p := st.parser.parse(&open[i])
		if p.class != endpoint.OwnerNamesake {
			continue
		}
		id, _ := p.v.clusterID()
		kin := kinOf(p.v.values(PrefixSource))
		// An entry of a former identity that names no object here may be one a copy of it
		// still wants, until the identity has been quiet longer than its heartbeats' period.
		mine := former[id] && (kin || st.witness.Quiet(id, r.beatPeriod()))
		if mine {
			st.Former = tally(st.Former, id, kin)
		} else {
			st.Namesakes = tally(st.Namesakes, id, kin)
		}
		r.file(st, &open[i], &p.v, mine)
	}
	byID := func(a, b Namesake) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(st.Namesakes, byID)
	slices.SortFunc(st.Former, byID)
	for i := range open {
		rec := &open[i]
		p := st.parser.parse(rec)
		if p.class == endpoint.OwnerNamesake {
			continue
		}
		uids := p.v.values(PrefixSource)
		_, marked := p.v.value(PrefixPending)
		renamed := p.class == endpoint.OwnerRenamed
		handed := renamed && len(uids) == 0 && p.v.has(TagShared) && wanted(rec)
		sameName := !slices.ContainsFunc(p.v.clusterNames(), func(n string) bool { return n != r.cfg.ClusterName })
		underFormer := renamed && len(uids) > 0 && !slices.ContainsFunc(p.v.clusterNames(), func(n string) bool { return !formerNames[n] })
		mine := slices.ContainsFunc(uids, claimed) || handed || underFormer || renamed && marked ||
			p.class == endpoint.OwnerEarlierVersion && sameName && len(st.Namesakes) == 0
		if !mine && (sameName || renamed) {
			st.Unclaimed++
		}
		r.file(st, rec, &p.v, mine)
	}
}

// file puts rec, v its view, among st's entries: this cluster's (mine) or another's.
func (r *Registry) file(st *State, rec *endpoint.Record, v *view, mine bool) {
	if mine {
		st.Owned = append(st.Owned, *rec)
		if r.cfg.SilentClusterAfter > 0 {
			st.beats.own(rec, v)
		}
		return
	}
	key := strings.ToLower(rec.Hostname)
	st.Foreign[key] = append(st.Foreign[key], *rec)
	if r.hasOwnCoOwner(v.op) {
		st.CoOwned = append(st.CoOwned, *rec)
	}
}

// ownerText names who owns another installation's entry, for a conflict: "cluster <name>",
// or for a namesake "cluster <name> (another installation of this name, cluster-id <id>)".
func (r *Registry) ownerText(rec *endpoint.Record) string {
	v := viewOf(rec)
	name := ""
	if names := v.clusterNames(); len(names) > 0 {
		name = names[0]
	}
	if id, ok := v.clusterID(); ok && name == r.cfg.ClusterName {
		return "cluster " + name + " (another installation of this name, cluster-id " + id + ")"
	}
	return "cluster " + name
}
