package integration

import (
	"slices"
	"strings"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/internal/clusterconfig"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// TestOptInFromRouterHostsConfig: spec.optIn sets the class-wide and external-dns modes as
// their flags do, and a change applies without a restart: an object no longer opted in lets
// go of its hostnames (marked for deletion), one newly opted in gets them.
func TestOptInFromRouterHostsConfig(t *testing.T) {
	h := newHarness(t, options{ipResolution: []string{"static:10.74.0.1"}})
	class := func(name string) *string { return &name }
	lan := ingress(h.ns, "lan", nil, "lan.optin.lan")
	lan.Spec.IngressClassName = class("lan")
	h.create(lan)
	public := ingress(h.ns, "public", nil, "public.optin.lan")
	public.Spec.IngressClassName = class("public")
	h.create(public)
	h.create(ingress(h.ns, "edns", map[string]string{source.AnnotationExternalDNSHostname: "edns.optin.lan",
		source.AnnotationExternalDNSTarget: "10.74.0.9"}, "edns-rule.optin.lan"))
	count := func(host string) int { return len(h.entries(host)) }
	h.sync()
	for _, host := range []string{"lan.optin.lan", "public.optin.lan", "edns.optin.lan"} {
		if n := count(host); n != 0 {
			t.Fatalf("%s: %d entries before any opt-in", host, n)
		}
	}

	if _, err := createConfig(t, "apiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: RouterHostsConfig\nmetadata: {name: "+h.ns+"}\n"+
		"spec:\n  optIn: {ingressClasses: [lan], externalDNSAnnotations: true}\n", false); err != nil {
		t.Fatal(err)
	}
	h.applied(func(s clusterconfig.Settings, _ error) bool {
		return slices.Equal(s.OptIn.IngressClasses, []string{"lan"})
	})
	h.waitHost("lan.optin.lan", "10.74.0.1")
	h.waitHost("edns.optin.lan", "10.74.0.9")
	h.sync()
	for host, n := range map[string]int{"lan.optin.lan": 1, "edns.optin.lan": 1, "edns-rule.optin.lan": 1, "public.optin.lan": 0} {
		if got := count(host); got != n {
			t.Errorf("%s: %d entries, want %d", host, got, n)
		}
	}

	patchConfig(t, h.ns, map[string]any{"optIn": map[string]any{"ingressClasses": []any{"public"}, "externalDNSAnnotations": false}})
	h.applied(func(s clusterconfig.Settings, _ error) bool {
		return slices.Equal(s.OptIn.IngressClasses, []string{"public"}) && !s.OptIn.ExternalDNSAnnotations
	})
	h.waitHost("public.optin.lan", "10.74.0.1")
	h.waitGone("lan.optin.lan")
	h.waitGone("edns.optin.lan")
	h.sync()
	if n := count("public.optin.lan"); n != 1 {
		t.Errorf("public.optin.lan: %d entries after the change, want 1", n)
	}
	for _, host := range []string{"lan.optin.lan", "edns.optin.lan"} {
		if _, marked := h.one(host).TagValue("pending-deletion:"); !marked {
			t.Errorf("%s: not marked for deletion once no longer opted in", host)
		}
	}

	// The schema refuses a Gateway name without its namespace.
	doc := "apiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: RouterHostsConfig\nmetadata: {name: bad-optin}\nspec:\n  optIn: {gatewayNames: [lan-gw]}\n"
	if _, err := createConfig(t, doc, true); err == nil || !strings.Contains(err.Error(), "gatewayNames") {
		t.Errorf("a Gateway name without namespace: %v, want a refusal naming gatewayNames", err)
	}
}
