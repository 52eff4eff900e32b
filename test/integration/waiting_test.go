package integration

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
)

// TestTheOperatorWaitsForARouter: installed before its RouterHostsConfig, the usual order
// with Flux or Argo CD, the operator neither exits nor calls anything; it stays live and ready,
// says why once (log, metric, /routerz, the object's conditions once the object exists) and
// syncs the moment the RouterHostsConfig names a router.
func TestTheOperatorWaitsForARouter(t *testing.T) {
	h := newHarness(t, options{})
	name := "it-wait-" + h.ns
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.61.0.1"), "web.lan"))
	h.srv.Service().ResetCalls()
	// The chart's flags without routerHosts.endpoint: no endpoint, no TLS files.
	env := []string{"KUBECONFIG=" + kubeconfig, "ROUTER_HOSTS_OPERATOR_NAMESPACE=" + h.ns, "ROUTER_HOSTS_OPERATOR_CLUSTER_NAME=test"}

	// --once has nothing to wait for: it exits and says what tries the operator without a router.
	once := exec.Command(operatorBin, "--once", "--config-name="+name, "--metrics-address=")
	once.Env = env
	if out, err := once.CombinedOutput(); err == nil || !strings.Contains(string(out), "--provider=inmemory") {
		t.Errorf("--once without a router: %v\n%s\nwant an error naming --provider=inmemory", err, out)
	}

	p := startProcess(t, env, "--config-name="+name, "--leader-elect", "--leader-election-namespace="+h.ns, "--interval=2s", "--min-event-sync-interval=100ms")

	// 1. No RouterHostsConfig: alive, ready, leading, waiting, and saying so once.
	waitFor(t, 20*time.Second, func() bool { return p.metric(t, "router_hosts_operator_is_leader") == 1 })
	time.Sleep(3 * time.Second) // longer than an interval: a sync, had one started, would show
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the operator exited without a router: %v", err)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if body, err := p.get(path); err != nil {
			t.Errorf("%s while waiting: %v", path, err)
		} else if path == "/readyz" && !strings.Contains(body, "leader") {
			t.Errorf("/readyz = %q, want the leader", body)
		}
	}
	if v := p.metric(t, "router_hosts_operator_router_configured"); v != 0 {
		t.Errorf("router_configured = %v while waiting, want 0", v)
	}
	if v := p.metric(t, "router_hosts_operator_sync_duration_seconds_count"); v != 0 {
		t.Errorf("%v syncs while no router is named, want 0", v)
	}
	if body, err := p.get("/routerz"); err == nil || !strings.Contains(body, "no router named yet") {
		t.Errorf("/routerz = %q, %v; want a 503 saying no router is named", body, err)
	}
	if n := strings.Count(p.logText(), "no router named yet"); n != 1 {
		t.Errorf("the log says %d times that no router is named, want once:\n%s", n, p.logText())
	}
	if calls := h.srv.Service().CallCounts(); sum(calls) != 0 {
		t.Errorf("the router was called while none was named: %v", calls)
	}

	// 2. A RouterHostsConfig that names no router yet: its conditions say so.
	if _, err := createConfig(t, "apiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: RouterHostsConfig\nmetadata: {name: "+name+"}\nspec: {clusterName: test}\n", false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = configs().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	waitFor(t, 20*time.Second, func() bool {
		st, _ := configStatus(t, name)
		c := condition(st, v1alpha1.ConditionReady)
		return c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonNoRouter && strings.Contains(c.Message, "spec.server.endpoint")
	})

	// 3. The Secret and spec.server: the operator syncs, without a restart.
	h.mtlsSecret("router-mtls", h.srv.CertFile(), h.srv.KeyFile())
	patchConfig(t, name, map[string]any{"server": map[string]any{"endpoint": h.srv.Addr(), "tlsSecretRef": map[string]any{"name": "router-mtls", "namespace": h.ns}}})
	waitFor(t, 30*time.Second, func() bool { return len(h.entries("web.lan")) == 1 })
	if v := p.metric(t, "router_hosts_operator_router_configured"); v != 1 {
		t.Errorf("router_configured = %v once a router is named, want 1", v)
	}
	waitFor(t, 20*time.Second, func() bool { _, err := p.get("/routerz"); return err == nil })
	waitFor(t, 20*time.Second, func() bool {
		st, _ := configStatus(t, name)
		return condition(st, v1alpha1.ConditionReady).Status == metav1.ConditionTrue
	})
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the operator exited: %v", err)
	}
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// TestTheTrialWithoutARouterNeedsNone: the README's trial, with no endpoint, certificate or
// variable of a router, prints the entries a real run would write and exits.
func TestTheTrialWithoutARouterNeedsNone(t *testing.T) {
	h := newHarness(t, options{})
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.62.0.1"), "web.home.arpa"))
	cmd := exec.Command(operatorBin, "--provider=inmemory", "--once", "--dry-run", "--source=ingress", "--source=service", "--namespace="+h.ns)
	cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir()}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the trial: %v\n%s", err, out)
	}
	// The first create carries the installation's first heartbeat (registry/life.go).
	if !strings.Contains(string(out), "create  web.home.arpa 10.62.0.1 aliases=[] tags=[alive-every:151200,alive:") || !strings.Contains(string(out), ",cluster-id:") ||
		!strings.Contains(string(out), ",cluster:default,k8s-operator,") {
		t.Fatalf("the trial printed:\n%s\nwant the create of web.home.arpa", out)
	}
	if calls := h.srv.Service().CallCounts(); sum(calls) != 0 {
		t.Errorf("the trial called a router: %v", calls)
	}
}
