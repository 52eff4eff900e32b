package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// The operator's tags: no user tag may be one, so ownership cannot be forged (docs/ownership.md).
const (
	// TagOwner marks an entry a router-hosts-operator wrote.
	TagOwner = "k8s-operator"
	// TagPreExisting marks an adopted entry: released, never deleted.
	TagPreExisting = "pre-existing:true"
	// PrefixCluster names the owning cluster (cluster:<name>); two clusters may share a name.
	PrefixCluster = "cluster:"
	// PrefixClusterID carries the installation's identity, which a namesake cannot share.
	PrefixClusterID = "cluster-id:"
	// IdentitySeparator ends the name in earlier versions' cluster:<name>@<id>, still read.
	IdentitySeparator = "@"
	// PrefixReleaseProbe is `release`'s probe, which a running operator of the cluster takes off.
	PrefixReleaseProbe = "release-probe:"
	// PrefixSource carries the UID of one object that wants the entry's address.
	PrefixSource = "source:"
	// PrefixNamespace names the namespace that holds the hostname.
	PrefixNamespace = "namespace:"
	// PrefixKind names a kind of the claiming objects.
	PrefixKind = "kind:"
	// PrefixPending carries the RFC 3339 time the entry was marked for deletion.
	PrefixPending = "pending-deletion:"
	// PrefixGracePeriod is the entry's own grace period in seconds.
	PrefixGracePeriod = "grace-period:"
	// PrefixOriginalIP, PrefixOriginalHostname and PrefixOriginalAlias are an adopted entry's
	// loan record: what it was, for release to give back.
	PrefixOriginalIP       = "original-ip:"
	PrefixOriginalHostname = "original-hostname:"
	PrefixOriginalAlias    = "original-alias:"
	// TagShared is a cluster's consent to share the hostname, needed on all its entries of it.
	TagShared = "shared:true"
	// PrefixCoOwner names another cluster that wants the entry's line too (co-owner:<name>@<id>
	// or co-owner:<name>), put on and off by it; the writer hands it the line, not deletes it.
	PrefixCoOwner = "co-owner:"
	// PrefixAlive is an installation's heartbeat: the RFC 3339 time it last wrote it.
	PrefixAlive = "alive:"
	// PrefixAliveEvery and PrefixAliveInterval carry beside it, in seconds, its renewal period
	// (by which others tell it overdue) and --interval (by which release waits for its probe).
	PrefixAliveEvery    = "alive-every:"
	PrefixAliveInterval = "alive-interval:"
)

// reservedPrefixes are the reserved tag namespace's prefixes; TagOwner is reserved whole.
var reservedPrefixes = []string{
	PrefixCluster, PrefixClusterID, PrefixReleaseProbe, PrefixSource, PrefixNamespace, PrefixKind, PrefixPending, PrefixGracePeriod,
	"pre-existing:", PrefixOriginalIP, PrefixOriginalHostname, PrefixOriginalAlias,
	"shared:", PrefixCoOwner, PrefixAlive, PrefixAliveEvery, PrefixAliveInterval,
}

// ReservedPrefixes returns the reserved tag prefixes, for checks that must agree (the CRD's).
func ReservedPrefixes() []string { return slices.Clone(reservedPrefixes) }

// Reserved reports whether t is in the operator's tag namespace.
func Reserved(t string) bool {
	return t == TagOwner || slices.ContainsFunc(reservedPrefixes, func(p string) bool { return strings.HasPrefix(t, p) })
}

// CheckUserTag refuses a user-supplied tag that is in the reserved namespace.
func CheckUserTag(t string) error {
	if Reserved(t) {
		return fmt.Errorf("tag %q is reserved for the operator's ownership bookkeeping (%s and the prefixes %s)",
			t, TagOwner, strings.Join(reservedPrefixes, " "))
	}
	return nil
}

// view is an entry's tags by writer: on an adopted entry the operator's are the block from
// TagPreExisting to PrefixOriginalIP (at blockStart, else -1); on another, the reserved ones.
type view struct {
	op, user   []string
	loan       *loan // nil when there is no record
	blockStart int
}

// loan is what an adopted entry was when the operator took it over.
type loan struct {
	ip, hostname string
	aliases      []string
}

func viewOf(rec *endpoint.Record) view {
	v := view{blockStart: -1}
	start, end := loanBlock(rec.Tags)
	if start < 0 {
		v.op = make([]string, 0, len(rec.Tags))
		for _, t := range rec.Tags {
			if Reserved(t) {
				v.op = append(v.op, t)
			} else {
				v.user = append(v.user, t)
			}
		}
		return v
	}
	v.blockStart, v.op = start, rec.Tags[start:end+1]
	v.user = append(append([]string{}, rec.Tags[:start]...), rec.Tags[end+1:]...)
	l := &loan{ip: strings.TrimPrefix(rec.Tags[end], PrefixOriginalIP)}
	for _, t := range v.op {
		if s, ok := strings.CutPrefix(t, PrefixOriginalHostname); ok {
			l.hostname = s
		} else if s, ok := strings.CutPrefix(t, PrefixOriginalAlias); ok {
			l.aliases = append(l.aliases, s)
		}
	}
	if l.hostname != "" {
		v.loan = l
	}
	return v
}

// loanBlock finds an adopted entry's operator block (-1, -1: none) from the last PrefixOriginalIP
// back to a TagPreExisting, so that no look-alike among the user's tags falls inside.
func loanBlock(tags []string) (start, end int) {
	end = len(tags) - 1
	for end >= 0 && !strings.HasPrefix(tags[end], PrefixOriginalIP) {
		end--
	}
	for start = end - 1; start >= 0 && tags[start] != TagPreExisting; start-- {
	}
	if start < 0 {
		return -1, -1
	}
	return start, end
}

// ClusterTag is the cluster: tag of a cluster name, as the design writes it.
func ClusterTag(name string) string { return PrefixCluster + name }

// IdentityTag is the tag that carries an installation's identity.
func IdentityTag(id string) string { return PrefixClusterID + id }

// TagIdentity reads the identity of a cluster-id: or cluster:<name>@<id> tag; ok: it is one.
func TagIdentity(tag string) (id string, ok bool) {
	if id, ok := strings.CutPrefix(tag, PrefixClusterID); ok {
		return id, true
	}
	_, id, _ = ParseClusterTag(tag)
	return id, id != ""
}

// splitCluster reads a cluster: tag's value as a name and the identity that may follow it.
func splitCluster(value string) (name, id string) {
	if i := strings.LastIndex(value, IdentitySeparator); i >= 0 && checkIdentity(value[i+1:]) == nil && i+1 < len(value) {
		return value[:i], value[i+1:]
	}
	return value, ""
}

// ParseClusterTag reads a cluster: tag as a name and a possible identity; ok: it is one.
func ParseClusterTag(tag string) (name, id string, ok bool) {
	value, ok := strings.CutPrefix(tag, PrefixCluster)
	if ok {
		name, id = splitCluster(value)
	}
	return name, id, ok
}

func (v *view) clusterNames() []string {
	names := v.values(PrefixCluster)
	for i, n := range names {
		names[i], _ = splitCluster(n)
	}
	return names
}

// clusterIDs are the identities of the cluster-id: tags, then of earlier versions' cluster: tags.
func (v *view) clusterIDs() []string {
	ids := v.values(PrefixClusterID)
	for _, n := range v.values(PrefixCluster) {
		if _, id := splitCluster(n); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}
func (v *view) clusterID() (string, bool) {
	if ids := v.clusterIDs(); len(ids) > 0 {
		return ids[0], true
	}
	return "", false
}

func (v *view) has(tag string) bool { return slices.Contains(v.op, tag) }
func (v *view) marked() bool {
	_, ok := v.value(PrefixPending)
	return ok
}

// value and values are what follows prefix in the operator's first tag and in each.
func (v *view) value(prefix string) (string, bool) {
	for _, t := range v.op {
		if s, ok := strings.CutPrefix(t, prefix); ok {
			return s, true
		}
	}
	return "", false
}
func (v *view) values(prefix string) []string {
	var out []string
	for _, t := range v.op {
		if s, ok := strings.CutPrefix(t, prefix); ok {
			out = append(out, s)
		}
	}
	return out
}

// trail is the loan record ending an adopted entry's operator block, closed by the original IP.
func (l *loan) trail() []string {
	out := []string{PrefixOriginalHostname + l.hostname}
	for _, a := range l.aliases {
		out = append(out, PrefixOriginalAlias+a)
	}
	return append(out, PrefixOriginalIP+l.ip)
}

// loanOf is the record adopting rec writes: the entry as found.
func loanOf(rec *endpoint.Record) *loan {
	return &loan{ip: rec.IP, hostname: rec.Hostname, aliases: append([]string(nil), rec.Aliases...)}
}
