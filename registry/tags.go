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
	// PrefixCluster names the owning cluster.
	PrefixCluster = "cluster:"
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
	// PrefixOriginalIP, PrefixOriginalHostname, PrefixOriginalAlias and PrefixOriginalTag are
	// the loan record of an adopted entry: what the entry was when it was adopted, so that
	// release gives it back. Original tags are recorded only when they look like the operator's
	// own (the others are plainly the user's), percent-encoded.
	PrefixOriginalIP       = "original-ip:"
	PrefixOriginalHostname = "original-hostname:"
	PrefixOriginalAlias    = "original-alias:"
	PrefixOriginalTag      = "original-tag:"

	preExistingPrefix = "pre-existing:"
)

// reservedPrefixes are the prefixes of the reserved tag namespace; TagOwner is reserved
// exactly.
var reservedPrefixes = []string{
	PrefixCluster, PrefixSource, PrefixNamespace, PrefixKind, PrefixPending, PrefixGracePeriod,
	preExistingPrefix, PrefixOriginalIP, PrefixOriginalHostname, PrefixOriginalAlias, PrefixOriginalTag,
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

// view is an entry's tags split by who wrote them. On an entry the operator never adopted
// every reserved tag is the operator's; on an adopted one the tags recorded in its loan as the
// user's own are the user's, however they look.
type view struct {
	// op are the operator's tags.
	op []string
	// user are the user's tags, in the entry's order.
	user []string
	// loan is the adoption record, nil when there is none.
	loan *loan
}

// loan is what an adopted entry was when the operator took it over.
type loan struct {
	ip, hostname string
	aliases      []string
}

// viewOf splits rec's tags. The user's reserved-looking tags are recognised by count against
// the loan's original-tag records, so a tag the user and the operator both carry (the user's
// own cluster:home on an entry the cluster home adopted) is counted once for each.
func viewOf(rec *endpoint.Record) view {
	recorded := map[string]int{}
	for _, t := range rec.Tags {
		if v, ok := strings.CutPrefix(t, PrefixOriginalTag); ok {
			if d, err := unescapeTag(v); err == nil {
				recorded[d]++
			}
		}
	}
	var v view
	for _, t := range rec.Tags {
		switch {
		case !Reserved(t):
			v.user = append(v.user, t)
		case recorded[t] > 0:
			recorded[t]--
			v.user = append(v.user, t)
		default:
			v.op = append(v.op, t)
		}
	}
	var l loan
	complete := false
	for _, t := range v.op {
		switch {
		case strings.HasPrefix(t, PrefixOriginalIP):
			l.ip, complete = t[len(PrefixOriginalIP):], true
		case strings.HasPrefix(t, PrefixOriginalHostname):
			l.hostname = t[len(PrefixOriginalHostname):]
		case strings.HasPrefix(t, PrefixOriginalAlias):
			l.aliases = append(l.aliases, t[len(PrefixOriginalAlias):])
		}
	}
	if complete && l.hostname != "" {
		v.loan = &l
	}
	return v
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

// loanTags are the operator's loan-record tags of an adopted entry, in the entry's order.
func (v *view) loanTags() []string {
	var out []string
	for _, t := range v.op {
		for _, p := range []string{PrefixOriginalIP, PrefixOriginalHostname, PrefixOriginalAlias, PrefixOriginalTag} {
			if strings.HasPrefix(t, p) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// loanRecord is what adopting rec adds to keep the loan: the pre-existing marker and the
// entry as found. Its own tags stay on the entry verbatim; only those that look like the
// operator's are recorded, so they are never mistaken for it.
func loanRecord(rec *endpoint.Record) []string {
	out := []string{TagPreExisting, PrefixOriginalIP + rec.IP, PrefixOriginalHostname + rec.Hostname}
	for _, a := range rec.Aliases {
		out = append(out, PrefixOriginalAlias+a)
	}
	for _, t := range rec.Tags {
		if Reserved(t) {
			out = append(out, PrefixOriginalTag+escapeTag(t))
		}
	}
	return out
}

// escapeTag percent-encodes what a tag the operator writes may not contain (whitespace,
// commas, control and non-ASCII bytes) and '%' itself.
func escapeTag(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' || c == ',' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func unescapeTag(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		var c byte
		if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &c); err != nil {
			return "", fmt.Errorf("bad escape in %q: %w", s, err)
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), nil
}
