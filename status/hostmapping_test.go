package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

func TestComputeTranslatesTheReport(t *testing.T) {
	hm := &v1alpha1.HostMapping{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "d", UID: "uid-p", Generation: 2},
		Spec: v1alpha1.HostMappingSpec{Hostname: "printer.lan", IPAddress: "10.0.0.9"}}
	ref := endpoint.SourceRef{Kind: "HostMapping", Namespace: "d", Name: "p", UID: "uid-p", Generation: 2}
	desired := map[string]*endpoint.Endpoint{"printer.lan": {Hostname: "printer.lan", Targets: []string{"10.0.0.9"}, Sources: []endpoint.SourceRef{ref}}}
	entries := map[string][]endpoint.Record{"printer.lan": {{ID: "01ABC", IP: "10.0.0.9", Hostname: "printer.lan"}}}
	authErr := fmt.Errorf("ListHosts: %w: tls: unknown certificate authority", provider.ErrAuthentication)
	objs := map[string]controller.Object{"uid-p": {Endpoints: []*endpoint.Endpoint{{Hostname: "printer.lan", Targets: []string{"10.0.0.9"}, Sources: []endpoint.SourceRef{ref}}}}}
	noAddress := map[string]controller.Object{"uid-p": {Endpoints: []*endpoint.Endpoint{{Hostname: "printer.lan", Sources: []endpoint.SourceRef{ref}}}}}
	invalid := map[string]controller.Object{"uid-p": {Problems: []endpoint.Problem{{Reason: "InvalidHostname", Message: "spec.hostname is empty"}}}}
	h := NewHostMappings(nil, nil, logrus.New())
	for _, tc := range []struct {
		name    string
		report  controller.Report
		dropped []statusReason
		// unclaimed: the hostname is not among the desired (turned down whole).
		unclaimed bool
		want      state
		message   string
	}{
		{name: "a name the namespace may not claim", report: controller.Report{Objects: objs, Entries: entries}, unclaimed: true,
			dropped: []statusReason{{ReasonNotPermitted, "hostname printer.lan is not written: namespace d may claim names under d.lan"}},
			want:    state{gen: 2, reason: ReasonNotPermitted, ready: true}, message: "may claim names under d.lan"},
		{name: "a namespace at its budget", report: controller.Report{Objects: objs}, unclaimed: true,
			dropped: []statusReason{{ReasonOverBudget, "namespace d is at its budget of 3 entries"}},
			want:    state{gen: 2, reason: ReasonOverBudget, ready: true}, message: "budget of 3"},
		{name: "an alias another holds: written, without it", report: controller.Report{Objects: objs, Entries: entries},
			dropped: refusalsOf(&controller.Report{Conflicts: []registry.Conflict{{Hostname: "grafana.lan", Alias: true, Loser: ref, Winner: "namespace monitoring"}}})["uid-p"],
			want:    state{id: "01ABC", gen: 2, reason: ReasonConflict, addresses: "10.0.0.9", ready: true}, message: "alias grafana.lan is held by namespace monitoring; the rest is synced"},
		{name: "synced", report: controller.Report{Objects: objs, Entries: entries},
			want: state{synced: true, id: "01ABC", gen: 2, reason: ReasonSuccess, addresses: "10.0.0.9", ready: true}},
		{name: "a reserved tag was dropped: written, but not as the spec says", report: controller.Report{Objects: objs, Entries: entries},
			dropped: []statusReason{{ReasonValidationFailed, `tag "cluster:x" is reserved; dropped`}}, want: state{id: "01ABC", gen: 2, reason: ReasonValidationFailed, addresses: "10.0.0.9", ready: true}, message: "cluster:x"},
		{name: "authentication refused on the read", report: controller.Report{Objects: objs, Step: controller.StepList, AuthFailed: true, Err: authErr},
			want: state{gen: 2, reason: ReasonAuthenticationFailed, ready: true}, message: "unknown certificate authority"},
		{name: "server unreachable", report: controller.Report{Objects: objs, Step: controller.StepList, Err: errors.New("connection refused")},
			want: state{gen: 2, reason: ReasonServerUnreachable, ready: true}},
		{name: "authentication refused on the write", report: controller.Report{Objects: objs, Entries: entries, Failed: map[string]controller.Failure{"printer.lan": {Err: authErr, Kind: controller.FailureAuthentication}}},
			want: state{gen: 2, reason: ReasonAuthenticationFailed, ready: true}},
		{name: "server unreachable on the write", report: controller.Report{Objects: objs, Entries: entries, Failed: map[string]controller.Failure{"printer.lan": {Err: errors.New("Unavailable"), Kind: controller.FailureUnreachable}}},
			want: state{gen: 2, reason: ReasonServerUnreachable, ready: true}},
		{name: "no valid hostname", report: controller.Report{Objects: invalid},
			want: state{gen: 2, reason: ReasonValidationFailed, ready: true}, message: "spec.hostname is empty"},
		{name: "no address", report: controller.Report{Objects: noAddress, Desired: []*endpoint.Endpoint{{Hostname: "printer.lan", Sources: []endpoint.SourceRef{ref}}}},
			want: state{gen: 2, reason: ReasonNoAddress, ready: true}},
		{name: "a source failed: the status stays", report: controller.Report{Step: controller.StepSource, Err: errors.New("cache not synced")},
			want: state{gen: 0, reason: ""}},
		{name: "created after the sync read its sources: no word yet", report: controller.Report{Entries: entries},
			want: state{gen: 0, reason: ""}},
		{name: "edited after the sync read its sources: no word on the new spec yet", report: controller.Report{Entries: entries,
			Objects: map[string]controller.Object{"uid-p": {Endpoints: []*endpoint.Endpoint{{Hostname: "printer.lan", Targets: []string{"10.0.0.8"},
				Sources: []endpoint.SourceRef{{UID: "uid-p", Generation: 1}}}}}}},
			want: state{gen: 0, reason: ""}},
		{name: "write refused", report: controller.Report{Objects: objs, Entries: entries, Failed: map[string]controller.Failure{"printer.lan": {Err: errors.New("InvalidArgument")}}},
			want: state{gen: 2, reason: ReasonWriteFailed, ready: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := desired
			if tc.unclaimed {
				d = nil
			}
			got := h.compute(hm, &tc.report, d, tc.dropped)
			msg := got.message
			got.message = ""
			if got != tc.want {
				t.Fatalf("state = %+v, want %+v", got, tc.want)
			}
			if !strings.Contains(msg, tc.message) {
				t.Fatalf("message %q does not mention %q", msg, tc.message)
			}
		})
	}
}

// cacheOf is a HostMapping cache that never catches up, as a slow informer would not.
type cacheOf struct{ hm *v1alpha1.HostMapping }

func (c cacheOf) Objects() ([]*v1alpha1.HostMapping, error) {
	return []*v1alpha1.HostMapping{c.hm}, nil
}
func (c cacheOf) Object(string, string) (*v1alpha1.HostMapping, error) { return c.hm, nil }

func TestANewerStatusIsNeverSkippedForOneInFlight(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
		"metadata": map[string]any{"name": "p", "namespace": "d", "uid": "uid-p", "generation": int64(1)},
		"spec":     map[string]any{"hostname": "printer.lan", "ipAddress": "10.0.0.9"},
		"status": map[string]any{"synced": true, "routerHostsId": "01ABC", "observedGeneration": int64(1),
			"conditions": []any{map[string]any{"type": "Synced", "status": "True", "reason": ReasonSuccess, "message": "Host synced to router-hosts"}}}}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.HostMappingResource: "HostMappingList"}, u.DeepCopy())
	var (
		mu      sync.Mutex
		written []string
		last    *unstructured.Unstructured
		release = make(chan struct{})
		// inFlight is closed once the first write has reached the apiserver and waits there.
		inFlight = make(chan struct{})
	)
	client.PrependReactor("update", "hostmappings", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		mu.Lock()
		written = append(written, conds[0].(map[string]any)["reason"].(string))
		last = obj
		first := len(written) == 1
		mu.Unlock()
		if first {
			close(inFlight)
			<-release // the first write is in flight while the next sync reports
		}
		return true, obj, nil
	})
	meta := metav1.ObjectMeta{Name: "p", Namespace: "d", UID: "uid-p", Generation: 1}
	h := NewHostMappings(cacheOf{v1alpha1.FromUnstructured(u, meta)}, client.Resource(v1alpha1.HostMappingResource), logrus.New())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	desired := []*endpoint.Endpoint{{Hostname: "printer.lan", Targets: []string{"10.0.0.9"}, Sources: []endpoint.SourceRef{{UID: "uid-p", Generation: 1}}}}
	entries := map[string][]endpoint.Record{"printer.lan": {{ID: "01ABC", IP: "10.0.0.9", Hostname: "printer.lan"}}}
	// The router goes away: ServerUnreachable is being written when it comes back.
	objs := map[string]controller.Object{"uid-p": {Endpoints: desired}}
	h.Report(ctx, &controller.Report{Step: controller.StepList, Err: errors.New("connection refused"), Objects: objs})
	select {
	case <-inFlight:
	case <-time.After(10 * time.Second):
		t.Fatal("the first status was never written")
	}
	h.Report(ctx, &controller.Report{Desired: desired, Entries: entries, Objects: objs})
	close(release)
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(written) != 2 || written[1] != ReasonSuccess {
		t.Fatalf("statuses written %q; the newer Success must follow the ServerUnreachable in flight", written)
	}
	// The status a GitOps tool reads: the resolved address, and Ready beside Synced, as kstatus
	// wants it (True at the observed generation).
	addrs, _, _ := unstructured.NestedStringSlice(last.Object, "status", "addresses")
	conds, _, _ := unstructured.NestedSlice(last.Object, "status", "conditions")
	ready := map[string]any{}
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == v1alpha1.ConditionReady {
			ready = m
		}
	}
	if !slices.Equal(addrs, []string{"10.0.0.9"}) || ready["status"] != "True" || ready["observedGeneration"] != int64(1) || ready["reason"] != ReasonSuccess {
		t.Fatalf("written status: addresses %v, Ready %v", addrs, ready)
	}
}
