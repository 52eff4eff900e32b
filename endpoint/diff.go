package endpoint

import (
	"sort"
	"strings"
)

// Field names one writable field of a router-hosts entry.
type Field uint8

// The writable fields of an entry. Each one sent in an UpdateHost costs the server an event,
// so the operator computes exactly which ones differ and sends only those.
const (
	FieldIP Field = 1 << iota
	FieldHostname
	FieldComment
	FieldAliases
	FieldTags
)

// Fields is a set of Field.
type Fields uint8

// Has reports whether f is in the set.
func (fs Fields) Has(f Field) bool { return fs&Fields(f) != 0 }

// String lists the fields, e.g. "ip,tags", for logs.
func (fs Fields) String() string {
	var names []string
	for _, x := range []struct {
		f Field
		n string
	}{{FieldIP, "ip"}, {FieldHostname, "hostname"}, {FieldComment, "comment"}, {FieldAliases, "aliases"}, {FieldTags, "tags"}} {
		if fs.Has(x.f) {
			names = append(names, x.n)
		}
	}
	return strings.Join(names, ",")
}

// Diff returns the fields in which want differs from have. Aliases compare as sets and tags
// as multisets, because their order carries no meaning for the operator, while a tag the user
// and the operator both put on an adopted entry is there once for each.
func Diff(have, want *Record) Fields {
	var fs Fields
	if have.IP != want.IP {
		fs |= Fields(FieldIP)
	}
	if have.Hostname != want.Hostname {
		fs |= Fields(FieldHostname)
	}
	if have.Comment != want.Comment {
		fs |= Fields(FieldComment)
	}
	if !SameSet(have.Aliases, want.Aliases) {
		fs |= Fields(FieldAliases)
	}
	if !SameMultiset(have.Tags, want.Tags) {
		fs |= Fields(FieldTags)
	}
	return fs
}

// SameMultiset reports whether a and b hold the same strings the same number of times, in any
// order. Short lists compare without allocating.
func SameMultiset(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) <= 32 {
		for _, x := range a {
			if count(a, x) != count(b, x) {
				return false
			}
		}
		return true
	}
	as, bs := append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(as)
	sort.Strings(bs)
	for i := range as {
		if as[i] != bs[i] {
			return false
		}
	}
	return true
}

func count(s []string, x string) int {
	n := 0
	for _, y := range s {
		if y == x {
			n++
		}
	}
	return n
}
