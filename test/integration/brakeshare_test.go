package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestATenantsDeletionHoldsNoOtherNamespace: the infra team runs ten names in its namespace, a
// tenant nine in its own, one operator for both. The tenant deletes all nine of its Ingresses
// (its namespace's own brake needs ten), and while their marks wait out the grace period infra
// moves one app to a new name, its everyday churn. Ten entries leaving of nineteen is more than
// half of the cluster, but infra loses one of its ten: it spends no part of the tenant's
// minimum, and nothing is held. Infra's new name answers at once, its old one and the tenant's
// go after their grace period, and no MassDeletionHeld is said.
func TestATenantsDeletionHoldsNoOtherNamespace(t *testing.T) {
	// Every namespace is read; a label keeps other tests' objects out.
	label := "brake-" + time.Now().Format("150405.000000")
	label = "t" + label[len(label)-6:]
	h := newHarness(t, options{})
	infra, tenant := h.ns, createNamespace(t, h.cp)
	mk := func(ns, name, host, ip string) *networkingv1.Ingress {
		ing := ingress(ns, name, enabled("ip-address", ip), host)
		ing.Labels = map[string]string{"test": label}
		return h.create(ing)
	}
	var infraIngs []*networkingv1.Ingress
	for i := range 10 {
		infraIngs = append(infraIngs, mk(infra, fmt.Sprintf("app-%d", i), fmt.Sprintf("app-%d.infra.lan", i), fmt.Sprintf("10.64.0.%d", i+1)))
	}
	for i := range 9 {
		mk(tenant, fmt.Sprintf("web-%d", i), fmt.Sprintf("web-%d.tenant.lan", i), fmt.Sprintf("10.64.1.%d", i+1))
	}
	const grace = 15 * time.Second
	p := startOperatorEnv(t, h, map[string]string{"KUBECONFIG": kubeconfig, "ROUTER_HOSTS_OPERATOR_NAMESPACE": ""},
		"--interval=1s", "--grace-period="+grace.String(), "--min-event-sync-interval=200ms", "--label-filter=test="+label)
	under := func(domain string) (live, marked int) {
		for _, e := range h.srv.Store().List() {
			if !strings.HasSuffix(e.GetHostname(), "."+domain) {
				continue
			}
			if hasPrefixTag(e, registry.PrefixPending) {
				marked++
			} else {
				live++
			}
		}
		return live, marked
	}
	waitFor(t, 30*time.Second, func() bool {
		i, _ := under("infra.lan")
		n, _ := under("tenant.lan")
		return i == 10 && n == 9
	})

	// The tenant leaves: its nine Ingresses deleted at once. Nine is under its namespace's
	// minimum, so they are marked, to go after the grace period.
	if err := h.cp.Client.NetworkingV1().Ingresses(tenant).DeleteCollection(context.Background(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "test=" + label}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitFor(t, 10*time.Second, func() bool { _, m := under("tenant.lan"); return m == 9 })

	// Infra moves one app, while the tenant's marks wait: one name leaving of its ten.
	h.update(infraIngs[0], func(in *networkingv1.Ingress) { in.Spec.Rules[0].Host = "app-0.new.lan" })
	for start := time.Now(); len(h.entries("app-0.new.lan")) != 1; time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("infra's new name is not written: held with the tenant's deletion? the router: %v", h.srv.Store().List())
		}
	}
	t.Logf("infra's new name written %s after the tenant's deletion", time.Since(deleted))
	if time.Since(deleted) >= grace {
		t.Fatalf("the tenant's marks fell due before infra's move was synced; the test proves nothing")
	}
	if v := p.metric(t, "router_hosts_operator_mass_deletion_held_entries"); v != 0 {
		t.Fatalf("mass_deletion_held_entries = %v: the tenant's deletion and infra's one were held together", v)
	}

	// After the grace period: the tenant's nine and infra's old name are gone, nothing else.
	waitFor(t, grace+20*time.Second, func() bool {
		i, im := under("infra.lan")
		n, nm := under("tenant.lan")
		return i == 9 && im == 0 && n == 0 && nm == 0
	})
	t.Logf("everything gone %s after the tenant's deletion", time.Since(deleted))
	if len(h.entries("app-0.infra.lan")) != 0 || len(h.entries("app-0.new.lan")) != 1 {
		t.Fatalf("infra's move did not complete: %v", h.srv.Store().List())
	}
	if strings.Contains(p.logText(), "reason=MassDeletionHeld") {
		t.Fatalf("the brake held:\n%s", p.logText())
	}
}
