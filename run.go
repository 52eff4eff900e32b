package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/health"
	"github.com/router-hosts-operator/router-hosts-operator/metrics"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/status"
)

// run wires sources, registry, provider and controller from cfg, then runs one sync (--once)
// or the loop until ctx ends. Plan lines of --dry-run go to out.
func run(ctx context.Context, cfg *config, log *logrus.Logger, out io.Writer) error {
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	restCfg.UserAgent = "router-hosts-operator/" + version
	m := metrics.New(cfg.ClusterName, cfg.Sources)
	restCfg.Wrap(m.WrapTransport)
	kc, err := newKubeClients(restCfg, cfg.KubeAPIQPS, cfg.KubeAPIBurst)
	if err != nil {
		return err
	}

	reg, err := registry.New(registry.Config{
		ClusterName: cfg.ClusterName, DefaultTags: cfg.DefaultTags, GracePeriod: cfg.GracePeriod,
		Policy: cfg.policy, Log: log.WithField("component", "registry"),
	})
	if err != nil {
		return fmt.Errorf("--cluster-name/--default-tag: %w", err)
	}
	prov, closeProv, err := newProvider(cfg, log, m.ObserveRPC, reg.StillApplies)
	if err != nil {
		return err
	}
	defer closeProv()

	// One resolver for every source: each named Service is watched once.
	resolver, err := source.NewResolver(ctx, kc.sources, cfg.strategies)
	if err != nil {
		return fmt.Errorf("starting --ip-resolution: %w", err)
	}
	recorder, stopEvents := events.New(kc.events, log.WithField("component", "events"))
	defer stopEvents()
	srcCfg := source.Config{Namespace: cfg.Namespace, LabelSelector: cfg.LabelFilter, Resolver: resolver, Warner: recorder}
	var (
		sources   []controller.Source
		reporters []controller.Reporter
		hmStatus  *status.HostMappings
	)
	for _, name := range cfg.Sources {
		c := srcCfg
		c.Log = log.WithField("source", name)
		switch name {
		case "ingress":
			s, err := source.NewIngressSource(ctx, kc.sources, c)
			if err != nil {
				return fmt.Errorf("starting the ingress source: %w", err)
			}
			sources = append(sources, s)
		case "traefik":
			s, err := source.NewTraefikSource(ctx, kc.sources, c)
			if err != nil {
				return fmt.Errorf("starting the traefik source: %w", err)
			}
			sources = append(sources, s)
		case "hostmapping":
			s, err := source.NewHostMappingSource(ctx, kc.sources, c)
			if err != nil {
				return fmt.Errorf("starting the hostmapping source: %w", err)
			}
			sources = append(sources, s)
			hmStatus = status.NewHostMappings(s, kc.status.Resource(source.HostMappingGVR), log.WithField("component", "status"))
			reporters = append(reporters, hmStatus)
		}
	}

	checker := health.New(cfg.Interval, func() bool { return synced(sources) }, prov.Ping)
	reporters = append(reporters, m, checker, recorder)
	ctrl := controller.New(controller.Config{
		Sources: sources, Reporters: reporters, DomainFilter: cfg.domains, Registry: reg, Provider: prov, Policy: cfg.policy,
		Interval: cfg.Interval, MinEventSyncInterval: cfg.MinEventSyncInterval,
		DryRun: cfg.DryRun, Out: out, Log: log.WithField("component", "controller"),
	})
	log.WithFields(logrus.Fields{
		"version": version, "sources": cfg.Sources, "provider": cfg.Provider, "cluster": cfg.ClusterName,
		"policy": cfg.Policy, "dry_run": cfg.DryRun, "once": cfg.Once, "leader_elect": cfg.LeaderElect,
	}).Info("router-hosts-operator starting")
	// The status writer runs beside the loop, only while this replica leads.
	runStatus := func(ctx context.Context) {
		if hmStatus != nil && !cfg.DryRun {
			go hmStatus.Run(ctx)
		}
	}
	if cfg.Once {
		recorder.SetLeading(!cfg.DryRun)
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		runStatus(sctx)
		_, err := ctrl.SyncOnce(ctx)
		if hmStatus != nil {
			// Every status is written before the process ends, at the status client's pace.
			if ferr := hmStatus.Flush(ctx); ferr != nil && err == nil {
				err = ferr
			}
		}
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		return nil
	}
	if cfg.MetricsAddress != "" {
		stop, err := serveHTTP(cfg.MetricsAddress, m, checker, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	// A certificate rotated while router-hosts refuses the old one is tried at once.
	prov.WatchCredentials(ctx, 5*time.Second, ctrl.CredentialsChanged)
	lead := func(ctx context.Context) error {
		m.SetLeader(true)
		checker.SetLeading(true)
		recorder.SetLeading(!cfg.DryRun) // a dry run writes nothing, events included
		defer func() { m.SetLeader(false); checker.SetLeading(false); recorder.SetLeading(false) }()
		runStatus(ctx)
		return ctrl.Run(ctx)
	}
	if !cfg.LeaderElect {
		return lead(ctx)
	}
	return runElected(ctx, cfg, kc.leases, log, lead)
}

// kubeClients are the operator's Kubernetes clients: typed clients for the API groups it uses,
// not a clientset, which would link the client code of every group into the binary (see
// source.Clients).
type kubeClients struct {
	sources source.Clients
	status  dynamic.Interface
	events  corev1client.EventsGetter
	leases  coordinationv1client.LeasesGetter
}

// newKubeClients builds the clients from restCfg. Built-in kinds travel as protobuf: listing
// thousands of Ingresses at start decodes several times faster and allocates less than JSON
// (the dynamic client, for Traefik routes and HostMappings, keeps JSON: custom resources have no
// protobuf form). There are four rate limiters: the sources, the status writer, events and the
// leader Lease have one each, so thousands of status writes or events after a large first
// sync never delay an informer's relist or a Lease renewal (which would cost the leadership).
func newKubeClients(restCfg *rest.Config, qps float32, burst int) (*kubeClients, error) {
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
	var err error
	if kc.sources.Ingresses, err = networkingv1client.NewForConfig(protoCfg); err != nil {
		return nil, fmt.Errorf("creating the networking.k8s.io client: %w", err)
	}
	if kc.sources.Services, err = corev1client.NewForConfig(protoCfg); err != nil {
		return nil, fmt.Errorf("creating the core client: %w", err)
	}
	if kc.sources.Discovery, err = discovery.NewDiscoveryClientForConfig(protoCfg); err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	if kc.sources.Dynamic, err = dynamic.NewForConfig(dynCfg); err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	if kc.status, err = dynamic.NewForConfig(ownLimiter(restCfg)); err != nil {
		return nil, fmt.Errorf("creating the status client: %w", err)
	}
	if kc.events, err = corev1client.NewForConfig(ownLimiter(protoCfg)); err != nil {
		return nil, fmt.Errorf("creating the events client: %w", err)
	}
	if kc.leases, err = coordinationv1client.NewForConfig(ownLimiter(protoCfg)); err != nil {
		return nil, fmt.Errorf("creating the leader-election client: %w", err)
	}
	return kc, nil
}

// serveHTTP serves /metrics, /healthz and /readyz until stop is called.
func serveHTTP(addr string, m *metrics.Metrics, checker *health.Checker, log *logrus.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", checker.Healthz)
	mux.HandleFunc("/readyz", checker.Readyz)
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-address %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).Error("metrics server stopped")
		}
	}()
	log.WithField("address", lis.Addr().String()).Info("serving /metrics, /healthz and /readyz")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// runElected runs lead only while this replica holds the Lease. Every replica keeps its
// informer caches warm, so a standby that takes over syncs at once. On shutdown the Lease is
// released, so a rolling update hands over in seconds instead of a lease duration.
func runElected(ctx context.Context, cfg *config, leases coordinationv1client.LeasesGetter, log *logrus.Logger, lead func(context.Context) error) error {
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s_%d", host, time.Now().UnixNano())
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.LeaderElectionNS, Name: cfg.LeaderElectionID},
		Client:     leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	var leadErr error
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true, Name: cfg.LeaderElectionID,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.WithField("identity", id).Info("became leader; syncing")
				leadErr = lead(ctx)
			},
			OnStoppedLeading: func() { log.WithField("identity", id).Info("stopped leading") },
			OnNewLeader: func(current string) {
				if current != id {
					log.WithField("leader", current).Info("standing by; another replica leads")
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(ctx)
	if ctx.Err() == nil {
		// The Lease was lost while the process should go on: exit so the pod restarts clean
		// rather than risk two writers.
		return errors.New("lost the leader Lease")
	}
	return leadErr
}

// newProvider connects to the router-hosts server, or starts the in-process store; observe
// is told the outcome of every call, and stillApplies (the registry's) guards retries.
func newProvider(cfg *config, log *logrus.Logger, observe func(string, codes.Code), stillApplies func(*plan.Change, *endpoint.Record) bool) (*routerhosts.Provider, func(), error) {
	opts := routerhosts.Options{StillApplies: stillApplies,
		Endpoint: cfg.Endpoint, CAFile: cfg.TLSCA, CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey,
		ServerName: cfg.TLSServerName, Timeout: cfg.RequestTimeout, WriteConcurrency: cfg.WriteConcurrency,
		Observe: observe, Log: log.WithField("component", "provider"),
	}
	if cfg.Provider == "inmemory" {
		// Entries live only as long as the process: for trying the operator out.
		conn, stop, err := inmemory.Dial(inmemory.NewService(inmemory.NewStore()))
		if err != nil {
			return nil, nil, fmt.Errorf("starting the in-memory provider: %w", err)
		}
		return routerhosts.NewFromConn(conn, opts), stop, nil
	}
	p, err := routerhosts.New(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to router-hosts at %s: %w", cfg.Endpoint, err)
	}
	return p, func() { _ = p.Close() }, nil
}

// synced reports whether every source's caches are filled, for /readyz.
func synced(sources []controller.Source) bool {
	for _, s := range sources {
		if c, ok := s.(interface{ Synced() bool }); ok && !c.Synced() {
			return false
		}
	}
	return true
}
