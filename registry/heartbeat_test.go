package registry

import (
	"slices"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestAHeartbeatOnAnEntryLeavingIsRenewedElsewhere: a heartbeat on an entry on its way out leaves
// with it. When an older mark stays, that is what the others will read, whether the read shows
// the newer one leaving or only this process remembers writing it: the sync renews the mark
// on an entry that stays, when the one that stays is due, before the others read the
// installation as silent. When none stays, the others read the newest leaving until it goes,
// and with none at all they read no mark, which is never silence: the renewal waits for the
// newest known.
func TestAHeartbeatOnAnEntryLeavingIsRenewedElsewhere(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID, c.SilentClusterAfter = "home", "11111111", 4*time.Hour })
	alive := func(at time.Time) string { return PrefixAlive + at.UTC().Format(time.RFC3339) }
	stays := owned("01A", "one.lan", "10.0.0.1", "cluster-id:11111111", "source:u1", alive(t0.Add(-3*time.Hour)), PrefixAliveEvery+"3600")
	unmarked := owned("01A", "one.lan", "10.0.0.1", "cluster-id:11111111", "source:u1")
	leaving := owned("01B", "two.lan", "10.0.0.2", "cluster-id:11111111", "source:u2", alive(t0.Add(-10*time.Minute)), PrefixAliveEvery+"3600",
		PrefixPending+t0.Add(time.Minute).UTC().Format(time.RFC3339))
	oldLeaving := owned("01B", "two.lan", "10.0.0.2", "cluster-id:11111111", "source:u2", alive(t0.Add(-3*time.Hour)), PrefixAliveEvery+"3600",
		PrefixPending+t0.Add(time.Minute).UTC().Format(time.RFC3339))
	eps := []*endpoint.Endpoint{claim("one.lan", "apps", "one", "u1", time.Hour, "10.0.0.1")}
	renewed := func(d Decision) bool {
		return slices.ContainsFunc(d.Changes, func(c plan.Change) bool {
			return c.New != nil && c.New.ID == "01A" && c.New.HasTag(alive(t0))
		})
	}
	for _, tc := range []struct {
		desc    string
		records []endpoint.Record
		renew   bool
	}{
		{"the read shows the mark on the entry leaving", []endpoint.Record{stays, leaving}, true},
		{"the entry that carried it is gone", []endpoint.Record{stays}, true},
		{"the entry that carried the only mark is gone", []endpoint.Record{unmarked}, false},
		// Until it goes, the others read the old mark leaving: it must not grow overdue.
		{"none stays, and an old mark leaves", []endpoint.Record{unmarked, oldLeaving}, true},
		{"none stays, and a fresh mark leaves", []endpoint.Record{unmarked, leaving}, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			mem := memoryOf(r)
			// This process wrote the newer mark, on the entry now leaving or gone.
			mem.beats.saw(t0.Add(-10 * time.Minute).UTC().Format(time.RFC3339))
			if d := r.Decide(t0, tc.records, eps, Given{Memory: mem}); renewed(d) != tc.renew {
				t.Fatalf("changes %v: want the mark renewed on one.lan: %v", actions(d.Verdict), tc.renew)
			}
		})
	}
}

// TestTheHeartbeatRidesOnlyOnItsOwnEntries: a write to a line this installation does not own (one of
// its identity under a former name, which it co-owns) carries no heartbeat: the others, and
// this installation's next read, would not count it there, so it would be written at every sync.
func TestTheHeartbeatRidesOnlyOnItsOwnEntries(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID, c.SilentClusterAfter = "lab", "c0000003", 4*time.Hour })
	mine := owned("01A", "one.lan", "10.0.0.1", "cluster-id:c0000003", "source:u1")
	mine.Tags[1] = "cluster:lab"
	former := owned("01B", "app.lan", "10.0.0.4", "cluster-id:c0000003", "source:gone", CoOwnerTag("lab", "c0000003"))
	former.Tags[1] = "cluster:lab2"
	reordered := former
	reordered.Tags = append(slices.DeleteFunc(slices.Clone(former.Tags), func(t string) bool { return t == CoOwnerTag("lab", "c0000003") }), CoOwnerTag("lab", "c0000003"))
	st := &State{Owned: []endpoint.Record{mine}, beats: heartbeats{carrier: mine.ID}}
	out := r.heartbeat(&changesIn{now: t0, st: st}, []plan.Change{{Action: plan.Update, Old: &former, New: &reordered}}).changes
	for _, c := range out {
		if c.New != nil && c.New.ID == former.ID && slices.ContainsFunc(c.New.Tags, isBeat) {
			t.Fatalf("the mark rode on %v, a line this installation does not own", c)
		}
	}
	if !slices.ContainsFunc(out, func(c plan.Change) bool {
		return c.New != nil && c.New.ID == mine.ID && slices.ContainsFunc(c.New.Tags, isBeat)
	}) {
		t.Fatalf("changes %v: want the mark on its own carrier, one.lan", out)
	}
}

// TestAHeartbeatOnceReadProvesLife: another installation's newest mark goes with its entry (a
// person deletes it, or its twin) before that installation renews it elsewhere, leaving an
// older mark on the router that is past the threshold. A reader that read the newer mark does
// not report the installation silent meanwhile; a reader that never read it, as a new process,
// does; and once the newer mark is itself overdue, every reader does.
func TestAHeartbeatOnceReadProvesLife(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID, c.SilentClusterAfter = "lab", "c0000003", 4*time.Hour })
	alive := func(at time.Time) string { return PrefixAlive + at.UTC().Format(time.RFC3339) }
	other := func(id, host string, mark time.Time) endpoint.Record {
		return endpoint.Record{ID: id, Hostname: host, IP: "10.0.0.9", Version: "1",
			Tags: []string{"k8s-operator", "cluster:home", "cluster-id:a0000001", "source:u-" + id, alive(mark), PrefixAliveEvery + "3600"}}
	}
	ancient := other("01A", "old.lan", t0.Add(-5*time.Hour))
	fresh := other("01B", "new.lan", t0.Add(-10*time.Minute))
	for _, tc := range []struct {
		desc       string
		readBefore bool
		at         time.Time
		silent     bool
	}{
		{"this process read the newer mark", true, t0, false},
		{"a new process that never read it", false, t0, true},
		{"the newer mark is overdue too", true, t0.Add(4 * time.Hour), true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			mem := memoryOf(r)
			if tc.readBefore {
				r.Decide(t0.Add(-time.Minute), []endpoint.Record{ancient, fresh}, nil, Given{Memory: mem})
			}
			d := r.Decide(tc.at, []endpoint.Record{ancient}, nil, Given{Memory: mem})
			if got := len(d.Silent) > 0; got != tc.silent {
				t.Fatalf("silent %+v; want silent: %v", d.Silent, tc.silent)
			}
		})
	}
}

// TestTheHeartbeatStage: the heartbeat is renewed once a quarter of the threshold old, on the
// sync's own write of an entry of this installation when there is one, else by a write of its
// own on the carrier; not before, and never under create-only.
func TestTheHeartbeatStage(t *testing.T) {
	at := func(d time.Duration) string { return PrefixAlive + t0.Add(d).UTC().Format(time.RFC3339) }
	carrier := owned("01A", "one.lan", "10.0.0.1", "source:u1", at(-2*time.Hour), PrefixAliveEvery+"3600")
	fresh := owned("01A", "one.lan", "10.0.0.1", "source:u1", at(-10*time.Minute), PrefixAliveEvery+"3600")
	created := endpoint.Record{Hostname: "new.lan", IP: "10.0.0.2", Tags: []string{TagOwner, "cluster:home", "source:u2"}}
	create := plan.Change{Action: plan.Create, New: &created}
	for _, tc := range []struct {
		name    string
		policy  plan.Policy
		records []endpoint.Record
		changes []plan.Change
		// want is the change that carries the renewal, "" for none.
		want string
	}{
		{name: "not yet due", records: []endpoint.Record{fresh}, changes: []plan.Change{create}},
		{name: "due, on the sync's create", records: []endpoint.Record{carrier}, changes: []plan.Change{create}, want: "create new.lan"},
		{name: "due, with nothing to write: its own write on the carrier", records: []endpoint.Record{carrier}, want: "update one.lan 01A"},
		{name: "due, under create-only", policy: plan.CreateOnly, records: []endpoint.Record{carrier}, changes: []plan.Change{create}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.SilentClusterAfter, c.Policy = 4*time.Hour, tc.policy })
			in := changesAt(r, tc.records, nil, nil)
			v := r.heartbeat(in, tc.changes)
			got := ""
			for i := range v.changes {
				if c := &v.changes[i]; c.New != nil && c.New.HasTag(PrefixAlive+t0.UTC().Format(time.RFC3339)) {
					got = changeText(c)
				}
			}
			if got != tc.want {
				t.Errorf("renewed on %q, want %q (changes %v)", got, tc.want, wordsOfChanged(v).sent)
			}
			if created.HasTag(PrefixAlive + t0.UTC().Format(time.RFC3339)) {
				t.Fatal("the stage wrote into the change it was handed")
			}
		})
	}
}
