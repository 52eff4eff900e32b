package gitops

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/internal/clusterconfig"
	opstatus "github.com/router-hosts-operator/router-hosts-operator/status"
)

// kstatus is Flux's reading of an object: its health checks (a Kustomization's wait, a
// HelmRelease's) compute kstatus and wait for Current.
func kstatus(t *testing.T, obj map[string]any) (status.Status, string) {
	t.Helper()
	r, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatalf("kstatus on %s: %v", describe(obj), err)
	}
	return r.Status, r.Message
}

// TestKstatusOfTheStatuses: Flux reads the Ready condition the operator writes beside Synced:
// Current when it is True at the object's generation, InProgress while it is False or written
// for an older one. As for any object without conditions, kstatus calls an object Current
// before the operator has written its status (docs/operations.md says so).
func TestKstatusOfTheStatuses(t *testing.T) {
	for _, c := range []struct {
		name string
		obj  map[string]any
		want status.Status
	}{
		{"HostMapping without a status", object("HostMapping", 1, nil), status.CurrentStatus},
		{"HostMapping synced", object("HostMapping", 2, hmStatus(2, true, opstatus.ReasonSuccess, "Host synced to router-hosts")), status.CurrentStatus},
		{"HostMapping synced, an older generation", object("HostMapping", 3, hmStatus(2, true, opstatus.ReasonSuccess, "Host synced to router-hosts")), status.InProgressStatus},
		{"HostMapping in conflict", object("HostMapping", 1, hmStatus(1, false, opstatus.ReasonConflict, "claimed by another")), status.InProgressStatus},
		{"HostMapping without an address", object("HostMapping", 1, hmStatus(1, false, opstatus.ReasonNoAddress, "no address")), status.InProgressStatus},
		{"RouterHostsConfig ready", object(v1alpha1.RouterHostsConfigKind, 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{
			cond("Ready", "True", clusterconfig.ReasonReady, "configuration applied", 1)}}), status.CurrentStatus},
		{"RouterHostsConfig before its first sync", object(v1alpha1.RouterHostsConfigKind, 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{
			cond("Ready", "False", clusterconfig.ReasonNoSyncYet, "no sync has run yet", 1)}}), status.InProgressStatus},
		{"RouterHostsConfig, router unreachable", object(v1alpha1.RouterHostsConfigKind, 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{
			cond("Ready", "False", v1alpha1.ReasonUnreachable, "not reachable", 1)}}), status.InProgressStatus},
		{"RouterHostsConfig ready, an older generation", object(v1alpha1.RouterHostsConfigKind, 2, map[string]any{"observedGeneration": int64(1), "conditions": []any{
			cond("Ready", "True", clusterconfig.ReasonReady, "configuration applied", 1)}}), status.InProgressStatus},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, msg := kstatus(t, c.obj); got != c.want {
				t.Errorf("kstatus %s (%q), want %s", got, msg, c.want)
			}
		})
	}
}
