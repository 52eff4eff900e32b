// Command bench is `make bench`: the operator's scale run. It starts a real kube-apiserver and
// etcd, creates N annotated Ingresses (N = 1,000, 5,000, 10,000 by default), and for each N
// measures, against a router-hosts server:
//
//   - the floor: N AddHost calls from a plain gRPC client at the operator's write concurrency,
//     on an empty server;
//   - the operator binary, started as its own process with default flags: the time from its
//     start until all N entries exist, and every RPC it sent;
//   - no-op syncs (each triggered by a label change that alters no endpoint): the operator's
//     own time, the ListHosts time, and the writes and Kubernetes API requests they made;
//   - peak RSS and peak in-use Go heap of the operator;
//   - change latency: single-object changes a second apart, from the API write until the
//     server's entry shows the new address.
//
// The plan benchmark (`go test -bench` on 10,000 endpoints) runs first, and everything is
// printed as one table against the budgets of docs/performance.md. With -strict the exit
// status is 1 when a budget is missed.
//
// The server is the router-hosts test server by default; -server=real uses a real one from the
// operator's own ROUTER_HOSTS_OPERATOR_* variables, writing only entries tagged
// cluster:rho-bench and deleting them afterwards.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
)

const envPrefix = "ROUTER_HOSTS_OPERATOR_"

type options struct {
	sizes       []int
	changes     int
	creates     int
	noops       int
	concurrency int
	operator    string
	server      string
	replayCost  time.Duration
	routerSizes []int
	// hmSizes are the sizes run with HostMappings instead of Ingresses; dnsSizes and dnsHMSizes
	// the Ingress and HostMapping sizes run twice more with a router DNS, without the check of
	// it and with it.
	hmSizes    []int
	dnsSizes   []int
	dnsHMSizes []int
	planBench  bool
	strict     bool
	// mixed is N of the mixed run (N Ingresses, HTTPRoutes and Services, 10 × N plain
	// Services); 0 for none.
	mixed int
	// classWide is N of the class-wide run (N Ingresses, one in ten managed by its class).
	classWide int
	// keep keeps the operator logs of a run that succeeds, too.
	keep bool
	// outage is how long the test server is stopped in each HostMapping run; 0 for no outage.
	outage time.Duration
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "floor" {
		if err := floorClient(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench floor:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "pair" {
		if err := pairCommand(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench pair:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "reads" {
		if err := readsCommand(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench reads:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	sizes := flag.String("sizes", "1000,5000,10000", "numbers of Ingresses, comma-separated")
	routerSizes := flag.String("router-sizes", "1000", "sizes also run with the test server slowed to the real server's replay cost (test server only; empty for none)")
	hmSizes := flag.String("hostmapping-sizes", "1000", "numbers of HostMappings, comma-separated, run also (empty for none)")
	dnsHMSizes := flag.String("dns-hostmapping-sizes", "1000", "numbers of HostMappings run the same way, the Answering condition written beside Synced (test server only; empty for none)")
	dnsSizes := flag.String("dns-sizes", "1000", "sizes also run twice with a router DNS, dnsmasq serving the test server's hosts file: without the check, then with --verify-dns (test server only; needs dnsmasq; empty for none)")
	flag.IntVar(&o.changes, "changes", 50, "single-object changes timed per size, one a second")
	flag.IntVar(&o.creates, "creates", 10, "new objects (a new hostname each) timed per Ingress size, one a second")
	flag.IntVar(&o.noops, "noops", 5, "no-op syncs timed per size")
	flag.IntVar(&o.concurrency, "concurrency", 4, "write concurrency of the plain client; the operator runs with its default (4)")
	flag.StringVar(&o.operator, "operator", "bin/router-hosts-operator", "operator binary")
	flag.StringVar(&o.server, "server", "test", "test: the router-hosts test server; real: the server in ROUTER_HOSTS_OPERATOR_*")
	flag.DurationVar(&o.replayCost, "replay-cost", 0, "test server latency per replayed event in the main runs")
	flag.BoolVar(&o.planBench, "plan", true, "run the plan benchmark first")
	flag.IntVar(&o.classWide, "class-wide", 0, "N of the class-wide run: N Ingresses without annotations, one in ten of the class the operator manages with --ingress-class (0 for none)")
	flag.IntVar(&o.mixed, "mixed", 1000, "N of the mixed run: N Ingresses, N HTTPRoutes and N annotated Services beside 10 × N plain Services (0 for none)")
	flag.BoolVar(&o.keep, "keep", false, "keep the operator logs (they are kept anyway when the run fails)")
	flag.DurationVar(&o.outage, "outage", 10*time.Second, "how long the test server is stopped in each HostMapping run, 0 for no outage run")
	flag.BoolVar(&o.strict, "strict", false, "exit 1 when a budget is missed")
	flag.Parse()
	var err error
	if o.sizes, err = parseSizes(*sizes); err == nil {
		o.routerSizes, err = parseSizes(*routerSizes)
	}
	if err == nil {
		o.hmSizes, err = parseSizes(*hmSizes)
	}
	if err == nil {
		o.dnsSizes, err = parseSizes(*dnsSizes)
	}
	if err == nil {
		o.dnsHMSizes, err = parseSizes(*dnsHMSizes)
	}
	if err == nil && o.server == "real" {
		o.routerSizes, o.dnsSizes, o.dnsHMSizes = nil, nil, nil
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	missed, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench failed:", err)
		os.Exit(1)
	}
	if missed > 0 && o.strict {
		os.Exit(1)
	}
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("size %q is not a positive number", f)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

// bench holds what every run shares.
type bench struct {
	opts       options
	dir        string
	kubeconfig string
	cluster    *cluster // Ingresses
	hm         *cluster // HostMappings
	mixed      *cluster // the mixed run's Ingresses; its routes and Services beside them
	classWide  *cluster // the class-wide run's Ingresses
	srv        server
	// conn reaches the server of the operator startConverged last started; dns is the run's
	// router DNS.
	conn conn
	dns  dnsMode
	// changes counts the addresses nextIP has handed out.
	changes int
}

// result is one run's measurements.
type result struct {
	label string
	// dns: the run checked the router's DNS; dnsPerMinute is the questions it asked a minute
	// over the run after convergence.
	dns          bool
	dnsPerMinute float64
	// explainTook and listTook time those commands as whole processes once the run converged;
	// explainReads are explain's ListHosts / SearchHosts calls.
	explainTook, listTook time.Duration
	explainReads          string
	// planTook and planReads time plan -f with one new object of the run's kind, laid over the
	// run's objects: two decisions, one read of the router.
	planTook  time.Duration
	planReads string
	// n is the entries the run converges to; objects, when set, the objects the operator
	// caches (the class-wide run's Ingresses of every class), by which the memory budget goes.
	n, objects int
	replayCost time.Duration
	floor      time.Duration
	converge   time.Duration
	// ready is when the operator's caches were synced (its metrics server starts then);
	// firstSync is the duration of its first sync, list, plan and writes.
	ready, firstSync time.Duration
	// settleRequests are the Kubernetes requests after convergence: the first sync's events;
	// kubeAtConverge is the operator's count when convergence was seen, before any event.
	settleRequests, kubeAtConverge float64
	// realServer: the floor and the operator met different servers (a real server's log only
	// grows), so their ratio is shown but not judged.
	realServer bool
	// floorCPU and convergeCPU are the CPU time of the plain client and of the operator until
	// convergence: on a shared machine, client CPU is taken from a CPU-bound server.
	floorCPU, convergeCPU time.Duration
	// rpcs is what the operator sent until convergence, by RPC, from its own metrics; server
	// is the same as counted by the server, when it can tell.
	rpcs, server map[string]int64
	noopOp       []time.Duration
	noopList     []time.Duration
	noopWrites   float64
	noopKube     float64
	rssPeak      uint64
	rssSteady    uint64
	heapPeak     uint64
	latencies    []time.Duration
	// kind is the kind of the run's objects; statusSynced, for HostMappings, is the time from
	// the operator's start until every status said Synced, and statusPending how many were
	// still to be written when the changes began.
	kind          string
	statusSynced  time.Duration
	statusPending int
	// changeLists is the number of ListHosts the operator sent while the changes were made,
	// over changeTime.
	changeLists float64
	changeTime  time.Duration
	// creations are the timed creates of new objects; createLists and createSearches the
	// ListHosts and SearchHosts the operator sent meanwhile.
	creations                   []time.Duration
	createLists, createSearches float64
	// outage is the outage run's, for HostMappings on the test server.
	outage *outageResult
}

func run(o options) (missed int, err error) {
	ctx := context.Background()
	var plan *planResult
	if o.planBench {
		fmt.Fprintln(os.Stderr, "bench: plan benchmark (go test -bench BenchmarkPlan10k, 5 runs)")
		if plan, err = runPlanBench(ctx); err != nil {
			return 0, err
		}
	}
	b := &bench{opts: o}
	if b.dir, err = os.MkdirTemp("", "rho-bench-"); err != nil {
		return 0, fmt.Errorf("temp dir: %w", err)
	}
	// The operator's logs stay for a look when the run fails.
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (operator logs kept in %s)", err, b.dir)
			return
		}
		if o.keep {
			fmt.Fprintln(os.Stderr, "bench: operator logs kept in", b.dir)
			return
		}
		_ = os.RemoveAll(b.dir)
	}()
	if o.server == "real" {
		if b.srv, err = newRealServer(); err != nil {
			return 0, err
		}
	} else {
		b.srv = &testServer{dir: b.dir}
	}
	defer func() { _ = b.srv.cleanup(ctx) }()
	fmt.Fprintln(os.Stderr, "bench: starting kube-apiserver and etcd")
	cp, err := kubetest.Start(filepath.Join("kustomize", "crds"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = cp.Stop() }()
	b.kubeconfig = filepath.Join(b.dir, "kubeconfig")
	if err := cp.WriteKubeconfig(b.kubeconfig); err != nil {
		return 0, err
	}
	cfg := *cp.Config
	cfg.QPS, cfg.Burst = 2000, 4000
	client, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return 0, fmt.Errorf("kube client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(&cfg)
	if err != nil {
		return 0, fmt.Errorf("dynamic client: %w", err)
	}
	if b.cluster, err = newCluster(ctx, client, dyn, "Ingress"); err != nil {
		return 0, err
	}
	if b.hm, err = newCluster(ctx, client, dyn, source.HostMappingKind); err != nil {
		return 0, err
	}
	if o.mixed > 0 {
		if err := cp.InstallGatewayAPI(); err != nil {
			return 0, err
		}
		if b.mixed, err = newCluster(ctx, client, dyn, "Ingress"); err != nil {
			return 0, err
		}
		b.mixed.ns = mixedNamespace
		if err := b.mixed.ensureNamespace(ctx); err != nil {
			return 0, err
		}
	}
	if o.classWide > 0 {
		if b.classWide, err = newCluster(ctx, client, dyn, "Ingress"); err != nil {
			return 0, err
		}
		b.classWide.ns, b.classWide.classWide = classNamespace, true
		if err := b.classWide.ensureNamespace(ctx); err != nil {
			return 0, err
		}
	}
	var results []*result
	type runSpec struct {
		n    int
		cost time.Duration
		c    *cluster
		dns  dnsMode
	}
	var specs []runSpec
	for _, n := range o.sizes {
		specs = append(specs, runSpec{n, o.replayCost, b.cluster, noDNS})
	}
	for _, n := range o.routerSizes {
		specs = append(specs, runSpec{n, inmemory.RouterReplayCost, b.cluster, noDNS})
	}
	for _, n := range o.hmSizes {
		specs = append(specs, runSpec{n, o.replayCost, b.hm, noDNS})
	}
	for _, n := range o.dnsSizes {
		specs = append(specs, runSpec{n, o.replayCost, b.cluster, hostsFile}, runSpec{n, o.replayCost, b.cluster, checked})
	}
	for _, n := range o.dnsHMSizes {
		specs = append(specs, runSpec{n, o.replayCost, b.hm, hostsFile}, runSpec{n, o.replayCost, b.hm, checked})
	}
	// A cluster only grows, so the runs go by size; at one size the memory-speed run first,
	// HostMappings last.
	sort.SliceStable(specs, func(i, j int) bool { return specs[i].n < specs[j].n })
	sort.SliceStable(specs, func(i, j int) bool { return specs[i].c == b.cluster && specs[j].c == b.hm })
	for _, s := range specs {
		b.dns = s.dns
		r, err := b.run(ctx, s.c, s.n, s.cost)
		if err != nil {
			return 0, fmt.Errorf("N=%d: %w", s.n, err)
		}
		results = append(results, r)
	}
	if o.mixed > 0 {
		r, err := b.runMixed(ctx, o.mixed)
		if err != nil {
			return 0, fmt.Errorf("mixed run: %w", err)
		}
		results = append(results, r)
	}
	if o.classWide > 0 {
		r, err := b.runClassWide(ctx, o.classWide)
		if err != nil {
			return 0, fmt.Errorf("class-wide run: %w", err)
		}
		results = append(results, r)
	}
	return printTable(os.Stdout, b.srv.describe(), plan, results, o), nil
}

// run measures one size of one kind against a fresh server.
func (b *bench) run(ctx context.Context, cl *cluster, n int, cost time.Duration) (*result, error) {
	r := &result{n: n, replayCost: cost, kind: cl.kind, label: fmt.Sprintf("N=%d", n), realServer: b.opts.server == "real", dns: b.dns == checked}
	sourceArgs := []string{"--source=ingress"}
	if cl.kind == source.HostMappingKind {
		r.label = fmt.Sprintf("%d HostMappings", n)
		sourceArgs = []string{"--source=hostmapping", "--namespace=" + cl.ns}
	}
	r.label += b.dns.label()
	if cost > 0 {
		r.label += fmt.Sprintf(" @%v/event", cost)
	}
	step := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "bench: %s: %s\n", r.label, fmt.Sprintf(format, a...))
	}
	if len(cl.apps) < n {
		step("creating %d %ss", n-len(cl.apps), cl.kind)
		t := time.Now()
		if err := cl.grow(ctx, n); err != nil {
			return nil, err
		}
		step("created in %v", time.Since(t).Round(time.Millisecond))
	}
	if len(cl.apps) != n {
		return nil, fmt.Errorf("the cluster holds %d %ss, not %d: runs must go by size", len(cl.apps), cl.kind, n)
	}
	apps := cl.apps

	c, err := b.srv.fresh(ctx, cost)
	if err != nil {
		return nil, err
	}
	if r.floor, r.floorCPU, err = floor(ctx, b.dir, c, cl.kind, cl.ns, apps, b.opts.concurrency); err != nil {
		return nil, err
	}
	step("floor: %d AddHost from a plain client, %d at a time: %v", n, b.opts.concurrency, r.floor.Round(time.Millisecond))

	op, stopHeap, err := b.startConverged(ctx, cost, r, sourceArgs...)
	if err != nil {
		return nil, err
	}
	defer op.stop()
	defer stopHeap()
	step("converged in %v (%.2f × floor; caches synced after %v, first sync %v); RPCs %v", r.converge.Round(time.Millisecond),
		ratio(r.converge, r.floor), r.ready.Round(time.Millisecond), r.firstSync.Round(time.Millisecond), r.rpcs)
	var statuses *statusWatch
	if cl.kind == source.HostMappingKind {
		// The changes are timed while the statuses of the first sync are still being written.
		wctx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		if statuses, err = cl.watchStatuses(wctx); err != nil {
			return nil, err
		}
		r.statusPending = n - statuses.count()
		statusDone := make(chan error, 1)
		go func() {
			at, err := statuses.waitAll(ctx, n, 30*time.Minute, op.alive)
			r.statusSynced = at.Sub(op.Started)
			statusDone <- err
		}()
		if err := b.latency(ctx, cl, op, r, step); err != nil {
			return nil, err
		}
		if err := <-statusDone; err != nil {
			return nil, err
		}
		step("every status Synced %v after start (%d pending when the changes began)", r.statusSynced.Round(time.Millisecond), r.statusPending)
	}
	var asked float64
	var askedAt time.Time
	if b.dns == checked {
		if asked, askedAt, err = dnsQuestions(ctx, op); err != nil {
			return nil, err
		}
	}
	if err := b.settle(ctx, op, r); err != nil {
		return nil, err
	}
	if err := b.noops(ctx, cl, op, r); err != nil {
		return nil, err
	}
	step("no-op syncs: operator %v, ListHosts %v", r.noopOp, r.noopList)
	if cl.kind != source.HostMappingKind {
		if err := b.latency(ctx, cl, op, r, step); err != nil {
			return nil, err
		}
		if err := b.creations(ctx, cl, op, r, step); err != nil {
			return nil, err
		}
	} else if b.opts.outage > 0 {
		if err := b.outage(ctx, cl, op, r, statuses, b.opts.outage, step); err != nil {
			return nil, err
		}
	}
	if b.dns == checked {
		now, at, err := dnsQuestions(ctx, op)
		if err != nil {
			return nil, err
		}
		r.dnsPerMinute = (now - asked) / at.Sub(askedAt).Minutes()
		step("DNS questions: %.0f a minute over %v", r.dnsPerMinute, at.Sub(askedAt).Round(time.Second))
	}
	if err := b.finish(op, r, stopHeap); err != nil {
		return nil, err
	}
	if len(apps) > 0 {
		if err := b.explainRun(ctx, b.conn, r, apps[0].hostname, sourceArgs...); err != nil {
			return nil, err
		}
		step("explain %s: %v (ListHosts / SearchHosts %s); list: %v; plan -f: %v (%s)", apps[0].hostname, r.explainTook.Round(time.Millisecond), r.explainReads,
			r.listTook.Round(time.Millisecond), r.planTook.Round(time.Millisecond), r.planReads)
	}
	if err := cl.shrink(ctx, n); err != nil {
		return nil, err
	}
	return r, nil
}

// startConverged starts the operator with args on a fresh server, samples its heap until
// stopHeap, and returns once it has converged (r's converge, ready, firstSync and RPC figures).
func (b *bench) startConverged(ctx context.Context, cost time.Duration, r *result, args ...string) (op *operator, stopHeap func(), err error) {
	c, err := b.srv.fresh(ctx, cost)
	if err != nil {
		return nil, nil, err
	}
	b.conn = c
	if b.dns != noDNS {
		addr, err := b.routerDNS()
		if err != nil {
			return nil, nil, err
		}
		if b.dns == checked {
			args = append(slices.Clone(args), "--verify-dns="+addr)
		}
	}
	if op, err = startOperator(b.opts.operator, b.kubeconfig, b.dir, c, args...); err != nil {
		return nil, nil, err
	}
	heapCtx, stopHeap := context.WithCancel(ctx)
	readyCh := make(chan time.Duration, 1)
	go func() {
		if _, err := op.waitMetrics(heapCtx); err == nil {
			readyCh <- time.Since(op.Started)
		}
		op.sampleHeap(heapCtx)
	}()
	if err := b.converge(ctx, op, r); err != nil {
		stopHeap()
		op.stop()
		return nil, nil, err
	}
	r.ready = <-readyCh
	return op, stopHeap, nil
}

// finish records the operator's memory at the end of a run and stops it.
func (b *bench) finish(op *operator, r *result, stopHeap func()) error {
	var err error
	if r.rssPeak, r.rssSteady, err = op.memory(); err != nil {
		return err
	}
	stopHeap()
	r.heapPeak = op.heapPeak.Load()
	op.stop()
	return nil
}

// converge waits until the server holds all N entries, timing from the operator's start, then
// records the RPCs it took once the operator has reported that sync.
func (b *bench) converge(ctx context.Context, op *operator, r *result) error {
	deadline := time.Now().Add(30 * time.Minute)
	for {
		got, ok, err := b.srv.count(ctx)
		if err != nil {
			return err
		}
		if !ok {
			m, err := op.scrape(ctx)
			if err == nil {
				got = int(m.sum("router_hosts_operator_router_hosts_requests_total", map[string]string{"method": rpcAdd, "code": "OK"}))
			}
		}
		if got >= r.n {
			r.converge = time.Since(op.Started)
			if r.convergeCPU, err = op.cpu(); err != nil {
				return err
			}
			// The writes are done and the sync has not reported yet: no event has gone out.
			m, err := op.scrape(ctx)
			if err != nil {
				return err
			}
			r.kubeAtConverge = m.kubeRequests()
			break
		}
		if err := op.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d entries after %v", got, r.n, time.Since(op.Started))
		}
		time.Sleep(b.srv.pollEvery())
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	m, err := op.waitSync(wctx, 0)
	if err != nil {
		return err
	}
	r.firstSync = time.Duration(m.sum("router_hosts_operator_last_sync_duration_seconds", nil) * float64(time.Second))
	r.rpcs = map[string]int64{}
	for _, rpc := range []string{rpcAdd, rpcUpdate, rpcDelete, rpcGet, rpcList} {
		r.rpcs[rpc] = int64(m.rpcs(rpc))
	}
	r.server = b.srv.calls()
	return nil
}

// settle waits until the operator has sent no Kubernetes request for 2 s (at most a minute),
// counting what it sent after convergence: the first sync's events, which trail it.
func (b *bench) settle(ctx context.Context, op *operator, r *result) error {
	first, err := op.scrape(ctx)
	if err != nil {
		return err
	}
	last, quietSince, deadline := first.kubeRequests(), time.Now(), time.Now().Add(time.Minute)
	for time.Since(quietSince) < 2*time.Second && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		m, err := op.scrape(ctx)
		if err != nil {
			return err
		}
		if n := m.kubeRequests(); n != last {
			last, quietSince = n, time.Now()
		}
	}
	r.settleRequests = last - r.kubeAtConverge
	return nil
}

// noops triggers no-op syncs, each by a label change on an opted-in Ingress (an informer event
// that changes no endpoint), spaced beyond --min-event-sync-interval so none coalesce.
func (b *bench) noops(ctx context.Context, cl *cluster, op *operator, r *result) error {
	before, err := op.scrape(ctx)
	if err != nil {
		return err
	}
	for k := 0; k < b.opts.noops; k++ {
		time.Sleep(1100 * time.Millisecond)
		if err := cl.touch(ctx, k%r.n, strconv.Itoa(k)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36)); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		after, err := op.waitSync(wctx, before.syncs())
		cancel()
		if err != nil {
			return fmt.Errorf("no-op sync %d: %w", k, err)
		}
		total := time.Duration(after.sum("router_hosts_operator_last_sync_duration_seconds", nil) * float64(time.Second))
		list := time.Duration(after.sum("router_hosts_operator_last_sync_list_duration_seconds", nil) * float64(time.Second))
		r.noopOp = append(r.noopOp, (total - list).Round(10*time.Microsecond))
		r.noopList = append(r.noopList, list.Round(10*time.Microsecond))
		for _, rpc := range []string{rpcAdd, rpcUpdate, rpcDelete} {
			r.noopWrites += after.rpcs(rpc) - before.rpcs(rpc)
		}
		r.noopKube += after.kubeRequests() - before.kubeRequests()
		before = after
	}
	return nil
}

// latency changes one object's address a second at a time and times each change from the API
// write until the server's entry shows it.
func (b *bench) latency(ctx context.Context, cl *cluster, op *operator, r *result, step func(string, ...any)) error {
	before, err := op.scrape(ctx)
	if err != nil {
		return err
	}
	start := time.Now().Add(time.Second)
	for k := 0; k < b.opts.changes; k++ {
		time.Sleep(time.Until(start.Add(time.Duration(k) * time.Second)))
		d, err := b.change(ctx, cl, op, k*r.n/b.opts.changes)
		if err != nil {
			return err
		}
		r.latencies = append(r.latencies, d)
	}
	after, err := op.scrape(ctx)
	if err != nil {
		return err
	}
	r.changeLists = after.rpcs("ListHosts") - before.rpcs("ListHosts")
	r.changeTime = time.Since(start)
	if len(r.latencies) > 0 {
		step("change latency p50 %v p99 %v, %v ListHosts", percentile(r.latencies, 50), percentile(r.latencies, 99), r.changeLists)
	}
	return nil
}

// creations creates new objects, each with a hostname of its own, a second apart, and times
// each from the API write until the server has its entry.
func (b *bench) creations(ctx context.Context, cl *cluster, op *operator, r *result, step func(string, ...any)) error {
	before, err := op.scrape(ctx)
	if err != nil {
		return err
	}
	start := time.Now().Add(time.Second)
	for k := 0; k < b.opts.creates; k++ {
		time.Sleep(time.Until(start.Add(time.Duration(k) * time.Second)))
		t0 := time.Now()
		a, err := cl.create(ctx, len(cl.apps))
		if err != nil {
			return err
		}
		cl.apps = append(cl.apps, a)
		d, err := b.waitIP(ctx, op, a.hostname, a.ip, t0)
		if err != nil {
			return err
		}
		r.creations = append(r.creations, d)
	}
	after, err := op.scrape(ctx)
	if err != nil {
		return err
	}
	r.createLists = after.rpcs("ListHosts") - before.rpcs("ListHosts")
	r.createSearches = after.rpcs("SearchHosts") - before.rpcs("SearchHosts")
	if len(r.creations) > 0 {
		step("create latency p50 %v p99 %v, %v ListHosts, %v SearchHosts", percentile(r.creations, 50), percentile(r.creations, 99), r.createLists, r.createSearches)
	}
	return nil
}

// change gives the i-th object an address it has never had and times it from the API write
// until the server's entry shows it.
func (b *bench) change(ctx context.Context, cl *cluster, op *operator, i int) (time.Duration, error) {
	ip := b.nextIP()
	t0 := time.Now()
	if err := cl.setIP(ctx, i, ip); err != nil {
		return 0, err
	}
	return b.waitIP(ctx, op, cl.apps[i].hostname, ip, t0)
}

// nextIP is an address in 10.200.0.0/13, which appIP never hands out, different on every call.
func (b *bench) nextIP() string {
	k := b.changes
	b.changes++
	return fmt.Sprintf("10.%d.%d.%d", 200+k/62500, k/250%250, k%250+1)
}

// waitIP waits until hostname's entry has ip and says how long that took since t0.
func (b *bench) waitIP(ctx context.Context, op *operator, hostname, ip string, t0 time.Time) (time.Duration, error) {
	for {
		got, err := b.srv.ipOf(ctx, hostname)
		if err != nil {
			return 0, err
		}
		if got == ip {
			return time.Since(t0), nil
		}
		if err := op.alive(); err != nil {
			return 0, err
		}
		if time.Since(t0) > time.Minute {
			return 0, fmt.Errorf("%s → %s not on the server after a minute", hostname, ip)
		}
		time.Sleep(b.srv.pollEvery())
	}
}

// percentile is the nearest-rank percentile p of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := (p*len(s) + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return s[rank-1]
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// planResult is the median of the plan benchmark's runs.
type planResult struct {
	nsPerOp, bytesPerOp, allocsPerOp float64
}

// runPlanBench runs the plan package's benchmark with the go tool, as a developer would.
func runPlanBench(ctx context.Context) (*planResult, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkPlan10k$", "-benchmem", "-count", "5", "./plan/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("plan benchmark: %w\n%s", err, out)
	}
	var ns, bs, allocs []float64
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "BenchmarkPlan10k") {
			continue
		}
		f := strings.Fields(line)
		for i := 1; i+1 < len(f); i++ {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				ns = append(ns, v)
			case "B/op":
				bs = append(bs, v)
			case "allocs/op":
				allocs = append(allocs, v)
			}
		}
	}
	if len(ns) == 0 {
		return nil, fmt.Errorf("plan benchmark printed no result:\n%s", out)
	}
	return &planResult{nsPerOp: median(ns), bytesPerOp: median(bs), allocsPerOp: median(allocs)}, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// machine describes where the figures come from.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				if _, v, ok := strings.Cut(line, ":"); ok {
					model = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	assets, _ := kubetest.AssetsDir()
	return fmt.Sprintf("%s, %d CPUs, %s, kube-apiserver %s", model, runtime.NumCPU(), runtime.Version(), filepath.Base(assets))
}
