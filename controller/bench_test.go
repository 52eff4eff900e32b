package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// BenchmarkEventSync10k is the operator's own work for one change among 10,000 objects: an
// event-triggered sync on the known state (the source's cache read is not part of it).
func BenchmarkEventSync10k(b *testing.B) { benchmarkEventSync(b, 10000) }

// BenchmarkEventSync1k is the same among 1,000 objects, the size of the side-by-side runs on the
// real server.
func BenchmarkEventSync1k(b *testing.B) { benchmarkEventSync(b, 1000) }

func benchmarkEventSync(b *testing.B, n int) {
	eps := make([]*endpoint.Endpoint, n)
	for i := range eps {
		host := fmt.Sprintf("hm-%05d.bench.lan", i)
		eps[i] = &endpoint.Endpoint{Hostname: host, Targets: []string{fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)},
			Sources: []endpoint.SourceRef{{Kind: "HostMapping", Group: "router-hosts.fzymgc.house", Version: "v1alpha1", Namespace: "bench", Name: host,
				UID: fmt.Sprintf("uid-%05d", i), CreationTimestamp: time.Unix(1_700_000_000, 0)}}}
	}
	_, conn := inmemory.DialTest(b)
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	// The budgets as shipped, but for the namespace's, which one namespace of this size is over
	// (make bench raises it the same way), and its write rate: one namespace changing hundreds
	// of objects a second is what that budget paces, not the sync this measures.
	budgets := registry.DefaultBudgets()
	budgets.EntriesPerNamespace, budgets.NamespaceWritesPerMinute = 0, 0
	reg, err := registry.New(registry.Config{ClusterName: "bench", GracePeriod: time.Minute, Log: log, Budgets: budgets,
		Tenancy: registry.Tenancy{Adopters: []string{"*"}, MaxGracePeriod: 365 * 24 * time.Hour}})
	if err != nil {
		b.Fatal(err)
	}
	src := &stubSource{eps: eps}
	prov := routerhosts.NewFromConn(conn, routerhosts.Options{Log: log, WriteConcurrency: 4})
	c := New(Config{Sources: []EndpointSource{src}, Registry: reg, Provider: prov, Interval: time.Hour, Log: log})
	ctx := context.Background()
	// The first syncs write every entry, within the budget of writes per sync.
	for again := true; again; {
		out, err := c.sync(ctx, planner.Full)
		if err != nil {
			b.Fatal(err)
		}
		again = out.Again
	}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		k++
		e := *eps[k%n]
		e.Targets = []string{fmt.Sprintf("10.2.%d.%d", k/250%250, k%250+1)}
		src.mu.Lock()
		src.eps[k%n] = &e
		src.mu.Unlock()
		if _, err := c.sync(ctx, planner.Event); err != nil {
			b.Fatal(err)
		}
	}
}
