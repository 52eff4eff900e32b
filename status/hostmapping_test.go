package status

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
)

func TestComputeTranslatesTheReport(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
		"metadata": map[string]any{"name": "p", "namespace": "d", "uid": "uid-p", "generation": int64(2)},
		"spec":     map[string]any{"hostname": "printer.lan", "ipAddress": "10.0.0.9"}}}
	ref := endpoint.SourceRef{Kind: "HostMapping", Namespace: "d", Name: "p", UID: "uid-p"}
	desired := map[string]*endpoint.Endpoint{"printer.lan": {Hostname: "printer.lan", Targets: []string{"10.0.0.9"}, Sources: []endpoint.SourceRef{ref}}}
	entries := map[string][]endpoint.Record{"printer.lan": {{ID: "01ABC", IP: "10.0.0.9", Hostname: "printer.lan"}}}
	authErr := fmt.Errorf("ListHosts: %w: tls: unknown certificate authority", provider.ErrAuthentication)
	h := NewHostMappings(nil, nil, nil, logrus.New())
	for _, tc := range []struct {
		name    string
		report  controller.Report
		dropped []string
		want    state
		message string
	}{
		{name: "synced", report: controller.Report{Entries: entries},
			want: state{synced: true, id: "01ABC", gen: 2, reason: ReasonSuccess}},
		{name: "a reserved tag was dropped: written, but not as the spec says", report: controller.Report{Entries: entries},
			dropped: []string{`tag "cluster:x" is reserved; dropped`}, want: state{id: "01ABC", gen: 2, reason: ReasonValidationFailed}, message: "cluster:x"},
		{name: "authentication refused on the read", report: controller.Report{Stage: controller.StageList, AuthFailed: true, Err: authErr},
			want: state{gen: 2, reason: ReasonAuthenticationFailed}, message: "unknown certificate authority"},
		{name: "server unreachable", report: controller.Report{Stage: controller.StageList, Err: errors.New("connection refused")},
			want: state{gen: 2, reason: ReasonServerUnreachable}},
		{name: "authentication refused on the write", report: controller.Report{Entries: entries, Failed: map[string]controller.Failure{"printer.lan": {Err: authErr, Kind: controller.FailureAuthentication}}},
			want: state{gen: 2, reason: ReasonAuthenticationFailed}},
		{name: "server unreachable on the write", report: controller.Report{Entries: entries, Failed: map[string]controller.Failure{"printer.lan": {Err: errors.New("Unavailable"), Kind: controller.FailureUnreachable}}},
			want: state{gen: 2, reason: ReasonServerUnreachable}},
		{name: "write refused", report: controller.Report{Entries: entries, Failed: map[string]controller.Failure{"printer.lan": {Err: errors.New("InvalidArgument")}}},
			want: state{gen: 2, reason: ReasonWriteFailed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.compute(u, &tc.report, desired, tc.dropped)
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
