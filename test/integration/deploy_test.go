package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	testharness "github.com/router-hosts-operator/router-hosts-operator/test/harness"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

const operatorNS = "router-hosts-system"

func repoRoot() string {
	_, file, _, _ := runtimeCaller()
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// kubectl runs the kubectl built beside the control plane against it.
func kubectl(t *testing.T, stdin []byte, args ...string) []byte {
	t.Helper()
	bin, err := kubetest.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func TestKustomizeAppliesWithServerSideDryRun(t *testing.T) {
	ensureNamespace(t, operatorNS) // a dry run does not create the namespace for the objects in it
	for _, dir := range []string{"kustomize", "examples/homelab"} {
		manifests, err := kubetest.Kustomize(filepath.Join(repoRoot(), dir))
		if err != nil {
			t.Fatal(err)
		}
		out := kubectl(t, manifests, "apply", "--server-side", "--dry-run=server", "-f", "-")
		for _, want := range []string{"deployment.apps/router-hosts-operator", "clusterrole.rbac.authorization.k8s.io/router-hosts-operator", "customresourcedefinition.apiextensions.k8s.io/hostmappings.router-hosts.fzymgc.house"} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("%s: apply output lacks %s:\n%s", dir, want, out)
			}
		}
	}
}

// freeAddr is a loopback address nothing listened on a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := testharness.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// lockedLog is a log a test reads while something else still writes it.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

// logText is what has been logged so far.
func (l *lockedLog) logText() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// process is the operator binary running in the background; its log may be read while it runs.
type process struct {
	lockedLog
	cmd  *exec.Cmd
	addr string
}

func startOperator(t *testing.T, h *harness, kubeconfigPath string, args ...string) *process {
	t.Helper()
	return startOperatorEnv(t, h, map[string]string{"KUBECONFIG": kubeconfigPath}, args...)
}

// startOperatorEnv starts the binary against h's server (operatorEnv), with env replacing
// single variables (e.g. ROUTER_HOSTS_OPERATOR_TLS_CERT), and waits for /healthz.
func startOperatorEnv(t *testing.T, h *harness, env map[string]string, args ...string) *process {
	t.Helper()
	var vars []string
	for _, e := range operatorEnv(h) {
		if k, _, _ := strings.Cut(e, "="); env[k] == "" {
			vars = append(vars, e)
		}
	}
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	return startProcess(t, vars, args...)
}

// startProcess starts the binary with exactly the environment vars, and waits for /healthz.
func startProcess(t *testing.T, vars []string, args ...string) *process {
	t.Helper()
	p := &process{addr: freeAddr(t)}
	p.cmd = exec.Command(operatorBin, append([]string{"--metrics-address=" + p.addr, "--log-level=debug"}, args...)...)
	p.cmd.Env = vars
	p.cmd.Stdout, p.cmd.Stderr = &p.lockedLog, &p.lockedLog
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("operator at %s logged:\n%s", p.addr, p.logText())
		}
	})
	waitFor(t, 30*time.Second, func() bool { _, err := p.get("/healthz"); return err == nil })
	return p
}

func (p *process) get(path string) (string, error) {
	resp, err := http.Get("http://" + p.addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		b.WriteString(s.Text() + "\n")
	}
	if resp.StatusCode != http.StatusOK {
		return b.String(), fmt.Errorf("%s: %s: %s", path, resp.Status, b.String())
	}
	return b.String(), nil
}

// metric returns the sum of the samples of name whose labels contain every labels string.
func (p *process) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	body, err := p.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func TestMetricsAndReadiness(t *testing.T) {
	h := newHarness(t, options{})
	seed(t, h, endpoint.Record{Hostname: "theirs.lan", IP: "10.40.9.9", Tags: []string{"k8s-operator", "cluster:other"}})
	p := startOperator(t, h, kubeconfig, "--interval=1s", "--grace-period=2s", "--min-event-sync-interval=100ms")
	ing := h.create(ingress(h.ns, "web", enabled("ip-address", "10.40.0.1"), "web.lan"))
	waitFor(t, 10*time.Second, func() bool { return p.metric(t, "router_hosts_operator_changes_total", `action="create"`) == 1 })
	if v := p.metric(t, "router_hosts_operator_synced_entries", `namespace="`+h.ns+`"`, `kind="Ingress"`, `cluster="test"`); v != 1 {
		t.Errorf("synced_entries = %v, want 1", v)
	}
	for _, m := range []string{"router_hosts_operator_server_connected", "router_hosts_operator_is_leader", "router_hosts_operator_foreign_entries"} {
		if v := p.metric(t, m); v != 1 {
			t.Errorf("%s = %v, want 1", m, v)
		}
	}
	if p.metric(t, "go_goroutines") == 0 || p.metric(t, "process_resident_memory_bytes") == 0 {
		t.Error("the Go and process collectors are missing")
	}
	if v := p.metric(t, "router_hosts_operator_source_endpoints", `source="ingress"`); v != 1 {
		t.Errorf("source_endpoints = %v", v)
	}
	// No-op syncs: more syncs, no more changes, a fresh last-sync time. Two more syncs at
	// least, as two intervals give; the timestamp counts whole seconds.
	syncs := p.metric(t, "router_hosts_operator_sync_duration_seconds_count")
	last := p.metric(t, "router_hosts_operator_last_sync_timestamp_seconds")
	if !eventually(10*time.Second, func() bool {
		return p.metric(t, "router_hosts_operator_sync_duration_seconds_count") >= syncs+2 && p.metric(t, "router_hosts_operator_last_sync_timestamp_seconds") > last
	}) {
		t.Error("no-op syncs did not show in sync_duration_seconds or last_sync_timestamp_seconds")
	}
	if v := p.metric(t, "router_hosts_operator_changes_total"); v != 1 {
		t.Errorf("changes_total = %v after no-op syncs, want still 1", v)
	}
	// Delete: marked (pending 1), then deleted after 2 s (pending 0).
	h.delete(ing)
	waitFor(t, 10*time.Second, func() bool {
		return p.metric(t, "router_hosts_operator_changes_total", `action="mark"`) == 1 && p.metric(t, "router_hosts_operator_pending_deletions") == 1
	})
	waitFor(t, 10*time.Second, func() bool {
		return p.metric(t, "router_hosts_operator_changes_total", `action="delete"`) == 1 && p.metric(t, "router_hosts_operator_pending_deletions") == 0
	})
	for _, path := range []string{"/readyz", "/routerz"} {
		if _, err := p.get(path); err != nil {
			t.Fatalf("%s with the server up: %v", path, err)
		}
	}
	// A router outage is the router's: /routerz and the metrics say so, the pod stays Ready.
	h.srv.Stop()
	waitFor(t, 10*time.Second, func() bool {
		body, err := p.get("/routerz")
		return err != nil && strings.Contains(body, "router-hosts not reachable")
	})
	waitFor(t, 10*time.Second, func() bool {
		return p.metric(t, "router_hosts_operator_server_connected") == 0 && p.metric(t, "router_hosts_operator_sync_errors_total", `reason="list"`) >= 1
	})
	if body, err := p.get("/readyz"); err != nil || !strings.HasPrefix(body, "ok") {
		t.Fatalf("/readyz during the router's outage: %q %v; readiness is the process's, not the router's", body, err)
	}
	if err := h.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, func() bool { _, err := p.get("/routerz"); return err == nil })
	if _, err := p.get("/healthz"); err != nil {
		t.Fatalf("healthz: %v", err)
	}
}

// TestRouterzAsksTheLoopNotTheRouter: /routerz answers from what the syncs learnt, so a burst
// of requests makes no call to router-hosts; it tells an outage the loop met, and the router
// answering again, with their age.
func TestRouterzAsksTheLoopNotTheRouter(t *testing.T) {
	h := newHarness(t, options{})
	// An hour's interval: nothing calls the router between the test's own changes.
	p := startOperator(t, h, kubeconfig, "--interval=1h", "--min-event-sync-interval=100ms")
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.44.0.1"), "web.routerz.lan"))
	waitFor(t, 10*time.Second, func() bool { return len(h.entries("web.routerz.lan")) == 1 })
	waitFor(t, 10*time.Second, func() bool { _, err := p.get("/routerz"); return err == nil })

	before := h.srv.Service().CallCounts()
	for i := 0; i < 200; i++ {
		body, err := p.get("/routerz")
		if err != nil || !strings.HasPrefix(body, "ok (answered ") {
			t.Fatalf("/routerz with the router up: %q %v", body, err)
		}
	}
	if after := h.srv.Service().CallCounts(); !maps.Equal(before, after) {
		t.Fatalf("200 requests to /routerz called the router: %v before, %v after", before, after)
	}
	if n := h.srv.Service().Calls(inmemory.MethodReadiness); n != 0 {
		t.Fatalf("the router served %d Readiness calls; /routerz must answer from the loop", n)
	}

	// The router goes away; the next change meets the outage, and /routerz tells it.
	h.srv.Stop()
	h.create(ingress(h.ns, "late", enabled("ip-address", "10.44.0.2"), "late.routerz.lan"))
	var body string
	waitFor(t, 15*time.Second, func() bool {
		var err error
		body, err = p.get("/routerz")
		return err != nil && strings.HasPrefix(body, "router-hosts not reachable since ") && strings.Contains(body, "last answered")
	})
	t.Logf("/routerz: %s", strings.TrimSpace(body))
	if err := h.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool {
		body, err := p.get("/routerz")
		return err == nil && strings.HasPrefix(body, "ok (answered ")
	})
	waitFor(t, 10*time.Second, func() bool { return len(h.entries("late.routerz.lan")) == 1 })
}

func TestLeaderElectionHandover(t *testing.T) {
	h := newHarness(t, options{})
	// A short interval: the new leader never saw one.lan wanted, so its mark waits three whole
	// reads for a twin to lift it (docs/ownership.md, twins) before the deletion falls due.
	args := []string{"--leader-elect", "--leader-election-namespace=" + h.ns, "--leader-election-id=op", "--interval=3s", "--grace-period=3s"}
	a := startOperator(t, h, kubeconfig, args...)
	b := startOperator(t, h, kubeconfig, args...)
	one := h.create(ingress(h.ns, "one", enabled("ip-address", "10.41.0.1"), "one.lan"))
	waitFor(t, 20*time.Second, func() bool { return len(h.entries("one.lan")) == 1 })
	leader, standby := a, b
	if b.metric(t, "router_hosts_operator_is_leader") == 1 {
		leader, standby = b, a
	}
	if leader.metric(t, "router_hosts_operator_is_leader") != 1 || standby.metric(t, "router_hosts_operator_is_leader") != 0 {
		t.Fatal("want exactly one leader")
	}
	if standby.metric(t, "router_hosts_operator_changes_total") != 0 || standby.metric(t, "router_hosts_operator_sync_duration_seconds_count") != 0 {
		t.Fatal("the standby synced or wrote")
	}
	// The leader marks one.lan for deletion; the grace period ends after it is gone.
	h.delete(one)
	waitFor(t, 10*time.Second, func() bool {
		e := h.entries("one.lan")
		if len(e) != 1 {
			return false
		}
		_, marked := e[0].TagValue("pending-deletion:")
		return marked
	})
	// Graceful shutdown of the leader releases the Lease; the standby takes over.
	start := time.Now()
	_ = leader.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, 10*time.Second, func() bool { return standby.metric(t, "router_hosts_operator_is_leader") == 1 })
	handover := time.Since(start)
	t.Logf("handover after SIGTERM took %v", handover)
	if handover > 5*time.Second {
		t.Fatalf("handover took %v, want under 5 s", handover)
	}
	// The new leader finishes the pending deletion, and takes new work.
	waitFor(t, 30*time.Second, func() bool { return len(h.entries("one.lan")) == 0 })
	h.create(ingress(h.ns, "two", enabled("ip-address", "10.41.0.2"), "two.lan"))
	waitFor(t, 10*time.Second, func() bool { return len(h.entries("two.lan")) == 1 })
	// A handover is no twin: the new leader rewrote entries the old one wrote, and says nothing
	// of another writer.
	if v := standby.metric(t, "router_hosts_operator_twin_entries"); v != 0 || strings.Contains(standby.logText(), "TwinInstallation") {
		t.Fatalf("the handover was taken for a twin: twin_entries %v\n%s", v, standby.logText())
	}
}

// TestKustomizeRBACIsSufficient runs the operator as the kustomize ServiceAccount, bound by
// exactly the kustomize ClusterRole and Role, through a create/update/delete cycle of every
// source, and checks it can do nothing else.
func TestKustomizeRBACIsSufficient(t *testing.T) {
	ensureNamespace(t, operatorNS)
	installGatewayAPI(t, cp)
	manifests, err := kubetest.Kustomize(filepath.Join(repoRoot(), "kustomize"))
	if err != nil {
		t.Fatal(err)
	}
	// Apply only the RBAC objects for real.
	var rbac []string
	for _, doc := range strings.Split(string(manifests), "\n---\n") {
		if strings.Contains(doc, "kind: ServiceAccount") || strings.Contains(doc, "rbac.authorization.k8s.io") {
			rbac = append(rbac, doc)
		}
	}
	kubectl(t, []byte(strings.Join(rbac, "\n---\n")), "apply", "--server-side", "-f", "-")

	// A kubeconfig that impersonates the ServiceAccount.
	saConfig, rc := impersonating(t, "system:serviceaccount:"+operatorNS+":router-hosts-operator")
	asSA := kubernetes.NewForConfigOrDie(rc)
	// No broader than needed: nothing outside the role works.
	if _, err := asSA.CoreV1().Secrets(operatorNS).List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets as the operator: %v, want Forbidden", err)
	}
	if _, err := asSA.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing Pods as the operator: %v, want Forbidden", err)
	}
	if _, err := asSA.NetworkingV1().Ingresses("default").Create(context.Background(), ingress("default", "x", nil, "x.lan"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("creating an Ingress as the operator: %v, want Forbidden", err)
	}

	h := newHarness(t, options{})
	// The RouterHostsConfig route: the server and its mTLS Secret come from the config, read
	// under the role. The files the flags name hold a certificate the server refuses, so
	// nothing works unless the Secret is read.
	secrets := cp.Client.CoreV1().Secrets(operatorNS)
	data := map[string][]byte{}
	for k, f := range map[string]string{"ca.crt": h.srv.CAFile(), "tls.crt": h.srv.CertFile(), "tls.key": h.srv.KeyFile()} {
		if data[k], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"router-hosts-mtls", "another-secret"} {
		_ = secrets.Delete(context.Background(), name, metav1.DeleteOptions{})
		if _, err := secrets.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := asSA.CoreV1().Secrets(operatorNS).Get(context.Background(), "another-secret", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading another Secret as the operator: %v, want Forbidden", err)
	}
	if _, err := createConfig(t, "apiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: RouterHostsConfig\nmetadata: {name: rbac-test}\nspec:\n  server:\n    endpoint: \""+
		h.srv.Addr()+"\"\n    tlsSecretRef: {name: router-hosts-mtls, namespace: "+operatorNS+"}\n", false); err != nil {
		t.Fatal(err)
	}
	foreignCert, foreignKey, err := rhtestserver.WriteForeignClientCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The Role grants one Lease by name: the one kustomize's Deployment elects its leader on.
	leaseID := ""
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(docs(t, manifests)["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		if id, ok := strings.CutPrefix(a, "--leader-election-id="); ok {
			leaseID = id
		}
	}
	if leaseID == "" {
		t.Fatal("kustomize's Deployment passes no --leader-election-id")
	}
	leases := asSA.CoordinationV1().Leases(operatorNS)
	if _, err := leases.Get(context.Background(), "another-lease", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading another Lease as the operator: %v, want Forbidden", err)
	}
	op := startOperatorEnv(t, h, map[string]string{"KUBECONFIG": saConfig, "ROUTER_HOSTS_OPERATOR_TLS_CERT": foreignCert, "ROUTER_HOSTS_OPERATOR_TLS_KEY": foreignKey},
		"--source=ingress", "--source=traefik", "--source=hostmapping", "--source=service", "--source=gateway", "--leader-elect",
		"--leader-election-namespace="+operatorNS, "--leader-election-id="+leaseID, "--grace-period=1s",
		"--interval=2s", "--min-event-sync-interval=100ms", "--config-name=rbac-test")
	dyn := dynamic.NewForConfigOrDie(cp.Config)

	ing := h.create(ingress(h.ns, "web", enabled("ip-address", "10.42.0.1"), "web.lan"))
	ir := h.route(irNew, "route", enabled("ip-address", "10.42.0.2"), "Host(`route.lan`)")
	h.hostMapping("hm", map[string]any{"hostname": "hm.lan", "ipAddress": "10.42.0.3"})
	svc := h.service("svc", corev1.ServiceTypeClusterIP, enabled("hostname", "svc.lan"), "10.42.0.4")
	gw := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}
	h.gwObj(gwGVR, "Gateway", "gw", nil, map[string]any{"gatewayClassName": "example", "listeners": []any{
		map[string]any{"name": "web", "protocol": "HTTP", "port": int64(80)}}}, addresses("10.42.0.5"))
	rt := h.gwObj(httpGVR, "HTTPRoute", "rt", enabled(), map[string]any{"hostnames": strs("gw.lan"), "parentRefs": []any{gw}}, parents(true, gw))
	waitFor(t, 20*time.Second, func() bool {
		return len(h.entries("web.lan")) == 1 && len(h.entries("route.lan")) == 1 && len(h.entries("hm.lan")) == 1 && len(h.entries("svc.lan")) == 1 &&
			len(h.entries("gw.lan")) == 1
	})
	// The config's status is written under the role too.
	waitFor(t, 10*time.Second, func() bool {
		st, _ := configStatus(t, "rbac-test")
		return condition(st, v1alpha1.ConditionReady).Status == metav1.ConditionTrue && st.Entries > 0
	})
	// Status written (hostmappings/status) and events created under the role.
	waitFor(t, 10*time.Second, func() bool {
		synced, _, _ := unstructured.NestedBool(h.getHM("hm").Object, "status", "synced")
		return synced
	})
	waitFor(t, 10*time.Second, func() bool {
		evs, err := cp.Client.CoreV1().Events(h.ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(evs.Items) > 0
	})

	// Update each.
	h.update(ing, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.42.1.1" })
	ir.SetAnnotations(enabled("ip-address", "10.42.1.2"))
	if _, err := dyn.Resource(irNew).Namespace(h.ns).Update(context.Background(), ir, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	hm := h.getHM("hm")
	_ = unstructured.SetNestedField(hm.Object, "10.42.1.3", "spec", "ipAddress")
	if _, err := h.hmClient().Update(context.Background(), hm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc.Spec.ExternalIPs = []string{"10.42.1.4"}
	svc = h.updateService(svc)
	rt, err = dyn.Resource(httpGVR).Namespace(h.ns).Get(context.Background(), rt.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt.SetAnnotations(enabled("ip-address", "10.42.1.5"))
	if _, err := dyn.Resource(httpGVR).Namespace(h.ns).Update(context.Background(), rt, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool {
		a, b, c, d, e := h.entries("web.lan"), h.entries("route.lan"), h.entries("hm.lan"), h.entries("svc.lan"), h.entries("gw.lan")
		return len(a) == 1 && a[0].IP == "10.42.1.1" && len(b) == 1 && b[0].IP == "10.42.1.2" && len(c) == 1 && c[0].IP == "10.42.1.3" &&
			len(d) == 1 && d[0].IP == "10.42.1.4" && len(e) == 1 && e[0].IP == "10.42.1.5"
	})

	// Delete each: gone after the 1 s grace period.
	h.delete(ing)
	if err := dyn.Resource(irNew).Namespace(h.ns).Delete(context.Background(), "route", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.hmClient().Delete(context.Background(), "hm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.cp.Client.CoreV1().Services(h.ns).Delete(context.Background(), svc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(httpGVR).Namespace(h.ns).Delete(context.Background(), "rt", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool {
		return len(h.entries("web.lan"))+len(h.entries("route.lan"))+len(h.entries("hm.lan"))+len(h.entries("svc.lan"))+len(h.entries("gw.lan")) == 0
	})
	if strings.Contains(strings.ToLower(op.logText()), "forbidden") {
		t.Fatalf("the operator hit a permission error:\n%s", op.logText())
	}
}

// TestARouterOutageKeepsThePodReady: while router-hosts is down the pod stays Ready (readiness
// is the process's: a router outage must not stall rollouts, helm --wait or GitOps health),
// and the outage shows where an operator looks: the RouterHostsConfig's ServerReachable
// condition, server_connected and /routerz; all of them clear when the router answers again.
func TestARouterOutageKeepsThePodReady(t *testing.T) {
	h := newHarness(t, options{})
	name := "it-outage"
	h.mtlsSecret("router-hosts-mtls", h.srv.CertFile(), h.srv.KeyFile())
	doc := fmt.Sprintf(`apiVersion: router-hosts.fzymgc.house/v1alpha1
kind: RouterHostsConfig
metadata: {name: %s}
spec:
  server:
    endpoint: %q
    tlsSecretRef: {name: router-hosts-mtls, namespace: %s}
`, name, h.srv.Addr(), h.ns)
	if _, err := createConfig(t, doc, false); err != nil {
		t.Fatal(err)
	}
	p := startOperator(t, h, kubeconfig, "--config-name="+name, "--interval=1s")
	reachable := func() metav1.Condition {
		st, _ := configStatus(t, name)
		return condition(st, v1alpha1.ConditionServerReachable)
	}
	waitFor(t, 15*time.Second, func() bool { return reachable().Status == metav1.ConditionTrue })

	h.srv.Stop()
	waitFor(t, 15*time.Second, func() bool {
		c := reachable()
		return c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonUnreachable && p.metric(t, "router_hosts_operator_server_connected") == 0
	})
	if body, err := p.get("/routerz"); err == nil || !strings.Contains(body, "router-hosts not reachable") {
		t.Errorf("/routerz during the outage: %q %v", body, err)
	}
	// Ready all through: probed as the kubelet would, every 200 ms for 3 s.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if body, err := p.get("/readyz"); err != nil || !strings.HasPrefix(body, "ok (leader)") {
			t.Fatalf("/readyz during the router's outage: %q %v", body, err)
		}
	}

	if err := h.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, func() bool {
		return reachable().Status == metav1.ConditionTrue && p.metric(t, "router_hosts_operator_server_connected") == 1
	})
	if _, err := p.get("/routerz"); err != nil {
		t.Errorf("/routerz after the outage: %v", err)
	}
}

// TestUninstallingLeavesTheEntries: the README's "Uninstalling". With the operator gone, its
// entries stay exactly as they are, even for objects deleted afterwards (only a running
// operator deletes), and nothing waits for it: its objects carry no finalizer, so they go at
// once.
func TestUninstallingLeavesTheEntries(t *testing.T) {
	h := newHarness(t, options{})
	p := startOperator(t, h, kubeconfig, "--source=ingress", "--source=hostmapping", "--grace-period=1s", "--interval=1s", "--min-event-sync-interval=100ms")
	ing := h.create(ingress(h.ns, "web", enabled("ip-address", "10.43.0.1"), "web.uninstall.lan"))
	hm := h.hostMapping("nas", map[string]any{"hostname": "nas.uninstall.lan", "ipAddress": "10.43.0.2"})
	waitFor(t, 10*time.Second, func() bool {
		return len(h.entries("web.uninstall.lan")) == 1 && len(h.entries("nas.uninstall.lan")) == 1
	})
	before := map[string]endpoint.Record{"web.uninstall.lan": h.one("web.uninstall.lan"), "nas.uninstall.lan": h.one("nas.uninstall.lan")}

	// helm uninstall: the pods get SIGTERM and go.
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("the operator exited with %v after SIGTERM", err)
	}
	writes := h.srv.Service().WriteCalls()
	ctx := context.Background()
	cur, err := h.cp.Client.NetworkingV1().Ingresses(h.ns).Get(ctx, ing.Name, metav1.GetOptions{})
	if err != nil || len(cur.Finalizers) != 0 || len(hm.GetFinalizers()) != 0 || len(h.getHM("nas").GetFinalizers()) != 0 {
		t.Fatalf("finalizers on the operator's objects: Ingress %v (%v), HostMapping %v", cur.Finalizers, err, h.getHM("nas").GetFinalizers())
	}
	if err := h.cp.Client.NetworkingV1().Ingresses(h.ns).Delete(ctx, ing.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.hmClient().Delete(ctx, "nas", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() bool {
		_, err1 := h.cp.Client.NetworkingV1().Ingresses(h.ns).Get(ctx, ing.Name, metav1.GetOptions{})
		_, err2 := h.hmClient().Get(ctx, "nas", metav1.GetOptions{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2)
	})
	time.Sleep(3 * time.Second) // an absence has no signal: three grace periods and intervals of the operator that is gone
	for host, was := range before {
		if now := h.one(host); now.ID != was.ID || now.Version != was.Version || now.IP != was.IP || !slices.Equal(now.Tags, was.Tags) {
			t.Errorf("%s changed with the operator gone: %+v, was %+v", host, now, was)
		}
	}
	if n := h.srv.Service().WriteCalls() - writes; n != 0 {
		t.Errorf("the router took %d writes with the operator gone", n)
	}
}
