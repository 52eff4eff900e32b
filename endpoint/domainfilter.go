package endpoint

import (
	"fmt"
	"strings"
)

// DomainFilter selects the hostnames the operator manages, as external-dns's --domain-filter
// and --exclude-domains do: a hostname is managed when it equals or is under one of Include
// (or Include is empty) and neither equals nor is under any of Exclude.
type DomainFilter struct {
	Include []string
	Exclude []string
}

// NewDomainFilter normalises the domains, so "Home.LAN." filters like "home.lan".
func NewDomainFilter(include, exclude []string) (DomainFilter, error) {
	var f DomainFilter
	for _, list := range []struct {
		in  []string
		out *[]string
	}{{include, &f.Include}, {exclude, &f.Exclude}} {
		for _, d := range list.in {
			n, err := NormalizeHostname(strings.TrimPrefix(strings.TrimSpace(d), "."))
			if err != nil {
				return DomainFilter{}, fmt.Errorf("domain %q: %w", d, err)
			}
			*list.out = append(*list.out, n)
		}
	}
	return f, nil
}

// Match reports whether hostname (normalised) is managed.
func (f DomainFilter) Match(hostname string) bool {
	if f.ExcludedBy(hostname) != "" {
		return false
	}
	if len(f.Include) == 0 {
		return true
	}
	for _, d := range f.Include {
		if under(hostname, d) {
			return true
		}
	}
	return false
}

// ExcludedBy is the domain of Exclude that hostname (normalised) equals or is under, "" when
// none: explain names it, so that a person sees which exclusion to take out.
func (f DomainFilter) ExcludedBy(hostname string) string {
	for _, d := range f.Exclude {
		if under(hostname, d) {
			return d
		}
	}
	return ""
}

// String is the filter as its flags are written, one --domain-filter or --exclude-domains per
// domain since they repeat (a comma is not a separator there): "" for the empty filter, which
// manages every name.
func (f DomainFilter) String() string {
	var parts []string
	for _, d := range f.Include {
		parts = append(parts, "--domain-filter="+d)
	}
	for _, d := range f.Exclude {
		parts = append(parts, "--exclude-domains="+d)
	}
	return strings.Join(parts, " ")
}

func under(host, domain string) bool {
	return host == domain || strings.HasSuffix(host, "."+domain)
}
