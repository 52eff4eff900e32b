package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
)

// clusterSpec is one installation of the world: the cluster it runs in (its apiserver), the
// name it is given, its namespaces, how many operator replicas it runs, and whether it
// reaches the router through the faulty network.
type clusterSpec struct {
	// name is the soak's name for it: its objects' label, its processes' and the model's.
	name string
	// clusterName is its --cluster-name at the start.
	clusterName string
	// apiserver is the control plane it runs in: 0 the one a and b share, 1 n's own.
	apiserver  int
	namespaces []string
	replicas   int
	// lease is its leader Lease's name (in leaseNamespace), which its identity derives from
	// beside its apiserver's kube-system UID; its replicas elect a leader on it when there
	// are several, or when leaderElect says so.
	lease       string
	leaderElect bool
	faultyNet   bool
	// gateways are the names of its Gateways, in its first namespace.
	gateways []string
	// quiet are namespaces of its cluster the churn never creates objects in: a's burst
	// namespace, the twins' shared one, a's and b's namespaces of the shared name.
	quiet []string
	// twin names the pair an installation belongs to when it shares its identity with another
	// ("" for none); static is its --ip-resolution=static address, which an object both twins
	// read resolves to.
	twin   string
	static string
}

// The world: five installations share one router. a, with two replicas under leader
// election, reaches it directly, b through the faulty network; both run in one cluster (one
// apiserver, their objects told apart by a label). n is a's namesake: a cluster of its own
// (its own apiserver, hence its own identity) installed as a is, with a's name, a's Lease
// name and namespaces of a's names, whose entries a must never take for its own, nor n a's.
// It runs one replica without leader election, so that a kill does not leave it waiting
// out a Lease (a's kills do that).
// Another cluster, c, left entries and never runs. At a seeded moment b is renamed.
// t1 and t2 are twins: two installations in a and b's cluster on one Lease name with leader
// election off, as two releases in one namespace or a cluster and its restored copy are, so
// that both derive one identity and each takes the other's entries for its own. Each reads
// its own objects and the one they share (its label is the pair's), which each resolves to an
// address of its own.
var clusterSpecs = []clusterSpec{
	{name: "a", clusterName: "a", namespaces: []string{"a1", "a2", "a3"}, replicas: 2, lease: "soak-a", leaderElect: true, gateways: []string{"gw-1", "gw-2"},
		quiet: []string{burstNamespace, shareNamespace("a")}},
	{name: "b", clusterName: "b", namespaces: []string{"b1", "b2"}, replicas: 1, lease: "soak-b", faultyNet: true, gateways: []string{"gw-1"},
		quiet: []string{shareNamespace("b")}},
	{name: "n", clusterName: "a", apiserver: 1, namespaces: []string{"a1", "a2"}, replicas: 1, lease: "soak-a", gateways: []string{"gw-1"}},
	{name: "t1", clusterName: twinPair, namespaces: []string{"t1"}, replicas: 1, lease: "soak-t", quiet: []string{twinSharedNamespace}, twin: twinPair, static: "10.77.20.201"},
	{name: "t2", clusterName: twinPair, namespaces: []string{"t2"}, replicas: 1, lease: "soak-t", quiet: []string{twinSharedNamespace}, twin: twinPair, static: "10.77.20.202"},
}

// specOf is the installation's spec.
func specOf(inst string) clusterSpec {
	for _, c := range clusterSpecs {
		if c.name == inst {
			return c
		}
	}
	panic("no installation " + inst)
}

// ownerGroup is who owns an installation's entries in the model: the installation itself, or
// for a twin its pair, since the two share one identity and so one set of entries. The
// pair's name is its own group (the object both twins read belongs to it).
func ownerGroup(inst string) string {
	for _, c := range clusterSpecs {
		if c.name == inst && c.twin != "" {
			return c.twin
		}
	}
	return inst
}

// isPair reports whether group is a twin pair.
func isPair(group string) bool {
	for _, c := range clusterSpecs {
		if c.twin == group {
			return true
		}
	}
	return false
}

// groups are the owners of entries, in the order of clusterSpecs.
func groups() []string {
	var out []string
	for _, c := range clusterSpecs {
		if g := ownerGroup(c.name); !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// twinsOf are the installations of a pair.
func twinsOf(pair string) []clusterSpec {
	var out []clusterSpec
	for _, c := range clusterSpecs {
		if c.twin == pair {
			out = append(out, c)
		}
	}
	return out
}

const (
	// foreignCluster is the cluster whose entries sit on the router but whose operator never runs.
	foreignCluster = "c"
	// renamed is the installation the run renames.
	renamed = "b"
	// leaseNamespace holds the leader Leases.
	leaseNamespace = "soak-system"
	// defaultGrace is the operators' --grace-period.
	defaultGrace = 4 * time.Second
	// requestTimeout is the operators' --request-timeout.
	requestTimeout = 5 * time.Second
	// syncInterval is the operators' --interval.
	syncInterval = 10 * time.Second
)

// world is everything a run drives: the control planes, the router, each installation's tap
// to it, the faulty network, the operators and the clients the person and the checker use.
type world struct {
	cfg Config
	dir string
	// cps are the control planes (clusterSpec.apiserver), kubeconfigs their admin
	// kubeconfigs.
	cps         []*kubetest.ControlPlane
	kubeconfigs []string
	kube        *kube
	router      router
	// taps are each installation's door to the router; the faulty network stands before b's.
	taps     map[string]*tap
	ledger   *ledger
	proxy    *faultProxy
	replicas map[string][]*replica
	// ids are the installations' identities, as the operator derives them, and each twin
	// pair's (the identity its twins share).
	ids map[string]string
	// confirm is the --confirm-mass-deletion token each installation's replicas start with
	// from now on, "" for none.
	confirm map[string]string
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

// newWorld starts the control planes (with the HostMapping, Traefik and Gateway API CRDs), the
// router with the third cluster's entries, the taps and the faulty network; the operators
// start with startOperators.
func newWorld(ctx context.Context, cfg Config, dir string, exited func(*proc)) (w *world, err error) {
	w = &world{cfg: cfg, dir: dir, replicas: map[string][]*replica{}, exited: exited, taps: map[string]*tap{}, ledger: newLedger(), ids: map[string]string{},
		confirm: map[string]string{}}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if err = w.startControlPlanes(); err != nil {
		return w, err
	}
	w.kube = &kube{dyn: map[string]dynamic.Interface{}, gatewayNS: map[string]string{}}
	for _, c := range clusterSpecs {
		cp := w.cps[c.apiserver]
		if w.kube.dyn[c.name], err = dynamic.NewForConfig(cp.Config); err != nil {
			return w, fmt.Errorf("dynamic client: %w", err)
		}
		ks, err := cp.Client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		if err != nil {
			return w, fmt.Errorf("reading kube-system: %w", err)
		}
		w.ids[c.name] = registry.Identity(string(ks.UID), leaseNamespace, c.lease)
		if c.twin != "" {
			if id, ok := w.ids[c.twin]; ok && id != w.ids[c.name] {
				return w, fmt.Errorf("twins %s and %s of pair %s derive two identities, %s and %s", twinsOf(c.twin)[0].name, c.name, c.twin, id, w.ids[c.name])
			}
			w.ids[c.twin], w.kube.dyn[c.twin] = w.ids[c.name], w.kube.dyn[c.name]
		}
		for _, ns := range append(append([]string{leaseNamespace}, c.namespaces...), c.quiet...) {
			_, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return w, fmt.Errorf("namespace %s: %w", ns, err)
			}
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
	for _, c := range clusterSpecs {
		t, err := startTap(c.name, w.router.Addr(), pki, w.ledger)
		if err != nil {
			return w, err
		}
		w.taps[c.name] = t
		w.closers = append(w.closers, t.stop)
		if c.faultyNet {
			if w.proxy, err = startProxy(t.Addr()); err != nil {
				return w, err
			}
			w.closers = append(w.closers, w.proxy.Close)
		}
	}
	if err = w.seedForeign(ctx); err != nil {
		return w, err
	}
	return w, nil
}

// startControlPlanes starts the clusters' control planes side by side, and writes each one's
// kubeconfig.
func (w *world) startControlPlanes() error {
	n := 0
	for _, c := range clusterSpecs {
		n = max(n, c.apiserver+1)
	}
	w.cps, w.kubeconfigs = make([]*kubetest.ControlPlane, n), make([]string, n)
	root := repoRoot()
	err := harness.Pool(0, n, func(i int) error {
		cp, err := kubetest.Start(filepath.Join(root, "kustomize", "crds"), filepath.Join(root, "test", "integration", "testdata", "traefik"))
		if err != nil {
			return err
		}
		w.cps[i] = cp
		if err := cp.InstallGatewayAPI(); err != nil {
			return err
		}
		w.kubeconfigs[i] = filepath.Join(w.dir, "kubeconfig")
		if i > 0 {
			w.kubeconfigs[i] = filepath.Join(w.dir, fmt.Sprintf("kubeconfig-%d", i))
		}
		return cp.WriteKubeconfig(w.kubeconfigs[i])
	})
	for _, cp := range w.cps {
		if cp != nil {
			w.closers = append(w.closers, func() { _ = cp.Stop() })
		}
	}
	return err
}

// seedForeign writes the entries a third cluster's operator left, as an earlier version wrote
// them (no identity).
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
		w.ledger.saw(resp.GetEntry())
		w.foreignEntries = append(w.foreignEntries, resp.GetEntry())
	}
	return nil
}

// operatorArgs are the flags of one replica of an installation running under cluster name
// name, mutations applied.
func (w *world) operatorArgs(c clusterSpec, index int, name string) (args, env []string) {
	endpoint := w.taps[c.name].Addr()
	if c.faultyNet {
		endpoint = w.proxy.Addr()
	}
	cluster, policy := name, "sync"
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
	args = []string{"--kubeconfig=" + w.kubeconfigs[c.apiserver], "--cluster-name=" + cluster, "--label-filter=" + clusterLabel + "=" + c.name,
		"--source=ingress", "--source=hostmapping", "--source=service", "--source=gateway-httproute", "--source=traefik",
		"--ip-resolution=ingress-status", "--grace-period=" + defaultGrace.String(), "--interval=" + syncInterval.String(), "--request-timeout=" + requestTimeout.String(),
		"--policy=" + policy, "--config-name=", "--log-level=debug",
		// The Lease's namespace and name are given even without leader election: the
		// identity derives from them.
		"--leader-election-namespace=" + leaseNamespace, "--leader-election-id=" + c.lease}
	if c.twin != "" {
		// Its own objects and the pair's, the sources the twins' objects use, every object
		// without an address of its own at the twin's static address; and a grace period of
		// several intervals, since a twin is found out by its undoing the other's marks, which
		// must outlive the interval it takes the other to see them.
		args[2] = "--label-filter=" + clusterLabel + " in (" + c.name + "," + c.twin + ")"
		args = slices.DeleteFunc(args, func(a string) bool {
			return a == "--source=service" || a == "--source=gateway-httproute" || strings.HasPrefix(a, "--ip-resolution=") ||
				strings.HasPrefix(a, "--grace-period=") || strings.HasPrefix(a, "--interval=")
		})
		args = append(args, "--ip-resolution=static:"+c.static, "--grace-period="+twinGrace.String(), "--interval="+twinInterval.String())
	}
	if c.replicas > 1 || c.leaderElect {
		args = append(args, "--leader-elect")
	}
	if w.cfg.Mutation == MutationNoBrake && c.name == burstInstallation {
		args = append(args, "--mass-deletion-percent=0", "--mass-deletion-namespace-percent=0")
	}
	if token := w.confirm[c.name]; token != "" {
		args = append(args, "--confirm-mass-deletion="+token)
	}
	pki := w.router.PKI()
	env = []string{"ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT=" + endpoint, "ROUTER_HOSTS_OPERATOR_TLS_CA=" + pki.CAFile(),
		"ROUTER_HOSTS_OPERATOR_TLS_CERT=" + pki.CertFile(), "ROUTER_HOSTS_OPERATOR_TLS_KEY=" + pki.KeyFile(), "GORACE=halt_on_error=0"}
	return args, env
}

// stopRouter takes the router down as a reboot does, and the taps with it, so that every
// installation's connection drops as it would; startRouter brings them back.
func (w *world) stopRouter() error {
	err := w.router.Stop()
	for _, c := range clusterSpecs {
		w.taps[c.name].stop()
	}
	return err
}

func (w *world) startRouter() error {
	if err := w.router.Start(); err != nil {
		return err
	}
	for _, c := range clusterSpecs {
		if err := w.taps[c.name].restart(); err != nil {
			return err
		}
	}
	return nil
}

// startInstallation starts every replica of an installation and waits until each answers
// /healthz. Its first replica starts alone and, under leader election, leads before the
// others start, so that which replica leads first is the same in every run. Each replica must
// have derived the identity the soak expects of it.
func (w *world) startInstallation(c clusterSpec) error {
	for i := 0; i < c.replicas; i++ {
		args, env := w.operatorArgs(c, i, c.clusterName)
		r := &replica{cluster: c.name, index: i, bin: w.cfg.OperatorBin, args: args, env: env, dir: w.dir, exited: w.exited}
		w.replicas[c.name] = append(w.replicas[c.name], r)
		if _, err := r.start(); err != nil {
			return err
		}
		elects := c.replicas > 1 || c.leaderElect
		ready := func(p *proc) bool { return p.healthy() && (i > 0 || !elects || p.leads()) }
		if err := w.await(r, ready); err != nil {
			return err
		}
		if id := loggedIdentity(r.current()); id != "" && id != w.ids[c.name] {
			return fmt.Errorf("operator %s runs as cluster-id %s; the soak derives %s from its apiserver's kube-system UID and its Lease %s/%s",
				r.name(), id, w.ids[c.name], leaseNamespace, c.lease)
		}
	}
	return nil
}

// loggedIdentity is the cluster_id the process logged as it started, "" if it has not.
func loggedIdentity(p *proc) string {
	if p == nil {
		return ""
	}
	for _, line := range strings.Split(p.Log(), "\n") {
		if !strings.Contains(line, "router-hosts-operator starting") {
			continue
		}
		if _, rest, ok := strings.Cut(line, "cluster_id="); ok {
			id, _, _ := strings.Cut(rest, " ")
			return strings.Trim(id, `"`)
		}
	}
	return ""
}

// restartAll restarts every replica of an installation with its flags as they are now (under
// --cluster-name name, with the token w.confirm holds for it), one after the other, as a
// rolling update does (SIGTERM, then the new process): a rename, or a confirmed mass deletion.
// A replica that is down now starts with the new flags when it comes back.
func (w *world) restartAll(inst, name string) ([]string, error) {
	c := specOf(inst)
	var started []string
	for i, r := range w.replicas[inst] {
		args, _ := w.operatorArgs(c, i, name)
		r.setArgs(args)
		if r.current() == nil {
			continue
		}
		r.stop()
		p, err := r.start()
		if err != nil {
			return started, err
		}
		started = append(started, p.name)
		// As a rolling update waits for each new pod to be ready before the next.
		if err := w.await(r, (*proc).healthy); err != nil {
			return started, err
		}
	}
	return started, nil
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
