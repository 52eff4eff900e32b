package registry

import (
	"fmt"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// The operator's tags, exactly as they appear on entries. Together they form the reserved tag
// namespace: no tag a user supplies (an annotation, a HostMapping's spec.tags, --default-tag)
// may be one of them, so ownership cannot be forged from the cluster.
const (
	// TagOwner marks an entry as written by a router-hosts-operator.
	TagOwner = "k8s-operator"
	// TagPreExisting marks an adopted entry: released, never deleted.
	TagPreExisting = "pre-existing:true"
	// PrefixCluster names the owning cluster, exactly as the design writes it:
	// cluster:<cluster-name>. The name is the people's, and two clusters may share one.
	PrefixCluster = "cluster:"
	// PrefixClusterID carries the installation's identity (ClusterID), which a namesake
	// cannot share, in a tag of its own beside the cluster's name: cluster-id:<id>.
	PrefixClusterID = "cluster-id:"
	// IdentitySeparator ends the cluster name in the cluster: tag of the versions that carried
	// the identity there (cluster:<name>@<id>); such entries are still read, and taken up into
	// the design's form.
	IdentitySeparator = "@"
	// PrefixReleaseProbe is written by `release` on one entry of the cluster it is asked to
	// let go of: a running operator of that cluster takes it off at its next sync.
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
	// PrefixOriginalIP, PrefixOriginalHostname and PrefixOriginalAlias are the loan record of
	// an adopted entry: what the entry was when it was adopted, so that release gives it back.
	PrefixOriginalIP       = "original-ip:"
	PrefixOriginalHostname = "original-hostname:"
	PrefixOriginalAlias    = "original-alias:"
	// TagShared is on every entry written for claims that share their hostname with other
	// clusters: another cluster may write addresses of its own for that hostname only while all
	// of the holder's entries of it carry this tag (its consent).
	TagShared = "shared:true"
	// PrefixCoOwner names another cluster that wants the entry's line (address and hostname) as
	// well, co-owner:<cluster-name>@<cluster-id> (the name alone for a cluster without an
	// identity). That cluster writes it on the line it found, and takes it off when it no
	// longer wants it; the line's writer keeps it, and hands the line to it rather than delete it.
	PrefixCoOwner = "co-owner:"
	// PrefixAlive is an installation's heartbeat: the RFC 3339 time it last wrote it, on one
	// of its entries, every quarter of the silent-cluster threshold.
	PrefixAlive = "alive:"
	// PrefixAliveEvery and PrefixAliveInterval go beside the heartbeat: how often the
	// installation renews it and its --interval, each in seconds. Another installation reads
	// the first to tell when the mark is overdue, and release the second to wait long enough
	// for its probe to be answered.
	PrefixAliveEvery    = "alive-every:"
	PrefixAliveInterval = "alive-interval:"

	preExistingPrefix = "pre-existing:"
	sharedPrefix      = "shared:"
)

// reservedPrefixes are the prefixes of the reserved tag namespace; TagOwner is reserved
// exactly.
var reservedPrefixes = []string{
	PrefixCluster, PrefixClusterID, PrefixReleaseProbe, PrefixSource, PrefixNamespace, PrefixKind, PrefixPending, PrefixGracePeriod,
	preExistingPrefix, PrefixOriginalIP, PrefixOriginalHostname, PrefixOriginalAlias,
	sharedPrefix, PrefixCoOwner, PrefixAlive, PrefixAliveEvery, PrefixAliveInterval,
}

// ReservedPrefixes returns the reserved tag prefixes (TagOwner is reserved as a whole tag), for
// the checks that must agree with the registry, such as the HostMapping CRD's schema.
func ReservedPrefixes() []string { return append([]string(nil), reservedPrefixes...) }

// Reserved reports whether t is in the operator's tag namespace.
func Reserved(t string) bool {
	if t == TagOwner {
		return true
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// CheckUserTag refuses a user-supplied tag that is in the reserved namespace.
func CheckUserTag(t string) error {
	if Reserved(t) {
		return fmt.Errorf("tag %q is reserved for the operator's ownership bookkeeping (%s and the prefixes %s)",
			t, TagOwner, strings.Join(reservedPrefixes, " "))
	}
	return nil
}

// view is an entry's tags split by who wrote them.
//
// On an adopted entry the operator's tags are one block, which it writes after the user's own
// tags: from TagPreExisting to the loan's PrefixOriginalIP, which closes it. Everything outside
// the block is the user's, whatever it looks like: the tags the entry had when it was adopted
// (kind:printer, a cluster: tag of the user's own) and any the user adds while it is on loan.
// On any other entry every reserved tag is the operator's.
type view struct {
	// op are the operator's tags.
	op []string
	// user are the user's tags, in the entry's order.
	user []string
	// loan is the adoption record, nil when there is none (not adopted, or adopted by a version
	// that kept no record).
	loan *loan
	// blockStart is the index in the entry's tags where the operator's block starts, -1 when
	// the entry has none.
	blockStart int
}

// loan is what an adopted entry was when the operator took it over.
type loan struct {
	ip, hostname string
	aliases      []string
}

// viewOf splits rec's tags by who wrote them.
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
	v.blockStart = start
	v.op = rec.Tags[start : end+1]
	v.user = append(append([]string{}, rec.Tags[:start]...), rec.Tags[end+1:]...)
	l := &loan{}
	for _, t := range v.op {
		switch {
		case strings.HasPrefix(t, PrefixOriginalIP):
			l.ip = t[len(PrefixOriginalIP):]
		case strings.HasPrefix(t, PrefixOriginalHostname):
			l.hostname = t[len(PrefixOriginalHostname):]
		case strings.HasPrefix(t, PrefixOriginalAlias):
			l.aliases = append(l.aliases, t[len(PrefixOriginalAlias):])
		}
	}
	if l.hostname != "" {
		v.loan = l
	}
	return v
}

// loanBlock finds the operator's block on an adopted entry: the last PrefixOriginalIP tag
// closes it, and the last TagPreExisting before that opens it. The user's own tags come
// before it (as found) or after it (added during the loan), so a look-alike of theirs never
// falls inside. It returns -1, -1 when there is no block.
func loanBlock(tags []string) (start, end int) {
	end = -1
	for k := len(tags) - 1; k >= 0; k-- {
		if strings.HasPrefix(tags[k], PrefixOriginalIP) {
			end = k
			break
		}
	}
	for k := end - 1; k >= 0; k-- {
		if tags[k] == TagPreExisting {
			return k, end
		}
	}
	return -1, -1
}

// ClusterTag is the cluster: tag of a cluster name, as the design writes it.
func ClusterTag(name string) string { return PrefixCluster + name }

// IdentityTag is the tag that carries an installation's identity.
func IdentityTag(id string) string { return PrefixClusterID + id }

// TagIdentity reads the identity a tag carries: a cluster-id: tag, or a cluster: tag of the
// versions that carried it after the name (cluster:<name>@<id>); ok is false for any other.
func TagIdentity(tag string) (id string, ok bool) {
	if id, ok := strings.CutPrefix(tag, PrefixClusterID); ok {
		return id, true
	}
	if _, id, ok := ParseClusterTag(tag); ok && id != "" {
		return id, true
	}
	return "", false
}

// splitCluster reads a cluster: tag's value as a name and the identity that may follow it.
func splitCluster(value string) (name, id string) {
	if i := strings.LastIndex(value, IdentitySeparator); i >= 0 && checkIdentity(value[i+1:]) == nil && i+1 < len(value) {
		return value[:i], value[i+1:]
	}
	return value, ""
}

// ParseClusterTag reads a cluster: tag as the cluster's name and the identity that may
// follow it; ok is false for any other tag.
func ParseClusterTag(tag string) (name, id string, ok bool) {
	value, ok := strings.CutPrefix(tag, PrefixCluster)
	if !ok {
		return "", "", false
	}
	name, id = splitCluster(value)
	return name, id, true
}

// clusterNames returns the cluster names of the operator's cluster: tags.
func (v *view) clusterNames() []string {
	names := v.values(PrefixCluster)
	for i, n := range names {
		names[i], _ = splitCluster(n)
	}
	return names
}

// clusterIDs returns the identities on the entry: those in its cluster-id: tags, and those in
// the cluster: tags of the versions that carried it after the name.
func (v *view) clusterIDs() []string {
	ids := v.values(PrefixClusterID)
	for _, n := range v.values(PrefixCluster) {
		if _, id := splitCluster(n); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// clusterID returns the entry's first identity.
func (v *view) clusterID() (string, bool) {
	if ids := v.clusterIDs(); len(ids) > 0 {
		return ids[0], true
	}
	return "", false
}

// has reports whether the operator wrote tag.
func (v *view) has(tag string) bool {
	for _, t := range v.op {
		if t == tag {
			return true
		}
	}
	return false
}

// value returns the value of the operator's first tag with prefix.
func (v *view) value(prefix string) (string, bool) {
	for _, t := range v.op {
		if s, ok := strings.CutPrefix(t, prefix); ok {
			return s, true
		}
	}
	return "", false
}

// values returns the values of every operator tag with prefix.
func (v *view) values(prefix string) []string {
	var out []string
	for _, t := range v.op {
		if s, ok := strings.CutPrefix(t, prefix); ok {
			out = append(out, s)
		}
	}
	return out
}

// loanTrail is the end of the operator's block on an entry adopted with a record: the record
// itself, closed by the original IP.
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
