package v1alpha1

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestFromUnstructured(t *testing.T) {
	lastSync := metav1.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		obj    map[string]any
		spec   HostMappingSpec
		status HostMappingStatus
	}{
		{name: "everything", obj: map[string]any{
			"spec": map[string]any{"hostname": "nas.lan", "ipAddress": "10.0.0.5", "aliases": []any{"a.lan"}, "tags": []any{"x", "y"}},
			"status": map[string]any{"synced": true, "routerHostsId": "01J", "observedGeneration": int64(3), "lastSyncTime": "2026-01-01T00:05:00Z",
				"addresses": []any{"10.0.0.5", 7, "fd00::5"}, "conditions": []any{
					map[string]any{"type": "Other", "reason": "Nope"},
					map[string]any{"type": "Synced", "status": "True", "reason": "Success", "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"},
					"not a condition",
					map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": 12}}}},
			spec: HostMappingSpec{Hostname: "nas.lan", IPAddress: "10.0.0.5", Aliases: []string{"a.lan"}, Tags: []string{"x", "y"}},
			status: HostMappingStatus{Synced: true, RouterHostsID: "01J", ObservedGeneration: 3, LastSyncTime: &lastSync,
				Addresses: []string{"10.0.0.5", "fd00::5"}, Conditions: []metav1.Condition{{Type: "Other", Reason: "Nope"},
					{Type: "Synced", Status: metav1.ConditionTrue, Reason: "Success", Message: "ok", LastTransitionTime: metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}}},
		{name: "the upstream operator's ip field", obj: map[string]any{"spec": map[string]any{"hostname": "a.lan", "ip": "10.0.0.6"}},
			spec: HostMappingSpec{Hostname: "a.lan", IP: "10.0.0.6"}},
		{name: "no status, generation as a JSON float", obj: map[string]any{"spec": map[string]any{"hostname": "a.lan"}, "status": map[string]any{"observedGeneration": float64(2)}},
			spec: HostMappingSpec{Hostname: "a.lan"}, status: HostMappingStatus{ObservedGeneration: 2}},
		{name: "fields of the wrong type read as absent and are named", obj: map[string]any{
			"spec": map[string]any{"hostname": 7, "aliases": "a.lan", "tags": []any{"x", 1}}},
			spec: HostMappingSpec{Malformed: []string{"spec.hostname is not a string", "spec.aliases is not a list of strings", "spec.tags is not a list of strings"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: tc.obj}
			u.SetAPIVersion("router-hosts.fzymgc.house/v1alpha1")
			u.SetKind("HostMapping")
			got := FromUnstructured(u, metav1.ObjectMeta{Name: "n", Namespace: "ns"})
			if !reflect.DeepEqual(got.Spec, tc.spec) || !equality.Semantic.DeepEqual(got.Status, tc.status) {
				t.Fatalf("got %+v %+v\nwant %+v %+v", got.Spec, got.Status, tc.spec, tc.status)
			}
			if got.GetObjectKind().GroupVersionKind() != GroupVersion.WithKind(HostMappingKind) || got.Name != "n" {
				t.Fatalf("identity lost: %+v", got.ObjectMeta)
			}
			if cp := got.DeepCopyObject().(*HostMapping); !reflect.DeepEqual(cp, got) {
				t.Fatalf("DeepCopyObject = %+v", cp)
			}
		})
	}
}

func TestOnlyStatusChanged(t *testing.T) {
	hm := func(gen int64, ip, reason string, ann map[string]string) *HostMapping {
		return &HostMapping{ObjectMeta: metav1.ObjectMeta{Generation: gen, Annotations: ann},
			Spec: HostMappingSpec{Hostname: "a.lan", IPAddress: ip}, Status: HostMappingStatus{Conditions: []metav1.Condition{{Type: ConditionSynced, Reason: reason}}}}
	}
	grace := map[string]string{"router-hosts.fzymgc.house/grace-period": "30"}
	for _, tc := range []struct {
		name       string
		prev, cur  *HostMapping
		statusOnly bool
	}{
		{"the operator's status write", hm(1, "10.0.0.1", "", nil), hm(1, "10.0.0.1", "Success", nil), true},
		{"a spec change", hm(1, "10.0.0.1", "Success", nil), hm(2, "10.0.0.2", "Success", nil), false},
		{"an annotation of the operator's", hm(1, "10.0.0.1", "Success", nil), hm(1, "10.0.0.1", "Success", grace), false},
		{"nothing visible (a label the cache drops)", hm(1, "10.0.0.1", "Success", nil), hm(1, "10.0.0.1", "Success", nil), false},
	} {
		if got := OnlyStatusChanged(tc.prev, tc.cur); got != tc.statusOnly {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.statusOnly)
		}
	}
}
