package source

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestOrderIsAFullSort: listing after listing, with objects added, changed, dropped and left
// alone, the merged order equals a sort of every endpoint from scratch.
func TestOrderIsAFullSort(t *testing.T) {
	cases := []struct {
		name                  string
		objects, rounds       int
		add, change, drop     int // per round
		hostnames, namespaces int // few, so that claims share hostnames
	}{
		{name: "one change a listing", objects: 200, rounds: 30, change: 1, hostnames: 150, namespaces: 3},
		{name: "churn", objects: 100, rounds: 50, add: 5, change: 10, drop: 5, hostnames: 40, namespaces: 2},
		{name: "everything made afresh", objects: 50, rounds: 5, change: 50, hostnames: 10, namespaces: 1},
		{name: "from empty", objects: 0, rounds: 20, add: 7, drop: 2, hostnames: 20, namespaces: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.objects)))
			var (
				o     order
				pass  uint64
				next  int
				live  = map[int]*memo{}
				names = func(id int) []*endpoint.Endpoint {
					var eps []*endpoint.Endpoint
					for k := 0; k <= rng.IntN(3); k++ {
						eps = append(eps, &endpoint.Endpoint{Hostname: fmt.Sprintf("h%d.lan", rng.IntN(tc.hostnames)),
							Sources: []endpoint.SourceRef{{Kind: "Ingress", Namespace: fmt.Sprintf("ns%d", rng.IntN(tc.namespaces)), Name: fmt.Sprintf("o%d", id)}}})
					}
					return eps
				}
			)
			fresh := map[int]bool{}
			for i := 0; i < tc.objects; i++ {
				fresh[next] = true
				next++
			}
			for r := 0; r < tc.rounds; r++ {
				pass++
				for k := 0; k < tc.add; k++ {
					fresh[next] = true
					next++
				}
				ids := slices.Sorted(func(yield func(int) bool) {
					for id := range live {
						if !yield(id) {
							return
						}
					}
				})
				for k := 0; k < tc.change && len(ids) > 0; k++ {
					fresh[ids[rng.IntN(len(ids))]] = true
				}
				for k := 0; k < tc.drop && len(ids) > 0; k++ {
					id := ids[rng.IntN(len(ids))]
					delete(live, id)
					delete(fresh, id)
				}
				var made []placed
				for id, m := range live {
					if !fresh[id] {
						m.pass = pass
					}
				}
				for id := range fresh {
					m := &memo{pass: pass, optedIn: true, eps: names(id)}
					live[id] = m
					for _, ep := range m.eps {
						made = append(made, placed{ep, m})
					}
				}
				clear(fresh)
				got := o.list(pass, made)
				var want []*endpoint.Endpoint
				for _, m := range live {
					want = append(want, m.eps...)
				}
				slices.SortFunc(want, compareEndpoints)
				if len(got) != len(want) {
					t.Fatalf("round %d: %d endpoints, want %d", r, len(got), len(want))
				}
				for i := range got {
					if compareEndpoints(got[i], want[i]) != 0 {
						t.Fatalf("round %d: at %d %s %s, want %s %s", r, i, got[i].Hostname, got[i].Sources[0].Name, want[i].Hostname, want[i].Sources[0].Name)
					}
				}
			}
		})
	}
}
