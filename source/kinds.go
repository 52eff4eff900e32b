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
	// build makes a fresh kind.
	build func() kind
}

// kinds is every source the operator has: --source's values, its help text and the wiring all
// come from here. Adding a source is one file implementing kind and one line here.
func kinds() []kindInfo {
	return []kindInfo{
		{"ingress", "Ingress", func() kind { return &ingressKind{} }},
		{"traefik", "IngressRoute, IngressRouteTCP", newTraefikKind},
		{"hostmapping", "HostMapping", newHostMappingKind},
		{"service", "Service", func() kind { return &serviceKind{} }},
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

// Build starts the source called name: its informers run until ctx ends, and it returns once
// the caches the first sync needs are filled.
func Build(ctx context.Context, name string, c Clients, cfg Config) (*Source, error) {
	for _, k := range kinds() {
		if k.name == name {
			return newSource(ctx, name, k.build(), c, cfg)
		}
	}
	return nil, fmt.Errorf("unknown source %q (want one of %s)", name, strings.Join(Names(), ", "))
}
