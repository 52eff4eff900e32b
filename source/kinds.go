package source

import (
	"context"
	"fmt"
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

// kinds is every source the operator has: --source's values, its help text and the wiring all
// come from here. Adding a source is one file implementing kind and one line here.
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
