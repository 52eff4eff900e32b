package planner

import (
	"context"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestRatesForgetWhatIsWhole: a sync's charged allowances replace the touched keys', a whole one
// is forgotten at once, and a sync that reads the whole server forgets every key whole by then
// (an object gone leaves nothing), but not one still refilling, overdrawn or not.
func TestRatesForgetWhatIsWhole(t *testing.T) {
	reg, err := registry.New(registry.Config{ClusterName: "home", Log: logrus.New(),
		Budgets: registry.Budgets{ObjectWritesPerMinute: 30, NamespaceWritesPerMinute: 300}})
	if err != nil {
		t.Fatal(err)
	}
	var r rates
	r.charged(reg, registry.Rates{
		"object/gone":    {Tokens: 29, Cap: 31, At: t0},
		"object/flap":    {Tokens: 0, Cap: 130, At: t0},
		"namespace/all":  {Tokens: 300, Cap: 300, At: t0},
		"namespace/gone": {Tokens: -700, Cap: 1300, At: t0},
	}, false, t0)
	if len(r.byKey) != 3 || r.byKey["namespace/all"] != (registry.Allowance{}) {
		t.Fatalf("after a sync: %v", r.byKey)
	}
	r.charged(reg, nil, true, t0.Add(10*time.Second))
	if _, ok := r.byKey["object/gone"]; ok {
		t.Fatalf("a key whole again is kept: %v", r.byKey)
	}
	for _, key := range []string{"object/flap", "namespace/gone"} {
		if _, ok := r.byKey[key]; !ok {
			t.Fatalf("a key still refilling is forgotten: %v", r.byKey)
		}
	}
}

// TestAFlapWritesAtItsBudget: an Ingress whose host flips between two names every two seconds,
// each flip an event sync and the whole-read syncs that follow it, as the controller runs them,
// reaches the router at most its budget a minute once its first allowance is spent, whatever its
// grace period; its latest state is on the router once it stops.
func TestAFlapWritesAtItsBudget(t *testing.T) {
	const budget = 30
	zero, five := time.Duration(0), 5*time.Minute
	for _, tc := range []struct {
		name  string
		grace *time.Duration
	}{
		{"a grace period of 0", &zero},
		{"a grace period of 5 minutes", &five},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := registry.New(registry.Config{ClusterName: "home", GracePeriod: 5 * time.Minute, Log: logrus.New(),
				Budgets: registry.Budgets{ObjectWritesPerMinute: budget, NamespaceWritesPerMinute: 300}})
			if err != nil {
				t.Fatal(err)
			}
			srv := newServer(t)
			clk := testingclock.NewFakeClock(t0)
			p := New(reg, srv.prov, clk)
			at := func(host string) *endpoint.Endpoint {
				ep := claim(host, "apps", "flap", "u-flap", time.Hour, "10.0.0.1")
				ep.GracePeriod = tc.grace
				return ep
			}
			paced := 0
			sync := func(mode Mode, ep *endpoint.Endpoint) {
				for i := 0; i < 3; i++ { // a sync that asks for another gets it at once
					s, err := p.Plan(context.Background(), []*endpoint.Endpoint{ep}, mode)
					if err != nil {
						t.Fatal(err)
					}
					paced += s.Paced
					if !p.Learn(s, srv.prov.ApplyChanges(context.Background(), s.Changes)) {
						return
					}
					mode = Full
				}
			}
			sync(Full, at("a.flap.lan"))
			srv.svc.ResetCalls()
			var perMinute [3]int64
			for i := 1; i <= 90; i++ { // three minutes of a flip every two seconds
				clk.Step(2 * time.Second)
				before := srv.svc.WriteCalls()
				sync(Event, at([]string{"a.flap.lan", "b.flap.lan"}[i%2]))
				perMinute[(i-1)/30] += srv.svc.WriteCalls() - before
			}
			if perMinute[0] > 2*budget+1 || perMinute[1] > budget+1 || perMinute[2] > budget+1 || paced == 0 {
				t.Fatalf("writes a minute %v (%d changes paced), want at most %d, then %d a minute", perMinute, paced, 2*budget, budget)
			}
			for i := 0; i < 15; i++ {
				clk.Step(30 * time.Second)
				sync(Full, at("b.flap.lan"))
			}
			if got := names(t, srv); len(got) != 1 || len(got["b.flap.lan"]) != 1 || got["b.flap.lan"][0] != "10.0.0.1" {
				t.Fatalf("once it stops: %v, want b.flap.lan alone", got)
			}
		})
	}
}
