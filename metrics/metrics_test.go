package metrics

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// syncedEntries scrapes synced_entries as "cluster/namespace/kind" → value.
func syncedEntries(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for key, v := range scrape(t, m) {
		if !strings.HasPrefix(key, "synced_entries{") {
			continue
		}
		var cluster, kind, namespace string
		labels := strings.TrimSuffix(strings.TrimPrefix(key, "synced_entries{"), "}")
		for _, kv := range strings.Split(labels, ",") {
			k, val, _ := strings.Cut(kv, "=")
			switch k {
			case "cluster":
				cluster = val
			case "kind":
				kind = val
			case "namespace":
				namespace = val
			}
		}
		out[cluster+"/"+namespace+"/"+kind] = v
	}
	return out
}

// TestSyncedEntriesAreCountedByOwnerWhenScraped: the last report's entries, by the namespace
// and kinds in their tags, labelled with the cluster the sync ran as; a later report replaces
// the counts, and its cluster the label (a RouterHostsConfig renamed the cluster).
func TestSyncedEntriesAreCountedByOwnerWhenScraped(t *testing.T) {
	m := New([]string{"ingress"})
	rec := func(id, ns, kind string) endpoint.Record {
		return endpoint.Record{ID: id, Tags: []string{"k8s-operator", "cluster:home", "namespace:" + ns, "kind:" + kind}}
	}
	m.Report(context.Background(), &controller.Report{Cluster: "home", Entries: map[string][]endpoint.Record{
		"a.lan": {rec("1", "web", "Ingress"), rec("2", "web", "Ingress")}, "b.lan": {rec("3", "dns", "HostMapping")}}})
	if got, want := syncedEntries(t, m), map[string]float64{"home/web/Ingress": 2, "home/dns/HostMapping": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("synced_entries = %v, want %v", got, want)
	}
	moved := rec("1", "web", "Ingress")
	moved.Tags[2] = "namespace:other"
	m.Report(context.Background(), &controller.Report{Cluster: "lab", Entries: map[string][]endpoint.Record{"a.lan": {moved}}})
	if got, want := syncedEntries(t, m), map[string]float64{"lab/other/Ingress": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after a second report: %v, want %v", got, want)
	}
}

// TestConflictsAreAGauge: the claims a sync did not write because another namespace or
// cluster holds their hostname, as of the last sync that planned.
func TestConflictsAreAGauge(t *testing.T) {
	m := New([]string{"ingress"})
	gauge := func() float64 {
		fams, err := m.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() == "router_hosts_operator_hostname_conflicts" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no hostname_conflicts")
		return 0
	}
	m.Report(context.Background(), &controller.Report{Conflicts: []registry.Conflict{{Hostname: "a.lan"}, {Hostname: "b.lan"}}})
	if g := gauge(); g != 2 {
		t.Fatalf("hostname_conflicts = %v, want 2", g)
	}
	m.Report(context.Background(), &controller.Report{Step: controller.StepList, Err: errors.New("down")})
	if g := gauge(); g != 2 {
		t.Fatalf("a sync that did not plan changed hostname_conflicts to %v", g)
	}
	m.Report(context.Background(), &controller.Report{})
	if g := gauge(); g != 0 {
		t.Fatalf("hostname_conflicts = %v after they cleared, want 0", g)
	}
}

// scrape gathers every series as "name{label=value,...}" → its value (a histogram's count).
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			var labels []string
			for _, l := range mt.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := strings.TrimPrefix(f.GetName(), "router_hosts_operator_") + "{" + strings.Join(labels, ",") + "}"
			switch {
			case mt.GetCounter() != nil:
				out[key] = mt.GetCounter().GetValue()
			case mt.GetGauge() != nil:
				out[key] = mt.GetGauge().GetValue()
			case mt.GetHistogram() != nil:
				out[key] = float64(mt.GetHistogram().GetSampleCount())
				out[key+"_sum"] = mt.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// TestDayTwoMetrics: the series an SRE looks for, each from the report that sets it.
func TestDayTwoMetrics(t *testing.T) {
	m := New([]string{"ingress"})
	m.SetBuild("v0.1.0", "abc123")
	got := scrape(t, m)
	for _, key := range []string{
		"build_info{commit=abc123,goversion=" + runtime.Version() + ",version=v0.1.0}",
		"sync_errors_total{reason=authentication}", // zero from the start, so rate() works
		"invalid_endpoints{reason=NoAddress}",
	} {
		if _, ok := got[key]; !ok {
			t.Errorf("no series %s before any sync", key)
		}
	}

	start := time.Unix(1_800_000_000, 0)
	web := &endpoint.Endpoint{Hostname: "web.lan", Targets: []string{"10.0.0.1"}}
	gone := &endpoint.Endpoint{Hostname: "gone.lan"} // no address resolves (held_endpoints)
	changes := []plan.Change{{Action: plan.Update, Old: &endpoint.Record{ID: "1"}, New: &endpoint.Record{ID: "1"}}}
	m.Report(context.Background(), &controller.Report{Mode: planner.Event, Started: start, Duration: 10 * time.Millisecond,
		ChangedAt: start.Add(-40 * time.Millisecond), Changes: changes, Results: []plan.Result{{Stored: &endpoint.Record{ID: "1", Version: "2"}}}, Endpoints: []*endpoint.Endpoint{web, gone},
		Objects: map[string]controller.Object{
			"u1": {Problems: []endpoint.Problem{{Reason: source.ReasonInvalidHostname}, {Reason: source.ReasonInvalidHostname}}},
			"u2": {Problems: []endpoint.Problem{{Reason: source.ReasonNoAddress}}}},
		Problems: []registry.Problem{{Tag: "k8s-operator"}},
		Entries: map[string][]endpoint.Record{"web.lan": {{ID: "1", Tags: []string{"k8s-operator", "cluster:home", "namespace:web", "kind:HTTPRoute", "kind:Ingress"}}},
			"nas.lan": {{ID: "2", Tags: []string{"manual", "pre-existing:true", "k8s-operator", "cluster:home", "namespace:web", "kind:HostMapping"}}}},
		Cluster: "home"})
	got = scrape(t, m)
	for _, kind := range []string{"HTTPRoute", "Ingress"} { // one entry, claimed by both kinds
		if v := got["synced_entries{cluster=home,kind="+kind+",namespace=web}"]; v != 1 {
			t.Errorf("synced_entries of kind %s = %v, want 1", kind, v)
		}
	}
	if v := got["adopted_entries{cluster=home}"]; v != 1 {
		t.Errorf("adopted_entries = %v, want 1 (nas.lan)", v)
	}
	// A failed read: a failure of its kind, and no change latency.
	m.Report(context.Background(), &controller.Report{Mode: planner.Full, Step: controller.StepList, Err: errors.New("down"), ChangedAt: start})
	// A write that failed: no change latency either.
	failed := []plan.Change{{Action: plan.Create, New: &endpoint.Record{}}}
	m.Report(context.Background(), &controller.Report{Mode: planner.Event, Started: start, ChangedAt: start, Changes: failed,
		Results: []plan.Result{{Err: &plan.ChangeError{Change: failed[0], Err: errors.New("refused"), Refused: true}}}, Endpoints: []*endpoint.Endpoint{web, gone}})
	got = scrape(t, m)
	for key, want := range map[string]float64{
		"sync_duration_seconds{mode=event,result=success}": 2,
		"sync_duration_seconds{mode=full,result=failure}":  1,
		"change_latency_seconds{}":                         1,
		"held_endpoints{}":                                 1,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	if s := got["change_latency_seconds{}_sum"]; s < 0.0499 || s > 0.0501 {
		t.Errorf("change latency %v s, want 0.05 (the change 40 ms before a 10 ms sync)", s)
	}
	// The last sync that planned had no problems: the gauges follow it, not the first.
	for _, reason := range []string{"InvalidHostname", "NoAddress", "ReservedTag", "InvalidAnnotation"} {
		if v, ok := got["invalid_endpoints{reason="+reason+"}"]; !ok || v != 0 {
			t.Errorf("invalid_endpoints{reason=%s} = %v (present %v) after a sync without problems, want 0", reason, v, ok)
		}
	}
}

// TestInvalidEndpointsByReason: the problems of one sync, by reason.
func TestInvalidEndpointsByReason(t *testing.T) {
	m := New([]string{"ingress"})
	m.Report(context.Background(), &controller.Report{Objects: map[string]controller.Object{
		"u1": {Problems: []endpoint.Problem{{Reason: source.ReasonInvalidHostname}, {Reason: source.ReasonInvalidHostname}}},
		"u2": {Problems: []endpoint.Problem{{Reason: source.ReasonNoAddress}}}},
		Problems: []registry.Problem{{Kind: registry.ProblemReservedTag, Tag: "k8s-operator"}, {Kind: registry.ProblemOverBudget},
			{Kind: registry.ProblemOverBudget}, {Kind: registry.ProblemNotPermitted}}})
	got := scrape(t, m)
	for reason, want := range map[string]float64{"InvalidHostname": 2, "NoAddress": 1, "ReservedTag": 1, "InvalidAnnotation": 0,
		"OverBudget": 2, "NotPermitted": 1, "OutsideDomains": 0, "GracePeriodCapped": 0} {
		if v := got["invalid_endpoints{reason="+reason+"}"]; v != want {
			t.Errorf("invalid_endpoints{reason=%s} = %v, want %v", reason, v, want)
		}
	}
}

// TestKubeRequestsByCode: a 403 (RBAC refusing a status patch) and a request that got no
// answer are told apart from the successes.
func TestKubeRequestsByCode(t *testing.T) {
	m := New(nil)
	answers := []func() (*http.Response, error){
		func() (*http.Response, error) { return &http.Response{StatusCode: 200, Body: http.NoBody}, nil },
		func() (*http.Response, error) { return &http.Response{StatusCode: 403, Body: http.NoBody}, nil },
		func() (*http.Response, error) { return nil, errors.New("connection refused") },
	}
	i := 0
	rt := m.WrapTransport(roundTripper(func(*http.Request) (*http.Response, error) { i++; return answers[i-1]() }))
	for range answers {
		req, _ := http.NewRequest(http.MethodPatch, "https://api/apis/x", nil)
		if resp, err := rt.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}
	got := scrape(t, m)
	for _, code := range []string{"200", "403", "error"} {
		if got["kube_requests_total{code="+code+",method=PATCH}"] != 1 {
			t.Errorf("kube_requests_total{code=%s}: %v", code, got)
		}
	}
}

// TestTLSMetrics: the client certificate's expiry has no series until a certificate is loaded
// (a zero would read as long expired), then the last one's; reload failures count by source
// and start at zero.
func TestTLSMetrics(t *testing.T) {
	m := New([]string{"ingress"})
	got := scrape(t, m)
	if _, ok := got["client_certificate_expiry_timestamp_seconds{}"]; ok {
		t.Fatal("an expiry before any certificate was loaded")
	}
	for _, source := range []string{TLSFiles, TLSSecret} {
		if v, ok := got["tls_reload_errors_total{source="+source+"}"]; !ok || v != 0 {
			t.Fatalf("tls_reload_errors_total{source=%s} = %v (present %v), want 0 from the start", source, v, ok)
		}
	}
	steps := []struct {
		notAfter time.Time
		failed   string
		want     float64
	}{
		{notAfter: time.Unix(1_900_000_000, 0), want: 1_900_000_000},
		{notAfter: time.Time{}, want: 1_900_000_000}, // nothing known: the last one stays
		{notAfter: time.Unix(1_800_000_000, 0), failed: TLSFiles, want: 1_800_000_000},
	}
	for i, st := range steps {
		m.ClientCertificate(st.notAfter)
		if st.failed != "" {
			m.TLSReloadFailed(st.failed)
		}
		if v := scrape(t, m)["client_certificate_expiry_timestamp_seconds{}"]; v != st.want {
			t.Fatalf("step %d: expiry %v, want %v", i, v, st.want)
		}
	}
	m.TLSReloadFailed(TLSSecret)
	m.TLSReloadFailed(TLSSecret)
	got = scrape(t, m)
	if got["tls_reload_errors_total{source=files}"] != 1 || got["tls_reload_errors_total{source=secret}"] != 2 {
		t.Fatalf("tls_reload_errors_total: files %v, secret %v; want 1 and 2", got["tls_reload_errors_total{source=files}"], got["tls_reload_errors_total{source=secret}"])
	}
}

// TestVerifyDNSMetrics: names_not_answering has every reason at 0 from the start (a check that
// is off has no name not answering) and the questions every result; verify_dns_up has no series
// until the router's DNS was asked, and none again once nothing is known.
func TestVerifyDNSMetrics(t *testing.T) {
	m := New([]string{"ingress"})
	got := scrape(t, m)
	for _, r := range []string{"missing", "wrong", "still_answering"} {
		if v, ok := got["names_not_answering{reason="+r+"}"]; !ok || v != 0 {
			t.Fatalf("names_not_answering{reason=%s} = %v (present %v), want 0 from the start", r, v, ok)
		}
	}
	for _, r := range []string{"answered", "no_data", "nxdomain", "error"} {
		if v, ok := got["verify_dns_queries_total{result="+r+"}"]; !ok || v != 0 {
			t.Fatalf("verify_dns_queries_total{result=%s} = %v (present %v), want 0 from the start", r, v, ok)
		}
	}
	if _, ok := got["verify_dns_up{}"]; ok {
		t.Fatal("verify_dns_up before the router's DNS was asked")
	}
	m.SetNamesNotAnswering("missing", 3)
	m.SetVerifyDNSUp(false)
	m.CountVerifyDNSQuery("error")
	got = scrape(t, m)
	if got["names_not_answering{reason=missing}"] != 3 || got["verify_dns_up{}"] != 0 || got["verify_dns_queries_total{result=error}"] != 1 {
		t.Fatalf("after a report: %v", got)
	}
	if _, ok := got["verify_dns_up{}"]; !ok {
		t.Fatal("no verify_dns_up once the DNS server failed")
	}
	m.ClearVerifyDNSUp()
	if _, ok := scrape(t, m)["verify_dns_up{}"]; ok {
		t.Fatal("verify_dns_up once nothing is known")
	}
}

// TestCompactionMetrics: the events the syncs' compactions folded add up; the largest own
// entry's events follow the last sync that planned, and a failed read leaves them.
func TestCompactionMetrics(t *testing.T) {
	m := New(nil)
	for _, r := range []*controller.Report{
		{Mode: planner.Full, CompactedEvents: 120, OwnEvents: 150},
		{Mode: planner.Full, CompactedEvents: 9, OwnEvents: 31},
		{Mode: planner.Full, Step: controller.StepList, Err: errors.New("down")},
	} {
		m.Report(context.Background(), r)
	}
	got := scrape(t, m)
	if v := got["compacted_events_total{}"]; v != 129 {
		t.Errorf("compacted_events_total = %v, want 129", v)
	}
	if v := got["largest_own_aggregate_events{}"]; v != 31 {
		t.Errorf("largest_own_aggregate_events = %v, want 31", v)
	}
}

// TestRouterCallsAreCountedAndTimed: each call to the router counts once by its code and adds
// its time to the method's histogram, whatever the code, so a slowing router shows in the mean.
func TestRouterCallsAreCountedAndTimed(t *testing.T) {
	m := New(nil)
	m.ObserveRPC("AddHost", codes.OK, 30*time.Millisecond)
	m.ObserveRPC("AddHost", codes.AlreadyExists, 50*time.Millisecond)
	m.ObserveRPC("ListHosts", codes.OK, 200*time.Millisecond)
	got := scrape(t, m)
	for key, want := range map[string]float64{
		"router_hosts_requests_total{code=OK,method=AddHost}":            1,
		"router_hosts_requests_total{code=AlreadyExists,method=AddHost}": 1,
		"router_hosts_request_duration_seconds{method=AddHost}":          2,
		"router_hosts_request_duration_seconds{method=AddHost}_sum":      0.08,
		"router_hosts_request_duration_seconds{method=ListHosts}_sum":    0.2,
	} {
		if v := got[key]; v < want-1e-9 || v > want+1e-9 {
			t.Errorf("%s = %v, want %v", key, v, want)
		}
	}
}
