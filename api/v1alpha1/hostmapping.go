package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
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
// goes ConditionReady, the same state under the name kstatus (Flux, Argo CD) reads.
const ConditionSynced = "Synced"

// ConditionAnswering says whether the router's DNS answers the HostMapping's names as written;
// the operator writes it only while it checks the router's DNS (--verify-dns). It leaves Ready
// alone: the router holds the entry either way, and what its DNS serves is the router's.
const ConditionAnswering = "Answering"

// HostMapping is an explicit router-hosts entry, for a host that lives outside any Ingress.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=hm
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Hostname",type=string,JSONPath=`.spec.hostname`
// +kubebuilder:printcolumn:name="Addresses",type=string,JSONPath=`.status.addresses`,description="The address(es) the object resolved to, whichever field or resolution step gave them."
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Synced",type=boolean,JSONPath=`.status.synced`,priority=1
// +kubebuilder:printcolumn:name="Entry",type=string,JSONPath=`.status.routerHostsId`,priority=1
// +kubebuilder:printcolumn:name="Answering",type=string,JSONPath=`.status.conditions[?(@.type=="Answering")].status`,priority=1,description="Whether the router's DNS answers the object's names as written (--verify-dns)."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HostMapping struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HostMappingSpec `json:"spec"`
	// +optional
	Status HostMappingStatus `json:"status,omitempty"`
}

// HostMappingSpec is the entry asked for.
//
// +kubebuilder:validation:XValidation:rule="!has(self.ipAddress) || !has(self.ip) || self.ipAddress == self.ip",message="set ipAddress (or the legacy ip), not two different addresses"
type HostMappingSpec struct {
	// Hostname to publish; lowercase is applied, a trailing dot is not allowed.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`
	Hostname string `json:"hostname"`
	// Address for the entry; when omitted the --ip-resolution chain decides.
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="must be an IPv4 or IPv6 address"
	// +optional
	IPAddress string `json:"ipAddress,omitempty"`
	// Legacy name of ipAddress, accepted so manifests written for the upstream operator keep working.
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="must be an IPv4 or IPv6 address"
	// +optional
	IP string `json:"ip,omitempty"`
	// Further hostnames of the same address.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`
	// +optional
	Aliases []string `json:"aliases,omitempty"`
	// The rule on the tags below refuses the operator's reserved tag namespace
	// (registry/tags.go): the exact tag k8s-operator and the prefixes of
	// registry.ReservedPrefixes(); kustomize/crd_test.go keeps it in step with the registry.

	// Tags written on the entry besides the operator's own.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +kubebuilder:validation:items:Pattern=`^[!-+\--~]+$`
	// +kubebuilder:validation:items:XValidation:rule="!(self == 'k8s-operator' || self.startsWith('cluster:') || self.startsWith('cluster-id:') || self.startsWith('release-probe:') || self.startsWith('source:') || self.startsWith('namespace:') || self.startsWith('kind:') || self.startsWith('pending-deletion:') || self.startsWith('grace-period:') || self.startsWith('pre-existing:') || self.startsWith('original-ip:') || self.startsWith('original-hostname:') || self.startsWith('original-alias:') || self.startsWith('shared:') || self.startsWith('co-owner:') || self.startsWith('alive:') || self.startsWith('alive-every:') || self.startsWith('alive-interval:'))",message="tag is reserved for the operator's ownership bookkeeping (k8s-operator and the prefixes cluster: cluster-id: release-probe: source: namespace: kind: pending-deletion: grace-period: pre-existing: original-ip: original-hostname: original-alias: shared: co-owner: alive: alive-every: alive-interval:)"
	// +optional
	Tags []string `json:"tags,omitempty"`
	// Shared lets other clusters whose claims on the hostname are shared too write addresses of
	// their own for it; the annotation router-hosts.fzymgc.house/shared says the same on other
	// kinds.
	// +optional
	Shared bool `json:"shared,omitempty"`

	// Malformed names the fields whose value is not of the schema's type (a CRD installed
	// without its schema lets anything through); they read as absent. The operator's own
	// reading, never part of the API.
	Malformed []string `json:"-"`
}

// HostMappingStatus is what the operator last wrote.
type HostMappingStatus struct {
	// The operator writes synced, routerHostsId, addresses and observedGeneration even when
	// empty (no omitempty), so that a status always shows all four; +optional keeps them
	// optional in the schema.

	// Whether the router holds the entry as the spec asks.
	// +optional
	Synced bool `json:"synced"`
	// The id of the entry on the router.
	// +optional
	RouterHostsID string `json:"routerHostsId"`
	// The address(es) the object resolved to, written when its entries are.
	// +optional
	Addresses []string `json:"addresses"`
	// When the operator last wrote this status.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// The generation of the spec this status is about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
	// Synced, and Ready, the same state under the name kstatus reads; Answering while the
	// router's DNS is checked.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// OnlyStatusChanged reports whether cur differs from prev in its status alone: the operator's
// own status write coming back, which changes nothing a sync reads.
func OnlyStatusChanged(prev, cur *HostMapping) bool {
	return prev.Generation == cur.Generation && reflect.DeepEqual(prev.Annotations, cur.Annotations) &&
		reflect.DeepEqual(prev.Spec, cur.Spec) && !equality.Semantic.DeepEqual(prev.Status, cur.Status)
}

// FromUnstructured reads a HostMapping as the apiserver serves it; meta is the metadata to keep.
// It reads field by field rather than through the converter, so that one field of the wrong
// type (a CRD installed without its schema lets anything through) loses that field, not the
// object. The informer keeps what it returns instead of the unstructured map, which at ten
// thousand objects is most of the memory and of the time a sync spends reading them.
func FromUnstructured(u *unstructured.Unstructured, meta metav1.ObjectMeta) *HostMapping {
	h := &HostMapping{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}, ObjectMeta: meta}
	if spec, ok := u.Object["spec"].(map[string]any); ok {
		s := &h.Spec
		s.Hostname = s.str(spec, "hostname")
		s.IPAddress = s.str(spec, "ipAddress")
		s.IP = s.str(spec, "ip")
		s.Aliases = s.strs(spec, "aliases")
		s.Tags = s.strs(spec, "tags")
		s.Shared = s.boolean(spec, "shared")
	}
	status, _ := u.Object["status"].(map[string]any)
	st := &h.Status
	st.Synced, _ = status["synced"].(bool)
	st.RouterHostsID, _ = status["routerHostsId"].(string)
	switch g := status["observedGeneration"].(type) {
	case int64:
		st.ObservedGeneration = g
	case float64:
		st.ObservedGeneration = int64(g)
	}
	if s, ok := status["lastSyncTime"].(string); ok {
		var t metav1.Time
		if t.UnmarshalQueryParameter(s) == nil && !t.IsZero() {
			st.LastSyncTime = &t
		}
	}
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, ok := c.(map[string]any)
		var cond metav1.Condition
		if ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
			st.Conditions = append(st.Conditions, cond)
		}
	}
	addrs, _ := status["addresses"].([]any)
	for _, a := range addrs {
		if s, ok := a.(string); ok {
			st.Addresses = append(st.Addresses, s)
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

func (s *HostMappingSpec) boolean(spec map[string]any, field string) bool {
	v, present := spec[field]
	b, ok := v.(bool)
	if present && v != nil && !ok {
		s.Malformed = append(s.Malformed, "spec."+field+" is not a boolean")
	}
	return b
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
