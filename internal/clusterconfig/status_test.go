package clusterconfig

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
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
