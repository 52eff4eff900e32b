package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Which cluster owns an entry. The cluster name is what people choose, and two clusters may
// choose the same one (both keep "default"); the identity in the tag beside it
// (cluster-id:<id>) is the installation's, which the operator derives and a namesake cannot
// share. With an identity configured, an entry is this cluster's when it carries this
// identity and this name; another cluster's when it carries another identity and another
// name. Three kinds are decided by the claims (resolveOpen): an entry an earlier version wrote
// (no identity); one with this identity under another name, which is this cluster's before a
// rename, or a second installation's that shares the identity (two in one cluster on one
// Lease); and one with this name under another identity, a namesake's, unless nothing writes
// that identity and one of its entries names an object that lives here: then every entry of it
// is this cluster's, under an identity it had before.

// IdentityLength is the number of hex digits of an identity: 32 bits, so that two
// installations sharing a router collide about once in four billion pairs, on 9 bytes an
// entry.
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
	if id == "" {
		return nil
	}
	if len(id) != IdentityLength || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("cluster identity %q: want %d lowercase hex digits", id, IdentityLength)
	}
	return nil
}

// classOf reads whose v's entry is.
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
		ns = append(ns, Namesake{ID: id})
		k = len(ns) - 1
	}
	ns[k].Entries++
	if kin {
		ns[k].Kin++
	}
	return ns
}

// resolveOpen decides whose the entries are that the tags alone leave open (an earlier
// version's, this identity's under another name, this name's under another identity), once
// the whole read is sorted:
//   - another identity under this name is one this cluster had before (a renamed Lease,
//     leader election turned off, another release or namespace) when nothing was seen writing
//     it and one of its entries names an object of this cluster (a source: UID no other
//     cluster has; never a webhook's, hashed from the hostname): every entry of it is this
//     cluster's, taken up in place, those whose objects went meanwhile too. Any other
//     identity's are a namesake's, never written;
//   - one that an object of this cluster wants (its source: tag names the object's UID,
//     which no other cluster has) is this cluster's, whatever cluster name it carries: a
//     rename, or an earlier version's entry taken up (it gets the identity at a write,
//     takeUpPerSync at a time, after every other change);
//   - one with this identity under another name that is marked for deletion is this
//     cluster's: renamed on its way out, it goes as marked;
//   - one with this identity under another name that names no object (a line another cluster
//     handed over to this one before its rename) and whose address a claim here wants is this
//     cluster's: taken up in place, as on any hand-over. Left to another it would be co-owned
//     by its own cluster, and never written again;
//   - an earlier version's entry of this cluster's name that no object here wants is this
//     cluster's too (its object is gone: marked, deleted after its grace period), unless a
//     namesake shows on the router: then it may be the namesake's, and it is left alone;
//   - any other is another's, never written. Those that may be (an earlier version's under
//     this name, this identity's under another) are counted as Unclaimed.
func (r *Registry) resolveOpen(st *State, open []endpoint.Record, claimed func(uid string) bool, wanted func(*endpoint.Record) bool) {
	var rest, others []endpoint.Record
	// kinOf: whether an entry names an object of this cluster, which only UIDs no other
	// installation can write prove.
	evidence := !r.cfg.HostnameUIDs || mutation == "hashed-uids-as-evidence"
	kinOf := func(uids []string) bool { return evidence && slices.ContainsFunc(uids, claimed) }
	former := map[string]bool{}
	for _, rec := range open {
		p := st.parser.parse(&rec)
		if p.class != endpoint.OwnerNamesake {
			rest = append(rest, rec)
			continue
		}
		others = append(others, rec)
		id, _ := p.v.clusterID()
		if (kinOf(p.v.values(PrefixSource)) || st.witness.Proven(id)) && !st.witness.Alive(id) {
			former[id] = true
		}
	}
	for _, rec := range others {
		p := st.parser.parse(&rec)
		id, _ := p.v.clusterID()
		kin := kinOf(p.v.values(PrefixSource))
		// Of a former identity, the entries that name objects here are taken up at once. One
		// that names none may name an object another installation of that identity still wants
		// (a copy reading other namespaces, idle), which nothing here can tell from one deleted,
		// until the identity has been quiet longer than its heartbeats are renewed: then no
		// copy runs, and it is taken up too, to go as an entry no object wants.
		if former[id] && (kin || st.witness.Quiet(id, r.beatPeriod())) {
			st.Former = tally(st.Former, id, kin)
			st.Owned = append(st.Owned, rec)
			if r.cfg.SilentClusterAfter > 0 {
				st.beats.own(&rec, &p.v)
			}
			continue
		}
		st.Namesakes = tally(st.Namesakes, id, kin)
		key := strings.ToLower(rec.Hostname)
		st.Foreign[key] = append(st.Foreign[key], rec)
		if r.hasOwnCoOwner(p.v.op) {
			st.CoOwned = append(st.CoOwned, rec)
		}
	}
	byID := func(a, b Namesake) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(st.Namesakes, byID)
	slices.SortFunc(st.Former, byID)
	// A former name, as a former identity, is judged per name: one entry of this identity
	// under it that an object here wants makes every entry under it this cluster's, those
	// whose objects went meanwhile too. (A twin still writing under that name lifts the marks;
	// a mark on an entry this process never vouched for waits for it.)
	formerNames := map[string]bool{}
	for _, rec := range rest {
		if p := st.parser.parse(&rec); p.class == endpoint.OwnerRenamed && slices.ContainsFunc(p.v.values(PrefixSource), claimed) {
			for _, n := range p.v.clusterNames() {
				formerNames[n] = true
			}
		}
	}
	for _, rec := range rest {
		p := st.parser.parse(&rec)
		uids := p.v.values(PrefixSource)
		mine := slices.ContainsFunc(uids, claimed)
		_, marked := p.v.value(PrefixPending)
		handed := p.class == endpoint.OwnerRenamed && len(uids) == 0 && p.v.has(TagShared) && wanted(&rec)
		sameName := !slices.ContainsFunc(p.v.clusterNames(), func(n string) bool { return n != r.cfg.ClusterName })
		former := p.class == endpoint.OwnerRenamed && len(uids) > 0 && !slices.ContainsFunc(p.v.clusterNames(), func(n string) bool { return !formerNames[n] })
		switch {
		case mine, handed, former, p.class == endpoint.OwnerRenamed && marked, p.class == endpoint.OwnerEarlierVersion && sameName && len(st.Namesakes) == 0:
			st.Owned = append(st.Owned, rec)
			if r.cfg.SilentClusterAfter > 0 {
				st.beats.own(&rec, &p.v)
			}
		default:
			if sameName || p.class == endpoint.OwnerRenamed {
				st.Unclaimed++
			}
			key := strings.ToLower(rec.Hostname)
			st.Foreign[key] = append(st.Foreign[key], rec)
			if r.hasOwnCoOwner(p.v.op) {
				st.CoOwned = append(st.CoOwned, rec)
			}
		}
	}
}

// ownerText names who owns another installation's entry, for a conflict: "cluster <name>",
// or for a namesake "cluster <name> (another installation, cluster-id <id>)".
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
