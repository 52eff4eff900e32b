package source

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOnlyStatusChanged(t *testing.T) {
	hm := func(gen int64, ip, reason string, ann map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"hostname": "a.lan", "ipAddress": ip}}}
		if reason != "" {
			u.Object["status"] = map[string]any{"reason": reason}
		}
		u.SetGeneration(gen)
		u.SetAnnotations(ann)
		return u
	}
	grace := map[string]string{AnnotationGracePeriod: "30"}
	for _, tc := range []struct {
		name       string
		prev, cur  *unstructured.Unstructured
		statusOnly bool
	}{
		{"the operator's status write", hm(1, "10.0.0.1", "", nil), hm(1, "10.0.0.1", "Success", nil), true},
		{"a spec change", hm(1, "10.0.0.1", "Success", nil), hm(2, "10.0.0.2", "Success", nil), false},
		{"an annotation of the operator's", hm(1, "10.0.0.1", "Success", nil), hm(1, "10.0.0.1", "Success", grace), false},
		{"nothing visible (a label the cache drops)", hm(1, "10.0.0.1", "Success", nil), hm(1, "10.0.0.1", "Success", nil), false},
	} {
		if got := onlyStatusChanged(tc.prev, tc.cur); got != tc.statusOnly {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.statusOnly)
		}
	}
}
