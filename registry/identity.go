package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// IdentityLength is an identity's hex digits: 32 bits, one collision in four billion pairs.
const IdentityLength = 8

// Identity derives an installation's identity from the kube-system namespace's UID (the
// cluster's, outliving every install) and its leader Lease's namespace and name (the install's).
func Identity(kubeSystemUID, leaseNamespace, leaseName string) string {
	sum := sha256.Sum256([]byte(kubeSystemUID + "/" + leaseNamespace + "/" + leaseName))
	return hex.EncodeToString(sum[:])[:IdentityLength]
}

// checkIdentity refuses an identity but IdentityLength lowercase hex digits or "" (none).
func checkIdentity(id string) error {
	if id != "" && (len(id) != IdentityLength || strings.Trim(id, "0123456789abcdef") != "") {
		return fmt.Errorf("cluster identity %q: want %d lowercase hex digits", id, IdentityLength)
	}
	return nil
}

// classOf reads whose v's entry is by its tags alone; resolveOpen decides what they leave open.
func (r *Registry) classOf(v *view) endpoint.Owner {
	if !v.has(TagOwner) {
		return endpoint.OwnerHandMade
	}
	names := v.clusterNames()
	if len(names) == 0 {
		return endpoint.OwnerOtherCluster
	}
	sameName := !slices.ContainsFunc(names, func(n string) bool { return n != r.cfg.ClusterName })
	if r.cfg.ClusterID == "" { // no identity: ownership by name alone
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

// Namesake is another installation of this cluster's name: Entries read, Kin naming objects here.
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

// resolveOpen decides the entries the tags leave open, once the whole read is sorted, as
// docs/ownership.md says: namesakes' identities first (former ones are taken up), then the rest.
// Only a source: UID no other cluster has (not a webhook's, hashed from the hostname) is proof.
func (r *Registry) resolveOpen(st *State, open []endpoint.Record, claimed func(uid string) bool, wanted func(*endpoint.Record) bool) {
	evidence := !r.cfg.HostnameUIDs || mutation == "hashed-uids-as-evidence"
	kinOf := func(uids []string) bool { return evidence && slices.ContainsFunc(uids, claimed) }
	// A former name, as a former identity, is judged whole (a twin writing under it lifts marks).
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
		// One naming no object here may be a copy's until the identity is Quiet.
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
		renamed := p.class == endpoint.OwnerRenamed
		handed := renamed && len(uids) == 0 && p.v.has(TagShared) && wanted(rec)
		sameName := !slices.ContainsFunc(p.v.clusterNames(), func(n string) bool { return n != r.cfg.ClusterName })
		underFormer := renamed && len(uids) > 0 && !slices.ContainsFunc(p.v.clusterNames(), func(n string) bool { return !formerNames[n] })
		mine := slices.ContainsFunc(uids, claimed) || handed || underFormer || renamed && p.v.marked() ||
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

// ownerText names the owner of another installation's entry, for a conflict.
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
