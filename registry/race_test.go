package registry

import (
	"slices"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestARaceForAnUnsharedNameEndsWithOneHolder: two clusters that wrote one name in one moment,
// each before it could see the other's entry, decide alike which keeps it, the one whose entry
// is oldest (IDs are ULIDs). The other turns its claim down as a conflict and deletes its own
// entry at once, since the name keeps answering through the holder's.
func TestARaceForAnUnsharedNameEndsWithOneHolder(t *testing.T) {
	r := newReg(t, "")
	web := claim("web.lan", "apps", "web", "u1", 0, "10.0.0.1")
	for _, tc := range []struct {
		desc         string
		ours, theirs string
		yields       bool
	}{
		{desc: "ours is older: it stays", ours: "01A", theirs: "01B"},
		{desc: "theirs is older: ours goes at once", ours: "01B", theirs: "01A", yields: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			records := []endpoint.Record{
				owned(tc.ours, "web.lan", "10.0.0.1", "namespace:apps", "kind:Ingress", "source:u1"),
				{ID: tc.theirs, Hostname: "web.lan", IP: "10.9.9.9", Version: "1", Tags: []string{"k8s-operator", "cluster:lab", "namespace:apps", "source:other"}},
			}
			d := r.Decide(t0, records, []*endpoint.Endpoint{web}, Given{})
			conflict := len(d.Conflicts) == 1 && d.Conflicts[0].Winner == "cluster lab" && d.Conflicts[0].Reason == ReasonHostnameConflict
			deleted := slices.ContainsFunc(d.Changes, func(c plan.Change) bool { return c.Action == plan.Delete && c.Old.ID == tc.ours })
			if conflict != tc.yields || deleted != tc.yields {
				t.Errorf("conflicts %+v, changes %v: want the claim turned down and the entry deleted at once: %v", d.Conflicts, actions(d.Verdict), tc.yields)
			}
			if slices.ContainsFunc(d.Changes, func(c plan.Change) bool { return c.Old != nil && c.Old.ID == tc.theirs }) {
				t.Errorf("changes %v touch the other cluster's entry", actions(d.Verdict))
			}
			if len(d.Held) != 0 {
				t.Errorf("held %v: nothing waits a grace period", d.Held)
			}
		})
	}
}
