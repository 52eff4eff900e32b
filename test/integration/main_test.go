// Package integration runs the operator against a real kube-apiserver and etcd and the
// router-hosts test server over mTLS. Nothing here is a fake: the apiserver, the informers, the
// gRPC transport and the server semantics are the ones a user's cluster and router have.
package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/internal/rhtestserver"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/status"
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
	// The HostMapping CRD is the one users install; Traefik's come later, per test.
	cp, err = kubetest.Start(filepath.Join(root, "kustomize", "crds"))
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

// clock is a settable time source, so grace periods can pass without sleeping.
type clock struct{ t atomic.Int64 }

func newClock() *clock               { c := &clock{}; c.t.Store(time.Now().UnixNano()); return c }
func (c *clock) Now() time.Time      { return time.Unix(0, c.t.Load()) }
func (c *clock) Add(d time.Duration) { c.t.Add(int64(d)) }

// harness is one operator instance wired exactly as main wires it, against a namespace of its
// own and a test server of its own.
type harness struct {
	t       *testing.T
	ns      string
	srv     *rhtestserver.Server
	src     controller.Source // the first source, for waiting on the cache
	hm      *source.HostMappingSource
	built   []controller.Source // the sources this harness built (not the test's extras)
	prov    *routerhosts.Provider
	reg     *registry.Registry
	ctrl    *controller.Controller
	clock   *clock
	sources []controller.Source
	status  *status.HostMappings // the HostMapping status writer, when that source runs
}

type options struct {
	cluster      string
	ipResolution []string // "{ns}" stands for the test's namespace
	grace        time.Duration
	policy       plan.Policy
	extraSources []controller.Source
	sources      []string // default: ingress
	domains      endpoint.DomainFilter
	labelFilter  string
	allNS        bool // read every namespace instead of the test's own
	reporters    []controller.Reporter
	warner       source.Warner
	// statusQPS, when set, limits the status writer's client, to hold writes back on purpose.
	statusQPS float32
}

// statusClient is the status writer's own client, as main gives it one.
func (o options) statusClient(dyn dynamic.Interface) dynamic.Interface {
	if o.statusQPS == 0 {
		return dyn
	}
	c := rest.CopyConfig(cp.Config)
	c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(o.statusQPS, 1)
	return dynamic.NewForConfigOrDie(c)
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
	h := &harness{t: t, clock: newClock()}
	h.ns = createNamespace(t)
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatalf("test server: %v", err)
	}
	t.Cleanup(srv.Stop)
	h.srv = srv
	h.build(o)
	return h
}

// build (re)creates the operator's parts; a test may call it again to simulate a restart.
func (h *harness) build(o options) {
	t := h.t
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
		o.policy = plan.Sync
	}
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	log.SetOutput(testWriter{t})
	var specs []string
	for _, s := range o.ipResolution {
		specs = append(specs, strings.ReplaceAll(s, "{ns}", h.ns))
	}
	strategies, err := source.ParseIPResolution(specs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if o.sources == nil {
		o.sources = []string{"ingress"}
	}
	ns := h.ns
	if o.allNS {
		ns = ""
	}
	cfg := source.Config{Namespace: ns, LabelSelector: o.labelFilter, IPResolution: strategies, DiscoveryInterval: 200 * time.Millisecond, Warner: o.warner, Log: log}
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	clients := source.Clients{Ingresses: cp.Client.NetworkingV1(), Services: cp.Client.CoreV1(), Dynamic: dyn, Discovery: cp.Client.Discovery()}
	var srcs []controller.Source
	reporters := append([]controller.Reporter(nil), o.reporters...)
	for _, name := range o.sources {
		var s controller.Source
		switch name {
		case "ingress":
			s, err = source.NewIngressSource(ctx, clients, cfg)
		case "traefik":
			s, err = source.NewTraefikSource(ctx, clients, cfg)
		case "hostmapping":
			h.hm, err = source.NewHostMappingSource(ctx, clients, cfg)
			s = h.hm
			if err == nil {
				h.status = status.NewHostMappings(h.hm, o.statusClient(dyn).Resource(source.HostMappingGVR), log)
				go h.status.Run(ctx)
				reporters = append(reporters, h.status)
			}
		}
		if err != nil {
			t.Fatalf("%s source: %v", name, err)
		}
		srcs = append(srcs, s)
	}
	h.src = srcs[0]
	h.built = srcs
	h.reg, err = registry.New(registry.Config{ClusterName: o.cluster, GracePeriod: o.grace, Policy: o.policy, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	h.prov, err = routerhosts.New(routerhosts.Options{Endpoint: h.srv.Addr(), CAFile: h.srv.CAFile(), CertFile: h.srv.CertFile(),
		KeyFile: h.srv.KeyFile(), Timeout: 5 * time.Second, WriteConcurrency: 4, StillApplies: h.reg.StillApplies, Log: log})
	if err != nil {
		t.Fatalf("provider: %v", err)
	}
	t.Cleanup(func() { _ = h.prov.Close() })
	h.sources = append(srcs, o.extraSources...)
	h.ctrl = controller.New(controller.Config{Sources: h.sources, Reporters: reporters, DomainFilter: o.domains, Registry: h.reg, Provider: h.prov, Policy: o.policy,
		Interval: time.Minute, MinEventSyncInterval: time.Second, Log: log, Now: h.clock.Now})
}

// testWriter sends logs to t.Log so they show only for failing tests.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// sync runs one sync and fails the test on error.
func (h *harness) sync() *controller.Outcome {
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
		for _, s := range h.built {
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

func createNamespace(t *testing.T) string {
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
	got, err := cp.Client.NetworkingV1().Ingresses(ing.Namespace).Create(context.Background(), ing, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create ingress: %v", err)
	}
	return got
}

func (h *harness) update(ing *networkingv1.Ingress, mutate func(*networkingv1.Ingress)) *networkingv1.Ingress {
	h.t.Helper()
	cur, err := cp.Client.NetworkingV1().Ingresses(ing.Namespace).Get(context.Background(), ing.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	mutate(cur)
	got, err := cp.Client.NetworkingV1().Ingresses(ing.Namespace).Update(context.Background(), cur, metav1.UpdateOptions{})
	if err != nil {
		h.t.Fatalf("update ingress: %v", err)
	}
	return got
}

func (h *harness) setStatus(ing *networkingv1.Ingress, ips ...string) {
	h.t.Helper()
	cur, err := cp.Client.NetworkingV1().Ingresses(ing.Namespace).Get(context.Background(), ing.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	cur.Status.LoadBalancer.Ingress = nil
	for _, ip := range ips {
		cur.Status.LoadBalancer.Ingress = append(cur.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{IP: ip})
	}
	if _, err := cp.Client.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		h.t.Fatalf("update status: %v", err)
	}
}

func (h *harness) delete(ing *networkingv1.Ingress) {
	h.t.Helper()
	if err := cp.Client.NetworkingV1().Ingresses(ing.Namespace).Delete(context.Background(), ing.Name, metav1.DeleteOptions{}); err != nil {
		h.t.Fatalf("delete ingress: %v", err)
	}
}

// runtimeCaller locates this package's directory, for test data.
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
