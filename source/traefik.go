package source

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// traefikResources are the Traefik routers the source reads, under the current API group and
// the legacy one that older Traefik v2 installations still serve.
var traefikResources = []crdResource{
	{schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}, "IngressRoute"},
	{schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutetcps"}, "IngressRouteTCP"},
	{schema.GroupVersionResource{Group: "traefik.containo.us", Version: "v1alpha1", Resource: "ingressroutes"}, "IngressRoute"},
	{schema.GroupVersionResource{Group: "traefik.containo.us", Version: "v1alpha1", Resource: "ingressroutetcps"}, "IngressRouteTCP"},
}

// traefikKind reads opted-in IngressRoutes (Host matchers) and IngressRouteTCPs (HostSNI
// matchers) through dynamic informers, so no Traefik Go module is needed and a cluster without
// Traefik's CRDs is fine: they are picked up when installed.
type traefikKind struct{ crdKind }

func newTraefikKind() kind {
	return &traefikKind{crdKind{resources: traefikResources, transform: slimUnstructured(routeMatches)}}
}

func (k *traefikKind) optedIn(o metav1.Object) bool { return enabled(o) }

// claim reads the hostnames of every route's match rule.
func (k *traefikKind) claim(o metav1.Object) claim {
	u := o.(*unstructured.Unstructured)
	ref := k.ref(u)
	routes, _, err := unstructured.NestedSlice(u.Object, "spec", "routes")
	if err != nil {
		return claim{ref: ref, problems: []Problem{invalidHostname("spec.routes is not a list: %v", err)}}
	}
	var (
		hosts    []string
		problems []Problem
	)
	for i, r := range routes {
		m, _ := r.(map[string]any)
		match, _ := m["match"].(string)
		got, probs := ParseMatch(match)
		hosts = append(hosts, got...)
		for _, p := range probs {
			problems = append(problems, invalidHostname("spec.routes[%d].match: %s", i, p))
		}
	}
	return annotatedClaim(ref, u, hosts, Reported{}, problems)
}
