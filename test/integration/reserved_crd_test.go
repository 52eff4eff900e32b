package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// reservedMessage is what the CRD's rule on spec.tags says when it refuses a tag.
const reservedMessage = "reserved for the operator's ownership bookkeeping"

// TestCRDRefusesReservedTags: the apiserver itself, through the CEL rule in the HostMapping CRD,
// refuses a HostMapping whose spec.tags holds a tag of the operator's reserved namespace
// (registry/tags.go), so ownership cannot be forged with kubectl apply; tags that only look
// alike are accepted.
func TestCRDRefusesReservedTags(t *testing.T) {
	ns := createNamespace(t, cp)
	n := 0
	create := func(tags ...string) error {
		n++
		list := make([]any, len(tags))
		for i, tag := range tags {
			list[i] = tag
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
			"metadata": map[string]any{"name": fmt.Sprintf("reserved-%d", n), "namespace": ns},
			"spec":     map[string]any{"hostname": "r.lan", "ipAddress": "10.0.0.1", "tags": list}}}
		_, err := dynamicHM(ns).Create(context.Background(), u, metav1.CreateOptions{})
		return err
	}
	// refused checks err is the CRD's reservation rule refusing spec.tags[index].
	refused := func(t *testing.T, err error, index int) {
		t.Helper()
		if err == nil {
			t.Fatal("the apiserver accepted a reserved tag")
		}
		if !apierrors.IsInvalid(err) {
			t.Fatalf("want Invalid, got %v", err)
		}
		if !strings.Contains(err.Error(), reservedMessage) {
			t.Fatalf("the error does not name the reservation: %v", err)
		}
		field := fmt.Sprintf("spec.tags[%d]", index)
		var st apierrors.APIStatus
		if !errors.As(err, &st) || st.Status().Details == nil {
			t.Fatalf("no status details: %v", err)
		}
		for _, c := range st.Status().Details.Causes {
			if c.Field == field && strings.Contains(c.Message, reservedMessage) {
				return
			}
		}
		t.Fatalf("no cause on %s naming the reservation: %+v", field, st.Status().Details.Causes)
	}

	reserved := []string{registry.TagOwner}
	for _, p := range registry.ReservedPrefixes() {
		reserved = append(reserved, p+"x")
	}
	for _, tag := range reserved {
		t.Run("refused/"+tag, func(t *testing.T) {
			if !registry.Reserved(tag) {
				t.Fatalf("the registry does not reserve %q", tag)
			}
			refused(t, create(tag), 0)
		})
	}
	// A reserved tag anywhere in the list is refused, and the error says where.
	t.Run("refused/among-others", func(t *testing.T) {
		refused(t, create("team:web", "source:forged-uid", "env:prod"), 1)
	})

	nearMisses := []string{"cluster", "clusterx", "k8s-operator2", "my-cluster:x", "xsource:y", "K8S-operator", "k8s-operatorx"}
	for _, p := range registry.ReservedPrefixes() {
		nearMisses = append(nearMisses, p[:len(p)-1], "x"+p+"y")
	}
	seen := map[string]bool{}
	for _, tag := range nearMisses {
		if seen[tag] || registry.Reserved(tag) {
			continue // listed already, or the start of another prefix: not a near miss
		}
		seen[tag] = true
		t.Run("accepted/"+tag, func(t *testing.T) {
			if err := create(tag); err != nil {
				t.Fatalf("the apiserver refused the user's tag %q: %v", tag, err)
			}
		})
	}
	t.Run("accepted/several", func(t *testing.T) {
		if err := create("team:web", "cluster", "xsource:y", "env:prod"); err != nil {
			t.Fatalf("the apiserver refused user tags: %v", err)
		}
	})
}
