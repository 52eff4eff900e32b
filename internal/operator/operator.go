// Package operator wires the operator from its configuration: Kubernetes clients, sources,
// registry, provider, controller, the observers of its syncs, leader election and the HTTP
// endpoints. main and the integration tests both build it here, so the tests run the operator
// as it ships.
package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/dnscheck"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/health"
	"github.com/router-hosts-operator/router-hosts-operator/internal/clusterconfig"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
	"github.com/router-hosts-operator/router-hosts-operator/internal/leader"
	"github.com/router-hosts-operator/router-hosts-operator/metrics"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/status"
)

// Hooks replace parts of the operator as shipped; the integration tests use them, main does
// not. A zero Hooks is the operator as shipped.
type Hooks struct {
	// Clock is the controller's clock, so that tests can let grace periods pass; nil is the
	// real one.
	Clock clock.Clock
	// DiscoveryInterval is how often missing CRDs are looked for again.
	DiscoveryInterval time.Duration
	// Sources are added after the ones --source names.
	Sources []controller.EndpointSource
	// Reporters are told of every sync, beside the operator's own.
	Reporters []controller.Reporter
	// Warner receives the problems with objects instead of the event recorder.
	Warner source.Warner
	// StatusQPS limits the status writer's client on its own.
	StatusQPS float32
	// DNSCheckGrace replaces the grace a name has to answer after a write (dnscheck).
	DNSCheckGrace time.Duration

	// kube replaces the Kubernetes clients (the plan command's, which lay manifests over the
	// cluster); store is the in-memory router of --provider=inmemory (a router's entries as
	// one read found them).
	kube  *kubeClients
	store *inmemory.Store
}

// Operator is the operator wired from a Config: sources, registry, provider, controller and the
// observers of its syncs. main and the integration tests build it the same way.
type Operator struct {
	cfg *Config
	log *logrus.Logger

	Controller *controller.Controller
	Sources    []*source.Source
	Registry   *registry.Registry
	Provider   *routerhosts.Provider
	// Status writes HostMapping statuses; nil without the hostmapping source.
	Status *status.HostMappings
	// Config follows the RouterHostsConfig; nil with --config-name="".
	Config *clusterconfig.Watcher
	// DNSCheck checks the router's DNS (--verify-dns); it checks nothing while that is off.
	DNSCheck *dnscheck.Checker

	resolver *source.Resolver
	// clients and settings are what the sources read through and the settings in use at the
	// start, for the read-only commands (explain, list) that look beyond the sources.
	clients  source.Clients
	settings clusterconfig.Settings
	events   kube.Events
	metrics  *metrics.Metrics
	checker  *health.Checker
	recorder *events.Recorder
	leases   kube.Leases
	closers  []func()

	// noRouter is why the operator started without a router (a NoRouterError), nil when it
	// had one; routerNamed is closed once a router is in use, from the start or from the
	// RouterHostsConfig later.
	noRouter    error
	routerNamed chan struct{}
	nameRouter  sync.Once
}

// Gatherer is the operator's metrics, what /metrics serves: for a program that runs the
// operator in its own process and reads what it measured (make year).
func (op *Operator) Gatherer() prometheus.Gatherer { return op.metrics.Registry }

// Run wires the operator from cfg, then runs one sync (--once) or the loop until ctx ends;
// or the command cfg names instead (webhook, release). Plan lines of --dry-run go to out.
func Run(ctx context.Context, cfg *Config, log *logrus.Logger, out io.Writer) error {
	if cfg.Command == CommandWebhook {
		w, err := NewWebhook(cfg, log, nil)
		if err != nil {
			return err
		}
		defer w.Close()
		return w.Run(ctx)
	}
	if cfg.Command == CommandRelease {
		return Release(ctx, cfg, log, out, nil)
	}
	if cfg.Command == CommandExplain || cfg.Command == CommandList {
		return Explain(ctx, cfg, log, out)
	}
	if cfg.Command == CommandPlan {
		return Plan(ctx, cfg, log, out, os.Stdin)
	}
	op, err := New(ctx, cfg, log, out, Hooks{})
	if err != nil {
		return err
	}
	defer op.Close()
	return op.Run(ctx)
}

// New wires the operator: it starts the sources' informers (they run until ctx ends) and
// connects to router-hosts, but syncs nothing yet.
func New(ctx context.Context, cfg *Config, log *logrus.Logger, out io.Writer, hooks Hooks) (_ *Operator, err error) {
	op := &Operator{cfg: cfg, log: log, routerNamed: make(chan struct{})}
	defer func() {
		if err != nil {
			op.Close()
		}
	}()
	op.metrics = metrics.New(cfg.Sources)
	op.metrics.SetBuild(cfg.Version, cfg.Build.Commit)
	kc := hooks.kube
	if kc == nil {
		restCfg, err := RESTConfig(cfg)
		if err != nil {
			return nil, err
		}
		restCfg.UserAgent = "router-hosts-operator/" + cfg.Version
		restCfg.Wrap(op.metrics.WrapTransport)
		if kc, err = newKubeClients(restCfg, cfg.KubeAPIQPS, cfg.KubeAPIBurst, hooks.StatusQPS); err != nil {
			return nil, err
		}
	}
	op.leases, op.clients, op.events = kc.leases, kc.sources, kc.events

	// The RouterHostsConfig, when there is one, is read before anything is built from the
	// settings it may override.
	settings := cfg.settings()
	if settings.ClusterID == "" {
		if kc.namespaces == nil {
			return nil, errors.New("no cluster to derive the installation's identity from; give --cluster-id")
		}
		if settings.ClusterID, err = clusterIdentity(ctx, kc.namespaces, cfg); err != nil {
			return nil, err
		}
	}
	var cerr error // why the RouterHostsConfig is not usable, when it is not
	if cfg.ConfigName != "" {
		op.Config = clusterconfig.New(clusterconfig.Options{Name: cfg.ConfigName, Base: settings, Dynamic: kc.sources.Dynamic,
			Discovery: kc.sources.Discovery, Secrets: kc.secrets, Status: kc.status, Reconfigure: op.reconfigure, Version: op.serverVersion,
			MaterialFailed: func(error) { op.metrics.TLSReloadFailed(metrics.TLSSecret) }, DiscoveryInterval: hooks.DiscoveryInterval,
			Log: log.WithField("component", "config")})
		settings, cerr = op.Config.Load(ctx)
		if cerr != nil {
			// An object that exists but cannot be used (or cannot be read) is waited for, as a
			// missing router is: its Secret may come later (cert-manager) or be restored. The
			// flags are no fallback for it, since they may name another router or cluster, or
			// fewer rules; the flags alone apply only when there is no object at all.
			if ferr := settings.Check(); cfg.Once || (ferr != nil && !clusterconfig.IsNoRouter(ferr)) {
				return nil, fmt.Errorf("RouterHostsConfig %s: %w", cfg.ConfigName, cerr)
			}
			op.noRouter = fmt.Errorf("RouterHostsConfig %s: %w", cfg.ConfigName, cerr)
			msg := "RouterHostsConfig not usable; waiting for it, syncing nothing until then (the flags are no fallback for it)"
			if clusterconfig.IsNoRouter(cerr) {
				msg = "no router named yet; waiting for the RouterHostsConfig to name one (spec.server), syncing nothing until then"
			}
			log.WithError(op.noRouter).WithField("config", cfg.ConfigName).Warn(msg)
		}
	}
	switch err := settings.Check(); {
	case op.noRouter != nil:
		// Waiting for the RouterHostsConfig, as said above.
	case err != nil:
		if cfg.Once || !clusterconfig.IsNoRouter(err) {
			return nil, noRouterHint(err, cfg)
		}
		// Nothing names a router yet: everything else starts, and the RouterHostsConfig
		// names one later (a GitOps tool may apply it after the operator).
		op.noRouter = err
		log.WithError(op.noRouter).WithField("config", cfg.ConfigName).Warn("no router named yet; waiting for the RouterHostsConfig to name one (spec.server), syncing nothing until then")
	default:
		op.routerIsNamed()
	}
	op.metrics.SetRouterConfigured(op.noRouter == nil)
	op.settings = settings
	rc := settings.Registry()
	rc.Log = log.WithField("component", "registry")
	if cfg.Once && cfg.Command != CommandExplain && cfg.Command != CommandList && cfg.Command != CommandPlan {
		// A run that syncs once answers a release probe at no interval: its mark says none.
		// explain and list decide as the running operator does, with its interval.
		rc.Interval = 0
	}
	op.Registry, err = registry.New(rc)
	if err != nil {
		return nil, fmt.Errorf("--cluster-name/--default-tag: %w", err)
	}
	var closeProv func()
	op.Provider, closeProv, err = newProvider(cfg, settings, op.noRouter != nil, hooks.store, log, op.metrics)
	if err != nil {
		return nil, err
	}
	op.closers = append(op.closers, closeProv)

	// One resolver for every source: each named Service is watched once.
	resolver, err := source.NewResolver(ctx, kc.sources, settings.IPResolution)
	if err != nil {
		return nil, fmt.Errorf("starting --ip-resolution: %w", err)
	}
	op.resolver = resolver
	if dns := newDNS(ctx, cfg.DNSServers, hooks.Clock, log); dns != nil {
		resolver.UseDNS(dns)
	}
	var stopEvents func()
	host, _ := os.Hostname()
	op.recorder, stopEvents = events.New(kc.eventSink, events.Instance(settings.ClusterID, host), log.WithField("component", "events"))
	op.closers = append(op.closers, stopEvents)
	if op.Config != nil {
		op.recorder.SetClusterObject(op.Config.ObjectRef)
	}
	srcCfg := source.Config{Namespace: cfg.Namespace, LabelSelector: cfg.LabelFilter, Resolver: resolver,
		DiscoveryInterval: hooks.DiscoveryInterval, Warner: op.recorder, OptIn: settings.OptIn}
	if hooks.Warner != nil {
		srcCfg.Warner = hooks.Warner
	}
	var sources []controller.EndpointSource
	reporters := append([]controller.Reporter(nil), hooks.Reporters...)
	for _, name := range cfg.Sources {
		c := srcCfg
		c.Log = log.WithField("source", name)
		s, err := source.Build(ctx, name, kc.sources, c)
		if err != nil {
			return nil, fmt.Errorf("starting the %s source: %w", name, err)
		}
		op.Sources = append(op.Sources, s)
		if hm, ok := source.HostMappingsOf(s); ok {
			op.Status = status.NewHostMappings(hm, kc.status.Resource(source.HostMappingGVR), log.WithField("component", "status"))
			reporters = append(reporters, op.Status)
		}
	}
	for _, s := range op.Sources {
		sources = append(sources, s)
	}
	sources = append(sources, hooks.Sources...)
	op.checker = health.New(settings.Interval, op.synced, hooks.Clock)
	if op.noRouter != nil {
		op.checker.SetNoRouter(op.noRouter.Error())
	}
	reporters = append(reporters, op.metrics, op.checker, op.recorder)
	op.DNSCheck = op.newDNSCheck(settings, hooks, log)
	reporters = append(reporters, op.DNSCheck)
	if op.Config != nil {
		reporters = append(reporters, op.Config)
	}
	op.Controller = controller.New(controller.Config{
		Sources: sources, Reporters: reporters, Registry: op.Registry, Provider: op.Provider,
		Interval: settings.Interval, MinEventSyncInterval: cfg.MinEventSyncInterval,
		DryRun: cfg.DryRun, Out: out, Log: log.WithField("component", "controller"), Clock: hooks.Clock,
	})
	return op, nil
}

// noRouterHint adds to a NoRouterError what a run that cannot wait (--once) can do instead.
func noRouterHint(err error, cfg *Config) error {
	if !clusterconfig.IsNoRouter(err) {
		return err
	}
	return fmt.Errorf("%w (--once does not wait for a RouterHostsConfig to name a router; --provider=inmemory tries the operator without one)", err)
}

// routerIsNamed records that a router is in use, once.
func (op *Operator) routerIsNamed() {
	op.nameRouter.Do(func() {
		close(op.routerNamed)
		if op.metrics != nil {
			op.metrics.SetRouterConfigured(true)
		}
		if op.checker != nil {
			op.checker.SetNoRouter("")
		}
		if op.noRouter != nil {
			op.log.WithField("config", op.cfg.ConfigName).Info("a router is named; syncing")
		}
	})
}

// clusterIdentity derives the installation's identity (registry.Identity) from the
// kube-system namespace's UID, which lives as long as the cluster, and the leader Lease's
// namespace and name, which tell two installations in one cluster apart.
func clusterIdentity(ctx context.Context, ns kube.Getter[*corev1.Namespace], cfg *Config) (string, error) {
	ks, err := ns.Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the kube-system namespace's UID, from which the cluster's identity is derived "+
			"(grant get on namespaces/kube-system, as the chart does, or set --cluster-id): %w", err)
	}
	return registry.Identity(string(ks.UID), cfg.LeaderElectionNS, cfg.LeaderElectionID), nil
}

// serverVersion is the server's version, for the RouterHostsConfig's status; the provider is
// built after the config is read, so it is looked up when asked.
func (op *Operator) serverVersion(ctx context.Context) (string, error) {
	if op.Provider == nil {
		return "", errors.New("not connected")
	}
	return op.Provider.ServerVersion(ctx)
}

// reconfigure puts settings from the RouterHostsConfig in use between two syncs: the
// connection first (the only step that can fail on its own), then the resolution chain and the
// registry's policy, then the controller's. A waiting operator starts syncing only once all of them
// are in place, never on part of them.
func (op *Operator) reconfigure(s clusterconfig.Settings) error {
	err := op.Controller.Reconfigure(func() error {
		if err := op.Provider.Retarget(s.Target()); err != nil {
			return fmt.Errorf("connecting to %s: %w", s.Endpoint, err)
		}
		if err := op.resolver.SetChain(s.IPResolution); err != nil {
			return fmt.Errorf("the IP resolution chain: %w", err)
		}
		rc := s.Registry()
		rc.Log = op.log.WithField("component", "registry")
		if err := op.Registry.Reconfigure(rc); err != nil {
			return err
		}
		for _, src := range op.Sources {
			src.SetOptIn(s.OptIn)
		}
		op.checker.SetInterval(s.Interval)
		op.DNSCheck.SetServer(s.VerifyDNS)
		op.DNSCheck.SetInterval(s.Interval)
		return nil
	}, controller.LoopSettings{Interval: s.Interval})
	if err == nil && (s.Endpoint != "" || s.NoServer) {
		op.routerIsNamed()
	}
	return err
}

// Close releases the connection to router-hosts and stops the event recorder.
func (op *Operator) Close() {
	for i := len(op.closers) - 1; i >= 0; i-- {
		op.closers[i]()
	}
	op.closers = nil
}

// Run runs one sync (--once) or the loop until ctx ends, under leader election when asked.
func (op *Operator) Run(ctx context.Context) error {
	cfg, log := op.cfg, op.log
	fields := logrus.Fields{
		"version": cfg.Version, "commit": cfg.Build.Commit, "sources": cfg.Sources, "provider": cfg.Provider, "cluster": op.settings.ClusterName, "cluster_id": op.settings.ClusterID,
		"policy": cfg.Policy, "dry_run": cfg.DryRun, "once": cfg.Once, "leader_elect": cfg.LeaderElect,
	}
	if op.noRouter != nil {
		// Nothing is in use while waiting: the flags' cluster name may never be the one used.
		delete(fields, "cluster")
		fields["waiting"] = true
	}
	log.WithFields(fields).Info("router-hosts-operator starting")
	// The status writer runs beside the loop, only while this replica leads.
	runStatus := func(ctx context.Context) {
		if op.Status != nil && !cfg.DryRun {
			go op.Status.Run(ctx)
		}
	}
	if cfg.Once {
		op.recorder.SetLeading(!cfg.DryRun)
		if op.Config != nil && !cfg.DryRun {
			defer func() { op.Config.Flush(ctx) }()
		}
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		runStatus(sctx)
		_, err := op.Controller.SyncOnce(ctx)
		if op.Status != nil {
			// Every status is written before the process ends, at the status client's pace.
			if ferr := op.Status.Flush(ctx); ferr != nil && err == nil {
				err = ferr
			}
		}
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		return nil
	}
	if cfg.MetricsAddress != "" {
		stop, err := serveHTTP(cfg.MetricsAddress, probeLimits, op.metrics, op.checker, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	if op.Config != nil {
		// Every replica follows the config, so that a standby takes over with the current one.
		go op.Config.Run(ctx)
	}
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-op.routerNamed:
		}
		// A certificate rotated while router-hosts refuses the old one is tried at once.
		op.Provider.WatchCredentials(ctx, 5*time.Second, op.Controller.CredentialsChanged)
		// A router back from an outage is synced as soon as it answers.
		op.Provider.WatchConnection(ctx, op.Controller.ServerReachable)
	}()
	lead := func(ctx context.Context) error {
		op.metrics.SetLeader(true)
		op.checker.SetLeading(true)
		defer func() { op.metrics.SetLeader(false); op.checker.SetLeading(false) }()
		// The leader writes the RouterHostsConfig's status, which says why nothing syncs while
		// no router is named.
		if op.Config != nil && !cfg.DryRun {
			go op.Config.RunStatus(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-op.routerNamed:
		}
		op.recorder.SetLeading(!cfg.DryRun) // a dry run writes nothing, events included
		defer op.recorder.SetLeading(false)
		runStatus(ctx)
		if !cfg.DryRun {
			go op.DNSCheck.Run(ctx) // beside the loop, as the status writer
		}
		return op.Controller.Run(ctx)
	}
	if !cfg.LeaderElect {
		return lead(ctx)
	}
	return runElected(ctx, cfg, op.leases, log, lead)
}

// synced reports whether every source's caches are filled, for /readyz.
func (op *Operator) synced() bool {
	for _, s := range op.Sources {
		if !s.Synced() {
			return false
		}
	}
	return true
}

// kubeClients are the operator's Kubernetes clients: typed clients for the API groups it uses
// (package kube), not client-go's clientset, which would link the client code of every group
// into the binary.
type kubeClients struct {
	sources source.Clients
	status  dynamic.Interface
	// events reads events (explain); eventSink writes them, through the same rate limiter.
	events    kube.Events
	eventSink record.EventSink
	secrets   kube.Secrets
	// namespaces reads the kube-system namespace, whose UID the identity derives from.
	namespaces kube.Getter[*corev1.Namespace]
	leases     kube.Leases
}

// newKubeClients builds the clients from restCfg. Built-in kinds travel as protobuf: listing
// thousands of Ingresses at start decodes several times faster and allocates less than JSON
// (the dynamic client, for Traefik routes and HostMappings, keeps JSON: custom resources have no
// protobuf form). There are four rate limiters: the sources, the status writer, events and the
// leader Lease have one each, so thousands of status writes or events after a large first
// sync never delay an informer's relist or a Lease renewal (which would cost the leadership).
func newKubeClients(restCfg *rest.Config, qps float32, burst int, statusQPS float32) (*kubeClients, error) {
	ownLimiter := func(c *rest.Config) *rest.Config {
		c = rest.CopyConfig(c)
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
		return c
	}
	dynCfg := ownLimiter(restCfg)
	protoCfg := rest.CopyConfig(dynCfg) // the same limiter as the dynamic client
	protoCfg.ContentType = runtime.ContentTypeProtobuf
	protoCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kc := &kubeClients{}
	networking, err := kube.NewNetworking(protoCfg)
	if err != nil {
		return nil, err
	}
	core, err := kube.NewCore(protoCfg)
	if err != nil {
		return nil, err
	}
	// The mTLS Secret and the kube-system namespace share the sources' client: one object
	// each, read rarely.
	kc.sources.Ingresses, kc.sources.Services = networking.Ingresses, core.Services
	kc.secrets, kc.namespaces = core.Secrets, core.Namespaces()
	if kc.sources.Discovery, err = kube.NewDiscovery(protoCfg); err != nil {
		return nil, err
	}
	if kc.sources.Dynamic, err = dynamic.NewForConfig(dynCfg); err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	statusCfg := ownLimiter(restCfg)
	if statusQPS > 0 {
		statusCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(statusQPS, 1)
	}
	if kc.status, err = dynamic.NewForConfig(statusCfg); err != nil {
		return nil, fmt.Errorf("creating the status client: %w", err)
	}
	eventsCore, err := kube.NewCore(ownLimiter(protoCfg))
	if err != nil {
		return nil, err
	}
	kc.events, kc.eventSink = eventsCore.Events, eventsCore.EventSink()
	coordination, err := kube.NewCoordination(ownLimiter(protoCfg))
	if err != nil {
		return nil, err
	}
	kc.leases = coordination.Leases
	return kc, nil
}

// serveHTTP serves /metrics, /healthz, /readyz and /routerz within l until stop is called.
func serveHTTP(addr string, l serverLimits, m *metrics.Metrics, checker *health.Checker, log *logrus.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", checker.Healthz)
	mux.HandleFunc("/readyz", checker.Readyz)
	mux.HandleFunc("/routerz", checker.Routerz)
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-address %s: %w", addr, err)
	}
	srv := l.server(mux)
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).Error("metrics server stopped")
		}
	}()
	log.WithField("address", lis.Addr().String()).Info("serving /metrics, /healthz, /readyz and /routerz")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// runElected runs lead only while this replica holds the Lease. Every replica keeps its
// informer caches warm, so a standby that takes over syncs at once. A replica that loses the
// Lease (the apiserver away for longer than the renew deadline) stops its loop, waits until
// the loop has returned, and stands by to lead again, rather than exiting: another replica
// can take the Lease only once it has expired, after the loop stopped. On shutdown the Lease
// is released, so a rolling update hands over in seconds instead of a lease duration.
func runElected(ctx context.Context, cfg *Config, leases kube.Leases, log *logrus.Logger, lead func(context.Context) error) error {
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s_%d", host, time.Now().UnixNano())
	for {
		// led receives lead's result; the elector runs lead in a goroutine of its own and
		// does not wait for it.
		led := make(chan error, 1)
		var leading atomic.Bool
		leader.Run(ctx, leader.Config{
			Client: leases(cfg.LeaderElectionNS), Namespace: cfg.LeaderElectionNS, Name: cfg.LeaderElectionID, Identity: id,
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			OnStartedLeading: func(ctx context.Context) {
				leading.Store(true)
				log.WithField("identity", id).Info("became leader; syncing")
				led <- lead(ctx)
			},
			OnStoppedLeading: func() { log.WithField("identity", id).Info("stopped leading") },
			OnNewLeader: func(current string) {
				if current != id {
					log.WithField("leader", current).Info("standing by; another replica leads")
				}
			},
		})
		var leadErr error
		if leading.Load() {
			leadErr = <-led
		}
		if ctx.Err() != nil || leadErr != nil {
			return leadErr
		}
		log.WithField("identity", id).Warn("lost the leader Lease (the apiserver did not answer in time); the loop has stopped, standing by to lead again")
	}
}

// newProvider connects to the router-hosts server, or starts the in-process store; m counts
// every call and follows the client certificate.
func newProvider(cfg *Config, s clusterconfig.Settings, waiting bool, store *inmemory.Store, log *logrus.Logger, m *metrics.Metrics) (*routerhosts.Provider, func(), error) {
	opts := routerhosts.Options{
		Endpoint: s.Endpoint, CAFile: cfg.TLSCA, CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey, Keys: s.Keys,
		ServerName: s.ServerName, Timeout: cfg.RequestTimeout, WriteConcurrency: cfg.WriteConcurrency,
		Observe: m.ObserveRPC, Credentials: func(ev routerhosts.CredentialsEvent) {
			if ev.Err != nil {
				m.TLSReloadFailed(metrics.TLSFiles)
			}
			m.ClientCertificate(ev.NotAfter)
		},
		Log: log.WithField("component", "provider"),
	}
	if cfg.Provider == "inmemory" {
		// Entries live only as long as the process: for trying the operator out.
		if store == nil {
			store = inmemory.NewStore()
		}
		conn, stop, err := inmemory.Dial(inmemory.NewService(store))
		if err != nil {
			return nil, nil, fmt.Errorf("starting the in-memory provider: %w", err)
		}
		return routerhosts.NewFromConn(conn, opts), stop, nil
	}
	if waiting {
		p := routerhosts.NewWaiting(opts)
		return p, func() { _ = p.Close() }, nil
	}
	p, err := routerhosts.New(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to router-hosts at %s: %w", s.Endpoint, err)
	}
	return p, func() { _ = p.Close() }, nil
}

// newDNS returns the cache that resolves hostnames given where an address is wanted, asking
// servers in turn (else the system's nameservers), with the tests' clock when it has timers;
// nil, with a warning, when there is no server to ask: such hostnames then have no address,
// and their entries are kept as they are.
func newDNS(ctx context.Context, servers []string, clk clock.Clock, log logrus.FieldLogger) *source.DNS {
	ns := source.Nameservers{Servers: servers}
	if len(servers) == 0 {
		var err error
		if ns, err = source.SystemNameservers(); err != nil {
			log.WithError(err).Warn("no DNS server: hostnames given where an address is wanted stay unresolved and their entries held; set --dns-server")
			return nil
		}
	}
	var timers clock.WithDelayedExecution = clock.RealClock{}
	if c, ok := clk.(clock.WithDelayedExecution); ok {
		timers = c
	}
	return source.NewDNS(ctx, ns, timers)
}
