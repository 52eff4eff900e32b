package registry

import (
	"reflect"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestTheGraceStage: a delete is a mark first; a marked entry is held (GracePeriod, until its
// mark falls due) and then deleted, or, adopted, released; a duplicate goes at once; an update
// of a marked entry lifts the mark. The earliest mark still to fall due is when to sync next.
func TestTheGraceStage(t *testing.T) {
	at := func(d time.Duration) string { return PrefixPending + t0.Add(d).Format(time.RFC3339) }
	plain := owned("e1", "old.lan", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u1")
	marked := owned("e2", "gone.lan", "10.0.0.2", PrefixNamespace+"a", PrefixSource+"u2", at(-time.Minute))
	due := owned("e3", "past.lan", "10.0.0.3", PrefixNamespace+"a", PrefixSource+"u3", at(-time.Hour))
	adopted := endpoint.Record{ID: "h1", Hostname: "nas.lan", IP: "10.0.0.4", Version: "1",
		Tags: []string{"manual", TagPreExisting, TagOwner, PrefixCluster + "home", PrefixNamespace + "a", PrefixSource + "u4", at(-time.Hour), PrefixOriginalIP + "10.0.0.4"}}
	lifted := owned("e2", "gone.lan", "10.0.0.2", PrefixNamespace+"a", PrefixSource+"u2")
	dup := owned("e5", "dup.lan", "10.0.0.5", PrefixNamespace+"a", PrefixSource+"u5")
	records := []endpoint.Record{plain, marked, due, adopted, dup}
	del := func(rec endpoint.Record) plan.Change { return plan.Change{Action: plan.Delete, Old: &rec} }
	for _, tc := range []struct {
		name       string
		changes    []plan.Change
		sent, held []string
		next       time.Time
	}{
		{name: "creates only", changes: []plan.Change{{Action: plan.Create, New: &endpoint.Record{Hostname: "new.lan", IP: "10.0.0.9"}}},
			sent: []string{"create new.lan"}},
		{name: "a delete is a mark first", changes: []plan.Change{del(plain)},
			sent: []string{"mark old.lan e1"}, next: t0.Add(5 * time.Minute)},
		{name: "a marked entry waits out its grace period", changes: []plan.Change{del(marked)},
			held: []string{"delete gone.lan e2 GracePeriod until " + t0.Add(4*time.Minute).Format(time.RFC3339)}, next: t0.Add(4 * time.Minute)},
		{name: "then it goes; an adopted one is given back", changes: []plan.Change{del(due), del(adopted)},
			sent: []string{"delete past.lan e3", "release nas.lan h1"}},
		{name: "a duplicate goes at once", changes: []plan.Change{func() plan.Change { c := del(dup); c.Duplicate = true; return c }()},
			sent: []string{"delete dup.lan e5"}},
		{name: "an update of a marked entry lifts the mark", changes: []plan.Change{{Action: plan.Update, Old: &marked, New: &lifted}},
			sent: []string{"unmark gone.lan e2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(*Config) {})
			v := r.grace(changesAt(r, records, nil, nil), tc.changes)
			if got := wordsOfChanged(v); !reflect.DeepEqual(got, changeWords{tc.sent, tc.held}) || !v.next.Equal(tc.next) {
				t.Errorf("sent %q, held %q, next %v; want %q, %q, %v", got.sent, got.held, v.next, tc.sent, tc.held, tc.next)
			}
		})
	}
}
