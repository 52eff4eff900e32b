// Package v1alpha1 is the router-hosts.fzymgc.house/v1alpha1 API as the operator holds it: a
// HostMapping cut down to the fields the operator reads and writes. The informer keeps these
// instead of generic unstructured maps, which at ten thousand objects is most of the memory and
// of the time a sync spends reading them. kustomize/crds/hostmapping.yaml is the schema.
package v1alpha1

import (
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of the HostMapping.
var GroupVersion = schema.GroupVersion{Group: "router-hosts.fzymgc.house", Version: "v1alpha1"}

// HostMappingResource is the HostMapping resource.
var HostMappingResource = GroupVersion.WithResource("hostmappings")

// HostMappingKind is the kind written in kind: tags and events.
const HostMappingKind = "HostMapping"

// ConditionSynced is the type of the condition the operator writes on a HostMapping; beside it
// goes ConditionReady, the same verdict under the name kstatus (Flux, Argo CD) reads.
const ConditionSynced = "Synced"

// HostMapping is one explicit router-hosts entry.
type HostMapping struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec   HostMappingSpec
	Status HostMappingStatus
}

// HostMappingSpec is what the user asks for.
type HostMappingSpec struct {
	Hostname string
	// IPAddress is spec.ipAddress; IP is spec.ip, the upstream operator's name for it.
	IPAddress, IP string
	Aliases, Tags []string
	// Malformed names the fields whose value is not of the schema's type (a CRD installed
	// without its schema lets anything through); they read as absent.
	Malformed []string
}

// HostMappingStatus is what the operator last wrote: the fields it compares before writing.
type HostMappingStatus struct {
	Synced             bool
	RouterHostsID      string
	ObservedGeneration int64
	// Reason, Message and LastTransitionTime are the Synced condition's.
	Reason, Message, LastTransitionTime string
	// Addresses are status.addresses, the address(es) the object resolved to, comma-joined so
	// that statuses compare with ==.
	Addresses string
	// Ready says the status carries the Ready condition (kstatus's), which statuses written
	// before it lack.
	Ready bool
}

// GetObjectKind is part of runtime.Object.
func (h *HostMapping) GetObjectKind() schema.ObjectKind { return &h.TypeMeta }

// DeepCopyObject is part of runtime.Object.
func (h *HostMapping) DeepCopyObject() runtime.Object {
	out := &HostMapping{TypeMeta: h.TypeMeta, Status: h.Status}
	h.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = h.Spec
	out.Spec.Aliases = slices.Clone(h.Spec.Aliases)
	out.Spec.Tags = slices.Clone(h.Spec.Tags)
	out.Spec.Malformed = slices.Clone(h.Spec.Malformed)
	return out
}

// OnlyStatusChanged reports whether cur differs from prev in its status alone: the operator's
// own status write coming back, which changes nothing a sync reads.
func OnlyStatusChanged(prev, cur *HostMapping) bool {
	return prev.Generation == cur.Generation && reflect.DeepEqual(prev.Annotations, cur.Annotations) &&
		reflect.DeepEqual(prev.Spec, cur.Spec) && prev.Status != cur.Status
}

// FromUnstructured reads a HostMapping as the apiserver serves it; meta is the metadata to keep.
func FromUnstructured(u *unstructured.Unstructured, meta metav1.ObjectMeta) *HostMapping {
	h := &HostMapping{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}, ObjectMeta: meta}
	if spec, ok := u.Object["spec"].(map[string]any); ok {
		s := &h.Spec
		s.Hostname = s.str(spec, "hostname")
		s.IPAddress = s.str(spec, "ipAddress")
		s.IP = s.str(spec, "ip")
		s.Aliases = s.strs(spec, "aliases")
		s.Tags = s.strs(spec, "tags")
	}
	status, _ := u.Object["status"].(map[string]any)
	h.Status.Synced, _ = status["synced"].(bool)
	h.Status.RouterHostsID, _ = status["routerHostsId"].(string)
	switch g := status["observedGeneration"].(type) {
	case int64:
		h.Status.ObservedGeneration = g
	case float64:
		h.Status.ObservedGeneration = int64(g)
	}
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		switch m, _ := c.(map[string]any); m["type"] {
		case ConditionSynced:
			h.Status.Reason, _ = m["reason"].(string)
			h.Status.Message, _ = m["message"].(string)
			h.Status.LastTransitionTime, _ = m["lastTransitionTime"].(string)
		case ConditionReady:
			h.Status.Ready = true
		}
	}
	addrs, _ := status["addresses"].([]any)
	for i, a := range addrs {
		if s, ok := a.(string); ok {
			if i > 0 {
				h.Status.Addresses += ","
			}
			h.Status.Addresses += s
		}
	}
	return h
}

func (s *HostMappingSpec) str(spec map[string]any, field string) string {
	v, present := spec[field]
	str, ok := v.(string)
	if present && !ok {
		s.Malformed = append(s.Malformed, "spec."+field+" is not a string")
	}
	return str
}

func (s *HostMappingSpec) strs(spec map[string]any, field string) []string {
	v, present := spec[field]
	if !present || v == nil {
		return nil
	}
	list, ok := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		str, isStr := x.(string)
		if !isStr {
			ok = false
			break
		}
		out = append(out, str)
	}
	if !ok {
		s.Malformed = append(s.Malformed, "spec."+field+" is not a list of strings")
		return nil
	}
	return out
}
