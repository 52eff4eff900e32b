// Package endpoint holds the plain data the operator moves between its parts: what the cluster
// wants (Endpoint) and what the router-hosts server has (Record). It has no I/O and no policy;
// the normalisation and validation here mirror the server so that bad input is refused before it
// reaches the wire.
package endpoint

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// SourceRef identifies one Kubernetes object that claims a hostname. The creation time and UID
// order competing claims, and the UID becomes the entry's source:<uid> tag.
type SourceRef struct {
	Group             string
	Version           string
	Kind              string
	Namespace         string
	Name              string
	UID               string
	CreationTimestamp time.Time
	// Generation is the object's metadata.generation as the source read it, so that an
	// observer can tell a result about an older spec from one about the current spec.
	Generation int64
}

// String names the object the way a user reads it in logs and comments: "Ingress default/web".
func (s SourceRef) String() string {
	if s.Namespace == "" {
		return s.Kind + " " + s.Name
	}
	return s.Kind + " " + s.Namespace + "/" + s.Name
}

// Problem is something wrong with one object's input: the reason a Warning event carries (and
// a status condition translates), and what the user reads.
type Problem struct {
	Reason  string
	Message string
}

// Endpoint is one hostname the cluster wants on the router, with every IP it should resolve to.
// One Endpoint becomes one router-hosts entry per target IP.
type Endpoint struct {
	// Hostname is normalised (see NormalizeHostname).
	Hostname string
	// Targets are canonical IP texts, sorted. Empty means the source could not resolve an
	// address right now (NoAddress), and the hostname's existing entries are kept as they are.
	Targets []string
	// Aliases are normalised hostnames, sorted, without duplicates or the hostname itself.
	Aliases []string
	// Tags are the user's tags for the entry (annotation tags, and the --default-tag values
	// once the registry has added them), sorted and unique.
	Tags []string
	// OwnerTags are the ownership tags every entry of the hostname carries, which the registry
	// derives from Sources and its own settings. Sources leave it empty.
	OwnerTags []string
	// TargetTags are the ownership tags of each target's entry alone (the source: tags of the
	// objects that want that address, its grace period), set by the registry.
	TargetTags map[string][]string
	// Comment is the provenance text written on entries the operator creates; the registry
	// fills it in. TargetComments, when set, is each target's own (CommentAt): an entry names
	// the objects that want its address, so that an object coming and going at another
	// address of the hostname rewrites none of them.
	Comment        string
	TargetComments map[string]string
	// Sources are the objects that claim this hostname, oldest first.
	Sources []SourceRef
	// GracePeriod overrides the deletion grace period when not nil.
	GracePeriod *time.Duration
	// Shared: the object consents to other clusters writing addresses of its own for the
	// hostname (the shared annotation, a HostMapping's spec.shared).
	Shared bool
}

// NoAddress reports whether an endpoint has no address to write right now (its object resolves
// none, or is over its budget); the registry then keeps the entries its object already has
// exactly as they are.
func (e *Endpoint) NoAddress() bool { return len(e.Targets) == 0 }

// CommentAt is the comment of the entry for target ip.
func (e *Endpoint) CommentAt(ip string) string {
	if c, ok := e.TargetComments[ip]; ok {
		return c
	}
	return e.Comment
}

// Ref is the reference to the object uid among e's sources.
func (e *Endpoint) Ref(uid string) (SourceRef, bool) {
	for _, s := range e.Sources {
		if s.UID == uid {
			return s, true
		}
	}
	return SourceRef{}, false
}

// Record is one router-hosts entry as the server returned it.
type Record struct {
	ID       string
	IP       string
	Hostname string
	Aliases  []string
	Tags     []string
	Comment  string
	Version  string
}

// String is a compact, stable rendering used in logs and dry-run output.
func (r *Record) String() string {
	return fmt.Sprintf("%s %s aliases=[%s] tags=[%s]", r.Hostname, r.IP,
		strings.Join(r.Aliases, ","), strings.Join(r.Tags, ","))
}

// HasTag reports whether the record carries tag exactly.
func (r Record) HasTag(tag string) bool {
	for _, t := range r.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// TagValue returns the value of the first tag of the form prefix+value.
func (r Record) TagValue(prefix string) (string, bool) {
	for _, t := range r.Tags {
		if strings.HasPrefix(t, prefix) {
			return t[len(prefix):], true
		}
	}
	return "", false
}

// SortedUnique returns a sorted copy of in without duplicates or empty strings; the registry's
// stages compare tag and alias lists as sets, and sorted lists make that and the output
// deterministic.
func SortedUnique(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s != "" {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	w := 0
	for i, s := range out {
		if i == 0 || s != out[w-1] {
			out[w] = s
			w++
		}
	}
	if w == 0 {
		return nil
	}
	return out[:w]
}

// SameSet reports whether a and b hold the same strings, ignoring order and duplicates. It
// runs for every entry of every sync, so short lists (tags, aliases) compare without allocating.
func SameSet(a, b []string) bool {
	if len(a) <= 32 && len(b) <= 32 {
		return SameUnion(a, b)
	}
	a, b = SortedUnique(a), SortedUnique(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// SameUnion reports whether have holds exactly the strings of the union of parts, ignoring
// order and duplicates, without allocating; it is quadratic, for short lists only.
func SameUnion(have []string, parts ...[]string) bool {
	for _, h := range have {
		found := false
		for _, p := range parts {
			if slices.Contains(p, h) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, p := range parts {
		for _, x := range p {
			if !slices.Contains(have, x) {
				return false
			}
		}
	}
	return true
}
