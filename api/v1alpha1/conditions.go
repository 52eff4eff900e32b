package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetConditions returns the conditions want, each as meta.SetStatusCondition sets it over old:
// the LastTransitionTime of old's condition of its type when its status is unchanged, now
// otherwise. old's conditions of other types are left out, since the operator writes its status
// whole; old is not modified. The order is want's, except that a type old lacks goes after
// those it has.
func SetConditions(old []metav1.Condition, now metav1.Time, want ...metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(want))
	for _, c := range want {
		if o := meta.FindStatusCondition(old, c.Type); o != nil {
			out = append(out, *o)
		}
	}
	for _, c := range want {
		c.LastTransitionTime = now
		meta.SetStatusCondition(&out, c)
	}
	return out
}
