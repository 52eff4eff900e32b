package registry

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestTheTakeUpStage: the updates that only give an earlier version's entry this
// installation's tags go takeUpPerSync a sync, the first in the plan's order; the rest are held
// (TakeUpPaced) and counted as left. Every other change goes.
func TestTheTakeUpStage(t *testing.T) {
	const id = "3f9a0c21"
	takeUp := func(i int) plan.Change {
		old := legacyEntry(fmt.Sprintf("e%02d", i), fmt.Sprintf("h%02d.lan", i), "10.0.0.1", "home", "u")
		n := old
		n.Tags = append(slices.Clone(old.Tags), IdentityTag(id))
		return plan.Change{Action: plan.Update, Old: &old, New: &n}
	}
	repoint := func(i int) plan.Change {
		c := takeUp(i)
		c.New.IP = "10.0.0.2"
		return c
	}
	create := plan.Change{Action: plan.Create, New: &endpoint.Record{Hostname: "new.lan", IP: "10.0.0.3"}}
	some := func(mk func(int) plan.Change, from, to int) []plan.Change {
		var out []plan.Change
		for i := from; i < to; i++ {
			out = append(out, mk(i))
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		changes []plan.Change
		sent    int
		held    []string
	}{
		{name: "no update", changes: []plan.Change{create}, sent: 1},
		{name: "fifty take-ups go", changes: append(some(takeUp, 0, takeUpPerSync), create), sent: takeUpPerSync + 1},
		{name: "beyond fifty, the rest wait", changes: some(takeUp, 0, takeUpPerSync+3), sent: takeUpPerSync,
			held: []string{"update h50.lan e50 TakeUpPaced", "update h51.lan e51 TakeUpPaced", "update h52.lan e52 TakeUpPaced"}},
		{name: "an update that changes more is no take-up", changes: append(some(repoint, 0, 2), some(takeUp, 2, takeUpPerSync+3)...), sent: takeUpPerSync + 2,
			held: []string{"update h52.lan e52 TakeUpPaced"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.ClusterID = id })
			v := r.takeUp(changesAt(r, nil, nil, nil), tc.changes)
			got := wordsOfChanged(v)
			if len(got.sent) != tc.sent || !reflect.DeepEqual(got.held, tc.held) || v.takeUpLeft != len(tc.held) {
				t.Errorf("sent %d, held %q, %d left; want %d sent, %q held and left", len(got.sent), got.held, v.takeUpLeft, tc.sent, tc.held)
			}
			if want := wordsOfChanged(changed{changes: tc.changes[:len(got.sent)]}); len(tc.held) == 0 && !reflect.DeepEqual(got.sent, want.sent) {
				t.Errorf("sent %q, want the changes as they came", got.sent)
			}
		})
	}
}
