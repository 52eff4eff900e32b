package planner

import (
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestRatesForgetWhatIsWhole: a sync's charged allowances replace the touched keys', a whole one
// is forgotten at once, and a sync that reads the whole server forgets every key whole by then
// (an object gone leaves nothing), but not one still refilling.
func TestRatesForgetWhatIsWhole(t *testing.T) {
	reg, err := registry.New(registry.Config{ClusterName: "home", Log: logrus.New(),
		Budgets: registry.Budgets{ObjectWritesPerMinute: 30, NamespaceWritesPerMinute: 300}})
	if err != nil {
		t.Fatal(err)
	}
	var r rates
	r.charged(reg, registry.Rates{
		"object/gone":   {Tokens: 29, Cap: 31, At: t0},
		"object/flap":   {Tokens: 0, Cap: 130, At: t0},
		"namespace/all": {Tokens: 300, Cap: 300, At: t0},
	}, false, t0)
	if len(r.byKey) != 2 || r.byKey["namespace/all"] != (registry.Allowance{}) {
		t.Fatalf("after a sync: %v", r.byKey)
	}
	r.charged(reg, nil, true, t0.Add(10*time.Second))
	if _, ok := r.byKey["object/gone"]; ok {
		t.Fatalf("a key whole again is kept: %v", r.byKey)
	}
	if _, ok := r.byKey["object/flap"]; !ok {
		t.Fatalf("a key still refilling is forgotten: %v", r.byKey)
	}
}
