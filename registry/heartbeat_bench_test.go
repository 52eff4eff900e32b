package registry

import (
	"fmt"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// BenchmarkDecideAtRest10k is a whole read's decision over 10,000 entries of this cluster and
// 10,000 of another, all as wanted, with heartbeats off and on: what reading and renewing
// the marks costs a sync (docs/performance.md).
func BenchmarkDecideAtRest10k(b *testing.B) {
	for _, after := range []time.Duration{0, 168 * time.Hour} {
		b.Run(fmt.Sprintf("silent-cluster-after=%s", after), func(b *testing.B) {
			r, err := New(Config{ClusterName: "home", ClusterID: "aaaaaaaa", GracePeriod: 5 * time.Minute, SilentClusterAfter: after})
			if err != nil {
				b.Fatal(err)
			}
			alive := "alive:" + t0.Add(-time.Hour).Format(time.RFC3339)
			var records []endpoint.Record
			var claims []*endpoint.Endpoint
			for i := range 10000 {
				host, uid := fmt.Sprintf("h%05d.lan", i), fmt.Sprintf("u%05d", i)
				ip := fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)
				c := claim(host, "apps", host, uid, time.Hour, ip)
				claims = append(claims, c)
				tags := []string{"cluster-id:aaaaaaaa", "cluster:home", "k8s-operator", "kind:Ingress", "namespace:apps", "source:" + uid}
				if i == 0 && after > 0 {
					// As this installation writes it: the time and its renewal period.
					tags = append(tags, alive, PrefixAliveEvery+seconds(after/beatQuarter))
				}
				records = append(records, endpoint.Record{ID: fmt.Sprintf("01A%05d", i), Hostname: host, IP: ip, Version: "1", Tags: tags,
					Comment: commentPrefix + "Ingress apps/" + host})
				other := []string{"cluster-id:bbbbbbbb", "cluster:lab", "k8s-operator", "namespace:apps", "source:x" + uid}
				if i == 0 {
					other = append(other, alive)
				}
				records = append(records, endpoint.Record{ID: fmt.Sprintf("01B%05d", i), Hostname: "o" + host, IP: ip, Version: "1", Tags: other})
			}
			if d := r.Decide(t0, records, claims, Given{}); len(d.Changes) != 0 {
				b.Fatalf("%d changes at rest: %v", len(d.Changes), d.Changes[0])
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r.Decide(t0, records, claims, Given{})
			}
		})
	}
}
