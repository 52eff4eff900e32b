// Package metrics exposes the operator's Prometheus metrics. It learns everything from the
// controller's per-sync report, so no other package carries metric calls.
package metrics

import (
	"context"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

const ns = "router_hosts_operator"

// Metrics holds the collectors, registered on a registry of its own (no global state).
type Metrics struct {
	Registry *prometheus.Registry

	cluster         string
	sourceNames     []string
	syncedEntries   *prometheus.GaugeVec
	syncErrors      *prometheus.CounterVec
	syncDuration    prometheus.Histogram
	pending         prometheus.Gauge
	serverConnected prometheus.Gauge
	lastSync        prometheus.Gauge
	changes         *prometheus.CounterVec
	sourceEndpoints *prometheus.GaugeVec
	foreign         prometheus.Gauge
	isLeader        prometheus.Gauge
}

// New creates and registers the metrics. sourceNames label source_endpoints in the order the
// controller reads the sources.
func New(cluster string, sourceNames []string) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(), cluster: cluster, sourceNames: sourceNames,
		syncedEntries: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "synced_entries",
			Help: "Entries this cluster owns on the router-hosts server, by namespace and kind."}, []string{"cluster", "namespace", "kind"}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "sync_errors_total",
			Help: "Failed syncs by the stage that failed (source, list, apply)."}, []string{"reason"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "sync_duration_seconds",
			Help: "Duration of syncs.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "pending_deletions",
			Help: "Owned entries marked for deletion, waiting for their grace period."}),
		serverConnected: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "server_connected",
			Help: "1 when the last call to router-hosts succeeded."}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "last_sync_timestamp_seconds",
			Help: "Unix time of the last successful sync."}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "changes_total",
			Help: "Writes sent to router-hosts that succeeded, by action."}, []string{"action"}),
		sourceEndpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "source_endpoints",
			Help: "Endpoints each source returned in the last sync."}, []string{"source"}),
		foreign: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "foreign_entries",
			Help: "Entries on the server owned by other clusters."}),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "is_leader",
			Help: "1 while this replica holds the leader lease (or runs without leader election)."}),
	}
	m.Registry.MustRegister(m.syncedEntries, m.syncErrors, m.syncDuration, m.pending, m.serverConnected, m.lastSync,
		m.changes, m.sourceEndpoints, m.foreign, m.isLeader,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Counters with known labels start at zero, so rates work from the first scrape.
	for _, r := range []string{"source", "list", "apply"} {
		m.syncErrors.WithLabelValues(r)
	}
	for _, a := range []plan.Action{plan.Create, plan.Update, plan.Adopt, plan.Mark, plan.Unmark, plan.Delete, plan.Release} {
		m.changes.WithLabelValues(string(a))
	}
	return m
}

// SetLeader records whether this replica leads.
func (m *Metrics) SetLeader(leading bool) { m.isLeader.Set(b2f(leading)) }

// SetServerConnected records the outcome of a call to router-hosts outside a sync (probes).
func (m *Metrics) SetServerConnected(ok bool) { m.serverConnected.Set(b2f(ok)) }

// Report updates the metrics from one sync.
func (m *Metrics) Report(_ context.Context, r *controller.Report) {
	m.syncDuration.Observe(r.Duration.Seconds())
	for i, n := range r.SourceEndpoints {
		if i < len(m.sourceNames) {
			m.sourceEndpoints.WithLabelValues(m.sourceNames[i]).Set(float64(n))
		}
	}
	switch r.Stage {
	case "source":
		m.syncErrors.WithLabelValues("source").Inc()
		return
	case "list":
		m.syncErrors.WithLabelValues("list").Inc()
		m.serverConnected.Set(0)
		return
	}
	failed := map[*plan.Change]bool{}
	for _, err := range r.Failed {
		if ce, ok := err.(*plan.ChangeError); ok {
			failed[ce.Change] = true
		}
	}
	for i := range r.Changes {
		if !failed[&r.Changes[i]] {
			m.changes.WithLabelValues(string(r.Changes[i].Action)).Inc()
		}
	}
	m.serverConnected.Set(1)
	m.pending.Set(float64(r.Pending))
	m.foreign.Set(float64(r.Foreign))
	m.syncedEntries.Reset()
	for _, recs := range r.Entries {
		for _, rec := range recs {
			namespace, _ := rec.TagValue(registry.PrefixNamespace)
			kinds := []string{}
			for _, t := range rec.Tags {
				if strings.HasPrefix(t, registry.PrefixKind) {
					kinds = append(kinds, strings.TrimPrefix(t, registry.PrefixKind))
				}
			}
			m.syncedEntries.WithLabelValues(m.cluster, namespace, strings.Join(kinds, ",")).Inc()
		}
	}
	if r.Stage == "apply" {
		m.syncErrors.WithLabelValues("apply").Inc()
		return
	}
	m.lastSync.Set(float64(r.Started.Add(r.Duration).Unix()))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
