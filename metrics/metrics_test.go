package metrics

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// syncedEntries scrapes synced_entries as "cluster/namespace/kind" → value.
func syncedEntries(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "router_hosts_operator_synced_entries" {
			continue
		}
		for _, mt := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["cluster"]+"/"+labels["namespace"]+"/"+labels["kind"]] = mt.GetGauge().GetValue()
		}
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
	m.Report(context.Background(), &controller.Report{Stage: controller.StageList, Err: errors.New("down")})
	if g := gauge(); g != 2 {
		t.Fatalf("a sync that did not plan changed hostname_conflicts to %v", g)
	}
	m.Report(context.Background(), &controller.Report{})
	if g := gauge(); g != 0 {
		t.Fatalf("hostname_conflicts = %v after they cleared, want 0", g)
	}
}
