package integration

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestAReplacementIsHeldByTheBrake: twelve Ingresses of one namespace get new hostnames in one
// apply (a values typo). That is twelve names leaving: the brake holds, sync after sync, with no
// new name written and no old one deleted, so it cannot be walked around by counting the new
// names. (The apply reaches the operator object by object: the first few before it trips go as
// everyday churn, marked and not deleted while it holds.) Undone, every old name stays and the
// typo's few go. Done again on purpose and confirmed with the token (a restart with
// --confirm-mass-deletion), the new names are written and the old ones go after their grace
// period; every old name answers until then.
func TestAReplacementIsHeldByTheBrake(t *testing.T) {
	h := newHarness(t, options{})
	w := watchNames(t, h)
	var ings []*networkingv1.Ingress
	var old []string
	for i := range 12 {
		host := fmt.Sprintf("app-%d.home.lan", i)
		ings = append(ings, h.create(ingress(h.ns, fmt.Sprintf("app-%d", i), enabled("ip-address", fmt.Sprintf("10.62.0.%d", i+1)), host)))
		old = append(old, host)
	}
	flags := []string{"--interval=1s", "--grace-period=3s", "--min-event-sync-interval=200ms"}
	p := startOperator(t, h, kubeconfig, flags...)
	waitFor(t, 30*time.Second, func() bool { return len(h.srv.Store().List()) == 12 })
	w.watch(old...)
	retarget := func(domain string) {
		for i, ing := range ings {
			h.update(ing, func(in *networkingv1.Ingress) { in.Spec.Rules[0].Host = fmt.Sprintf("app-%d.%s", i, domain) })
		}
	}
	namesUnder := func(domain string) int {
		n := 0
		for _, e := range h.srv.Store().List() {
			if strings.HasSuffix(e.GetHostname(), "."+domain) {
				n++
			}
		}
		return n
	}

	// The typo: held, and still held several syncs later, with every old name answering.
	retarget("home.lam")
	waitFor(t, 30*time.Second, func() bool { return p.metric(t, "router_hosts_operator_mass_deletion_held_entries") == 12 })
	quietFor(t, w, p)
	w.check(t)
	if calls := h.srv.Service().CallCounts(); calls[inmemory.MethodDelete] != 0 || namesUnder("home.lam") >= 10 {
		t.Fatalf("the typo went past the brake: calls %v, %d typo names on the router", calls, namesUnder("home.lam"))
	}

	// Undone: the brake lets go; the old names stay, the typo's few go after their grace period.
	retarget("home.lan")
	waitFor(t, 30*time.Second, func() bool {
		return p.metric(t, "router_hosts_operator_mass_deletion_held_entries") == 0 && namesUnder("home.lam") == 0 && namesUnder("home.lan") == 12
	})
	quietFor(t, w, p)
	w.check(t)
	for _, e := range h.srv.Store().List() {
		if hasPrefixTag(e, registry.PrefixPending) {
			t.Fatalf("%s is still marked after the typo was undone: %v", e.GetHostname(), e.GetTags())
		}
	}

	// A domain move on purpose: held again, then confirmed with the token.
	retarget("lab.lan")
	waitFor(t, 30*time.Second, func() bool { return p.metric(t, "router_hosts_operator_mass_deletion_held_entries") == 12 })
	quietFor(t, w, p)
	token := heldTokenIn(t, p.logText())
	w.check(t)
	w.unwatch() // they go now, on purpose
	stop(t, p)
	p = startOperator(t, h, kubeconfig, append(flags, "--confirm-mass-deletion="+token)...)
	waitFor(t, 30*time.Second, func() bool { return namesUnder("lab.lan") == 12 && namesUnder("home.lan") == 0 })
	if v := p.metric(t, "router_hosts_operator_mass_deletion_held_entries"); v != 0 {
		t.Fatalf("held %v after the confirmation", v)
	}
}

// heldTokenIn is the token of the last MassDeletionHeld warning in a log.
func heldTokenIn(t *testing.T, log string) string {
	t.Helper()
	m := regexp.MustCompile(`--confirm-mass-deletion=([0-9]+-[0-9a-f]{8})`).FindAllStringSubmatch(log, -1)
	if len(m) == 0 || !strings.Contains(log, "reason=MassDeletionHeld") {
		t.Fatalf("no MassDeletionHeld warning with a token in the log:\n%s", log)
	}
	return m[len(m)-1][1]
}

// TestAFlappingObjectIsCoalesced: an Ingress of twenty hostnames whose address flips every
// second, for half a minute. Its first state is written whole at once, and a budget's worth more
// (30 writes); after that the write-rate budget (30 a minute for an object, the default) holds
// its changes back, with an OverBudget Warning on it, and the state it ends in reaches the
// router within a minute of the last flip. Writing every flip would be 600 UpdateHosts, each an
// event every later call replays.
func TestAFlappingObjectIsCoalesced(t *testing.T) {
	h := newHarness(t, options{})
	hosts := make([]string, 20)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("flap-%d.home.lan", i)
	}
	ing := h.create(ingress(h.ns, "flap", enabled("ip-address", "10.63.0.1"), hosts...))
	p := startOperator(t, h, kubeconfig, "--interval=1s", "--min-event-sync-interval=200ms")
	waitFor(t, 30*time.Second, func() bool { return len(h.srv.Store().List()) == 20 })
	h.srv.Service().ResetCalls()
	last := ""
	for i := range 30 {
		last = fmt.Sprintf("10.63.0.%d", 2+i%2)
		h.update(ing, func(in *networkingv1.Ingress) { in.Annotations["router-hosts.fzymgc.house/ip-address"] = last })
		time.Sleep(time.Second)
	}
	flapped := h.srv.Service().CallCounts()[inmemory.MethodUpdate]
	// The budget's worth beyond the first state, then 30 a minute for the half minute.
	if flapped > 30+15+1 {
		t.Fatalf("30 s of flapping sent %d UpdateHost calls, want at most the budget's", flapped)
	}
	waitFor(t, 70*time.Second, func() bool {
		for _, e := range h.srv.Store().List() {
			if e.GetIpAddress() != last {
				return false
			}
		}
		return true
	})
	events, err := h.cp.Client.CoreV1().Events(h.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=flap,reason=OverBudget"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 || !strings.Contains(events.Items[0].Message, "write-rate budget") {
		t.Fatalf("no OverBudget Warning on the flapping Ingress: %v", events.Items)
	}
	if v := p.metric(t, "router_hosts_operator_paced_changes"); v != 0 {
		t.Errorf("paced_changes %v once the object is quiet", v)
	}
	for _, e := range h.srv.Store().List() {
		if hasPrefixTag(e, registry.PrefixPending) {
			t.Errorf("%s is marked: %v", e.GetHostname(), e.GetTags())
		}
	}
}
