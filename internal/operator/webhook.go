package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/health"
	"github.com/router-hosts-operator/router-hosts-operator/metrics"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/webhook"
)

// Webhook is the external-dns webhook wired from a Config: the webhook server is the only
// source of the operator's own controller, registry and provider.
type Webhook struct {
	cfg        *Config
	log        *logrus.Logger
	Server     *webhook.Server
	Controller *controller.Controller
	metrics    *metrics.Metrics
	checker    *health.Checker
	closers    []func()
	// limits are the webhook server's; probes are the metrics server's.
	limits, probes serverLimits
	// identity is the webhook's (its cluster-id: tag), and identityFrom where it came from.
	identity, identityFrom string
}

// NewWebhook wires the webhook and connects to router-hosts; it serves nothing yet, and refuses
// without an identity (webhookIdentityOf). clk is the controller's clock; nil is the real one.
func NewWebhook(cfg *Config, log *logrus.Logger, clk clock.Clock) (_ *Webhook, err error) {
	w := &Webhook{cfg: cfg, log: log, limits: webhookLimits, probes: probeLimits}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	s := cfg.settings()
	if err := s.Check(); err != nil {
		return nil, err
	}
	if w.identity, w.identityFrom, err = webhookIdentityOf(cfg); err != nil {
		return nil, err
	}
	s.ClusterID = w.identity
	rc := s.Registry()
	rc.Log = log.WithField("component", "registry")
	// The webhook's source: UIDs are hashed from hostnames, the same in every webhook that
	// publishes a name: no proof of whose an entry is.
	rc.HostnameUIDs = true
	reg, err := registry.New(rc)
	if err != nil {
		return nil, fmt.Errorf("--cluster-name/--default-tag: %w", err)
	}
	w.metrics = metrics.New([]string{webhook.SourceKind})
	w.metrics.SetBuild(cfg.Version, cfg.Build.Commit)
	prov, closeProv, err := newProvider(cfg, s, false, nil, log, w.metrics)
	if err != nil {
		return nil, err
	}
	w.closers = append(w.closers, closeProv)
	w.Server = webhook.New(webhook.Config{Reader: prov, Owner: reg.OwnedAmong, Domains: s.DomainFilter, Exclude: s.ExcludeDomains,
		Namespace: webhook.SourceKind, Log: log.WithField("component", "webhook")})
	w.checker = health.New(s.Interval, func() bool { return true }, clk)
	w.Controller = controller.New(controller.Config{
		Sources: []controller.EndpointSource{w.Server}, Reporters: []controller.Reporter{w.metrics, w.checker, publishedReporter{w.Server}},
		Registry: reg, Provider: prov, Interval: s.Interval, MinEventSyncInterval: cfg.MinEventSyncInterval,
		Log: log.WithField("component", "controller"), Clock: clk,
	})
	w.Server.SetSyncer(syncer{w.Controller})
	return w, nil
}

// syncer has the controller's loop run a full sync for a POST /records: on the loop, so that
// the grace deadlines it sets wake the loop.
type syncer struct{ c *controller.Controller }

func (s syncer) SyncNow(ctx context.Context) error { return s.c.SyncNow(ctx) }

// publishedReporter tells the webhook what is published after each sync, so that the next
// one starts from it instead of reading the server twice.
type publishedReporter struct{ s *webhook.Server }

func (h publishedReporter) Report(_ context.Context, r *controller.Report) {
	if r.Err != nil || r.Step != controller.StepDone {
		h.s.Forget()
		return
	}
	h.s.Synced(r.Entries)
}

// Close releases the connection to router-hosts.
func (w *Webhook) Close() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
	w.closers = nil
}

// Run serves external-dns on --webhook-address and /metrics, /healthz and /readyz on
// --metrics-address until ctx ends. Between external-dns's requests the controller's loop
// runs as the operator's does, on --interval: it finishes deletions whose grace period ends
// and puts back entries changed by hand, and writes nothing while all is in step.
func (w *Webhook) Run(ctx context.Context) error {
	lis, err := net.Listen("tcp", w.cfg.WebhookAddress)
	if err != nil {
		return fmt.Errorf("--webhook-address %s: %w", w.cfg.WebhookAddress, err)
	}
	return w.Serve(ctx, lis)
}

// Serve is Run on a listener of the caller's.
func (w *Webhook) Serve(ctx context.Context, lis net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if w.cfg.MetricsAddress != "" {
		stop, err := serveHTTP(w.cfg.MetricsAddress, w.probes, w.metrics, w.checker, w.log)
		if err != nil {
			return err
		}
		defer stop()
	}
	w.metrics.SetLeader(true)
	w.checker.SetLeading(true)
	srv := w.limits.server(w.Server.Handler())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	w.log.WithFields(logrus.Fields{"address": lis.Addr().String(), "cluster": w.cfg.ClusterName, "cluster_id": w.identity,
		"identity_from": w.identityFrom}).Info("serving external-dns's webhook protocol")
	loop := make(chan error, 1)
	go func() { loop <- w.Controller.Run(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("webhook server: %w", err)
		}
	case <-ctx.Done():
	}
	sctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_ = srv.Shutdown(sctx)
	cancel()
	<-loop
	return nil
}
