package registry

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

const compactID = "c0ffee01"

// ofID is an entry of this installation (cluster home, identity compactID) at version.
func ofID(id, host string, version int, extra ...string) endpoint.Record {
	rec := owned(id, host, "10.0.0.1", append([]string{IdentityTag(compactID), PrefixNamespace + "a", PrefixSource + "u-" + id}, extra...)...)
	rec.Version = strconv.Itoa(version)
	return rec
}

// TestTheCompactStage: the stage holds nothing and names, after a whole read with the switch on,
// the entries this installation alone owns past the threshold, the largest first, ten at most
// and within the writes per sync's room; never another's (another cluster's, a namesake's, a
// hand-made one, an adopted one, a shared one, one another cluster co-owns, an earlier version's,
// one a twin rewrote), one marked, one this sync writes, or one whose object's allowance is
// drawn on; an entry compacted before counts its events from the version it was compacted at;
// an entry it deleted is named once a whole read no longer shows it. The largest own entry's
// events are counted whatever the switch.
func TestTheCompactStage(t *testing.T) {
	big, small := ofID("e1", "big.lan", 150), ofID("e2", "small.lan", 100)
	other := big
	other.ID, other.Tags = "o1", []string{TagOwner, PrefixCluster + "lab", IdentityTag("0bad0bad"), PrefixNamespace + "a"}
	namesake := big
	namesake.ID, namesake.Tags = "n1", []string{TagOwner, PrefixCluster + "home", IdentityTag("0bad0bad"), PrefixNamespace + "a"}
	hand := endpoint.Record{ID: "h1", Hostname: "nas.lan", IP: "10.0.0.4", Version: "500", Tags: []string{"manual"}}
	adopted := endpoint.Record{ID: "h2", Hostname: "tv.lan", IP: "10.0.0.4", Version: "500",
		Tags: []string{"manual", TagPreExisting, TagOwner, PrefixCluster + "home", IdentityTag(compactID), PrefixNamespace + "a", PrefixSource + "u4",
			PrefixOriginalHostname + "tv.lan", PrefixOriginalIP + "10.0.0.4"}}
	shared := ofID("e3", "shared.lan", 300, TagShared)
	coOwned := ofID("e4", "co.lan", 300, CoOwnerTag("lab", "0bad0bad"))
	marked := ofID("e5", "marked.lan", 300, PrefixPending+t0.Format(time.RFC3339))
	earlier := legacyEntry("e6", "old.lan", "10.0.0.1", "home", "u6")
	earlier.Version = "300"
	moved := big
	moved.IP = "10.0.0.9"
	many := func(n int) []endpoint.Record {
		var out []endpoint.Record
		for i := range n {
			out = append(out, ofID(fmt.Sprintf("m%02d", i), fmt.Sprintf("h%02d.lan", i), 101+i))
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		set     func(*Config)
		records []endpoint.Record
		changes []plan.Change
		partial bool
		strikes struck
		rates   Rates
		folds   *folds
		want    []string
		events  int64
	}{
		{name: "past the threshold", records: []endpoint.Record{big, small}, want: []string{"e1"}, events: 150},
		{name: "switched off: named none, counted", set: func(c *Config) { c.CompactOwnEntries = false }, records: []endpoint.Record{big}, events: 150},
		{name: "no identity: nothing is its alone", set: func(c *Config) { c.ClusterID = "" }, records: []endpoint.Record{big}},
		{name: "a known state: none", records: []endpoint.Record{big}, partial: true, events: 150},
		{name: "never another's", records: []endpoint.Record{other, namesake, hand, adopted, shared, coOwned, earlier}},
		{name: "not one marked, counted", records: []endpoint.Record{marked}, events: 300},
		{name: "not one a twin rewrote", records: []endpoint.Record{big}, strikes: struck{"e1": 1}},
		{name: "not one this sync writes", records: []endpoint.Record{big}, changes: []plan.Change{{Action: plan.Update, Old: &big, New: &moved}}, events: 150},
		{name: "not one whose object's allowance was drawn on", records: []endpoint.Record{big},
			rates: Rates{"object/u-e1": {Tokens: 10, Cap: 40, At: t0}}, events: 150},
		{name: "one whose allowance is whole again", records: []endpoint.Record{big},
			rates: Rates{"object/u-e1": {Tokens: 10, Cap: 40, At: t0.Add(-time.Minute)}}, want: []string{"e1"}, events: 150},
		{name: "compacted before: counted from there", records: []endpoint.Record{big}, folds: &folds{at: map[string]int64{"e1": 60}}, events: 91},
		{name: "compacted before, past it again", records: []endpoint.Record{big}, folds: &folds{at: map[string]int64{"e1": 40}}, want: []string{"e1"}, events: 111},
		{name: "deleted and read back", records: []endpoint.Record{small},
			folds: &folds{gone: map[string]goneEntry{"d1": {events: 3, keys: [2]string{"object/u-d1", "namespace/a"}}}}, want: []string{"d1"}, events: 100},
		{name: "deleted, still read", records: []endpoint.Record{ofID("d1", "d.lan", 2)},
			folds: &folds{gone: map[string]goneEntry{"d1": {events: 3}}}, events: 2},
		{name: "ten at most, the largest first", records: many(12),
			want: []string{"m11", "m10", "m09", "m08", "m07", "m06", "m05", "m04", "m03", "m02"}, events: 112},
		{name: "within the writes per sync", set: func(c *Config) { c.Budgets.WritesPerSync = 3 }, records: many(5),
			changes: []plan.Change{{Action: plan.Create, New: &endpoint.Record{Hostname: "new.lan", IP: "10.0.0.3"}}}, want: []string{"m04", "m03"}, events: 105},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) {
				c.ClusterID, c.CompactOwnEntries, c.Budgets = compactID, true, DefaultBudgets()
				if tc.set != nil {
					tc.set(c)
				}
			})
			var w writers
			if tc.strikes != nil {
				w = tc.strikes
			}
			in := changesAt(r, tc.records, nil, w)
			in.read.Partial, in.rates, in.folds = tc.partial, tc.rates, tc.folds
			v := r.compact(in, tc.changes)
			if len(v.held) > 0 || len(v.changes) != len(tc.changes) {
				t.Errorf("held %d, sent %d of %d: it holds nothing", len(v.held), len(v.changes), len(tc.changes))
			}
			if !reflect.DeepEqual(v.compact, tc.want) {
				t.Errorf("compacts %q, want %q", v.compact, tc.want)
			}
			if v.ownEvents != tc.events {
				t.Errorf("largest own entry: %d events, want %d", v.ownEvents, tc.events)
			}
		})
	}
}

// numbered is a server as far as compaction needs one: versions that count events.
type numbered struct {
	entries []endpoint.Record
	next    int
}

func (s *numbered) apply(changes []plan.Change) []plan.Result {
	out := make([]plan.Result, len(changes))
	for k, c := range changes {
		switch {
		case c.Old == nil:
			s.next++
			n := *c.New
			n.ID, n.Version = fmt.Sprintf("n%03d", s.next), "1"
			s.entries = append(s.entries, n)
			out[k].Stored = &n
		case c.New == nil:
			s.entries = slices.DeleteFunc(s.entries, func(r endpoint.Record) bool { return r.ID == c.Old.ID })
		default:
			s.bump(c.Old.ID, 1, c.New)
			out[k].Stored = s.get(c.Old.ID)
		}
	}
	return out
}

// bump adds n events to the entry id, as new when given.
func (s *numbered) bump(id string, n int, as *endpoint.Record) {
	for i := range s.entries {
		if s.entries[i].ID == id {
			v, _ := strconv.Atoi(s.entries[i].Version)
			if as != nil {
				s.entries[i] = *as
			}
			s.entries[i].Version = strconv.Itoa(v + n)
		}
	}
}

func (s *numbered) get(id string) *endpoint.Record {
	for i := range s.entries {
		if s.entries[i].ID == id {
			rec := s.entries[i]
			return &rec
		}
	}
	return nil
}

// TestCompactionsAreRemembered: through Decide and Record, an entry this installation deleted
// is compacted once a whole read no longer shows it, and forgotten once compacted; a live one's
// count starts again from the version its compaction answered; a compaction is one write of
// its object's and namespace's allowances; one that failed is named again.
func TestCompactionsAreRemembered(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.ClusterID, c.CompactOwnEntries, c.Budgets = compactID, true, DefaultBudgets() })
	var (
		mem   Memory
		rates Rates
		srv   numbered
		sync  uint64
	)
	claims := []*endpoint.Endpoint{claim("big.lan", "a", "big", "u1", time.Hour, "10.0.0.1"), claim("gone.lan", "b", "gone", "u2", time.Hour, "10.0.0.2")}
	// step decides, writes and records, the compactions answered by answer.
	step := func(answer func(id string) Compacted) Decision {
		t.Helper()
		sync++
		d := r.Decide(t0.Add(time.Duration(sync)*time.Hour), slices.Clone(srv.entries), claims, Given{Memory: &mem, Sync: sync, Rates: rates})
		var compacted []Compacted
		for _, id := range d.Compact {
			compacted = append(compacted, answer(id))
		}
		rates = r.Record(&d, srv.apply(d.Changes), compacted, &mem, rates, true)
		return d
	}
	none := func(id string) Compacted { t.Fatalf("compacts %s", id); return Compacted{} }
	step(none)
	if len(srv.entries) != 2 {
		t.Fatalf("created %d entries, want 2", len(srv.entries))
	}
	big, gone := srv.entries[0].ID, srv.entries[1].ID
	srv.bump(big, 200, nil)
	claims = claims[:1]
	d := step(func(id string) Compacted { return Compacted{ID: id, Err: errors.New("unreachable")} })
	if !reflect.DeepEqual(d.Compact, []string{big}) || d.OwnEvents != 201 {
		t.Fatalf("compacts %q, the largest at %d events; want %s at 201", d.Compact, d.OwnEvents, big)
	}
	d = step(func(id string) Compacted { return Compacted{ID: id, EventsBefore: 201, EventsAfter: 1, Version: 201} })
	if !reflect.DeepEqual(d.Compact, []string{big}) || !slices.ContainsFunc(d.Changes, func(c plan.Change) bool { return c.Action == plan.Delete }) {
		t.Fatalf("compacts %q and writes %q; want %s again after a failure, and the delete of %s", d.Compact, actions(d.Verdict), big, gone)
	}
	for _, key := range []string{"object/u1", "namespace/a"} {
		if a := rates[key]; a.Cap == 0 || a.Tokens != a.Cap-1 {
			t.Errorf("allowance %s %+v after the compaction, want one write less than whole", key, a)
		}
	}
	d = step(func(id string) Compacted { return Compacted{ID: id, EventsBefore: 4, EventsAfter: 1, Version: 4} })
	if !reflect.DeepEqual(d.Compact, []string{gone}) || d.OwnEvents != 1 {
		t.Fatalf("compacts %q, the largest at %d events; want the deleted %s, and 1", d.Compact, d.OwnEvents, gone)
	}
	srv.bump(big, 101, nil)
	d = step(func(id string) Compacted { return Compacted{ID: id, EventsBefore: 102, EventsAfter: 1, Version: 302} })
	if !reflect.DeepEqual(d.Compact, []string{big}) || d.OwnEvents != 102 {
		t.Errorf("compacts %q, the largest at %d events; want %s again at 102, and %s forgotten", d.Compact, d.OwnEvents, big, gone)
	}
}
