package plan

import (
	"fmt"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// benchInput is 10,000 wanted hostnames against 10,000 owned entries: 8,500 unchanged, 300 IP
// changes, 400 tag changes, 800 creates and 800 deletes, with tags and aliases as the operator
// writes them.
func benchInput(n int) *Plan {
	p := &Plan{}
	owner := func(i int) []string {
		return []string{"k8s-operator", "cluster:home", fmt.Sprintf("source:%08d-aaaa-bbbb-cccc-dddddddddddd", i),
			"namespace:apps", "kind:Ingress"}
	}
	for i := 0; i < n; i++ {
		host := fmt.Sprintf("svc-%05d.apps.home.lan", i)
		ep := &endpoint.Endpoint{Hostname: host, Targets: []string{fmt.Sprintf("10.%d.%d.1", i/256%256, i%256)},
			Aliases: []string{"alt-" + host}, Tags: []string{"homelab", "team-a"}, OwnerTags: owner(i), Comment: "router-hosts-operator: Ingress apps/" + host}
		rec := endpoint.Record{ID: fmt.Sprintf("01H%023d", i), Hostname: host, IP: ep.Targets[0], Aliases: ep.Aliases,
			Tags: endpoint.SortedUnique(append(append([]string{}, ep.OwnerTags...), ep.Tags...)), Comment: ep.Comment, Version: "1"}
		switch {
		case i < 300:
			rec.IP = "192.168.0.1" // IP changed
		case i < 700:
			rec.Tags = rec.Tags[1:] // a tag missing
		case i < 1500:
			p.Desired = append(p.Desired, ep) // new: no entry yet
			continue
		case i < 2300:
			rec.Hostname = fmt.Sprintf("gone-%05d.apps.home.lan", i) // entry no longer wanted
			p.Current = append(p.Current, Current{Record: rec, Owner: endpoint.OwnerThis})
			continue
		}
		p.Desired = append(p.Desired, ep)
		p.Current = append(p.Current, Current{Record: rec, Owner: endpoint.OwnerThis})
	}
	return p
}

func BenchmarkPlan10k(b *testing.B) {
	p := benchInput(10000)
	b.ReportAllocs()
	b.ResetTimer()
	var changes int
	for i := 0; i < b.N; i++ {
		changes = len(p.Calculate())
	}
	b.ReportMetric(float64(changes), "changes/op")
}

// TestBenchInputMix keeps the benchmark honest: its input has the mix it claims.
func TestBenchInputMix(t *testing.T) {
	counts := map[Action]int{}
	for _, c := range benchInput(10000).Calculate() {
		counts[c.Action]++
	}
	if counts[Update] != 700 || counts[Create] != 800 || counts[Delete] != 800 {
		t.Fatalf("mix = %v", counts)
	}
}
