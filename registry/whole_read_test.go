package registry

import (
	"reflect"
	"slices"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestTheWholeReadStage: a sync that read the whole server sends everything; one planned from
// the known state holds (WholeReadNeeded) what only a whole read may send: a delete, a release,
// a hand-over, a create of a hostname not searched, and every change of a hostname whose
// duplicate waits. What it holds is also the verdict's WholeRead.
func TestTheWholeReadStage(t *testing.T) {
	rec := func(id, host string) *endpoint.Record {
		r := owned(id, host, "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u-"+id)
		return &r
	}
	create := func(host, ip string) plan.Change {
		return plan.Change{Action: plan.Create, New: &endpoint.Record{Hostname: host, IP: ip}}
	}
	update := plan.Change{Action: plan.Update, Old: rec("e1", "web.lan"), New: rec("e1", "web.lan")}
	removals := []plan.Change{update, {Action: plan.Delete, Old: rec("e2", "old.lan")}, {Action: plan.Release, Old: rec("h1", "nas.lan"), New: rec("h1", "nas.lan")},
		{Action: ActionHandOver, Old: rec("e3", "shared.lan"), New: rec("e3", "shared.lan")}}
	for _, tc := range []struct {
		name       string
		read       Read
		changes    []plan.Change
		sent, held []string
	}{
		{name: "a whole read", changes: append(slices.Clone(removals), create("new.lan", "10.0.0.2")),
			sent: []string{"update web.lan e1", "delete old.lan e2", "release nas.lan h1", "hand-over shared.lan e3", "create new.lan"}},
		{name: "from the known state: no delete, release or hand-over", read: Read{Partial: true}, changes: removals,
			sent: []string{"update web.lan e1"},
			held: []string{"delete old.lan e2 WholeReadNeeded", "release nas.lan h1 WholeReadNeeded", "hand-over shared.lan e3 WholeReadNeeded"}},
		{name: "a create of the hostname searched", read: Read{Partial: true, Searched: "new.lan"},
			changes: []plan.Change{create("new.lan", "10.0.0.2"), create("other.lan", "10.0.0.3")},
			sent:    []string{"create new.lan"}, held: []string{"create other.lan WholeReadNeeded"}},
		{name: "creates of one hostname the caller searches", read: Read{Partial: true, SearchesLone: true},
			changes: []plan.Change{create("new.lan", "10.0.0.2"), create("new.lan", "10.0.0.3")}, sent: []string{"create new.lan", "create new.lan"}},
		{name: "creates of two hostnames", read: Read{Partial: true, SearchesLone: true},
			changes: []plan.Change{create("new.lan", "10.0.0.2"), create("other.lan", "10.0.0.3")},
			held:    []string{"create new.lan WholeReadNeeded", "create other.lan WholeReadNeeded"}},
		{name: "a hostname whose duplicate waits", read: Read{Partial: true},
			changes: []plan.Change{{Action: plan.Delete, Old: rec("d1", "dup.lan"), Duplicate: true}, {Action: plan.Update, Old: rec("d2", "dup.lan"), New: rec("d2", "dup.lan")}, update},
			sent:    []string{"update web.lan e1"}, held: []string{"delete dup.lan d1 WholeReadNeeded", "update dup.lan d2 WholeReadNeeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(*Config) {})
			in := changesAt(r, nil, nil, nil)
			in.read = tc.read
			v := r.wholeRead(in, tc.changes)
			if got := wordsOfChanged(v); !reflect.DeepEqual(got, changeWords{tc.sent, tc.held}) {
				t.Errorf("sent %q, held %q; want %q, %q", got.sent, got.held, tc.sent, tc.held)
			}
			var held []plan.Change
			for _, h := range v.held {
				held = append(held, h.Change)
			}
			if !reflect.DeepEqual(v.wholeRead, held) {
				t.Errorf("WholeRead %q, want what it held", wordsOfChanged(changed{changes: v.wholeRead}).sent)
			}
		})
	}
}
