package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	networkingv1 "k8s.io/api/networking/v1"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
)

func TestServerDownFailsSyncDeletesNothingAndConverges(t *testing.T) {
	h := newHarness(t, options{grace: time.Second})
	h.create(ingress(h.ns, "one", enabled("ip-address", "10.10.0.1"), "one.lan"))
	h.waitHost("one.lan", "10.10.0.1")
	h.sync()

	h.srv.Stop()
	two := h.create(ingress(h.ns, "two", enabled("ip-address", "10.10.0.2"), "two.lan"))
	h.waitHost("two.lan", "10.10.0.2")
	h.clock.Step(time.Hour)
	if _, err := h.ctrl.SyncOnce(context.Background()); err == nil {
		t.Fatal("sync succeeded with the server down")
	}
	if err := h.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Converges once the server is back (the client reconnects by itself).
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := h.ctrl.SyncOnce(context.Background())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no convergence after restart: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(h.entries("one.lan")) != 1 || len(h.entries("two.lan")) != 1 {
		t.Fatalf("after recovery: one.lan %d entries, two.lan %d", len(h.entries("one.lan")), len(h.entries("two.lan")))
	}
	_ = two
}

// failingSource is a source whose reads fail, as an informer does that lost its apiserver.
type failingSource struct{ fail atomic.Bool }

func (f *failingSource) Endpoints(context.Context) ([]*endpoint.Endpoint, error) {
	if f.fail.Load() {
		return nil, errors.New("informer cache not synced: connection refused")
	}
	return nil, nil
}
func (f *failingSource) AddEventHandler(func()) {}

func TestFailingSourceNeverDeletes(t *testing.T) {
	bad := &failingSource{}
	h := newHarness(t, options{grace: time.Second, extraSources: []controller.EndpointSource{bad}})
	ing := h.create(ingress(h.ns, "web", enabled("ip-address", "10.11.0.1"), "web.lan"))
	h.waitHost("web.lan", "10.11.0.1")
	h.sync()

	bad.fail.Store(true)
	h.delete(ing) // the good source now wants nothing; the failing one answers nothing
	h.waitGone("web.lan")
	h.srv.Service().ResetCalls()
	for i := 0; i < 3; i++ {
		h.clock.Step(time.Hour)
		if _, err := h.ctrl.SyncOnce(context.Background()); err == nil {
			t.Fatal("sync succeeded although a source failed")
		}
	}
	if h.srv.Service().Calls("ListHosts") != 0 {
		t.Fatal("the sync went on to read the server after a source failed")
	}
	if h.writes() != 0 || len(h.entries("web.lan")) != 1 {
		t.Fatalf("a failing source led to %d writes; web.lan has %d entries", h.writes(), len(h.entries("web.lan")))
	}
}

// operatorEnv is the environment for running the binary against h's server and namespace.
func operatorEnv(h *harness) []string {
	return append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT="+h.srv.Addr(),
		"ROUTER_HOSTS_OPERATOR_TLS_CA="+h.srv.CAFile(),
		"ROUTER_HOSTS_OPERATOR_TLS_CERT="+h.srv.CertFile(),
		"ROUTER_HOSTS_OPERATOR_TLS_KEY="+h.srv.KeyFile(),
		"ROUTER_HOSTS_OPERATOR_NAMESPACE="+h.ns,
		"ROUTER_HOSTS_OPERATOR_CLUSTER_NAME=test",
	)
}

func TestBinaryDryRunWritesNothingThenOnceSyncs(t *testing.T) {
	h := newHarness(t, options{})
	seed(t, h, endpoint.Record{Hostname: "old.lan", IP: "10.12.0.9", Tags: []string{"k8s-operator", "cluster:test"}})
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.12.0.1"), "web.lan"))
	h.waitHost("web.lan", "10.12.0.1")
	h.srv.Service().ResetCalls()

	var stdout bytes.Buffer
	cmd := exec.Command(operatorBin, "--once", "--dry-run")
	cmd.Env, cmd.Stdout, cmd.Stderr = operatorEnv(h), &stdout, testWriter{t}
	if err := cmd.Run(); err != nil {
		t.Fatalf("--once --dry-run: %v", err)
	}
	if h.writes() != 0 {
		t.Fatalf("--dry-run made %d write RPCs", h.writes())
	}
	out := stdout.String()
	if !strings.Contains(out, "create  web.lan 10.12.0.1") || !strings.Contains(out, "mark    old.lan 10.12.0.9") {
		t.Fatalf("dry-run output lacks the create and mark lines:\n%s", out)
	}
	t.Logf("dry-run output:\n%s", out)

	cmd = exec.Command(operatorBin, "--once")
	cmd.Env, cmd.Stderr = operatorEnv(h), testWriter{t}
	if err := cmd.Run(); err != nil {
		t.Fatalf("--once: %v", err)
	}
	if len(h.entries("web.lan")) != 1 {
		t.Fatal("--once did not create web.lan")
	}

	// --once exits non-zero when the sync fails.
	h.srv.Stop()
	cmd = exec.Command(operatorBin, "--once", "--request-timeout=2s")
	cmd.Env, cmd.Stderr = operatorEnv(h), testWriter{t}
	if err := cmd.Run(); err == nil {
		t.Fatal("--once exited 0 with the server down")
	}
}

func TestBinaryRejectsBadFlagsByName(t *testing.T) {
	for flag, arg := range map[string]string{
		"--ip-resolution":  "--ip-resolution=dns:foo",
		"--policy":         "--policy=delete-all",
		"--log-format":     "--log-format=xml",
		"--interval":       "--interval=soon",
		"--kube-api-qps":   "--kube-api-qps=fast",
		"--kube-api-burst": "--kube-api-burst=0",
	} {
		cmd := exec.Command(operatorBin, "--provider=inmemory", arg)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil {
			t.Errorf("%s was accepted", arg)
		} else if !strings.Contains(stderr.String(), strings.TrimPrefix(flag, "--")) {
			t.Errorf("%s: error does not name the flag: %s", arg, stderr.String())
		}
	}
}

func TestBinaryHelpListsEveryFlagWithEnvVar(t *testing.T) {
	out, err := exec.Command(operatorBin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	for _, f := range []string{"source", "provider", "router-hosts-endpoint", "tls-ca", "tls-cert", "tls-key", "tls-server-name",
		"cluster-name", "ip-resolution", "grace-period", "default-tag", "policy", "interval", "min-event-sync-interval",
		"once", "dry-run", "namespace", "kubeconfig", "log-level", "log-format", "version", "write-concurrency",
		"request-timeout", "domain-filter", "exclude-domains", "label-filter", "default-tag", "metrics-address",
		"leader-elect", "leader-election-namespace", "leader-election-id", "kube-api-qps", "kube-api-burst", "config-name", "webhook-address"} {
		if !strings.Contains(string(out), "--"+f) && !strings.Contains(string(out), "--[no-]"+f) {
			t.Errorf("--help lacks --%s", f)
		}
		env := "ROUTER_HOSTS_OPERATOR_" + strings.ToUpper(strings.ReplaceAll(f, "-", "_"))
		if f != "version" && !strings.Contains(strings.Join(strings.Fields(string(out)), ""), env) {
			t.Errorf("--help lacks $%s", env)
		}
	}
}

func TestContinuousModeReflectsAChangeWithinASecond(t *testing.T) {
	h := newHarness(t, options{})
	ing := h.create(ingress(h.ns, "live", enabled("ip-address", "10.13.0.1"), "live.lan"))
	// The sync flags are the defaults: --interval=1m, --min-event-sync-interval=1s.
	p := &process{addr: freeAddr(t)}
	cmd := exec.Command(operatorBin, "--metrics-address="+p.addr)
	cmd.Env, cmd.Stderr = operatorEnv(h), testWriter{t}
	p.cmd = cmd
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitFor(t, 30*time.Second, func() bool { return len(h.entries("live.lan")) == 1 })
	waitIdle(t, p, time.Second)

	var worst time.Duration
	for i, ip := range []string{"10.13.0.2", "10.13.0.3", "10.13.0.4"} {
		start := time.Now()
		h.update(ing, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = ip })
		waitFor(t, 5*time.Second, func() bool { e := h.entries("live.lan"); return len(e) == 1 && e[0].IP == ip })
		d := time.Since(start)
		t.Logf("change %d reflected on the server after %v", i, d)
		if d > worst {
			worst = d
		}
		waitIdle(t, p, time.Second)
	}
	if worst > time.Second {
		t.Fatalf("slowest change took %v, want under 1 s", worst)
	}

	// SIGTERM: the process exits promptly and cleanly.
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("operator did not exit within 10 s of SIGINT")
	}
}

func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	if !eventually(limit, cond) {
		t.Fatalf("condition not met within %v", limit)
	}
}

// waitIdle waits until no sync of p's has ended for spacing, its --min-event-sync-interval, by
// its sync count: a change made then starts a sync at once. The spacing itself is the
// operator's rate limit, a time by definition.
func waitIdle(t *testing.T, p *process, spacing time.Duration) {
	t.Helper()
	count := func() float64 { return p.metric(t, "router_hosts_operator_sync_duration_seconds_count") }
	waitFor(t, 30*time.Second, func() bool { _, err := p.get("/healthz"); return err == nil })
	syncs, since := count(), time.Now()
	waitFor(t, 30*time.Second, func() bool {
		if n := count(); n != syncs {
			syncs, since = n, time.Now()
		}
		return time.Since(since) >= spacing
	})
}

// eventually reports whether cond holds within limit.
func eventually(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func TestHandEditsOfOwnedEntriesAreRestored(t *testing.T) {
	h := newHarness(t, options{})
	h.create(ingress(h.ns, "app", enabled("ip-address", "10.14.0.1"), "app.lan"))
	h.create(ingress(h.ns, "db", enabled("ip-address", "10.14.0.2"), "db.lan"))
	h.waitHost("app.lan", "10.14.0.1")
	h.waitHost("db.lan", "10.14.0.2")
	h.sync()
	app, db := h.one("app.lan"), h.one("db.lan")
	// Someone changes app.lan's IP and deletes db.lan by hand.
	if _, err := h.srv.Store().Update(&pb.UpdateHostRequest{Id: app.ID, ExpectedVersion: proto.String(app.Version), IpAddress: proto.String("10.99.0.1")}); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Store().Delete(db.ID, nil); err != nil {
		t.Fatal(err)
	}
	h.sync()
	if got := h.one("app.lan"); got.IP != "10.14.0.1" || got.ID != app.ID {
		t.Fatalf("app.lan = %+v, want its IP restored in place", got)
	}
	if got := h.one("db.lan"); got.IP != "10.14.0.2" {
		t.Fatalf("db.lan = %+v, want it recreated", got)
	}
}

func TestConcurrentWriterAbortedThenConverges(t *testing.T) {
	h := newHarness(t, options{})
	app := h.movedAfterSync("app", "app.lan", "10.15.0.1", "10.15.0.2")
	// Between the operator's ListHosts and its UpdateHost, another writer edits the entry.
	h.editBeforeFirstUpdate(app, &pb.UpdateHostRequest{Comment: proto.String("edited meanwhile")})
	h.srv.Service().ResetCalls()
	if rep := h.sync(); !rep.Again || len(rep.Failed) != 0 {
		t.Fatalf("again %v, failed %v; want a sync at once and no failure reported", rep.Again, rep.Failed)
	}
	if got := h.one("app.lan"); got.IP != "10.15.0.1" || got.Comment != "edited meanwhile" {
		t.Fatalf("after the conflict: %+v; want the entry as the other writer left it", got)
	}
	if c := h.srv.Service().CallCounts(); c["UpdateHost"] != 1 || c["GetHost"] != 0 {
		t.Fatalf("calls = %v, want the Aborted update alone: no re-read, no retry", c)
	}
	// The sync that follows reads the whole server and writes the move on the entry as it is
	// now, with the comment the operator owns; then all is quiet.
	h.srv.Service().ResetCalls()
	if rep := h.sync(); rep.Read != planner.ReadServer || rep.Again {
		t.Fatalf("the sync after the conflict read %s, again %v; want the whole server read and nothing more at once", rep.Read, rep.Again)
	}
	if got := h.one("app.lan"); got.IP != "10.15.0.2" || got.ID != app.ID || got.Comment == "edited meanwhile" {
		t.Fatalf("after the fresh read: %+v; want the move written on the same entry, the comment the operator's", got)
	}
	if c := h.srv.Service().CallCounts(); c["UpdateHost"] != 1 {
		t.Fatalf("calls = %v, want one UpdateHost", c)
	}
	h.srv.Service().ResetCalls()
	h.sync()
	if h.writes() != 0 {
		t.Fatalf("not converged: %d writes on the third sync", h.writes())
	}
}
