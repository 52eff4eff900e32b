package source

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// gatewayGroup is the Gateway API's group; its kinds are read through dynamic informers, so
// no Gateway API Go module is needed and a cluster without its CRDs is fine.
const gatewayGroup = "gateway.networking.k8s.io"

var (
	gatewayResource   = crdResource{schema.GroupVersionResource{Group: gatewayGroup, Version: "v1", Resource: "gateways"}, "Gateway"}
	namespaceResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// routeKind reads one Gateway API route kind. Every route kind shares this engine: which
// parents count (Accepted in the route's status, the listener picked by sectionName and port,
// the listener's allowedRoutes), which hostnames (the route's against the listener's), and
// which addresses (the parents' status.addresses).
type routeKind struct {
	crdKind
	kind string
	// protocols are the listener protocols that take this kind when allowedRoutes names no
	// kinds.
	protocols []string
	gateways  *crdWatch
	// namespaces holds each namespace's labels, for allowedRoutes selectors.
	namespaces *crdWatch
	// optIn names the Gateways, namespace/name, whose routes are managed whole (--gateway-name).
	optIn *liveOptIn
}

func newRouteKind(resource, kind string, protocols ...string) kind {
	gvr := schema.GroupVersionResource{Group: gatewayGroup, Version: "v1", Resource: resource}
	return &routeKind{crdKind: crdKind{resources: []crdResource{{gvr, kind}}, transform: slimUnstructured(routeSpec)},
		kind: kind, protocols: protocols}
}

func (k *routeKind) start(ctx context.Context, c Clients, cfg Config, changed func(old, cur metav1.Object)) error {
	k.optIn = cfg.optIn
	// Gateways and namespaces change what routes claim: any change of them re-reads all.
	// Routes name Gateways in any namespace, so those are watched everywhere.
	others := func(old, cur metav1.Object) { changed(nil, nil) }
	everywhere := cfg
	everywhere.Namespace, everywhere.LabelSelector = "", ""
	k.gateways = newCRDWatch(c.Dynamic, c.Discovery, everywhere, nil, slimUnstructured(gatewaySpec), others)
	if err := k.gateways.start(ctx, []schema.GroupVersionResource{gatewayResource.gvr}); err != nil {
		return err
	}
	k.namespaces = newCRDWatch(c.Dynamic, c.Discovery, everywhere, nil, slimNamespace, others)
	if err := k.namespaces.start(ctx, []schema.GroupVersionResource{namespaceResource}); err != nil {
		return err
	}
	// Routes are read only once the Gateways and namespaces are cached: a route read without
	// them would claim nothing, and its entries would be marked for deletion.
	k.crdKind.after = func() bool {
		return k.gateways.listers()[gatewayResource.gvr] != nil && k.namespaces.listers()[namespaceResource] != nil
	}
	return k.crdKind.start(ctx, c, cfg, changed)
}

// rules: the routes where the operator watches, and the Gateways and namespaces everywhere, as
// start watches them.
func (k *routeKind) rules() []Rule {
	everywhere := func(gvr schema.GroupVersionResource) Rule {
		r := read(gvr.Group, gvr.Resource)
		r.Everywhere = true
		return r
	}
	return append(k.crdKind.rules(), everywhere(gatewayResource.gvr), everywhere(namespaceResource))
}

// optedIn: the route is annotated, or one of the Gateways it names is annotated or managed
// whole (--gateway-name); a route annotated "false" opts out of the latter two.
func (k *routeKind) optedIn(o metav1.Object) bool {
	if enabled(o) {
		return true
	}
	if optedOut(o) {
		return false
	}
	for _, ref := range parentRefs(o.(*unstructured.Unstructured)) {
		if gw := k.gateway(ref.namespace, ref.name); gw != nil && k.gatewayOptsIn(gw) {
			return true
		}
	}
	return false
}

// gatewayOptsIn reports whether a Gateway opts its routes in: annotated, or named by
// --gateway-name.
func (k *routeKind) gatewayOptsIn(gw metav1.Object) bool {
	return enabled(gw) || k.optIn.load().gateways[gw.GetNamespace()+"/"+gw.GetName()]
}

// claim reads the route's names on each counting parent, and gives each name the addresses of
// the Gateways that gave it that name, not of every parent. A route opted in only through its
// Gateways counts only the ones that opt routes in.
func (k *routeKind) claim(o metav1.Object) claim {
	route := o.(*unstructured.Unstructured)
	ref := refOf(gatewayGroup, "v1", k.kind, route)
	routeHosts, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
	routeOptedIn := enabled(route)
	// addresses are what the Gateways that gave a name report for it.
	type addresses struct{ ips, missing []string }
	var (
		hosts    []string
		byHost   = map[string]*addresses{}
		problems []Problem
		counted  bool
	)
	for _, p := range parentRefs(route) {
		if !accepted(route, p) {
			continue
		}
		gw := k.gateway(p.namespace, p.name)
		if gw == nil || (!routeOptedIn && !k.gatewayOptsIn(gw)) {
			continue
		}
		listeners := k.listeners(gw, p, route)
		if len(listeners) == 0 {
			continue
		}
		counted = true
		ips, any := gatewayIPs(gw)
		for _, l := range listeners {
			for _, h := range intersectHostnames(routeHosts, l.hostname) {
				if strings.HasPrefix(h, "*") {
					problems = append(problems, invalidHostname("wildcard hostname %q (route %v, listener %s/%s %s) skipped: router-hosts has no wildcard entries",
						h, routeHosts, gw.GetName(), l.name, l.hostname))
					continue
				}
				key := h
				if n, err := endpoint.NormalizeHostname(h); err == nil {
					key = n
				}
				a := byHost[key]
				if a == nil {
					a = &addresses{}
					byHost[key] = a
					hosts = append(hosts, h)
				}
				a.ips = append(a.ips, ips...)
				if !any {
					a.missing = append(a.missing, gw.GetNamespace()+"/"+gw.GetName())
				}
			}
		}
	}
	if !counted {
		problems = append(problems, invalidHostname("no parent Gateway has accepted the route with a listener that allows it"))
	}
	c := annotatedClaim(ref, route, hosts, Reported{From: StrategyGatewayStatus}, problems)
	c.hostOwn = make(map[string]Reported, len(byHost))
	for key, a := range byHost {
		own := Reported{From: StrategyGatewayStatus, IPs: a.ips}
		if len(a.ips) == 0 && len(a.missing) > 0 {
			// A Gateway still waiting for its address means no address yet, never a default.
			own.Final = true
			own.Missing = "no address yet: Gateway " + strings.Join(endpoint.SortedUnique(a.missing), ", ") + " has none in status.addresses"
		}
		c.hostOwn[key] = own
	}
	return c
}

// gateway returns a cached Gateway, nil when there is none.
func (k *routeKind) gateway(namespace, name string) *unstructured.Unstructured {
	l := k.gateways.listers()[gatewayResource.gvr]
	if l == nil {
		return nil
	}
	o, err := l.ByNamespace(namespace).Get(name)
	if err != nil {
		return nil
	}
	u, _ := o.(*unstructured.Unstructured)
	return u
}

// listener is the part of a Gateway listener that decides what a route gets.
type listener struct {
	name, hostname, protocol string
	port                     int64
}

// listeners returns the listeners of gw that ref selects and that allow the route.
func (k *routeKind) listeners(gw *unstructured.Unstructured, ref parentRef, route *unstructured.Unstructured) []listener {
	raw, _, _ := unstructured.NestedSlice(gw.Object, "spec", "listeners")
	var out []listener
	for _, r := range raw {
		m, _ := r.(map[string]any)
		l := listener{}
		l.name, _ = m["name"].(string)
		l.hostname, _ = m["hostname"].(string)
		l.protocol, _ = m["protocol"].(string)
		l.port, _ = m["port"].(int64)
		if ref.sectionName != "" && ref.sectionName != l.name {
			continue
		}
		if ref.port != 0 && ref.port != l.port {
			continue
		}
		allowed, _ := m["allowedRoutes"].(map[string]any)
		if !k.namespaceAllowed(allowed, gw.GetNamespace(), route.GetNamespace()) || !k.kindAllowed(allowed, l.protocol) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// namespaceAllowed applies allowedRoutes.namespaces: Same (the default), All, or Selector.
func (k *routeKind) namespaceAllowed(allowed map[string]any, gwNamespace, routeNamespace string) bool {
	from, _, _ := unstructured.NestedString(allowed, "namespaces", "from")
	switch from {
	case "All":
		return true
	case "Selector":
		raw, _, _ := unstructured.NestedMap(allowed, "namespaces", "selector")
		var ls metav1.LabelSelector
		if err := fromUnstructured(raw, &ls); err != nil {
			return false
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return false
		}
		l := k.namespaces.listers()[namespaceResource]
		if l == nil {
			return false
		}
		ns, err := l.Get(routeNamespace)
		if err != nil {
			return false
		}
		u, _ := ns.(*unstructured.Unstructured)
		return u != nil && sel.Matches(labels.Set(u.GetLabels()))
	default:
		return gwNamespace == routeNamespace
	}
}

// kindAllowed applies allowedRoutes.kinds, or the listener protocol's kinds when it names none.
func (k *routeKind) kindAllowed(allowed map[string]any, protocol string) bool {
	kinds, _, _ := unstructured.NestedSlice(allowed, "kinds")
	if len(kinds) == 0 {
		for _, p := range k.protocols {
			if p == protocol {
				return true
			}
		}
		return false
	}
	for _, raw := range kinds {
		m, _ := raw.(map[string]any)
		group, ok := m["group"].(string)
		if !ok {
			group = gatewayGroup
		}
		if kind, _ := m["kind"].(string); kind == k.kind && group == gatewayGroup {
			return true
		}
	}
	return false
}

// parentRef is one of a route's spec.parentRefs that names a Gateway, defaults applied.
type parentRef struct {
	namespace, name, sectionName string
	port                         int64
}

func parentRefs(route *unstructured.Unstructured) []parentRef {
	raw, _, _ := unstructured.NestedSlice(route.Object, "spec", "parentRefs")
	var out []parentRef
	for _, r := range raw {
		if p, ok := toParentRef(r, route.GetNamespace()); ok {
			out = append(out, p)
		}
	}
	return out
}

func toParentRef(raw any, routeNamespace string) (parentRef, bool) {
	m, _ := raw.(map[string]any)
	if m == nil {
		return parentRef{}, false
	}
	if g, ok := m["group"].(string); ok && g != gatewayGroup {
		return parentRef{}, false
	}
	if kind, ok := m["kind"].(string); ok && kind != "Gateway" {
		return parentRef{}, false
	}
	p := parentRef{namespace: routeNamespace}
	p.name, _ = m["name"].(string)
	if ns, ok := m["namespace"].(string); ok && ns != "" {
		p.namespace = ns
	}
	p.sectionName, _ = m["sectionName"].(string)
	p.port, _ = m["port"].(int64)
	return p, p.name != ""
}

// accepted reports whether the route's status says a Gateway controller accepted it for p, for
// the route's current generation where the condition says which: a refusal in any entry for p
// wins over an acceptance, so a controller's leftover entry never outvotes the one in charge.
func accepted(route *unstructured.Unstructured, p parentRef) bool {
	raw, _, _ := unstructured.NestedSlice(route.Object, "status", "parents")
	yes := false
	for _, r := range raw {
		m, _ := r.(map[string]any)
		got, ok := toParentRef(m["parentRef"], route.GetNamespace())
		if !ok || got != p {
			continue
		}
		conds, _ := m["conditions"].([]any)
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] != "Accepted" {
				continue
			}
			if g, ok := cm["observedGeneration"].(int64); ok && g < route.GetGeneration() {
				continue // about an older spec
			}
			switch cm["status"] {
			case "True":
				yes = true
			case "False":
				return false
			}
		}
	}
	return yes
}

// gatewayIPs returns the IP addresses of a Gateway's status (type IPAddress or unset), and
// whether it reports any address at all.
func gatewayIPs(gw *unstructured.Unstructured) ([]string, bool) {
	raw, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
	var ips []string
	for _, r := range raw {
		m, _ := r.(map[string]any)
		if t, ok := m["type"].(string); ok && t != "IPAddress" {
			continue
		}
		if v, _ := m["value"].(string); v != "" {
			ips = append(ips, v)
		}
	}
	return ips, len(raw) > 0
}

// intersectHostnames is the Gateway API's rule for the names a route gets on a listener: an
// empty side matches anything and yields the other; a "*." wildcard matches one or more labels
// but not the apex; where both match, the more specific name wins.
func intersectHostnames(route []string, listener string) []string {
	listener = strings.ToLower(listener)
	if len(route) == 0 {
		if listener == "" {
			return nil
		}
		return []string{listener}
	}
	var out []string
	for _, h := range route {
		h = strings.ToLower(h)
		switch {
		case listener == "" || h == listener:
			out = append(out, h)
		case wildcardMatches(listener, h):
			out = append(out, h)
		case wildcardMatches(h, listener):
			out = append(out, listener)
		}
	}
	return out
}

// wildcardMatches reports whether pattern, a "*." wildcard, matches name: name ends in the
// pattern's suffix with at least one label before it (or a narrower wildcard, which stays one).
func wildcardMatches(pattern, name string) bool {
	suffix, ok := strings.CutPrefix(pattern, "*")
	if !ok || !strings.HasPrefix(suffix, ".") {
		return false
	}
	rest, ok := strings.CutSuffix(name, suffix)
	return ok && rest != "" && rest != "*"
}

// routeSpec keeps what the route engine reads of a route's spec.
func routeSpec(spec map[string]any) map[string]any {
	return map[string]any{"hostnames": spec["hostnames"], "parentRefs": spec["parentRefs"]}
}

// gatewaySpec keeps a Gateway's listeners.
func gatewaySpec(spec map[string]any) map[string]any {
	return map[string]any{"listeners": spec["listeners"]}
}

// fromUnstructured converts a JSON-like map into a typed value.
func fromUnstructured(m map[string]any, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, into); err != nil {
		return fmt.Errorf("converting: %w", err)
	}
	return nil
}

// slimNamespace keeps a namespace's name and labels, which allowedRoutes selectors match.
func slimNamespace(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}}
	out.SetName(u.GetName())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetLabels(u.GetLabels())
	return out, nil
}
