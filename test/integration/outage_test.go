package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// createMany creates n opted-in Ingresses, one hostname each.
func (h *harness) createMany(n int) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		h.create(ingress(h.ns, fmt.Sprintf("app-%03d", i), enabled("ip-address", fmt.Sprintf("10.50.%d.%d", i/250, i%250+1)), fmt.Sprintf("app-%03d.lan", i)))
	}
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return len(eps) == n })
}

// exactlyOnePerHost fails unless the server holds exactly n entries, one per hostname.
func (h *harness) exactlyOnePerHost(n int) {
	h.t.Helper()
	recs, err := h.prov.Records(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	perHost := map[string]int{}
	for _, r := range recs {
		perHost[r.Hostname]++
	}
	if len(recs) != n || len(perHost) != n {
		h.t.Fatalf("server holds %d entries for %d hostnames, want %d and %d", len(recs), len(perHost), n, n)
	}
}

func TestServerStoppedMidApplyConverges(t *testing.T) {
	const n = 300
	h := newHarness(t, options{})
	h.createMany(n)
	var adds atomic.Int64
	h.srv.Service().SetBefore(func(m string) error {
		if m == inmemory.MethodAdd && adds.Add(1) == 100 {
			go h.srv.Stop() // the router goes away a third of the way through
			return status.Error(codes.Unavailable, "server stopping")
		}
		return nil
	})
	if _, err := h.ctrl.SyncOnce(context.Background()); err == nil {
		t.Fatal("sync succeeded although the server stopped during it")
	}
	partial := h.srv.Store().Len()
	h.srv.Service().SetBefore(nil)
	if err := h.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := h.ctrl.SyncOnce(context.Background()); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no convergence: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.exactlyOnePerHost(n)
	t.Logf("%d of %d entries were written before the stop; converged after restart", partial, n)
	h.srv.Service().ResetCalls()
	h.sync()
	if h.writes() != 0 {
		t.Fatalf("not converged: %d writes after convergence", h.writes())
	}
}

func TestOperatorKilledMidApplyNewInstanceConverges(t *testing.T) {
	const n = 300
	h := newHarness(t, options{})
	h.createMany(n)
	// A slow router, so the kill lands in the middle of the apply.
	h.srv.Service().SetBefore(func(m string) error {
		if m == inmemory.MethodAdd {
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	})
	first := startOperator(t, h, kubeconfig, "--write-concurrency=1")
	waitFor(t, 30*time.Second, func() bool { return h.srv.Store().Len() >= 100 })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	killedAt := h.srv.Store().Len()
	if killedAt >= n {
		t.Fatalf("the apply finished before the kill (%d entries); the test proves nothing", killedAt)
	}
	h.srv.Service().SetBefore(nil)
	startOperator(t, h, kubeconfig)
	waitFor(t, 30*time.Second, func() bool { return h.srv.Store().Len() >= n })
	time.Sleep(500 * time.Millisecond)
	h.exactlyOnePerHost(n)
	t.Logf("killed with %d of %d entries written; the new instance converged", killedAt, n)
}

// TestARouterBackFromAnOutageIsSyncedAtOnce: router-hosts is down for 16 s while an Ingress
// changes, so the operator's syncs fail and back off (1, 2, 4, 8 s: its next attempt would come
// 15 s after the server's return). The change still reaches the router within seconds of the
// server answering again, with one entry and nothing deleted.
func TestARouterBackFromAnOutageIsSyncedAtOnce(t *testing.T) {
	h := newHarness(t, options{})
	ing := h.create(ingress(h.ns, "web", enabled("ip-address", "10.60.0.1"), "web.lan"))
	ipOf := func() string {
		if es := h.srv.Store().Lookup("web.lan"); len(es) == 1 {
			return es[0].GetIpAddress()
		}
		return ""
	}
	op := startOperator(t, h, kubeconfig)
	waitFor(t, 30*time.Second, func() bool { return ipOf() == "10.60.0.1" })
	h.srv.Stop()
	h.update(ing, func(i *networkingv1.Ingress) { i.Annotations[source.AnnotationIPAddress] = "10.60.0.2" })
	time.Sleep(16 * time.Second)
	if err := h.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitFor(t, 30*time.Second, func() bool { return ipOf() == "10.60.0.2" })
	if d := time.Since(back); d > 8*time.Second {
		t.Fatalf("the change reached the router %v after its return; want it within seconds, not at the end of the backoff", d)
	}
	if !strings.Contains(op.logText(), "sync failed") {
		t.Fatal("no sync failed during the outage: the test proves nothing")
	}
	if n := h.srv.Store().Len(); n != 1 {
		t.Fatalf("the server holds %d entries, want 1", n)
	}
}

// TestAPIServerOutage takes the apiserver away from a running operator for 30 s: no deletes
// while it is unreachable (the informers keep their last state), and syncing resumes when it
// returns. The outage is made at the network: the operator reaches the apiserver through a
// loopback proxy that refuses and cuts every connection, which is what the operator sees of an
// apiserver behind a dead network (TestALeaderThatLosesItsLeaseLeadsAgain restarts one).
func TestAPIServerOutage(t *testing.T) {
	h := newHarness(t, options{})
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.51.0.1"), "web.lan"))
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	px := startProxy(t, u.Host)
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range raw.Clusters {
		c.Server = "https://" + px.addr
	}
	cfgPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*raw, cfgPath); err != nil {
		t.Fatal(err)
	}
	p := startOperator(t, h, cfgPath, "--interval=1s", "--grace-period=1s")
	waitFor(t, 20*time.Second, func() bool { return len(h.entries("web.lan")) == 1 })

	px.down()
	h.srv.Service().ResetCalls()
	time.Sleep(30 * time.Second)
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the operator died while the apiserver was unreachable: %v", err)
	}
	if d := h.srv.Service().Calls(inmemory.MethodDelete) + h.srv.Service().Calls(inmemory.MethodUpdate); d != 0 || len(h.entries("web.lan")) != 1 {
		t.Fatalf("%d deletes/updates while the apiserver was unreachable", d)
	}
	if h.srv.Service().Calls(inmemory.MethodList) < 10 {
		t.Fatalf("only %d syncs in 30 s of outage: the loop stalled", h.srv.Service().Calls(inmemory.MethodList))
	}
	px.up()
	// Syncing resumes: an Ingress created after the outage gets its entry.
	h.create(ingress(h.ns, "after", enabled("ip-address", "10.51.0.2"), "after.lan"))
	waitFor(t, 60*time.Second, func() bool { return len(h.entries("after.lan")) == 1 })
	if len(h.entries("web.lan")) != 1 {
		t.Fatal("web.lan was lost over the outage")
	}
}

// proxy forwards TCP connections to target until down() cuts them all; up() listens again on
// the same address.
type proxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	lis    net.Listener
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = lis.Addr().String()
	p.serve(lis)
	t.Cleanup(p.down)
	return p
}

func (p *proxy) serve(lis net.Listener) {
	p.mu.Lock()
	p.lis = lis
	p.mu.Unlock()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(b, c); b.Close() }()
			go func() { _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lis != nil {
		p.lis.Close()
		p.lis = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) up() {
	var (
		lis net.Listener
		err error
	)
	for i := 0; i < 50; i++ {
		if lis, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	p.serve(lis)
}

// TestALeaderThatLosesItsLeaseLeadsAgain restarts the kube-apiserver under a leader and keeps
// it away for longer than the renew deadline (10 s), so the leader loses its Lease. The
// process stops its loop and stands by instead of exiting, takes the Lease again once the
// apiserver is back, and syncs what changed meanwhile. (Found by the soak: the operator used
// to exit here.)
func TestALeaderThatLosesItsLeaseLeadsAgain(t *testing.T) {
	h := newHarness(t, options{ownControlPlane: true})
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.52.0.1"), "web.lan"))
	p := startOperator(t, h, h.kubeconfig, "--leader-elect", "--leader-election-namespace="+h.ns, "--leader-election-id=op")
	waitFor(t, 30*time.Second, func() bool {
		return len(h.entries("web.lan")) == 1 && p.metric(t, "router_hosts_operator_is_leader") == 1
	})

	if err := h.cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(p.logText(), "lost the leader Lease") })
	if p.metric(t, "router_hosts_operator_is_leader") != 0 {
		t.Fatal("the replica still says it leads after losing the Lease")
	}
	if err := h.cp.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the operator exited when it lost the Lease: %v", err)
	}
	waitFor(t, 60*time.Second, func() bool { return p.metric(t, "router_hosts_operator_is_leader") == 1 })
	h.create(ingress(h.ns, "after", enabled("ip-address", "10.52.0.2"), "after.lan"))
	// The informers see the new object once their reflectors list again, and client-go backs
	// them off while the apiserver is away (up to 30 s between attempts, with jitter), so the
	// wait covers two of those.
	waitFor(t, 90*time.Second, func() bool { return len(h.entries("after.lan")) == 1 })
	if n := strings.Count(p.logText(), "became leader; syncing"); n != 2 {
		t.Fatalf("became leader %d times, want twice (before and after the outage)", n)
	}
	if len(h.entries("web.lan")) != 1 {
		t.Fatal("web.lan was lost over the outage")
	}
}
