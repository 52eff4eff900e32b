package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// TestCRDRulesOnThisAPIServer: both CRDs' schemas and CEL rules, as the apiserver running the
// suite applies them (make test runs this test, with a sync, on the oldest supported one too,
// with EXPECT_KUBE_MINOR naming it). The address rules use CEL's isIP(), which an apiserver
// compiles in a new CRD only from 1.31: on an older one the CRD itself is refused.
func TestCRDRulesOnThisAPIServer(t *testing.T) {
	info, err := cp.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver %s.%s (%s)", info.Major, info.Minor, info.GitVersion)
	if want := os.Getenv("EXPECT_KUBE_MINOR"); want != "" && info.Major+"."+strings.TrimSuffix(info.Minor, "+") != want {
		t.Fatalf("the suite runs against kube-apiserver %s.%s, not %s", info.Major, info.Minor, want)
	}
	ns := createNamespace(t, cp)
	hm := func(name string, spec map[string]any) error {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
		_, err := dynamicHM(ns).Create(context.Background(), u, metav1.CreateOptions{})
		return err
	}
	rhcs := dynamic.NewForConfigOrDie(cp.Config).Resource(schema.GroupVersionResource{Group: "router-hosts.fzymgc.house", Version: "v1alpha1", Resource: "routerhostsconfigs"})
	n := 0
	rhc := func(steps ...map[string]any) error {
		n++
		list := make([]any, len(steps))
		for i, s := range steps {
			list[i] = s
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "RouterHostsConfig",
			"metadata": map[string]any{"name": fmt.Sprintf("rules-%d", n)}, "spec": map[string]any{"ipResolution": list}}}
		_, err := rhcs.Create(context.Background(), u, metav1.CreateOptions{})
		if err == nil {
			t.Cleanup(func() { _ = rhcs.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
		}
		return err
	}
	for _, c := range []struct {
		name   string
		create func() error
		// refused is a part of the apiserver's message; "" means accepted.
		refused string
	}{
		{"an IPv4 address", func() error { return hm("v4", map[string]any{"hostname": "v4.lan", "ipAddress": "10.70.0.1"}) }, ""},
		{"an IPv6 address", func() error { return hm("v6", map[string]any{"hostname": "v6.lan", "ipAddress": "fd00::70"}) }, ""},
		{"the legacy ip field", func() error { return hm("legacy", map[string]any{"hostname": "legacy.lan", "ip": "10.70.0.2"}) }, ""},
		{"an octet out of range (isIP)", func() error { return hm("octet", map[string]any{"hostname": "octet.lan", "ipAddress": "10.70.0.300"}) }, "spec.ipAddress"},
		{"a zone suffix (isIP)", func() error { return hm("zone", map[string]any{"hostname": "zone.lan", "ipAddress": "fe80::1%eth0"}) }, "spec.ipAddress"},
		{"a bad legacy ip (isIP)", func() error { return hm("legacybad", map[string]any{"hostname": "lb.lan", "ip": "not-an-ip"}) }, "spec.ip"},
		{"ip and ipAddress disagreeing", func() error {
			return hm("disagree", map[string]any{"hostname": "d.lan", "ipAddress": "10.70.0.3", "ip": "10.70.0.4"})
		}, "spec"},
		{"a hostname with an underscore", func() error { return hm("underscore", map[string]any{"hostname": "a_b.lan", "ipAddress": "10.70.0.5"}) }, "spec.hostname"},
		{"a static step with an address", func() error { return rhc(map[string]any{"type": "Static", "address": "192.168.1.100"}) }, ""},
		{"a static step whose address is no IP (isIP)", func() error { return rhc(map[string]any{"type": "Static", "address": "192.168.1.256"}) }, "address"},
		{"a Service step without its Service", func() error { return rhc(map[string]any{"type": "Service"}) }, "ipResolution"},
		{"a static step without an address", func() error { return rhc(map[string]any{"type": "Static"}) }, "ipResolution"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.create()
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refused != "" && err == nil:
				t.Fatal("accepted")
			case c.refused != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.refused)):
				t.Fatalf("want Invalid naming %s, got %v", c.refused, err)
			}
		})
	}

	// The printer columns `kubectl get hostmappings` shows, as this apiserver serves them.
	got := tableRow(t, "/apis/router-hosts.fzymgc.house/v1alpha1/namespaces/"+ns+"/hostmappings/v6")
	// No operator writes this one's status: its address and readiness are blank until one does.
	if _, ok := got["Addresses"]; got["Hostname"] != "v6.lan" || ok {
		t.Errorf("printer columns: %v", got)
	}
}
