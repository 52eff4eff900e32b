package source

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// HostMappingGVR is the HostMapping custom resource (kustomize/crds/hostmapping.yaml).
var HostMappingGVR = schema.GroupVersionResource{Group: "router-hosts.fzymgc.house", Version: "v1alpha1", Resource: "hostmappings"}

// HostMappingKind is the kind written in kind: tags and events.
const HostMappingKind = "HostMapping"

// HostMappingSource lists HostMappings: explicit entries for hosts that live outside any
// ingress. They need no opt-in annotation; the resource itself is the opt-in.
type HostMappingSource struct {
	cfg      Config
	watch    *crdWatch
	handlers handlers
	reports  *reporter
}

// NewHostMappingSource starts watching HostMappings (or waits for their CRD to appear).
func NewHostMappingSource(ctx context.Context, client Clients, cfg Config) (*HostMappingSource, error) {
	cfg, err := cfg.withDefaults(ctx, client)
	if err != nil {
		return nil, err
	}
	s := &HostMappingSource{cfg: cfg, reports: newReporter(cfg.Log, cfg.Warner)}
	s.watch = newCRDWatch(client.Dynamic, client.Discovery, cfg, func(*unstructured.Unstructured) bool { return true }, slimUnstructured(wholeSpec), s.handlers.fire)
	if err := s.watch.start(ctx, []schema.GroupVersionResource{HostMappingGVR}); err != nil {
		return nil, err
	}
	return s, nil
}

// Synced reports whether the caches this source reads are filled; the HostMapping cache is
// used only once it is.
func (s *HostMappingSource) Synced() bool { return s.cfg.Resolver.Synced() }

// AddEventHandler registers handler for HostMapping changes and watched Services.
func (s *HostMappingSource) AddEventHandler(handler func()) {
	s.handlers.add(handler)
	s.cfg.Resolver.AddEventHandler(handler)
}

// Objects returns the HostMappings in the cache, sorted by namespace and name; the status
// writer reads them from here instead of asking the apiserver.
func (s *HostMappingSource) Objects() ([]*unstructured.Unstructured, error) {
	l := s.watch.listers()[HostMappingGVR]
	if l == nil {
		return nil, nil
	}
	objs, err := l.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing HostMappings from the cache: %w", err)
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].GetNamespace()+"/"+out[i].GetName() < out[j].GetNamespace()+"/"+out[j].GetName()
	})
	return out, nil
}

// Object returns one HostMapping from the cache, nil when it is not there.
func (s *HostMappingSource) Object(namespace, name string) (*unstructured.Unstructured, error) {
	l := s.watch.listers()[HostMappingGVR]
	if l == nil {
		return nil, nil
	}
	o, err := l.ByNamespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading HostMapping %s/%s from the cache: %w", namespace, name, err)
	}
	u, _ := o.(*unstructured.Unstructured)
	return u, nil
}

// Endpoints lists every HostMapping from the cache.
func (s *HostMappingSource) Endpoints(context.Context) ([]*endpoint.Endpoint, error) {
	if !s.cfg.Resolver.Synced() {
		return nil, fmt.Errorf("hostmapping source: Service cache not synced")
	}
	objs, err := s.Objects()
	if err != nil {
		return nil, err
	}
	var out []*endpoint.Endpoint
	seen := map[types.UID]bool{}
	for _, u := range objs {
		seen[u.GetUID()] = true
		eps, problems := hostMappingEndpoints(u, s.cfg.Resolver)
		s.reports.report(hostMappingRef(u), u.GetResourceVersion(), problems)
		out = append(out, eps...)
	}
	s.reports.forgetExcept(seen)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Hostname < out[j].Hostname })
	return out, nil
}

// hostMappingEndpoints turns one HostMapping into its endpoint and the problems found. The spec
// fields play the role of the override annotations (ipAddress, or the upstream operator's ip;
// aliases; tags); the grace-period annotation applies as on other kinds.
func hostMappingEndpoints(u *unstructured.Unstructured, r *Resolver) ([]*endpoint.Endpoint, []Problem) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	hostname, _ := spec["hostname"].(string)
	ann := map[string]string{}
	if v, ok := u.GetAnnotations()[AnnotationGracePeriod]; ok {
		ann[AnnotationGracePeriod] = v
	}
	ip, _ := spec["ipAddress"].(string)
	if ip == "" {
		ip, _ = spec["ip"].(string)
	}
	if ip != "" {
		ann[AnnotationIPAddress] = ip
	}
	var problems []Problem
	for _, field := range []struct{ name, annotation string }{{"aliases", AnnotationAliases}, {"tags", AnnotationTags}} {
		list, _, err := unstructured.NestedStringSlice(spec, field.name)
		if err != nil {
			problems = append(problems, invalidAnnotation("spec.%s is not a list of strings", field.name))
			continue
		}
		for _, v := range list {
			if strings.Contains(v, ",") {
				problems = append(problems, invalidAnnotation("spec.%s: %q contains a comma; dropped", field.name, v))
				continue
			}
			ann[field.annotation] += v + ","
		}
	}
	if hostname == "" {
		return nil, append(problems, invalidHostname("spec.hostname is empty"))
	}
	eps, more := buildEndpoints(hostMappingRef(u), []string{hostname}, ann, r, nil, false)
	return eps, append(problems, more...)
}

func hostMappingRef(u *unstructured.Unstructured) endpoint.SourceRef {
	return endpoint.SourceRef{Group: HostMappingGVR.Group, Version: HostMappingGVR.Version, Kind: HostMappingKind,
		Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()), CreationTimestamp: u.GetCreationTimestamp().Time}
}

// Problems returns the problems of each object, by UID, as of the last Endpoints.
func (s *HostMappingSource) Problems() map[string][]Problem { return s.reports.problems() }
