package operator

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/explain"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube/clientset"
)

// TestExplainShowsOnlyItsInstallationsEvents: of the Warning events on an object, explain
// shows those the installation it explains posted, from any of its replicas, and none that
// another installation, or anyone naming the operator's component, posted.
func TestExplainShowsOnlyItsInstallationsEvents(t *testing.T) {
	const identity, other = "0123456789abcdef", "fedcba9876543210"
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	web := explain.Object{Kind: "Ingress", Namespace: "tenant", Name: "web", UID: "web-uid"}
	event := func(reason string, change func(*corev1.Event)) runtime.Object {
		e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: reason},
			InvolvedObject: corev1.ObjectReference{Kind: "Ingress", Namespace: "tenant", Name: "web", UID: "web-uid"},
			Reason:         reason, Type: corev1.EventTypeWarning, LastTimestamp: metav1.NewTime(now.Add(-time.Minute)), Count: 1}
		change(e)
		return e
	}
	recorded := func(instance string) func(*corev1.Event) {
		return func(e *corev1.Event) {
			e.Source = corev1.EventSource{Component: events.Component, Host: instance}
			e.ReportingController, e.ReportingInstance = events.Component, instance
		}
	}
	for _, c := range []struct {
		name  string
		event runtime.Object
		shown bool
	}{
		{"posted by the leader", event("Leader", recorded(events.Instance(identity, "rho-a"))), true},
		{"posted by a former leader of the installation", event("Former", recorded(events.Instance(identity, "rho-b"))), true},
		{"the component alone, no instance", event("Bare", recorded("")), false},
		{"another installation's (a tenant's own operator)", event("Other", recorded(events.Instance(other, "tenant-op"))), false},
		{"the identity without its separator", event("Prefix", recorded(identity+"x/rho-a")), false},
		{"the instance, another controller", event("Controller", func(e *corev1.Event) {
			recorded(events.Instance(identity, "rho-a"))(e)
			e.Source.Component, e.ReportingController = "impostor", "impostor"
		}), false},
		{"the legacy source alone, this installation's", event("Legacy", func(e *corev1.Event) {
			e.Source = corev1.EventSource{Component: events.Component, Host: events.Instance(identity, "rho-a")}
		}), true},
		{"the legacy source naming the component, no instance", event("LegacyBare", func(e *corev1.Event) {
			e.Source = corev1.EventSource{Component: events.Component}
		}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset(c.event)
			got, err := warningsOn(context.Background(), clientset.Events(cs), identity, web, string(web.UID), now.Add(-saidWithin))
			if err != nil {
				t.Fatal(err)
			}
			if shown := slices.ContainsFunc(got, func(s explain.Said) bool { return s.Code == c.event.(*corev1.Event).Reason }); shown != c.shown {
				t.Errorf("shown %t, want %t: %+v", shown, c.shown, got)
			}
		})
	}
}
