package v1alpha1

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetConditions(t *testing.T) {
	t0 := metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := metav1.NewTime(t0.Add(time.Hour))
	cond := func(typ string, status metav1.ConditionStatus, reason string, gen int64, at metav1.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason + " message", ObservedGeneration: gen, LastTransitionTime: at}
	}
	want := []metav1.Condition{cond(ConditionReady, metav1.ConditionTrue, "Ready", 2, metav1.Time{}),
		cond(ConditionServerReachable, metav1.ConditionFalse, "Unreachable", 2, metav1.Time{})}
	for _, tc := range []struct {
		name string
		old  []metav1.Condition
		out  []metav1.Condition
	}{
		{name: "no status yet: every condition starts now, in the order asked",
			out: []metav1.Condition{cond(ConditionReady, metav1.ConditionTrue, "Ready", 2, now), cond(ConditionServerReachable, metav1.ConditionFalse, "Unreachable", 2, now)}},
		{name: "a status unchanged keeps its transition time; reason, message and generation follow",
			old: []metav1.Condition{cond(ConditionReady, metav1.ConditionTrue, "Old", 1, t0), cond(ConditionServerReachable, metav1.ConditionFalse, "Old", 1, t0)},
			out: []metav1.Condition{cond(ConditionReady, metav1.ConditionTrue, "Ready", 2, t0), cond(ConditionServerReachable, metav1.ConditionFalse, "Unreachable", 2, t0)}},
		{name: "a status that changes transitions now",
			old: []metav1.Condition{cond(ConditionReady, metav1.ConditionFalse, "Old", 1, t0), cond(ConditionServerReachable, metav1.ConditionFalse, "Old", 1, t0)},
			out: []metav1.Condition{cond(ConditionReady, metav1.ConditionTrue, "Ready", 2, now), cond(ConditionServerReachable, metav1.ConditionFalse, "Unreachable", 2, t0)}},
		{name: "conditions of other types are left out; a type the status lacks goes last",
			old: []metav1.Condition{cond("Foreign", metav1.ConditionTrue, "Theirs", 1, t0), cond(ConditionServerReachable, metav1.ConditionFalse, "Old", 1, t0)},
			out: []metav1.Condition{cond(ConditionServerReachable, metav1.ConditionFalse, "Unreachable", 2, t0), cond(ConditionReady, metav1.ConditionTrue, "Ready", 2, now)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]metav1.Condition(nil), tc.old...)
			got := SetConditions(tc.old, now, want...)
			if !reflect.DeepEqual(got, tc.out) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.out)
			}
			if !reflect.DeepEqual(tc.old, before) {
				t.Fatalf("old was modified: %+v, was %+v", tc.old, before)
			}
		})
	}
}
