package source

import (
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HostMappingGVR is the HostMapping custom resource (kustomize/crds/hostmapping.yaml).
var HostMappingGVR = schema.GroupVersionResource{Group: "router-hosts.fzymgc.house", Version: "v1alpha1", Resource: "hostmappings"}

// HostMappingKind is the kind written in kind: tags and events.
const HostMappingKind = "HostMapping"

// hostMappingKind reads HostMappings: explicit entries for hosts that live outside any
// ingress. They need no opt-in annotation; the resource itself is the opt-in. Their status is
// the operator's own writing, so a status-only update starts no sync.
type hostMappingKind struct{ crdKind }

func newHostMappingKind() kind {
	return &hostMappingKind{crdKind{resources: []crdResource{{HostMappingGVR, HostMappingKind}}, keepSpec: wholeSpec, specOnly: true}}
}

func (k *hostMappingKind) optedIn(metav1.Object) bool { return true }

// claim reads the spec: hostname, ipAddress (or the upstream operator's ip), aliases and tags
// play the parts of the hostnames and override annotations; the grace-period annotation
// applies as on other kinds.
func (k *hostMappingKind) claim(o metav1.Object) claim {
	u := o.(*unstructured.Unstructured)
	c := claim{ref: k.ref(u), overrides: overrides{aliasesFrom: "spec.aliases"}}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	if hostname, _ := spec["hostname"].(string); hostname != "" {
		c.hosts = []string{hostname}
	} else {
		c.problems = append(c.problems, invalidHostname("spec.hostname is empty"))
	}
	field := "spec.ipAddress"
	ip, _ := spec["ipAddress"].(string)
	if ip == "" {
		field = "spec.ip"
		ip, _ = spec["ip"].(string)
	}
	if ip != "" {
		c.overrides.setIPs(field, []string{strings.TrimSpace(ip)})
	}
	lists := map[string][]string{}
	for _, name := range []string{"aliases", "tags"} {
		list, _, err := unstructured.NestedStringSlice(spec, name)
		if err != nil {
			c.problems = append(c.problems, invalidAnnotation("spec.%s is not a list of strings", name))
		}
		lists[name] = list
	}
	c.overrides.aliases = lists["aliases"]
	c.overrides.setTags("spec.tags", lists["tags"])
	c.overrides.setGracePeriod(u.GetAnnotations())
	return c
}

// HostMappings reads the HostMappings a source caches, for the status writer, which must not
// ask the apiserver for them.
type HostMappings struct{ k *hostMappingKind }

// HostMappingsOf returns the HostMapping cache of s, or false when s reads another kind.
func HostMappingsOf(s *Source) (HostMappings, bool) {
	k, ok := s.kind.(*hostMappingKind)
	return HostMappings{k}, ok
}

// Objects returns the cached HostMappings, sorted by namespace and name.
func (h HostMappings) Objects() ([]*unstructured.Unstructured, error) {
	objs, err := h.k.objects()
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*unstructured.Unstructured))
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].GetNamespace()+"/"+out[i].GetName() < out[j].GetNamespace()+"/"+out[j].GetName()
	})
	return out, nil
}

// Object returns one HostMapping from the cache, nil when it is not there.
func (h HostMappings) Object(namespace, name string) (*unstructured.Unstructured, error) {
	l := h.k.watch.listers()[HostMappingGVR]
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
