package registry

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestTheWritesPerSyncStage: within the budget of writes per sync, every namespace and object
// takes turns a hostname at a time, a hostname's changes go together, and what is left is held
// (OverBudget), counted, and said to create or not.
func TestTheWritesPerSyncStage(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets.WritesPerSync = 5 })
	mk := func(host, ns, uid string) plan.Change {
		return plan.Change{Action: plan.Create, New: &endpoint.Record{Hostname: host, IP: "10.0.0.1",
			Tags: []string{TagOwner, PrefixCluster + "home", PrefixNamespace + ns, PrefixSource + uid}}}
	}
	var changes []plan.Change
	for i := range 20 {
		changes = append(changes, mk(fmt.Sprintf("flood%02d.lan", i), "flood", "u-flood"))
	}
	changes = append(changes, mk("a.lan", "quiet", "u-a"), mk("b.lan", "quiet", "u-b"))
	twin := mk("a.lan", "quiet", "u-a")
	twin.New.IP = "10.0.0.2"
	changes = append(changes, twin)
	plan.Sort(changes)
	v := r.writesPerSync(nil, changes)
	send := v.changes
	var deferred []plan.Change
	for _, h := range v.held {
		if h.Reason != ReasonOverBudget {
			t.Errorf("held %+v, want OverBudget", h)
		}
		deferred = append(deferred, h.Change)
	}
	if v.deferred != len(deferred) || !v.deferredCreates {
		t.Errorf("deferred %d (creates: %v), want %d (creates)", v.deferred, v.deferredCreates, len(deferred))
	}
	var got []string
	for _, c := range send {
		got = append(got, c.New.Hostname+" "+c.New.IP)
	}
	// Turns: flood, quiet (a.lan, both changes), flood, quiet (b.lan) = 5, in that order.
	want := []string{"flood00.lan 10.0.0.1", "a.lan 10.0.0.1", "a.lan 10.0.0.2", "flood01.lan 10.0.0.1", "b.lan 10.0.0.1"}
	if !reflect.DeepEqual(got, want) || len(deferred) != 18 {
		t.Fatalf("sent %q, deferred %d; want %q and 18", got, len(deferred), want)
	}
	if deferred[0].New.Hostname != "flood02.lan" {
		t.Fatalf("the first deferred is %s, want the flood's next turn", deferred[0].New.Hostname)
	}
	if v := r.writesPerSync(nil, changes[:5]); len(v.changes) != 5 || v.held != nil || v.deferred != 0 || !strings.HasPrefix(v.changes[0].New.Hostname, "a.lan") {
		t.Fatalf("within the budget: %d sent, %d deferred, the plan's order changed", len(v.changes), v.deferred)
	}
}
