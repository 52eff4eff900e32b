package registry

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Tenancy says which names each namespace may claim and which may adopt hand-made entries; the
// zero Tenancy lets every namespace do both, as a cluster with one admin wants.
type Tenancy struct {
	// Domains, when not empty, are the only names namespaces may claim: a name (hostname or
	// alias) equal to or under a domain of a rule whose pattern matches the namespace.
	Domains []NamespaceDomains
	// Adopters are the patterns of the namespaces that may adopt; nil means all, empty none.
	Adopters []string
	// MaxGracePeriod caps the grace period an object may ask for; zero means no cap.
	MaxGracePeriod time.Duration
}

// NamespaceDomains lets the namespaces a pattern matches claim names under some domains.
type NamespaceDomains struct {
	// Namespace is a namespace's name or a pattern in path.Match's syntax ("team-*", "*").
	Namespace string
	Domains   []string
}

// Budgets bound what the cluster may ask of the router, whose every call replays its whole
// log, so that one object or namespace cannot flood it. Zero means no limit.
type Budgets struct {
	// EntriesPerObject bounds an object's hostnames times addresses, AliasesPerObject and
	// TagsPerObject its aliases and tags: over any, it keeps what it has and gets nothing new.
	EntriesPerObject, AliasesPerObject, TagsPerObject int
	// EntriesPerNamespace bounds a namespace's entries: at it, no new hostname is written.
	EntriesPerNamespace int
	// WritesPerSync bounds one sync's writes; the rest follow in the next, at once, each
	// namespace and object in turn.
	WritesPerSync int
	// ObjectWritesPerMinute and NamespaceWritesPerMinute bound how fast an object and a
	// namespace write: beyond, their latest state waits, so a flapping object is coalesced.
	ObjectWritesPerMinute, NamespaceWritesPerMinute int
}

// DefaultBudgets are the flags' defaults: far beyond what a homelab asks, and low enough that
// one object or namespace cannot make thousands of entries.
func DefaultBudgets() Budgets {
	return Budgets{EntriesPerObject: 256, AliasesPerObject: 64, TagsPerObject: 32, EntriesPerNamespace: 1000, WritesPerSync: 1000,
		ObjectWritesPerMinute: 30, NamespaceWritesPerMinute: 300}
}

// TagNoAdopt, the user's tag on a hand-made entry, says it is never adopted: a claim on its
// hostname is a conflict instead.
const TagNoAdopt = "no-adopt"

// Check reports what is wrong with t.
func (t Tenancy) Check() error {
	_, err := compileTenancy(t)
	return err
}

// tenancy is Tenancy checked and compiled.
type tenancy struct {
	rules    []domainRule
	adopters []string
	all      bool // no rule: every namespace may claim every name
	maxGrace time.Duration
}

type domainRule struct {
	pattern string
	domains endpoint.DomainFilter
}

func compileTenancy(t Tenancy) (tenancy, error) {
	out := tenancy{all: len(t.Domains) == 0, maxGrace: t.MaxGracePeriod}
	if t.MaxGracePeriod < 0 {
		return tenancy{}, fmt.Errorf("the maximum grace period %s is negative", t.MaxGracePeriod)
	}
	for i, d := range t.Domains {
		if err := checkPattern(d.Namespace); err != nil {
			return tenancy{}, fmt.Errorf("namespace domains %d: %w", i, err)
		}
		if len(d.Domains) == 0 {
			return tenancy{}, fmt.Errorf("namespace domains %d (%s): no domain", i, d.Namespace)
		}
		f, err := endpoint.NewDomainFilter(d.Domains, nil)
		if err != nil {
			return tenancy{}, fmt.Errorf("namespace domains %d (%s): %w", i, d.Namespace, err)
		}
		out.rules = append(out.rules, domainRule{pattern: d.Namespace, domains: f})
	}
	for _, p := range t.Adopters {
		if err := checkPattern(p); err != nil {
			return tenancy{}, fmt.Errorf("adopting namespaces: %w", err)
		}
	}
	// "*" lets every namespace adopt, as no list does.
	if t.Adopters != nil && !slices.Contains(t.Adopters, "*") {
		out.adopters = append([]string{}, t.Adopters...)
	}
	return out, nil
}

// checkPattern refuses an empty or malformed namespace pattern.
func checkPattern(p string) error {
	if p == "" {
		return fmt.Errorf("empty namespace pattern")
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("namespace pattern %q: %w", p, err)
	}
	return nil
}

// matches reports whether namespace matches pattern (path.Match; checked by checkPattern).
func matches(pattern, namespace string) bool {
	ok, _ := path.Match(pattern, namespace)
	return ok
}

// mayClaim reports whether namespace may claim name.
func (t *tenancy) mayClaim(namespace, name string) bool {
	if t.all {
		return true
	}
	for i := range t.rules {
		if matches(t.rules[i].pattern, namespace) && t.rules[i].domains.Match(name) {
			return true
		}
	}
	return false
}

// claimable describes, for a refusal's message, the domains namespace may claim.
func (t *tenancy) claimable(namespace string) string {
	var ds []string
	for i := range t.rules {
		if matches(t.rules[i].pattern, namespace) {
			ds = append(ds, t.rules[i].domains.Include...)
		}
	}
	if len(ds) == 0 {
		return "no name"
	}
	return "names under " + strings.Join(endpoint.SortedUnique(ds), ", ")
}

// mayAdopt reports whether namespace may adopt hand-made entries.
func (t *tenancy) mayAdopt(namespace string) bool {
	if t.adopters == nil {
		return true
	}
	return slices.ContainsFunc(t.adopters, func(p string) bool { return matches(p, namespace) })
}

// capGrace is d within the maximum grace period.
func (t *tenancy) capGrace(d time.Duration) time.Duration {
	if t.maxGrace > 0 && d > t.maxGrace {
		return t.maxGrace
	}
	return d
}

// tenancy applies the tenancy rules and the domain filter to each claim's names, and the
// maximum grace period to its grace period.
func (r *Registry) tenancy(_ *claimsIn, eps []*endpoint.Endpoint) verdicts {
	filtered := len(r.filter.Include) > 0 || len(r.filter.Exclude) > 0
	if r.ten.all && r.ten.maxGrace == 0 && !filtered {
		return verdicts{endpoints: eps}
	}
	var res verdicts
	res.endpoints = sendOn(eps, func(ep *endpoint.Endpoint) *endpoint.Endpoint {
		keep, problems := r.permit(ep)
		res.problems = append(res.problems, problems...)
		return keep
	})
	return res
}

// permit is what of one claim the tenancy rules, the domain filter and the maximum grace
// period let through: the claim itself, a copy with what they drop taken out, or nil.
func (r *Registry) permit(ep *endpoint.Endpoint) (*endpoint.Endpoint, []Problem) {
	src := ep.Sources[0]
	if !r.ten.mayClaim(src.Namespace, ep.Hostname) {
		return nil, []Problem{{Source: src, Kind: ProblemNotPermitted,
			Message: fmt.Sprintf("hostname %s is not written: namespace %s may claim %s", ep.Hostname, src.Namespace, r.ten.claimable(src.Namespace))}}
	}
	var (
		problems []Problem
		dropped  []string
	)
	aliases := ep.Aliases
	for _, a := range ep.Aliases {
		switch {
		case !r.filter.Match(a):
			problems = append(problems, Problem{Source: src, Kind: ProblemOutsideDomains,
				Message: fmt.Sprintf("alias %s is outside the domains the operator manages; dropped", a)})
		case !r.ten.mayClaim(src.Namespace, a):
			problems = append(problems, Problem{Source: src, Kind: ProblemNotPermitted,
				Message: fmt.Sprintf("alias %s is not written: namespace %s may claim %s", a, src.Namespace, r.ten.claimable(src.Namespace))})
		default:
			continue
		}
		dropped = append(dropped, a)
	}
	if len(dropped) > 0 {
		aliases = without(ep.Aliases, dropped)
	}
	grace := ep.GracePeriod
	if grace != nil && r.ten.capGrace(*grace) != *grace {
		problems = append(problems, Problem{Source: src, Kind: ProblemGracePeriodCapped,
			Message: fmt.Sprintf("grace period %s is above the maximum of %s, which applies instead", *grace, r.ten.maxGrace)})
		capped := r.ten.maxGrace
		grace = &capped
	}
	if len(dropped) == 0 && grace == ep.GracePeriod {
		return ep, problems
	}
	c := *ep
	c.Aliases, c.GracePeriod = aliases, grace
	return &c, problems
}

func checkBudgets(b Budgets) error {
	for _, v := range []struct {
		name string
		n    int
	}{{"entries per object", b.EntriesPerObject}, {"aliases per object", b.AliasesPerObject}, {"tags per object", b.TagsPerObject},
		{"entries per namespace", b.EntriesPerNamespace}, {"writes per sync", b.WritesPerSync},
		{"an object's writes a minute", b.ObjectWritesPerMinute}, {"a namespace's writes a minute", b.NamespaceWritesPerMinute}} {
		if v.n < 0 {
			return fmt.Errorf("the budget of %s is negative (%d); 0 means no limit", v.name, v.n)
		}
	}
	return nil
}
