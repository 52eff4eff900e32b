package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/internal/rhclient"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// clusterSpec is one cluster of the world: its namespaces, how many operator replicas it
// runs, and whether it reaches the router through the faulty network.
type clusterSpec struct {
	name       string
	namespaces []string
	replicas   int
	faultyNet  bool
	// gateways are the names of its Gateways, in its first namespace.
	gateways []string
}

// The world: two clusters share one router; a, with two replicas under leader election,
// reaches it directly, b through the faulty network. A third, c, left entries and never runs.
var clusterSpecs = []clusterSpec{
	{name: "a", namespaces: []string{"a1", "a2", "a3"}, replicas: 2, gateways: []string{"gw-1", "gw-2"}},
	{name: "b", namespaces: []string{"b1", "b2"}, replicas: 1, faultyNet: true, gateways: []string{"gw-1"}},
}

const (
	// foreignCluster is the cluster whose entries sit on the router but whose operator never runs.
	foreignCluster = "c"
	// leaseNamespace holds the leader Leases.
	leaseNamespace = "soak-system"
	// defaultGrace is the operators' --grace-period.
	defaultGrace = 4 * time.Second
	// requestTimeout is the operators' --request-timeout.
	requestTimeout = 5 * time.Second
)

// world is everything a run drives: the control plane, the router, the network to it, the
// operators and the clients the person and the checker use.
type world struct {
	cfg        Config
	dir        string
	cp         *kubetest.ControlPlane
	kube       *kube
	kubeconfig string
	router     router
	proxy      *faultProxy
	replicas   map[string][]*replica
	// person writes the router by hand, as the router-hosts CLI would; watch is the checker's
	// reader. Both reach the router directly.
	person, watch  pb.HostsServiceClient
	closers        []func()
	exited         func(p *proc)
	foreignEntries []*pb.HostEntry
}

// repoRoot is the module's root, for the CRDs.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// newWorld starts the control plane (with the HostMapping, Traefik and Gateway API CRDs), the
// router with the third cluster's entries, and the faulty network; the operators start with
// startOperators.
func newWorld(ctx context.Context, cfg Config, dir string, exited func(*proc)) (w *world, err error) {
	w = &world{cfg: cfg, dir: dir, replicas: map[string][]*replica{}, exited: exited}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	root := repoRoot()
	if w.cp, err = kubetest.Start(filepath.Join(root, "kustomize", "crds"), filepath.Join(root, "test", "integration", "testdata", "traefik")); err != nil {
		return w, err
	}
	w.closers = append(w.closers, func() { _ = w.cp.Stop() })
	if err = w.cp.InstallGatewayAPI(); err != nil {
		return w, err
	}
	w.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err = w.cp.WriteKubeconfig(w.kubeconfig); err != nil {
		return w, err
	}
	dyn, err := dynamic.NewForConfig(w.cp.Config)
	if err != nil {
		return w, fmt.Errorf("dynamic client: %w", err)
	}
	w.kube = &kube{dyn: dyn, gatewayNS: map[string]string{}}
	for _, ns := range append([]string{leaseNamespace}, allNamespaces()...) {
		if _, err = w.cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return w, fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	if cfg.RouterBin != "" {
		w.router, err = startRealRouter(cfg.RouterBin, filepath.Join(dir, "router"))
	} else {
		w.router, err = startTestRouter(filepath.Join(dir, "router"))
	}
	if err != nil {
		return w, err
	}
	w.closers = append(w.closers, w.router.Close)
	pki := w.router.PKI()
	files := rhclient.Files{CA: pki.CAFile(), Cert: pki.CertFile(), Key: pki.KeyFile()}
	var closeCli func()
	if w.person, closeCli, err = rhclient.Dial(w.router.Addr(), files); err != nil {
		return w, err
	}
	w.closers = append(w.closers, closeCli)
	if w.watch, closeCli, err = rhclient.Dial(w.router.Addr(), files); err != nil {
		return w, err
	}
	w.closers = append(w.closers, closeCli)
	if w.proxy, err = startProxy(w.router.Addr()); err != nil {
		return w, err
	}
	w.closers = append(w.closers, w.proxy.Close)
	if err = w.seedForeign(ctx); err != nil {
		return w, err
	}
	return w, nil
}

func allNamespaces() []string {
	var out []string
	for _, c := range clusterSpecs {
		out = append(out, c.namespaces...)
	}
	return out
}

// seedForeign writes the entries a third cluster's operator left, as it would have written them.
func (w *world) seedForeign(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		host := fmt.Sprintf("c-%d.soak.lan", i)
		resp, err := w.person.AddHost(ctx, &pb.AddHostRequest{IpAddress: fmt.Sprintf("10.77.99.%d", i+1), Hostname: host,
			Comment: proto.String("router-hosts-operator: Ingress cx/web-" + fmt.Sprint(i)),
			Tags: []string{registry.TagOwner, registry.PrefixCluster + foreignCluster, registry.PrefixNamespace + "cx", registry.PrefixKind + "Ingress",
				registry.PrefixSource + fmt.Sprintf("00000000-0000-0000-0000-00000000000%d", i)}})
		if err != nil {
			return fmt.Errorf("seeding cluster %s's %s: %w", foreignCluster, host, err)
		}
		w.foreignEntries = append(w.foreignEntries, resp.GetEntry())
	}
	return nil
}

// operatorArgs are the flags of one replica of a cluster, mutations applied.
func (w *world) operatorArgs(c clusterSpec, index int) (args, env []string) {
	endpoint := w.router.Addr()
	if c.faultyNet {
		endpoint = w.proxy.Addr()
	}
	cluster, policy := c.name, "sync"
	switch w.cfg.Mutation {
	case MutationUpsertOnly:
		policy = "upsert-only"
	case MutationCreateOnly:
		policy = "create-only"
	case MutationWrongCluster:
		if c.name == "a" && index == 0 {
			cluster = "a-typo"
		}
	case MutationForeignCluster:
		if c.name == "b" {
			cluster = foreignCluster
		}
	}
	args = []string{"--kubeconfig=" + w.kubeconfig, "--cluster-name=" + cluster, "--label-filter=" + clusterLabel + "=" + c.name,
		"--source=ingress", "--source=hostmapping", "--source=service", "--source=gateway-httproute", "--source=traefik",
		"--ip-resolution=ingress-status", "--grace-period=" + defaultGrace.String(), "--interval=10s", "--request-timeout=" + requestTimeout.String(),
		"--policy=" + policy, "--config-name=", "--log-level=debug"}
	if c.replicas > 1 {
		args = append(args, "--leader-elect", "--leader-election-namespace="+leaseNamespace, "--leader-election-id=soak-"+c.name)
	}
	pki := w.router.PKI()
	env = []string{"ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT=" + endpoint, "ROUTER_HOSTS_OPERATOR_TLS_CA=" + pki.CAFile(),
		"ROUTER_HOSTS_OPERATOR_TLS_CERT=" + pki.CertFile(), "ROUTER_HOSTS_OPERATOR_TLS_KEY=" + pki.KeyFile(), "GORACE=halt_on_error=0"}
	return args, env
}

// startOperators starts every replica of every cluster and waits until each answers /healthz.
// A cluster's first replica starts alone and, under leader election, leads before the others
// start, so that which replica leads first is the same in every run.
func (w *world) startOperators() error {
	for _, c := range clusterSpecs {
		for i := 0; i < c.replicas; i++ {
			args, env := w.operatorArgs(c, i)
			r := &replica{cluster: c.name, index: i, bin: w.cfg.OperatorBin, args: args, env: env, dir: w.dir, exited: w.exited}
			w.replicas[c.name] = append(w.replicas[c.name], r)
			if _, err := r.start(); err != nil {
				return err
			}
			ready := func(p *proc) bool { return p.healthy() && (i > 0 || c.replicas == 1 || p.leads()) }
			if err := w.await(r, ready); err != nil {
				return err
			}
		}
	}
	return nil
}

// await waits up to a minute until r's process is ready.
func (w *world) await(r *replica, ready func(*proc) bool) error {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		p := r.current()
		if p != nil && ready(p) {
			return nil
		}
		if p == nil || time.Now().After(deadline) {
			msg := "exited"
			if p != nil {
				msg = "is not ready after a minute"
			}
			return fmt.Errorf("operator %s %s; its log ends:\n%s", r.name(), msg, lastLog(w.dir, r))
		}
	}
}

func lastLog(dir string, r *replica) string {
	b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("operator-%s-%d.log", r.name(), r.gen)))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// leader is the replica of cluster whose process holds the Lease, nil when none does now.
func (w *world) leader(cluster string) *replica {
	for _, r := range w.replicas[cluster] {
		if p := r.current(); p != nil && p.leads() {
			return r
		}
	}
	return nil
}

// list reads every entry on the router, as the checker sees them.
func (w *world) list(ctx context.Context) ([]*pb.HostEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return rhclient.List(ctx, w.watch)
}

// stopOperators ends every operator with SIGTERM.
func (w *world) stopOperators() {
	for _, rs := range w.replicas {
		for _, r := range rs {
			r.stop()
		}
	}
}

func (w *world) close() {
	w.stopOperators()
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
}
