package clusterconfig

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
)

// TestTheStatusSaysWhyNothingSyncs: while no router is named the object says the operator
// waits and what names one; a bad object on a running operator keeps the last good settings.
func TestTheStatusSaysWhyNothingSyncs(t *testing.T) {
	noEndpoint := &NoRouterError{What: "no router-hosts endpoint: set spec.server.endpoint or --router-hosts-endpoint"}
	missingSecret := errors.New(`reading Secret router-hosts-system/router-hosts-mtls: secrets "router-hosts-mtls" not found`)
	running := base()
	for _, tc := range []struct {
		name        string
		applied     Settings
		problem     error
		reason, msg string
	}{
		{"no server named", Settings{}, noEndpoint, v1alpha1.ReasonNoRouter, "spec.server.endpoint or --router-hosts-endpoint; the operator waits for a router"},
		{"its Secret not there yet", Settings{}, missingSecret, v1alpha1.ReasonInvalidConfig, "not found; the operator waits for a router"},
		{"a bad change on a running operator", running, missingSecret, v1alpha1.ReasonInvalidConfig, "the last good configuration stays in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := desiredStatus(&v1alpha1.RouterHostsConfig{}, tc.applied, tc.problem, lastSync{}, time.Now())
			for _, c := range st.Conditions {
				if c.Type != v1alpha1.ConditionReady {
					continue
				}
				if c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
					t.Fatalf("Ready = %s %s %q, want False %s containing %q", c.Status, c.Reason, c.Message, tc.reason, tc.msg)
				}
				return
			}
			t.Fatal("no Ready condition")
		})
	}
}

// TestConditionsKeepTheirTransitionTime: a condition whose status stays keeps the time it last
// changed (its reason and message follow the sync), one whose status changes transitions at
// the writer's clock, to the second; the object carries the operator's three conditions only.
func TestConditionsKeepTheirTransitionTime(t *testing.T) {
	t0 := metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour + 300*time.Millisecond)
	nowSec := metav1.NewTime(t0.Add(time.Hour))
	settled := []metav1.Condition{
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady, LastTransitionTime: t0},
		{Type: v1alpha1.ConditionServerReachable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonConnected, LastTransitionTime: t0},
		{Type: ConditionSynced, Status: metav1.ConditionTrue, Reason: ReasonSynced, LastTransitionTime: t0},
		{Type: "Foreign", Status: metav1.ConditionTrue, Reason: "Theirs", LastTransitionTime: t0},
	}
	type want struct {
		status metav1.ConditionStatus
		reason string
		at     metav1.Time
	}
	for _, tc := range []struct {
		name string
		old  []metav1.Condition
		last lastSync
		want []want // Ready, ServerReachable, Synced
	}{
		{"a sync that failed to write: Ready and Synced turn False now, the server still answers", settled,
			lastSync{seen: true, stage: controller.StageDone, failed: 1},
			[]want{{metav1.ConditionFalse, ReasonSyncFailed, nowSec}, {metav1.ConditionTrue, v1alpha1.ReasonConnected, t0}, {metav1.ConditionFalse, ReasonSyncFailed, nowSec}}},
		{"another good sync: nothing transitions", settled,
			lastSync{seen: true, stage: controller.StageDone},
			[]want{{metav1.ConditionTrue, ReasonReady, t0}, {metav1.ConditionTrue, v1alpha1.ReasonConnected, t0}, {metav1.ConditionTrue, ReasonSynced, t0}}},
		{"the first status", nil,
			lastSync{},
			[]want{{metav1.ConditionFalse, ReasonNoSyncYet, nowSec}, {metav1.ConditionUnknown, ReasonNoSyncYet, nowSec}, {metav1.ConditionUnknown, ReasonNoSyncYet, nowSec}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &v1alpha1.RouterHostsConfig{ObjectMeta: metav1.ObjectMeta{Generation: 4}, Status: v1alpha1.RouterHostsConfigStatus{Conditions: tc.old}}
			st := desiredStatus(obj, base(), nil, tc.last, now)
			if len(st.Conditions) != len(tc.want) {
				t.Fatalf("conditions %+v", st.Conditions)
			}
			for i, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionServerReachable, ConditionSynced} {
				c, w := st.Conditions[i], tc.want[i]
				if c.Type != typ || c.Status != w.status || c.Reason != w.reason || !c.LastTransitionTime.Equal(&w.at) || c.ObservedGeneration != 4 {
					t.Errorf("condition %d = %s %s %s at %s (generation %d), want %s %s %s at %s (generation 4)",
						i, c.Type, c.Status, c.Reason, c.LastTransitionTime, c.ObservedGeneration, typ, w.status, w.reason, w.at)
				}
			}
		})
	}
}
