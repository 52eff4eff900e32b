package source

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// traefikResources are the Traefik routers the source reads, under the current API group and
// the legacy one that older Traefik v2 installations still serve.
var traefikResources = []struct {
	gvr  schema.GroupVersionResource
	kind string
}{
	{schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}, "IngressRoute"},
	{schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutetcps"}, "IngressRouteTCP"},
	{schema.GroupVersionResource{Group: "traefik.containo.us", Version: "v1alpha1", Resource: "ingressroutes"}, "IngressRoute"},
	{schema.GroupVersionResource{Group: "traefik.containo.us", Version: "v1alpha1", Resource: "ingressroutetcps"}, "IngressRouteTCP"},
}

// TraefikSource lists opted-in IngressRoutes (Host matchers) and IngressRouteTCPs (HostSNI
// matchers) through dynamic informers, so no Traefik Go module is needed and a cluster without
// Traefik's CRDs is fine: they are picked up when installed.
type TraefikSource struct {
	cfg      Config
	watch    *crdWatch
	handlers handlers
	reports  *reporter
}

// NewTraefikSource starts watching whichever Traefik resources the cluster serves.
func NewTraefikSource(ctx context.Context, client Clients, cfg Config) (*TraefikSource, error) {
	cfg, err := cfg.withDefaults(ctx, client)
	if err != nil {
		return nil, err
	}
	s := &TraefikSource{cfg: cfg, reports: newReporter(cfg.Log, cfg.Warner)}
	s.watch = newCRDWatch(client.Dynamic, client.Discovery, cfg, func(u *unstructured.Unstructured) bool {
		return u.GetAnnotations()[AnnotationEnabled] == "true"
	}, slimUnstructured(routeMatches), s.handlers.fire)
	gvrs := make([]schema.GroupVersionResource, 0, len(traefikResources))
	for _, r := range traefikResources {
		gvrs = append(gvrs, r.gvr)
	}
	if err := s.watch.start(ctx, gvrs); err != nil {
		return nil, err
	}
	return s, nil
}

// Synced reports whether the caches this source reads are filled; a route kind's cache is used
// only once it is.
func (s *TraefikSource) Synced() bool { return s.cfg.Resolver.Synced() }

// AddEventHandler registers handler for changes of opted-in routes and watched Services.
func (s *TraefikSource) AddEventHandler(handler func()) {
	s.handlers.add(handler)
	s.cfg.Resolver.AddEventHandler(handler)
}

// Endpoints lists every opted-in route of every served Traefik resource from the caches.
func (s *TraefikSource) Endpoints(context.Context) ([]*endpoint.Endpoint, error) {
	if !s.cfg.Resolver.Synced() {
		return nil, fmt.Errorf("traefik source: Service cache not synced")
	}
	listers := s.watch.listers()
	var out []*endpoint.Endpoint
	seen := map[types.UID]bool{}
	for _, r := range traefikResources {
		l := listers[r.gvr]
		if l == nil {
			continue
		}
		objs, err := l.List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("listing %s from the cache: %w", r.gvr, err)
		}
		for _, o := range objs {
			u, ok := o.(*unstructured.Unstructured)
			if !ok || u.GetAnnotations()[AnnotationEnabled] != "true" {
				continue
			}
			seen[u.GetUID()] = true
			eps, ref, problems := s.endpointsFor(u, r.gvr, r.kind)
			s.reports.report(ref, u.GetResourceVersion(), problems)
			out = append(out, eps...)
		}
	}
	s.reports.forgetExcept(seen)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Hostname != out[j].Hostname {
			return out[i].Hostname < out[j].Hostname
		}
		a, b := out[i].Sources[0], out[j].Sources[0]
		return a.Namespace+"/"+a.Name+"/"+a.Kind+"/"+a.Group < b.Namespace+"/"+b.Name+"/"+b.Kind+"/"+b.Group
	})
	return out, nil
}

// endpointsFor reads the hostnames of every route's match rule.
func (s *TraefikSource) endpointsFor(u *unstructured.Unstructured, gvr schema.GroupVersionResource, kind string) ([]*endpoint.Endpoint, endpoint.SourceRef, []Problem) {
	ref := endpoint.SourceRef{Group: gvr.Group, Version: gvr.Version, Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(),
		UID: string(u.GetUID()), CreationTimestamp: u.GetCreationTimestamp().Time}
	routes, _, err := unstructured.NestedSlice(u.Object, "spec", "routes")
	if err != nil {
		return nil, ref, []Problem{invalidHostname("spec.routes is not a list: %v", err)}
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
	eps, more := buildEndpoints(ref, hosts, u.GetAnnotations(), s.cfg.Resolver, nil, false)
	return eps, ref, append(problems, more...)
}

// Problems returns the problems of each object, by UID, as of the last Endpoints.
func (s *TraefikSource) Problems() map[string][]Problem { return s.reports.problems() }
