package source

import (
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
)

// HostMappingGVR is the HostMapping custom resource (kustomize/crds/hostmapping.yaml).
var HostMappingGVR = v1alpha1.HostMappingResource

// HostMappingKind is the kind written in kind: tags and events.
const HostMappingKind = v1alpha1.HostMappingKind

// hostMappingKind reads HostMappings: explicit entries for hosts that live outside any
// ingress. They need no opt-in annotation; the resource itself is the opt-in. The cache holds
// them typed (v1alpha1), and their status is the operator's own writing, so an update that
// changes only the status starts no sync.
type hostMappingKind struct{ crdKind }

// specDriven: a HostMapping's hostnames and addresses are its spec.
func (*hostMappingKind) specDriven() {}

func newHostMappingKind() kind {
	return &hostMappingKind{crdKind{resources: []crdResource{{HostMappingGVR, HostMappingKind}}, transform: slimHostMapping,
		ignore: func(old, cur metav1.Object) bool {
			a, okA := old.(*v1alpha1.HostMapping)
			b, okB := cur.(*v1alpha1.HostMapping)
			return okA && okB && v1alpha1.OnlyStatusChanged(a, b)
		}}}
}

// rules: reading HostMappings, and writing their status, which package status does while this
// source runs.
func (k *hostMappingKind) rules() []Rule {
	return append(k.crdKind.rules(), Rule{Groups: []string{HostMappingGVR.Group}, Resources: []string{HostMappingGVR.Resource + "/status"},
		Verbs: []string{"patch", "update"}})
}

func (k *hostMappingKind) optedIn(metav1.Object) bool { return true }

// claim reads the spec: hostname, ipAddress (or the upstream operator's ip), aliases and tags
// play the parts of the hostnames and override annotations; the grace-period annotation
// applies as on other kinds.
func (k *hostMappingKind) claim(o metav1.Object) claim {
	hm := o.(*v1alpha1.HostMapping)
	c := claim{ref: refOf(HostMappingGVR.Group, HostMappingGVR.Version, HostMappingKind, hm), overrides: overrides{aliasesFrom: "spec.aliases"}}
	for _, m := range hm.Spec.Malformed {
		c.problems = append(c.problems, invalidAnnotation("%s", m))
	}
	if hm.Spec.Hostname != "" {
		c.hosts = []string{hm.Spec.Hostname}
	} else {
		c.problems = append(c.problems, invalidHostname("spec.hostname is empty"))
	}
	switch {
	case hm.Spec.IPAddress != "":
		c.overrides.setIPs("spec.ipAddress", []string{strings.TrimSpace(hm.Spec.IPAddress)})
	case hm.Spec.IP != "":
		c.overrides.setIPs("spec.ip", []string{strings.TrimSpace(hm.Spec.IP)})
	}
	c.overrides.aliases = hm.Spec.Aliases
	c.overrides.setTags("spec.tags", hm.Spec.Tags)
	c.overrides.setGracePeriod(hm.Annotations)
	c.overrides.setShared(hm.Annotations)
	c.overrides.shared = c.overrides.shared || hm.Spec.Shared
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
func (h HostMappings) Objects() ([]*v1alpha1.HostMapping, error) {
	objs, err := h.k.objects()
	if err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.HostMapping, 0, len(objs))
	for _, o := range objs {
		if hm, ok := o.(*v1alpha1.HostMapping); ok {
			out = append(out, hm)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Object returns one HostMapping from the cache, nil when it is not there.
func (h HostMappings) Object(namespace, name string) (*v1alpha1.HostMapping, error) {
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
	hm, _ := o.(*v1alpha1.HostMapping)
	return hm, nil
}
