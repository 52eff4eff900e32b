// Package metrics exposes the operator's Prometheus metrics. It learns about syncs from the
// controller's per-sync report, and about requests from hooks that main installs in the
// Kubernetes transport and the provider, so no other package carries metric calls.
package metrics

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc/codes"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/dnscheck"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

const ns = "router_hosts_operator"

// Metrics holds the collectors, registered on a registry of its own (no global state).
type Metrics struct {
	Registry *prometheus.Registry

	sourceNames      []string
	syncedEntries    *entries
	buildInfo        *prometheus.GaugeVec
	syncErrors       *prometheus.CounterVec
	syncDuration     *prometheus.HistogramVec
	changeLatency    prometheus.Histogram
	inputs           *inputs
	pending          prometheus.Gauge
	serverConnected  prometheus.Gauge
	routerConfigured prometheus.Gauge
	lastSync         prometheus.Gauge
	changes          *prometheus.CounterVec
	sourceEndpoints  *prometheus.GaugeVec
	foreign          prometheus.Gauge
	isLeader         prometheus.Gauge
	lastDuration     prometheus.Gauge
	lastList         prometheus.Gauge
	kubeRequests     *prometheus.CounterVec
	serverRequests   *prometheus.CounterVec
	serverDuration   *prometheus.HistogramVec
	failedHostnames  prometheus.Gauge
	conflicts        prometheus.Gauge
	deferred         prometheus.Gauge
	namesakes        prometheus.Gauge
	unclaimed        prometheus.Gauge
	deletionsHeld    prometheus.Gauge
	twinEntries      prometheus.Gauge
	silentClusters   prometheus.Gauge
	formerEntries    prometheus.Gauge
	pacedChanges     prometheus.Gauge
	compactedEvents  prometheus.Counter
	ownEvents        prometheus.Gauge
	// clientCertExpiry has no labels; it is a vector so that it has no series until a
	// certificate is loaded: a zero would read as a certificate that expired in 1970.
	clientCertExpiry *prometheus.GaugeVec
	tlsReloadErrors  *prometheus.CounterVec
	// The check of the router's DNS (dnscheck): names not answering as written, whether the
	// server answers (no series while the check is off or this replica does not lead, when
	// nothing is known) and the questions asked.
	namesNotAnswering *prometheus.GaugeVec
	verifyDNSUp       *prometheus.GaugeVec
	verifyDNSQueries  *prometheus.CounterVec
}

// Where mTLS material comes from, the source label of tls_reload_errors_total.
const (
	// TLSFiles are the files of --tls-ca, --tls-cert and --tls-key.
	TLSFiles = "files"
	// TLSSecret is the Secret a RouterHostsConfig names.
	TLSSecret = "secret"
)

// New creates and registers the metrics. sourceNames label source_endpoints in the order the
// controller reads the sources.
func New(sourceNames []string) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(), sourceNames: sourceNames,
		syncedEntries: &entries{desc: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "synced_entries"),
			"Entries this cluster owns on the router-hosts server, by namespace and kind.", []string{"cluster", "namespace", "kind"}, nil),
			adoptedDesc: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "adopted_entries"),
				"Entries this cluster owns that it adopted (hand-made lines it gives back when no object wants the name).", []string{"cluster"}, nil)},
		buildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "build_info",
			Help: "1, labelled with the binary's version, commit and Go version."}, []string{"version", "commit", "goversion"}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "sync_errors_total",
			Help: "Failed syncs by the step that failed (source, list, authentication, apply)."}, []string{"reason"}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "sync_duration_seconds",
			Help:    "Duration of syncs, by kind (full: reads the whole server; event: after a cluster change) and result (success, failure).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"mode", "result"}),
		changeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "change_latency_seconds",
			Help:    "Time from a cluster change (the informer's event) until the sync that read it finished writing it to router-hosts.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}}),
		inputs: &inputs{
			invalid: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "invalid_endpoints"),
				"Problems found in the objects' input in the last sync, by reason (InvalidHostname, InvalidAnnotation, NoAddress; and the registry's ReservedTag, OutsideDomains, NotPermitted, GracePeriodCapped, OverBudget): each is also a Warning event.", []string{"reason"}, nil),
			noAddress: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "held_endpoints"),
				"Endpoints whose object resolves no address in the last sync: their entries are held as they are.", nil, nil)},
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
		lastDuration: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "last_sync_duration_seconds",
			Help: "Duration of the last sync that reached the server."}),
		lastList: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "last_sync_list_duration_seconds",
			Help: "Time the last sync spent reading the server (ListHosts or SearchHosts: the server's share)."}),
		kubeRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "kube_requests_total",
			Help: "Requests sent to the Kubernetes API, by HTTP method and status code (\"error\" when no response came). Syncs add none (they read the informer caches); Lease renewals, watch renewals, statuses and events do."},
			[]string{"method", "code"}),
		serverRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "router_hosts_requests_total",
			Help: "Calls to the router-hosts server, by RPC and gRPC status code (for ListHosts, how the stream ended)."}, []string{"method", "code"}),
		serverDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "router_hosts_request_duration_seconds",
			Help:    "Time each call to the router-hosts server took, by RPC (for ListHosts, until the stream ended). A router whose event log grows answers AddHost, SearchHosts and ListHosts more slowly with age.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, []string{"method"}),
		failedHostnames: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "failed_hostnames",
			Help: "Hostnames whose writes failed or were refused in the last sync; they are retried at the interval."}),
		conflicts: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "hostname_conflicts",
			Help: "Claims on a name (a hostname or an alias) the last sync did not write because another namespace, another cluster or a hand-made entry holds it."}),
		deferred: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "deferred_changes",
			Help: "Changes the last sync left to the syncs that follow it at once, beyond the budget of writes per sync."}),
		namesakes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "namesake_clusters",
			Help: "Other installations whose entries on the router carry this cluster's name (cluster:<name> with a cluster-id:<id> other than this one's); their entries are never written."}),
		unclaimed: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "unclaimed_entries",
			Help: "Entries no object here wants that may be another installation's: an earlier version's under this cluster's name while a namesake shows, or this identity's under another name. Left alone."}),
		routerConfigured: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "router_configured",
			Help: "1 when a router-hosts endpoint and mTLS material are configured; 0 while the operator waits for a RouterHostsConfig to name a router, syncing nothing."}),
		deletionsHeld: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "mass_deletion_held_entries",
			Help: "Entries the mass-deletion brake keeps from being marked or deleted until the deletion is confirmed; 0 when the brake is not holding."}),
		twinEntries: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "twin_entries",
			Help: "Entries of this installation's identity that another writer with the same identity (a copy of the cluster, a second installation on the same Lease) undoes, and which this one holds without writing; while it is above 0, nothing is marked or deleted. Pin --cluster-id on one of them."}),
		silentClusters: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "silent_clusters",
			Help: "Other installations on the router whose newest heartbeat is older than --silent-cluster-after: gone for good, or stopped. Nothing is deleted for it; the SilentCluster warning names each with its release command."}),
		formerEntries: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "former_identity_entries",
			Help: "Entries of an identity this installation had before (the same cluster name, every object they name lives here) that it takes up in place."}),
		pacedChanges: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "paced_changes",
			Help: "Changes the last sync held back because their object or namespace writes faster than its write-rate budget; its latest state is written when the budget allows."}),
		compactedEvents: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "compacted_events_total",
			Help: "Events the operator's compactions (--compact-own-entries) took out of the router's log: the events of an entry this installation alone owns, or deleted, folded into one."}),
		ownEvents: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "largest_own_aggregate_events",
			Help: "The largest event count in the router's log of an entry this installation alone owns, as the operator knows it (its version, less the version it was last compacted at); counted with --compact-own-entries off too."}),
		clientCertExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "client_certificate_expiry_timestamp_seconds",
			Help: "Unix time at which the client certificate presented to router-hosts expires (its NotAfter); the certificate in use, from the files or the RouterHostsConfig's Secret."}, nil),
		tlsReloadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tls_reload_errors_total",
			Help: "Changed mTLS material that could not be loaded, by source (files, secret); counted once per change, and the last good material stays in use."}, []string{"source"}),
		namesNotAnswering: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "names_not_answering",
			Help: "Names this cluster wrote that the router's DNS (--verify-dns) has not answered as written for longer than the grace, by reason: missing (NXDOMAIN or no data), wrong (other addresses), still_answering (deleted, still answering); 0 while the check is off."},
			[]string{"reason"}),
		verifyDNSUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "verify_dns_up",
			Help: "1 while the router's DNS (--verify-dns) answers the leader's questions, 0 after three in a row got no answer (timeout, SERVFAIL, REFUSED); no series while the check is off or on a standby."}, nil),
		verifyDNSQueries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "verify_dns_queries_total",
			Help: "Questions put to the router's DNS (--verify-dns), by result: answered, no_data, nxdomain, error (no answer in time, SERVFAIL, REFUSED)."}, []string{"result"}),
	}
	m.Registry.MustRegister(m.buildInfo, m.changeLatency, m.inputs, m.failedHostnames, m.conflicts, m.deferred, m.namesakes, m.unclaimed, m.deletionsHeld, m.twinEntries, m.silentClusters, m.formerEntries, m.pacedChanges, m.compactedEvents, m.ownEvents, m.syncedEntries, m.syncErrors, m.syncDuration, m.pending, m.serverConnected, m.routerConfigured, m.lastSync,
		m.changes, m.sourceEndpoints, m.foreign, m.isLeader, m.lastDuration, m.lastList, m.kubeRequests, m.serverRequests, m.serverDuration,
		m.clientCertExpiry, m.tlsReloadErrors, m.namesNotAnswering, m.verifyDNSUp, m.verifyDNSQueries, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Counters with known labels start at zero, so rates work from the first scrape.
	for _, r := range []string{"source", "list", "authentication", "apply"} {
		m.syncErrors.WithLabelValues(r)
	}
	for _, s := range []string{TLSFiles, TLSSecret} {
		m.tlsReloadErrors.WithLabelValues(s)
	}
	for _, a := range []plan.Action{plan.Create, plan.Update, plan.Adopt, plan.Mark, plan.Unmark, plan.Delete, plan.Release} {
		m.changes.WithLabelValues(string(a))
	}
	// 0 names not answering is true of a check that is off, so an alert works the same.
	for _, r := range dnscheck.Labels {
		m.namesNotAnswering.WithLabelValues(r)
	}
	for _, r := range dnscheck.QueryResults {
		m.verifyDNSQueries.WithLabelValues(r)
	}
	return m
}

// SetBuild records the binary's version and commit in build_info.
func (m *Metrics) SetBuild(version, commit string) {
	m.buildInfo.Reset()
	m.buildInfo.WithLabelValues(version, commit, runtime.Version()).Set(1)
}

// SetLeader records whether this replica leads.
func (m *Metrics) SetLeader(leading bool) { m.isLeader.Set(b2f(leading)) }

// SetRouterConfigured records whether a router is named (router_configured).
func (m *Metrics) SetRouterConfigured(named bool) { m.routerConfigured.Set(b2f(named)) }

// Report updates the metrics from one sync.
func (m *Metrics) Report(_ context.Context, r *controller.Report) {
	// The last-sync gauges are set before the histogram counts the sync, so a scrape that sees
	// the new count sees this sync's durations too.
	if r.Step != controller.StepSource && r.Step != controller.StepList {
		m.lastDuration.Set(r.Duration.Seconds())
		m.lastList.Set(r.ListDuration.Seconds())
	}
	result := "success"
	if r.Step != controller.StepDone {
		result = "failure"
	}
	m.syncDuration.WithLabelValues(r.Mode.String(), result).Observe(r.Duration.Seconds())
	for i, n := range r.SourceEndpoints {
		if i < len(m.sourceNames) {
			m.sourceEndpoints.WithLabelValues(m.sourceNames[i]).Set(float64(n))
		}
	}
	switch {
	case r.Step == controller.StepSource:
		m.syncErrors.WithLabelValues(r.Step.String()).Inc()
		return
	case r.Step == controller.StepList && r.AuthFailed:
		m.syncErrors.WithLabelValues("authentication").Inc()
		m.serverConnected.Set(0)
		return
	case r.Step == controller.StepList:
		m.syncErrors.WithLabelValues(r.Step.String()).Inc()
		m.serverConnected.Set(0)
		return
	}
	m.failedHostnames.Set(float64(len(r.Failed)))
	m.conflicts.Set(float64(len(r.Conflicts)))
	m.deferred.Set(float64(r.Deferred))
	m.namesakes.Set(float64(len(r.Namesakes)))
	m.unclaimed.Set(float64(r.Unclaimed))
	leaving := 0
	if r.Braked != nil {
		leaving = r.Braked.Leaving
	}
	m.deletionsHeld.Set(float64(leaving))
	twin := 0
	if r.Twin != nil {
		twin = r.Twin.Disputed
	}
	m.twinEntries.Set(float64(twin))
	m.silentClusters.Set(float64(len(r.Silent)))
	former := 0
	for _, n := range r.Former {
		former += n.Entries
	}
	m.formerEntries.Set(float64(former))
	m.pacedChanges.Set(float64(r.Paced))
	m.compactedEvents.Add(float64(r.CompactedEvents))
	m.ownEvents.Set(float64(r.OwnEvents))
	m.inputs.set(r)
	wrote := false
	for i := range r.Results {
		if r.Results[i].Err == nil {
			m.changes.WithLabelValues(string(r.Changes[i].Action)).Inc()
			wrote = true
		}
	}
	if wrote && !r.ChangedAt.IsZero() {
		m.changeLatency.Observe(r.Started.Add(r.Duration).Sub(r.ChangedAt).Seconds())
	}
	m.serverConnected.Set(1)
	m.pending.Set(float64(r.Pending))
	m.foreign.Set(float64(r.Foreign))
	m.syncedEntries.set(r.Cluster, r.Entries)
	if r.Step == controller.StepApply {
		m.syncErrors.WithLabelValues(r.Step.String()).Inc()
		return
	}
	m.lastSync.Set(float64(r.Started.Add(r.Duration).Unix()))
}

// inputs is invalid_endpoints and held_endpoints: the last report's problems and endpoints
// (those with no address), counted when scraped (like synced_entries) rather than in every
// sync.
type inputs struct {
	invalid, noAddress *prometheus.Desc

	mu        sync.Mutex
	objects   map[string]controller.Object
	endpoints []*endpoint.Endpoint
	problems  map[string]int // the registry's, by reason
}

func (in *inputs) set(r *controller.Report) {
	in.mu.Lock()
	problems := make(map[string]int, len(r.Problems))
	for _, p := range r.Problems {
		problems[string(p.Kind)]++
	}
	in.objects, in.endpoints, in.problems = r.Objects, r.Endpoints, problems
	in.mu.Unlock()
}

// Describe is part of prometheus.Collector.
func (in *inputs) Describe(ch chan<- *prometheus.Desc) { ch <- in.invalid; ch <- in.noAddress }

// Collect is part of prometheus.Collector. Every reason has a series from the start, so that
// rates and alerts work from the first scrape.
func (in *inputs) Collect(ch chan<- prometheus.Metric) {
	in.mu.Lock()
	objects, eps, registered := in.objects, in.endpoints, in.problems
	in.mu.Unlock()
	counts := make(map[string]int, len(registered)+8)
	for reason, n := range registered {
		counts[reason] = n
	}
	for _, o := range objects {
		for _, p := range o.Problems {
			counts[p.Reason]++
		}
	}
	for _, reason := range invalidReasons() {
		if _, ok := counts[reason]; !ok {
			counts[reason] = 0
		}
	}
	for reason, n := range counts {
		ch <- prometheus.MustNewConstMetric(in.invalid, prometheus.GaugeValue, float64(n), reason)
	}
	noAddress := 0
	for _, ep := range eps {
		if ep.NoAddress() {
			noAddress++
		}
	}
	ch <- prometheus.MustNewConstMetric(in.noAddress, prometheus.GaugeValue, float64(noAddress))
}

// invalidReasons always have a series, so that rates and alerts work from the first scrape:
// the sources' reasons and the registry's.
func invalidReasons() []string {
	out := []string{source.ReasonInvalidHostname, source.ReasonInvalidAnnotation, source.ReasonNoAddress}
	for _, r := range registry.ProblemKinds() {
		out = append(out, string(r))
	}
	return out
}

// entries is synced_entries: the last report's entries, counted by owner when scraped rather
// than at every sync, which at ten thousand entries would cost each sync a pass over them. The
// cluster label is the one that sync ran as, so it follows a RouterHostsConfig's clusterName.
type entries struct {
	desc, adoptedDesc *prometheus.Desc

	mu      sync.Mutex
	cluster string
	entries map[string][]endpoint.Record
}

func (e *entries) set(cluster string, entries map[string][]endpoint.Record) {
	e.mu.Lock()
	e.cluster, e.entries = cluster, entries
	e.mu.Unlock()
}

// Describe is part of prometheus.Collector.
func (e *entries) Describe(ch chan<- *prometheus.Desc) { ch <- e.desc; ch <- e.adoptedDesc }

// Collect is part of prometheus.Collector: one gauge per owner.
func (e *entries) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	cluster, all := e.cluster, e.entries
	e.mu.Unlock()
	type series struct{ namespace, kind string }
	counts := map[series]int{}
	adopted := 0
	for _, recs := range all {
		for i := range recs {
			// An entry several kinds of object claim counts once under each.
			namespace, kinds, loan := registry.NamespaceAndKinds(&recs[i])
			for _, k := range kinds {
				counts[series{namespace, k}]++
			}
			if loan {
				adopted++
			}
		}
	}
	for s, n := range counts {
		ch <- prometheus.MustNewConstMetric(e.desc, prometheus.GaugeValue, float64(n), cluster, s.namespace, s.kind)
	}
	if all != nil {
		ch <- prometheus.MustNewConstMetric(e.adoptedDesc, prometheus.GaugeValue, float64(adopted), cluster)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ClientCertificate records the expiry of the client certificate in use.
func (m *Metrics) ClientCertificate(notAfter time.Time) {
	if notAfter.IsZero() {
		return
	}
	m.clientCertExpiry.WithLabelValues().Set(float64(notAfter.Unix()))
}

// TLSReloadFailed counts changed mTLS material from source (TLSFiles, TLSSecret) that could
// not be loaded.
func (m *Metrics) TLSReloadFailed(source string) { m.tlsReloadErrors.WithLabelValues(source).Inc() }

// SetNamesNotAnswering sets the names not answering as written under reason (dnscheck.Metrics).
func (m *Metrics) SetNamesNotAnswering(reason string, n int) {
	m.namesNotAnswering.WithLabelValues(reason).Set(float64(n))
}

// SetVerifyDNSUp records whether the router's DNS answers (dnscheck.Metrics).
func (m *Metrics) SetVerifyDNSUp(up bool) { m.verifyDNSUp.WithLabelValues().Set(b2f(up)) }

// ClearVerifyDNSUp removes verify_dns_up: nothing is known of the router's DNS (dnscheck.Metrics).
func (m *Metrics) ClearVerifyDNSUp() { m.verifyDNSUp.Reset() }

// CountVerifyDNSQuery counts one question to the router's DNS by its result (dnscheck.Metrics).
func (m *Metrics) CountVerifyDNSQuery(result string) {
	m.verifyDNSQueries.WithLabelValues(result).Inc()
}

// ObserveRPC counts and times one call to the router-hosts server (routerhosts.Options.Observe).
func (m *Metrics) ObserveRPC(method string, code codes.Code, took time.Duration) {
	m.serverRequests.WithLabelValues(method, code.String()).Inc()
	m.serverDuration.WithLabelValues(method).Observe(took.Seconds())
}

// WrapTransport counts every request the Kubernetes client sends (rest.Config.Wrap), so a
// benchmark can show that syncs are served from the informer caches.
func (m *Metrics) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		code := "error"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		m.kubeRequests.WithLabelValues(req.Method, code).Inc()
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
