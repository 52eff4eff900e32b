// Package integration runs the operator against a real kube-apiserver and etcd and the
// router-hosts test server over mTLS. Nothing here is a fake: the apiserver, the informers, the
// gRPC transport and the server semantics are the ones a user's cluster and router have.
package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/status"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// Shared by every test: one control plane, one operator binary. Tests isolate themselves by
// namespace and by running their own test server.
var (
	cp          *kubetest.ControlPlane
	operatorBin string
	kubeconfig  string
	nsCounter   atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	// The HostMapping CRD users install, and Traefik's; a test that needs a cluster without
	// them starts its own control plane (ownControlPlane).
	cp, err = kubetest.Start(filepath.Join(root, "kustomize", "crds"), filepath.Join(root, "test", "integration", "testdata", "traefik"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration tests need the control plane:", err)
		return 1
	}
	defer cp.Stop()
	dir, err := os.MkdirTemp("", "rho-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	operatorBin = filepath.Join(dir, "router-hosts-operator")
	build := exec.Command("go", "build", "-o", operatorBin, ".")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the operator:", err)
		return 1
	}
	return m.Run()
}

// harness is one operator instance wired by the operator package from command-line flags, as
// main wires it, against a namespace of its own and a test server of its own.
type harness struct {
	t *testing.T
	// cp and kubeconfig are the control plane the harness runs on: the shared one, or its own.
	cp         *kubetest.ControlPlane
	kubeconfig string
	ns         string
	srv        *rhtestserver.Server
	op         *operator.Operator
	prov       *routerhosts.Provider
	ctrl       *controller.Controller
	// clock is the controller's clock: grace periods pass when the test steps it.
	clock *testingclock.FakeClock
	// status is the HostMapping status writer, when that source runs.
	status *status.HostMappings
	// explainOpts are the options explain runs with, beside the harness's own.
	explainOpts options
}

type options struct {
	cluster      string
	ipResolution []string // "{ns}" stands for the test's namespace
	grace        time.Duration
	policy       plan.Policy
	extraSources []controller.EndpointSource
	sources      []string // default: ingress
	// domains and excludeDomains are --domain-filter and --exclude-domains.
	domains, excludeDomains []string
	labelFilter             string
	allNS                   bool // read every namespace instead of the test's own
	reporters               []controller.Reporter
	warner                  source.Warner
	// statusQPS, when set, limits the status writer's client, to hold writes back on purpose.
	statusQPS float32
	// ownControlPlane runs the harness on a control plane of its own with only the
	// HostMapping CRD installed, for tests that add CRDs as a user would.
	ownControlPlane bool
	// configName is --config-name; by default the test's namespace, so that each test reads
	// a RouterHostsConfig of its own, when it makes one.
	configName string
	// endpoint replaces the test server's address in --router-hosts-endpoint.
	endpoint string
	// realClock gives the controller the real clock, for a test that runs its loop (Run):
	// syncs then happen by themselves, and h.clock is not the controller's.
	realClock bool
	// ingressClasses and gatewayNames are --ingress-class and --gateway-name ("{ns}" stands
	// for the test's namespace).
	ingressClasses, gatewayNames []string
	// externalDNS is --external-dns-annotations; dnsServer --dns-server.
	externalDNS bool
	dnsServer   string
	// extraArgs are further flags ("{ns}" stands for the test's namespace).
	extraArgs []string
	// interval is --interval (default 1m); dnsGrace the grace of the check of the router's DNS
	// (default dnscheck's).
	interval, dnsGrace time.Duration
	// server is another harness's test server, for a second cluster on one router.
	server *rhtestserver.Server
}

// args are the command-line flags o stands for.
func (h *harness) args(o options) []string {
	if o.cluster == "" {
		o.cluster = "test"
	}
	if o.ipResolution == nil {
		o.ipResolution = []string{"ingress-status"}
	}
	if o.grace == 0 {
		o.grace = 5 * time.Minute
	}
	if o.policy == "" {
		o.policy = plan.PolicySync
	}
	if o.sources == nil {
		o.sources = []string{"ingress"}
	}
	if o.configName == "" {
		o.configName = h.ns
	}
	if o.endpoint == "" {
		o.endpoint = h.srv.Addr()
	}
	if o.interval == 0 {
		o.interval = time.Minute
	}
	args := []string{"--kubeconfig=" + h.kubeconfig, "--cluster-name=" + o.cluster, "--grace-period=" + o.grace.String(), "--config-name=" + o.configName,
		"--policy=" + string(o.policy), "--router-hosts-endpoint=" + o.endpoint, "--tls-ca=" + h.srv.CAFile(),
		"--tls-cert=" + h.srv.CertFile(), "--tls-key=" + h.srv.KeyFile(), "--request-timeout=5s", "--write-concurrency=4",
		"--interval=" + o.interval.String(), "--min-event-sync-interval=1s", "--kube-api-qps=1000", "--kube-api-burst=1000", "--metrics-address="}
	for _, s := range o.ipResolution {
		args = append(args, "--ip-resolution="+strings.ReplaceAll(s, "{ns}", h.ns))
	}
	for _, s := range o.sources {
		args = append(args, "--source="+s)
	}
	for _, d := range o.domains {
		args = append(args, "--domain-filter="+d)
	}
	for _, d := range o.excludeDomains {
		args = append(args, "--exclude-domains="+d)
	}
	if o.labelFilter != "" {
		args = append(args, "--label-filter="+o.labelFilter)
	}
	for _, c := range o.ingressClasses {
		args = append(args, "--ingress-class="+c)
	}
	for _, g := range o.gatewayNames {
		args = append(args, "--gateway-name="+strings.ReplaceAll(g, "{ns}", h.ns))
	}
	if o.externalDNS {
		args = append(args, "--external-dns-annotations")
	}
	if o.dnsServer != "" {
		args = append(args, "--dns-server="+o.dnsServer)
	}
	if !o.allNS {
		args = append(args, "--namespace="+h.ns)
	}
	for _, a := range o.extraArgs {
		args = append(args, strings.ReplaceAll(a, "{ns}", h.ns))
	}
	return args
}

// statusWritten waits until the status writer has written every status the syncs so far asked
// for.
func (h *harness) statusWritten() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.status.Flush(ctx); err != nil {
		h.t.Fatal(err)
	}
}

func newHarness(t *testing.T, o options) *harness {
	t.Helper()
	h := &harness{t: t, clock: testingclock.NewFakeClock(time.Now()), cp: cp, kubeconfig: kubeconfig}
	if o.ownControlPlane {
		h.cp, h.kubeconfig = ownControlPlane(t)
	}
	h.ns = createNamespace(t, h.cp)
	h.srv = o.server
	if h.srv == nil {
		srv, err := rhtestserver.Start(t.TempDir(), "")
		if err != nil {
			t.Fatalf("test server: %v", err)
		}
		t.Cleanup(srv.Stop)
		h.srv = srv
	}
	h.build(o)
	return h
}

// build (re)creates the operator from flags; a test may call it again to simulate a restart.
// Syncs run when the test calls h.sync, on the harness's clock; the status writer runs as it
// does while the operator leads.
func (h *harness) build(o options) {
	t := h.t
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	log.SetOutput(testWriter{t})
	cfg, err := operator.ParseFlags(h.args(o), operator.Build{Version: "test"})
	if err != nil {
		t.Fatalf("flags: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var clk clock.Clock = h.clock
	if o.realClock {
		clk = clock.RealClock{}
	}
	op, err := operator.New(ctx, cfg, log, io.Discard, operator.Hooks{Clock: clk, DiscoveryInterval: 200 * time.Millisecond,
		Sources: o.extraSources, Reporters: o.reporters, Warner: o.warner, StatusQPS: o.statusQPS, DNSCheckGrace: o.dnsGrace})
	if err != nil {
		t.Fatalf("operator: %v", err)
	}
	t.Cleanup(op.Close)
	h.op, h.prov, h.ctrl, h.status = op, op.Provider, op.Controller, op.Status
	if h.status != nil {
		go h.status.Run(ctx)
	}
	go op.DNSCheck.Run(ctx) // checks nothing without --verify-dns
	if op.Config != nil {
		go op.Config.Run(ctx)
		go op.Config.RunStatus(ctx)
	}
}

// testWriter sends logs to t.Log so they show only for failing tests.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// sync runs one sync and fails the test on error.
func (h *harness) sync() *controller.Report {
	h.t.Helper()
	out, err := h.ctrl.SyncOnce(context.Background())
	if err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	return out
}

// waitSource waits until the informer cache shows what cond wants, so a sync right after an
// API write sees it.
func (h *harness) waitSource(cond func([]*endpoint.Endpoint) bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var eps []*endpoint.Endpoint
		var err error
		for _, s := range h.op.Sources {
			got, e := s.Endpoints(context.Background())
			eps, err = append(eps, got...), errors.Join(err, e)
		}
		if err == nil && cond(eps) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("source did not reach the expected state; last: %v %v", describe(eps), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitHost waits until the source lists hostname with exactly the given targets.
func (h *harness) waitHost(hostname string, targets ...string) {
	h.t.Helper()
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		for _, e := range eps {
			if e.Hostname == hostname {
				return endpoint.SameSet(e.Targets, targets) && len(e.Targets) == len(targets)
			}
		}
		return false
	})
}

// waitGone waits until the source no longer lists hostname.
func (h *harness) waitGone(hostname string) {
	h.t.Helper()
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		for _, e := range eps {
			if e.Hostname == hostname {
				return false
			}
		}
		return true
	})
}

func describe(eps []*endpoint.Endpoint) []string {
	var out []string
	for _, e := range eps {
		out = append(out, fmt.Sprintf("%s%v", e.Hostname, e.Targets))
	}
	return out
}

// entries returns the server's entries for hostname.
func (h *harness) entries(hostname string) []endpoint.Record {
	h.t.Helper()
	recs, err := h.prov.Records(context.Background())
	if err != nil {
		h.t.Fatalf("list: %v", err)
	}
	var out []endpoint.Record
	for _, r := range recs {
		if r.Hostname == hostname {
			out = append(out, r)
		}
	}
	return out
}

// one returns the single entry for hostname.
func (h *harness) one(hostname string) endpoint.Record {
	h.t.Helper()
	got := h.entries(hostname)
	if len(got) != 1 {
		h.t.Fatalf("want exactly one entry for %s, got %d: %v", hostname, len(got), got)
	}
	return got[0]
}

func (h *harness) writes() int64 { return h.srv.Service().WriteCalls() }

// ownControlPlane starts a control plane for one test, with only the HostMapping CRD, and
// returns it with a kubeconfig file for it.
func ownControlPlane(t *testing.T) (*kubetest.ControlPlane, string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	own, err := kubetest.Start(filepath.Join(filepath.Dir(file), "..", "..", "kustomize", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := own.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return own, path
}

func createNamespace(t *testing.T, cp *kubetest.ControlPlane) string {
	t.Helper()
	name := fmt.Sprintf("it-%d", nsCounter.Add(1))
	_, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("namespace: %v", err)
	}
	return name
}

// ingress builds an Ingress with the given hosts; annotations may be nil.
func ingress(ns, name string, annotations map[string]string, hosts ...string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}}
	for _, h := range hosts {
		ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: h})
	}
	return ing
}

// enabled returns the opt-in annotation plus extra key/value pairs (keys without prefix).
func enabled(kv ...string) map[string]string {
	a := map[string]string{source.AnnotationEnabled: "true"}
	for i := 0; i+1 < len(kv); i += 2 {
		a["router-hosts.fzymgc.house/"+kv[i]] = kv[i+1]
	}
	return a
}

func (h *harness) create(ing *networkingv1.Ingress) *networkingv1.Ingress {
	h.t.Helper()
	got, err := h.cp.Client.NetworkingV1().Ingresses(ing.Namespace).Create(context.Background(), ing, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create ingress: %v", err)
	}
	return got
}

func (h *harness) update(ing *networkingv1.Ingress, mutate func(*networkingv1.Ingress)) *networkingv1.Ingress {
	h.t.Helper()
	cur, err := h.cp.Client.NetworkingV1().Ingresses(ing.Namespace).Get(context.Background(), ing.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	mutate(cur)
	got, err := h.cp.Client.NetworkingV1().Ingresses(ing.Namespace).Update(context.Background(), cur, metav1.UpdateOptions{})
	if err != nil {
		h.t.Fatalf("update ingress: %v", err)
	}
	return got
}

func (h *harness) setStatus(ing *networkingv1.Ingress, ips ...string) {
	h.t.Helper()
	cur, err := h.cp.Client.NetworkingV1().Ingresses(ing.Namespace).Get(context.Background(), ing.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	cur.Status.LoadBalancer.Ingress = nil
	for _, ip := range ips {
		cur.Status.LoadBalancer.Ingress = append(cur.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{IP: ip})
	}
	if _, err := h.cp.Client.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		h.t.Fatalf("update status: %v", err)
	}
}

func (h *harness) delete(ing *networkingv1.Ingress) {
	h.t.Helper()
	if err := h.cp.Client.NetworkingV1().Ingresses(ing.Namespace).Delete(context.Background(), ing.Name, metav1.DeleteOptions{}); err != nil {
		h.t.Fatalf("delete ingress: %v", err)
	}
}

// runtimeCaller locates this package's directory, for test data.
// onCluster reports whether e carries the cluster: tag of name, whatever identity follows it.
func onCluster(e endpoint.Record, name string) bool {
	return slices.ContainsFunc(e.Tags, func(t string) bool { n, _, ok := registry.ParseClusterTag(t); return ok && n == name })
}

func runtimeCaller() (uintptr, string, int, bool) { return runtime.Caller(0) }

// movedAfterSync creates an Ingress for host at from, syncs it, then changes its address to to
// and waits for the cache to show it: the entry as synced is returned, its update still to come.
func (h *harness) movedAfterSync(name, host, from, to string) endpoint.Record {
	h.t.Helper()
	ing := h.create(ingress(h.ns, name, enabled("ip-address", from), host))
	h.waitHost(host, from)
	h.sync()
	rec := h.one(host)
	h.update(ing, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = to })
	h.waitHost(host, to)
	return rec
}

// editBeforeFirstUpdate makes another writer apply edit to rec on the server just before the
// operator's first UpdateHost arrives, so that update meets a version conflict.
func (h *harness) editBeforeFirstUpdate(rec endpoint.Record, edit *pb.UpdateHostRequest) {
	var once atomic.Bool
	edit.Id, edit.ExpectedVersion = rec.ID, proto.String(rec.Version)
	h.srv.Service().SetBefore(func(m string) error {
		if m == inmemory.MethodUpdate && once.CompareAndSwap(false, true) {
			_, err := h.srv.Store().Update(edit)
			return err
		}
		return nil
	})
}
