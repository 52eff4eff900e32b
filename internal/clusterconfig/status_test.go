package clusterconfig

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
)

// TestTheStatusSaysWhyNothingSyncs: while no router is named the object says the operator
// waits and what names one; while an object that cannot be used keeps the operator waiting at
// the start it says why and shows no endpoint, though the flags name one; a bad object on a
// running operator keeps the last good settings.
func TestTheStatusSaysWhyNothingSyncs(t *testing.T) {
	noEndpoint := &NoRouterError{What: "no router-hosts endpoint: set spec.server.endpoint or --router-hosts-endpoint"}
	missingSecret := errors.New(`reading Secret router-hosts-system/router-hosts-mtls: secrets "router-hosts-mtls" not found`)
	running := base()
	for _, tc := range []struct {
		name        string
		applied     Settings
		waiting     bool
		problem     error
		reason, msg string
		endpoint    string
	}{
		{"no server named", Settings{}, false, noEndpoint, v1alpha1.ReasonNoRouter, "spec.server.endpoint or --router-hosts-endpoint; the operator waits for a router", ""},
		{"its Secret not there yet", Settings{}, false, missingSecret, v1alpha1.ReasonInvalidConfig, "not found; the operator syncs nothing until this RouterHostsConfig can be used", ""},
		{"its Secret gone at a start, the flags naming a router", running, true, missingSecret, v1alpha1.ReasonInvalidConfig,
			"not found; the operator syncs nothing until this RouterHostsConfig can be used (it does not fall back to the flags)", ""},
		{"no server named at a start, the flags naming a router", running, true, noEndpoint, v1alpha1.ReasonNoRouter, "the operator waits for a router", ""},
		{"a bad change on a running operator", running, false, missingSecret, v1alpha1.ReasonInvalidConfig, "the last good configuration stays in use", running.Endpoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := desiredStatus(&v1alpha1.RouterHostsConfig{}, tc.applied, tc.waiting, tc.problem, lastSync{}, time.Now())
			if st.Endpoint != tc.endpoint {
				t.Errorf("status endpoint %q, want %q", st.Endpoint, tc.endpoint)
			}
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
			lastSync{seen: true, step: controller.StepDone, failed: 1},
			[]want{{metav1.ConditionFalse, ReasonSyncFailed, nowSec}, {metav1.ConditionTrue, v1alpha1.ReasonConnected, t0}, {metav1.ConditionFalse, ReasonSyncFailed, nowSec}}},
		{"another good sync: nothing transitions", settled,
			lastSync{seen: true, step: controller.StepDone},
			[]want{{metav1.ConditionTrue, ReasonReady, t0}, {metav1.ConditionTrue, v1alpha1.ReasonConnected, t0}, {metav1.ConditionTrue, ReasonSynced, t0}}},
		{"the first status", nil,
			lastSync{},
			[]want{{metav1.ConditionFalse, ReasonNoSyncYet, nowSec}, {metav1.ConditionUnknown, ReasonNoSyncYet, nowSec}, {metav1.ConditionUnknown, ReasonNoSyncYet, nowSec}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &v1alpha1.RouterHostsConfig{ObjectMeta: metav1.ObjectMeta{Generation: 4}, Status: v1alpha1.RouterHostsConfigStatus{Conditions: tc.old}}
			st := desiredStatus(obj, base(), false, nil, tc.last, now)
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

// TestTheStatusPatchClearsWhatIsGone: a field the new status leaves out is sent as null, so that
// the object stops showing it; the others are sent as they are.
func TestTheStatusPatchClearsWhatIsGone(t *testing.T) {
	have := v1alpha1.RouterHostsConfigStatus{ObservedGeneration: 2, Endpoint: "router.lan:50051", ServerVersion: "1.2.3", Entries: 4}
	want := v1alpha1.RouterHostsConfigStatus{ObservedGeneration: 3, ServerVersion: "1.2.3"}
	body, err := statusPatch(&have, &want)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	st := got["status"]
	if v, ok := st["endpoint"]; !ok || v != nil {
		t.Errorf("endpoint in the patch: %v (sent: %v), want null", v, ok)
	}
	if st["serverVersion"] != "1.2.3" || st["observedGeneration"] != float64(3) || st["entries"] != float64(0) {
		t.Errorf("patch %s, want the new status's fields as they are", body)
	}
	if _, ok := st["lastSyncTime"]; ok {
		t.Errorf("patch %s names lastSyncTime, which neither status has", body)
	}
}
