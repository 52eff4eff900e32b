package planner

import (
	"slices"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// planOnce runs one plan over records as a sync does: from the known state (incremental) or
// from a read of the whole server.
func planOnce(p *Planner, incremental bool, eps []*endpoint.Endpoint, records ...endpoint.Record) *Sync {
	s := &Sync{Mode: Event, Read: ReadServer, records: records}
	if incremental {
		p.known.read(records)
		s.Read = ReadKnown
	}
	p.plan(s, eps)
	p.syncs++
	return s
}

func byHost(eps []*endpoint.Endpoint) map[string]*endpoint.Endpoint {
	out := map[string]*endpoint.Endpoint{}
	for _, e := range eps {
		out[e.Hostname] = e
	}
	return out
}

// TestMergesAreReusedOnlyWhileTheirInputsHold: a sync whose claims and entries for a hostname
// are those of the last sync gets the same merge; a new claim, a changed entry or a changed
// claim merges again, and conflicts are reported by every sync.
func TestMergesAreReusedOnlyWhileTheirInputsHold(t *testing.T) {
	p := New(newReg(t), nil, nil)
	web := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	noAddr := claim("noaddr.lan", "default", "noaddr", "uid-2", time.Hour) // no address: its entry is kept
	rival := claim("rival.lan", "other", "r", "uid-3", time.Minute, "10.0.0.3")
	first := claim("rival.lan", "default", "f", "uid-4", time.Hour, "10.0.0.4")
	recs := []endpoint.Record{owned("e1", "web.lan", "10.0.0.1"), owned("e2", "noaddr.lan", "10.0.0.2", "source:uid-2")}
	a := byHost(planOnce(p, false, []*endpoint.Endpoint{web, noAddr, first, rival}, recs...).Desired)
	s := planOnce(p, false, []*endpoint.Endpoint{web, noAddr, first, rival}, recs...)
	b := byHost(s.Desired)
	for _, h := range []string{"web.lan", "noaddr.lan"} {
		if a[h] == nil || a[h] != b[h] {
			t.Errorf("%s merged again with nothing changed", h)
		}
	}
	if c := s.Conflicts; len(c) != 1 || c[0].Loser.UID != "uid-3" {
		t.Errorf("second sync's conflicts = %+v, want rival.lan's", c)
	}

	again := *web
	again.Targets = []string{"10.0.0.9"}
	c := byHost(planOnce(p, false, []*endpoint.Endpoint{&again, noAddr, first, rival}, recs...).Desired)
	if got := c["web.lan"].Targets; !slices.Equal(got, []string{"10.0.0.9"}) {
		t.Errorf("changed claim: targets %v", got)
	}
	if c["noaddr.lan"] != a["noaddr.lan"] {
		t.Error("noaddr.lan merged again though only web.lan changed")
	}

	// The kept entry is marked for deletion elsewhere: its new version is no longer kept.
	marked := slices.Clone(recs)
	marked[1] = owned("e2", "noaddr.lan", "10.0.0.2", "source:uid-2", registry.PrefixPending+t0.Format(time.RFC3339))
	marked[1].Version = "2"
	d := byHost(planOnce(p, false, []*endpoint.Endpoint{&again, noAddr, first, rival}, marked...).Desired)
	if got := d["noaddr.lan"]; got == nil || len(got.Targets) != 0 {
		t.Errorf("noaddr.lan after its entry was marked: targets %v, want none", got)
	}
}

// TestSettledHostnamesAreLeftOutOnlyWhileNothingMoves: a sync planning from the known state
// leaves out of the plan a hostname whose claims and entries are those of the last sync,
// which planned nothing for it; anything in motion brings it back, and a sync that read the
// server plans every hostname.
func TestSettledHostnamesAreLeftOutOnlyWhileNothingMoves(t *testing.T) {
	p := New(newReg(t), nil, nil)
	web := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	// step runs one sync over records and returns how many hostnames the plan looked at and
	// what it changed.
	step := func(incremental bool, records ...endpoint.Record) (int, []plan.Change) {
		s := planOnce(p, incremental, []*endpoint.Endpoint{web}, records...)
		return s.Planned, s.Changes
	}
	_, created := step(true)
	if len(created) != 1 || created[0].Action != plan.Create {
		t.Fatalf("first sync: %v", created)
	}
	entry := *created[0].New
	entry.ID, entry.Version = "e1", "1"
	if looked, changes := step(true, entry); looked != 1 || len(changes) != 0 {
		t.Fatalf("the sync after the create: looked at %d, changed %v; want 1 and nothing", looked, changes)
	}
	if looked, changes := step(true, entry); looked != 0 || len(changes) != 0 {
		t.Fatalf("a quiet sync: looked at %d, changed %v; want web.lan settled", looked, changes)
	}
	if looked, _ := step(false, entry); looked != 1 {
		t.Fatalf("a sync that read the server looked at %d hostnames, want every one", looked)
	}
	step(true, entry) // settled again
	edited := entry
	edited.IP, edited.Version = "10.0.0.9", "2"
	if looked, changes := step(true, edited); looked != 1 || len(changes) != 1 || changes[0].Action != plan.Update {
		t.Fatalf("an entry edited by hand: looked at %d, changed %v; want it put back", looked, changes)
	}
	step(true, entry)
	step(true, entry)
	marked := entry
	marked.Tags = append(slices.Clone(entry.Tags), registry.PrefixPending+t0.Format(time.RFC3339))
	marked.Version = "3"
	step(true, marked)
	if looked, changes := step(true, marked); looked != 1 || len(changes) != 1 || changes[0].Action != plan.Unmark {
		t.Fatalf("a marked entry still wanted: looked at %d, changed %v; want it unmarked, never settled", looked, changes)
	}
	step(true, entry)
	step(true, entry)
	hand := endpoint.Record{ID: "u1", Hostname: "web.lan", IP: "10.0.0.2", Version: "1", Tags: []string{"manual"}}
	if looked, _ := step(true, entry, hand); looked != 1 {
		t.Fatalf("a hand-made entry beside it: looked at %d, want web.lan planned", looked)
	}
	p.Reset()
	if looked, _ := step(true, entry); looked != 1 {
		t.Fatalf("after a reconfiguration: looked at %d, want web.lan planned", looked)
	}
}

// TestAHostnameWithNoAddressNorEntriesSettlesSafely: an object with no address yet and no
// entry settles with nothing to plan, beside fewer entries than settled hostnames.
func TestAHostnameWithNoAddressNorEntriesSettlesSafely(t *testing.T) {
	p := New(newReg(t), nil, nil)
	noAddr := claim("pending.lan", "default", "lb", "uid-9", time.Hour) // no address, no entry
	for i := 0; i < 3; i++ {
		if s := planOnce(p, true, []*endpoint.Endpoint{noAddr}); len(s.Changes) != 0 {
			t.Fatalf("sync %d: %v", i, s.Changes)
		}
	}
}
