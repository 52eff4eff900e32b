package source

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// The IP resolution strategies.
const (
	StrategyIngressStatus = "ingress-status"
	StrategyService       = "service"
	StrategyStatic        = "static"
)

// Strategy is one step of the --ip-resolution chain.
type Strategy struct {
	// Kind is StrategyIngressStatus, StrategyService or StrategyStatic.
	Kind string
	// Namespace and Name name the Service of a service strategy.
	Namespace, Name string
	// IP is the address of a static strategy, canonical.
	IP string
}

// String renders the strategy as it is written on the command line.
func (s Strategy) String() string {
	switch s.Kind {
	case StrategyService:
		return StrategyService + ":" + s.Namespace + "/" + s.Name
	case StrategyStatic:
		return StrategyStatic + ":" + s.IP
	}
	return s.Kind
}

// ParseIPResolution parses the --ip-resolution values, in order.
func ParseIPResolution(specs []string) ([]Strategy, error) {
	out := make([]Strategy, 0, len(specs))
	for _, spec := range specs {
		kind, arg, _ := strings.Cut(strings.TrimSpace(spec), ":")
		switch kind {
		case StrategyIngressStatus:
			if arg != "" {
				return nil, fmt.Errorf("%q: ingress-status takes no argument", spec)
			}
			out = append(out, Strategy{Kind: kind})
		case StrategyService:
			ns, name, ok := strings.Cut(arg, "/")
			if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1035Label(name)) > 0 {
				return nil, fmt.Errorf("%q: want service:<namespace>/<name>", spec)
			}
			out = append(out, Strategy{Kind: kind, Namespace: ns, Name: name})
		case StrategyStatic:
			ip, err := endpoint.NormalizeIP(arg)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", spec, err)
			}
			out = append(out, Strategy{Kind: kind, IP: ip})
		default:
			return nil, fmt.Errorf("%q: unknown strategy (want ingress-status, service:<namespace>/<name> or static:<ip>)", spec)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the chain is empty")
	}
	return out, nil
}

// serviceIPs returns a Service's LoadBalancer IPs, else its externalIPs, canonical and sorted.
func serviceIPs(svc *corev1.Service) []string {
	var ips []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if ip, err := endpoint.NormalizeIP(in.IP); err == nil {
			ips = append(ips, ip)
		}
	}
	if len(ips) == 0 {
		for _, raw := range svc.Spec.ExternalIPs {
			if ip, err := endpoint.NormalizeIP(raw); err == nil {
				ips = append(ips, ip)
			}
		}
	}
	return endpoint.SortedUnique(ips)
}

// statusIPs returns the IPs of a load-balancer status; hostname-only entries are skipped, since
// router-hosts needs an address.
func statusIPs(raw []string) []string {
	var ips []string
	for _, r := range raw {
		if ip, err := endpoint.NormalizeIP(r); err == nil {
			ips = append(ips, ip)
		}
	}
	return endpoint.SortedUnique(ips)
}
