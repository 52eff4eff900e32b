package endpoint

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/net/idna"
)

// MaxAliases is the server's limit on aliases per entry.
const MaxAliases = 50

// maxTagLen keeps tags readable in the hosts file comment the server renders them into (the
// server itself has no limit), while leaving room for the operator's own record of a 253-byte
// hostname in an original-hostname: tag. User-supplied tags are held to 255 by the HostMapping
// schema as well.
const maxTagLen = 300

// maxCommentLen bounds the provenance comment for the same reason.
const maxCommentLen = 512

// idnaProfile converts internationalised names to punycode without imposing the stricter
// lookup rules, so that ValidateHostname alone decides what the server would accept.
var idnaProfile = idna.New(idna.MapForLookup(), idna.Transitional(false))

// NormalizeHostname returns the form the operator compares and sends: trimmed, lowercase,
// without a trailing dot, IDNs converted to punycode. It fails for anything the server would
// reject, including wildcards and underscores.
func NormalizeHostname(s string) (string, error) {
	h := strings.TrimSpace(s)
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", errors.New("hostname is empty")
	}
	if strings.Contains(h, "*") {
		return "", fmt.Errorf("hostname %q is a wildcard", s)
	}
	if !isASCII(h) {
		a, err := idnaProfile.ToASCII(h)
		if err != nil {
			return "", fmt.Errorf("hostname %q is not a valid internationalised name: %w", s, err)
		}
		h = a
	}
	h = strings.ToLower(h)
	if err := ValidateHostname(h); err != nil {
		return "", err
	}
	return h, nil
}

// ValidateHostname applies the server's rules exactly: 1–253 bytes, no leading or trailing dot,
// labels of 1–63 ASCII letters, digits and '-', not starting or ending with '-'. Case is not
// checked, because the server accepts any case.
func ValidateHostname(h string) error {
	if len(h) == 0 || len(h) > 253 {
		return fmt.Errorf("hostname %q must be 1 to 253 bytes", h)
	}
	if strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") {
		return fmt.Errorf("hostname %q must not start or end with a dot", h)
	}
	for _, label := range strings.Split(h, ".") {
		if len(label) == 0 || len(label) > 63 {
			return fmt.Errorf("hostname %q has a label that is not 1 to 63 bytes", h)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("hostname %q has a label starting or ending with '-'", h)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("hostname %q contains %q; only letters, digits and '-' are allowed", h, string(c))
			}
		}
	}
	return nil
}

// NormalizeIP returns the canonical text of an IP address (RFC 5952 for IPv6; IPv4-mapped
// IPv6 becomes plain IPv4), because the server compares IP texts byte for byte. Zones and
// leading-zero octets are refused, as the server refuses them.
func NormalizeIP(s string) (string, error) {
	a, err := ParseIP(strings.TrimSpace(s))
	if err != nil {
		return "", err
	}
	return a.Unmap().String(), nil
}

// ParseIP parses s with the server's rules (those of Go's net.ParseIP): no zone suffix, no
// leading zeros in IPv4 octets.
func ParseIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address", s)
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("IP address %q must not have a zone", s)
	}
	return a, nil
}

// NormalizeAliases normalises aliases for an entry named hostname and returns the valid ones,
// sorted and unique, with one error per alias it dropped. Aliases that are IPs, equal the
// hostname, or exceed the server's limit of MaxAliases are dropped too.
func NormalizeAliases(hostname string, aliases []string) ([]string, []error) {
	var (
		out  []string
		errs []error
		seen = map[string]bool{}
	)
	for _, raw := range aliases {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		if _, err := netip.ParseAddr(strings.TrimSpace(raw)); err == nil {
			errs = append(errs, fmt.Errorf("alias %q is an IP address", raw))
			continue
		}
		a, err := NormalizeHostname(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("alias: %w", err))
			continue
		}
		if a == hostname {
			errs = append(errs, fmt.Errorf("alias %q equals the hostname", raw))
			continue
		}
		if seen[a] {
			continue
		}
		seen[a] = true
		out = append(out, a)
	}
	out = SortedUnique(out)
	if len(out) > MaxAliases {
		errs = append(errs, fmt.Errorf("%d aliases given, the server allows %d; dropped %s",
			len(out), MaxAliases, strings.Join(out[MaxAliases:], ",")))
		out = out[:MaxAliases]
	}
	return out, errs
}

// ValidateAliases applies the server's alias rules to an entry: at most MaxAliases, each a
// valid hostname that is not an IP, not the entry's hostname, and not repeated (ignoring case).
func ValidateAliases(hostname string, aliases []string) error {
	if len(aliases) > MaxAliases {
		return fmt.Errorf("%d aliases, at most %d allowed", len(aliases), MaxAliases)
	}
	seen := make(map[string]bool, len(aliases))
	for _, a := range aliases {
		if _, err := netip.ParseAddr(a); err == nil {
			return fmt.Errorf("alias %q is an IP address", a)
		}
		if err := ValidateHostname(a); err != nil {
			return fmt.Errorf("alias: %w", err)
		}
		l := strings.ToLower(a)
		if l == strings.ToLower(hostname) {
			return fmt.Errorf("alias %q equals the hostname", a)
		}
		if seen[l] {
			return fmt.Errorf("alias %q is repeated", a)
		}
		seen[l] = true
	}
	return nil
}

// ValidateTag checks a tag the operator is about to write. The server does not validate tags
// but renders them into the hosts file, so tags must be short, printable, without whitespace,
// and without ',' (the separator of the tags annotation).
func ValidateTag(t string) error {
	if t == "" {
		return errors.New("tag is empty")
	}
	if len(t) > maxTagLen {
		return fmt.Errorf("tag %q is longer than %d bytes", t[:32]+"...", maxTagLen)
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c > '~' || c == ',' {
			return fmt.Errorf("tag %q contains %q; tags are printable ASCII without spaces or commas", t, string(c))
		}
	}
	return nil
}

// ValidateComment checks a comment the operator is about to write: one printable line, since
// the server renders it into the hosts file unchecked.
func ValidateComment(c string) error {
	if len(c) > maxCommentLen {
		return fmt.Errorf("comment is longer than %d bytes", maxCommentLen)
	}
	for _, r := range c {
		if r < ' ' || r == 0x7f {
			return fmt.Errorf("comment contains a control character %U", r)
		}
	}
	return nil
}

// ValidateRecord checks everything about an entry the operator is about to send, so that a
// write never fails for a reason the operator could have seen first.
func ValidateRecord(r *Record) error {
	if _, err := ParseIP(r.IP); err != nil {
		return err
	}
	if err := ValidateHostname(r.Hostname); err != nil {
		return err
	}
	if err := ValidateAliases(r.Hostname, r.Aliases); err != nil {
		return err
	}
	for _, t := range r.Tags {
		if err := ValidateTag(t); err != nil {
			return err
		}
	}
	return ValidateComment(r.Comment)
}

// ValidateUpdate checks what an update of have into want writes: the fields that change, and
// of the tags only those added. A tag already on the entry is carried as it is, whatever it
// looks like: the user wrote it, and the operator never rewrites a user's data.
func ValidateUpdate(have, want *Record) error {
	fs := Diff(have, want)
	if fs.Has(FieldIP) {
		if _, err := ParseIP(want.IP); err != nil {
			return err
		}
	}
	if fs.Has(FieldHostname) {
		if err := ValidateHostname(want.Hostname); err != nil {
			return err
		}
	}
	if fs.Has(FieldAliases) || fs.Has(FieldHostname) {
		if err := ValidateAliases(want.Hostname, want.Aliases); err != nil {
			return err
		}
	}
	if fs.Has(FieldTags) {
		carried := make(map[string]int, len(have.Tags))
		for _, t := range have.Tags {
			carried[t]++
		}
		for _, t := range want.Tags {
			if carried[t] > 0 {
				carried[t]--
				continue
			}
			if err := ValidateTag(t); err != nil {
				return err
			}
		}
	}
	if fs.Has(FieldComment) {
		return ValidateComment(want.Comment)
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
