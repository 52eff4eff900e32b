package source

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// kindInfo is one entry of the table of kinds.
type kindInfo struct {
	// name is the --source value.
	name string
	// reads says what the source reads, for --help.
	reads string
	// build makes a fresh kind; nil for a name that stands for others.
	build func() kind
	// stands for the names a group name selects (--source=gateway).
	standsFor []string
}

// kinds is every source the operator has: --source's values, its help text, the wiring and the
// RBAC the chart and kustomize grant (each kind's rules, written out by make generate) all come
// from here. Adding a source is one file implementing kind, its test and one line here.
func kinds() []kindInfo {
	return []kindInfo{
		{"ingress", "Ingress", func() kind { return &ingressKind{} }, nil},
		{"traefik", "IngressRoute, IngressRouteTCP", newTraefikKind, nil},
		{"hostmapping", "HostMapping", newHostMappingKind, nil},
		{"service", "Service", func() kind { return &serviceKind{} }, nil},
		{"gateway-httproute", "HTTPRoute", func() kind { return newRouteKind("httproutes", "HTTPRoute", "HTTP", "HTTPS") }, nil},
		{"gateway-grpcroute", "GRPCRoute", func() kind { return newRouteKind("grpcroutes", "GRPCRoute", "HTTP", "HTTPS") }, nil},
		{"gateway-tlsroute", "TLSRoute", func() kind { return newRouteKind("tlsroutes", "TLSRoute", "TLS") }, nil},
		{"gateway", "all three Gateway API route kinds", nil, []string{"gateway-httproute", "gateway-grpcroute", "gateway-tlsroute"}},
	}
}

// Names returns the --source values, in the table's order.
func Names() []string {
	var out []string
	for _, k := range kinds() {
		out = append(out, k.name)
	}
	return out
}

// Help describes the --source values for the flag's help text.
func Help() string {
	var parts []string
	for _, k := range kinds() {
		parts = append(parts, fmt.Sprintf("%s (%s)", k.name, k.reads))
	}
	return strings.Join(parts, ", ")
}

// Expand replaces the names that stand for others (gateway) by those, keeping the order and
// dropping repeats.
func Expand(names []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range names {
		expanded := false
		for _, k := range kinds() {
			if k.name == n && k.standsFor != nil {
				for _, m := range k.standsFor {
					add(m)
				}
				expanded = true
			}
		}
		if !expanded {
			add(n)
		}
	}
	return out
}

// Rule is one right a source needs on the API: verbs on resources of API groups. The chart's
// table of sources and kustomize/rbac.yaml are generated from the kinds' rules (hack/sourcegen),
// so the RBAC grants what a kind reads and no more.
type Rule struct {
	Groups    []string
	Resources []string
	Verbs     []string
	// Everywhere grants the rule in every namespace whatever --namespace says: the kind reads
	// these objects cluster-wide (a route's Gateways, which routes name across namespaces).
	Everywhere bool
}

// readVerbs are what an informer needs: a list, then a watch; get for a reader by name.
var readVerbs = []string{"get", "list", "watch"}

// read is the rule to read resources of one group in the namespace the operator watches.
func read(group string, resources ...string) Rule {
	return Rule{Groups: []string{group}, Resources: resources, Verbs: slices.Clone(readVerbs)}
}

// Rules returns the rights the source called name needs (a name that stands for others, the
// union of theirs), with the rules that differ only in group or resource merged, as a Role
// writes them: traefik's two groups share one rule. Nil for an unknown name.
func Rules(name string) []Rule {
	var all []Rule
	for _, n := range Expand([]string{name}) {
		for _, k := range kinds() {
			if k.name == n && k.build != nil {
				all = append(all, k.build().rules()...)
			}
		}
	}
	return mergeRules(all)
}

// mergeRules folds rules of the same verbs and scope into as few as grant exactly the same: the
// resources of each group gathered, then the groups that have the same resources joined. Order
// is first appearance, so that the output is stable.
func mergeRules(rules []Rule) []Rule {
	type scope struct {
		verbs      string
		everywhere bool
	}
	var scopes []scope
	verbsOf := map[scope][]string{}
	groups := map[scope][]string{}
	resources := map[scope]map[string][]string{}
	for _, r := range rules {
		s := scope{strings.Join(r.Verbs, ","), r.Everywhere}
		if _, ok := resources[s]; !ok {
			scopes = append(scopes, s)
			verbsOf[s] = slices.Clone(r.Verbs)
			resources[s] = map[string][]string{}
		}
		for _, g := range r.Groups {
			if _, ok := resources[s][g]; !ok {
				groups[s] = append(groups[s], g)
			}
			for _, res := range r.Resources {
				if !slices.Contains(resources[s][g], res) {
					resources[s][g] = append(resources[s][g], res)
				}
			}
		}
	}
	var out []Rule
	for _, s := range scopes {
		first := len(out)
		for _, g := range groups[s] {
			res := resources[s][g]
			joined := false
			for i := first; i < len(out); i++ {
				if slices.Equal(out[i].Resources, res) {
					out[i].Groups = append(out[i].Groups, g)
					joined = true
					break
				}
			}
			if !joined {
				out = append(out, Rule{Groups: []string{g}, Resources: res, Verbs: slices.Clone(verbsOf[s]), Everywhere: s.everywhere})
			}
		}
	}
	return out
}

// Build starts the source called name: its informers run until ctx ends, and it returns once
// the caches the first sync needs are filled.
func Build(ctx context.Context, name string, c Clients, cfg Config) (*Source, error) {
	for _, k := range kinds() {
		if k.name == name && k.build != nil {
			return newSource(ctx, name, k.build(), c, cfg)
		}
	}
	return nil, fmt.Errorf("unknown source %q (want one of %s)", name, strings.Join(Names(), ", "))
}
