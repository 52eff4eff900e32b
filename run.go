package main

import (
	"context"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
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
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("creating Kubernetes client: %w", err)
	}

	prov, closeProv, err := newProvider(cfg, log)
	if err != nil {
		return err
	}
	defer closeProv()

	reg, err := registry.New(registry.Config{
		ClusterName: cfg.ClusterName, DefaultTags: cfg.DefaultTags, GracePeriod: cfg.GracePeriod,
		Policy: cfg.policy, Log: log.WithField("component", "registry"),
	})
	if err != nil {
		return fmt.Errorf("--cluster-name/--default-tag: %w", err)
	}

	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	// One resolver for every source: each named Service is watched once.
	resolver, err := source.NewResolver(ctx, kube, cfg.strategies)
	if err != nil {
		return fmt.Errorf("starting --ip-resolution: %w", err)
	}
	srcCfg := source.Config{Namespace: cfg.Namespace, LabelSelector: cfg.LabelFilter, Resolver: resolver}
	var (
		sources   []controller.Source
		reporters []controller.Reporter
	)
	for _, name := range cfg.Sources {
		c := srcCfg
		c.Log = log.WithField("source", name)
		switch name {
		case "ingress":
			s, err := source.NewIngressSource(ctx, kube, c)
			if err != nil {
				return fmt.Errorf("starting the ingress source: %w", err)
			}
			sources = append(sources, s)
		case "traefik":
			s, err := source.NewTraefikSource(ctx, kube, dyn, kube.Discovery(), c)
			if err != nil {
				return fmt.Errorf("starting the traefik source: %w", err)
			}
			sources = append(sources, s)
		case "hostmapping":
			s, err := source.NewHostMappingSource(ctx, kube, dyn, kube.Discovery(), c)
			if err != nil {
				return fmt.Errorf("starting the hostmapping source: %w", err)
			}
			sources = append(sources, s)
			reporters = append(reporters, status.NewHostMappings(s, dyn, resolver, log.WithField("component", "status")))
		}
	}

	ctrl := controller.New(controller.Config{
		Sources: sources, Reporters: reporters, DomainFilter: cfg.domains, Registry: reg, Provider: prov, Policy: cfg.policy,
		Interval: cfg.Interval, MinEventSyncInterval: cfg.MinEventSyncInterval,
		DryRun: cfg.DryRun, Out: out, Log: log.WithField("component", "controller"),
	})
	log.WithFields(logrus.Fields{
		"version": version, "sources": cfg.Sources, "provider": cfg.Provider, "cluster": cfg.ClusterName,
		"policy": cfg.Policy, "dry_run": cfg.DryRun, "once": cfg.Once,
	}).Info("router-hosts-operator starting")
	if cfg.Once {
		if _, err := ctrl.SyncOnce(ctx); err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		return nil
	}
	return ctrl.Run(ctx)
}

// newProvider connects to the router-hosts server, or starts the in-process store.
func newProvider(cfg *config, log *logrus.Logger) (*routerhosts.Provider, func(), error) {
	opts := routerhosts.Options{
		Endpoint: cfg.Endpoint, CAFile: cfg.TLSCA, CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey,
		ServerName: cfg.TLSServerName, Timeout: cfg.RequestTimeout, WriteConcurrency: cfg.WriteConcurrency,
		Log: log.WithField("component", "provider"),
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
