package registry

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// router is a router-hosts server shared by several installations: IDs, versions, and what
// each write stored.
type router struct {
	entries []endpoint.Record
	next    int
}

func (s *router) apply(changes []plan.Change) []plan.Result {
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
			for i := range s.entries {
				if s.entries[i].ID == c.Old.ID {
					n := *c.New
					n.Version = s.entries[i].Version + "+"
					s.entries[i] = n
					stored := n
					out[k].Stored = &stored
				}
			}
		}
	}
	return out
}

// edit is another writer's rewrite of the entry of host.
func (s *router) edit(t *testing.T, host string, change func(*endpoint.Record)) {
	t.Helper()
	for i := range s.entries {
		if s.entries[i].Hostname == host {
			n := s.entries[i]
			n.Tags = slices.Clone(n.Tags)
			change(&n)
			s.apply([]plan.Change{{Action: plan.Update, Old: &s.entries[i], New: &n}})
			return
		}
	}
	t.Fatalf("no entry of %s", host)
}

func (s *router) has(host string) bool {
	return slices.ContainsFunc(s.entries, func(r endpoint.Record) bool { return r.Hostname == host })
}

// install is one installation's process: its registry, its memory, its objects.
type install struct {
	r   *Registry
	m   *Memory
	eps []*endpoint.Endpoint
}

func newInstall(t *testing.T, grace time.Duration, eps ...*endpoint.Endpoint) *install {
	t.Helper()
	r := newRegWith(t, func(c *Config) { c.ClusterID, c.GracePeriod = "aaaaaaaa", grace })
	return &install{r: r, m: memoryOf(r), eps: eps}
}

// sync is one full sync at now, as the planner makes it: a whole read, the decision, the
// writes and what became of them.
func (in *install) sync(s *router, now time.Time) Decision {
	records := slices.Clone(s.entries)
	d := in.r.Decide(now, records, in.eps, Given{Memory: in.m})
	in.m.wrote(d.Changes, s.apply(d.Changes))
	in.m.end()
	return d
}

func heldOf(d Decision, reason string) []string {
	var out []string
	for _, h := range d.Held {
		if h.Reason == reason {
			out = append(out, string(h.Change.Action)+" "+h.Change.Hostname())
		}
	}
	return out
}

func actionsOf(d Decision) []string {
	var out []string
	for _, c := range d.Changes {
		out = append(out, string(c.Action)+" "+c.Hostname())
	}
	return out
}

// TestAContestedEntryHoldsOnlyItself: a person who rewrites one entry twice makes it contested,
// which holds that entry and nothing else: an object deleted in another namespace is marked and
// goes after its grace period. Once the edits stop, the contest fades and the entry is written
// again; while they go on, it stays held.
func TestAContestedEntryHoldsOnlyItself(t *testing.T) {
	const grace = 2 * time.Minute
	web := claim("web.lan", "apps", "web", "u-web", time.Hour, "10.0.0.1")
	gone := claim("gone.lan", "other", "gone", "u-gone", time.Hour, "10.0.0.2")
	for _, tc := range []struct {
		name string
		// editEvery is how often the person rewrites web.lan once it is contested (0: never
		// again); after is how long the test then runs.
		editEvery, after time.Duration
		// corrected: web.lan is written back to its object's address by the end.
		corrected bool
	}{
		{name: "the edits stop: the contest fades", after: strikeMemory + 5*time.Minute, corrected: true},
		{name: "the edits go on: the entry stays held", editEvery: 10 * time.Minute, after: strikeMemory + 5*time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &router{}
			a := newInstall(t, grace, web, gone)
			now := t0
			step := func() Decision {
				d := a.sync(s, now)
				now = now.Add(time.Minute)
				return d
			}
			step()
			hand := func(e *endpoint.Record) { e.IP = "10.9.9.9" }
			s.edit(t, "web.lan", hand)
			step() // corrected: one strike
			s.edit(t, "web.lan", hand)
			d := step() // contested
			if got := heldOf(d, ReasonTwinInstallation); !slices.Equal(got, []string{"update web.lan"}) || d.Twin == nil {
				t.Fatalf("the twice-edited entry: held %v, twin %+v; want its update held as contested", got, d.Twin)
			}

			// The other namespace's object is deleted: its entry is marked and goes.
			a.eps = []*endpoint.Endpoint{web}
			marked := false
			lastEdit := now
			for end := now.Add(tc.after); now.Before(end); {
				if tc.editEvery > 0 && now.Sub(lastEdit) >= tc.editEvery {
					s.edit(t, "web.lan", func(e *endpoint.Record) { e.IP = "10.9.9." + fmt.Sprint(now.Minute()) })
					lastEdit = now
				}
				d := step()
				if got := heldOf(d, ReasonTwinInstallation); slices.ContainsFunc(got, func(h string) bool { return strings.HasSuffix(h, "gone.lan") }) {
					t.Fatalf("the contested web.lan holds gone.lan: %v", got)
				}
				marked = marked || slices.Contains(actionsOf(d), "mark gone.lan")
			}
			if !marked || s.has("gone.lan") {
				t.Fatalf("gone.lan: marked %v, still on the router %v; want it gone after its grace period", marked, s.has("gone.lan"))
			}
			e := s.entries[slices.IndexFunc(s.entries, func(r endpoint.Record) bool { return r.Hostname == "web.lan" })]
			if (e.IP == "10.0.0.1") != tc.corrected {
				t.Fatalf("web.lan at %s; corrected %v", e.IP, tc.corrected)
			}
		})
	}
}

// TestTwinsNeverDeleteEachOthersNames: two installations on one identity, each with objects the
// other cannot see, mark each other's entries as their own orphans; whatever the grace period,
// neither deletes the other's name, since a mark on an entry a process never vouched for waits
// for the other's syncs, which lift it. An entry whose object went while the operator was down
// still goes, soon after its grace period.
func TestTwinsNeverDeleteEachOthersNames(t *testing.T) {
	const interval = time.Minute
	for _, grace := range []time.Duration{0, 10 * time.Second, 50 * time.Second, 90 * time.Second, 5 * time.Minute} {
		t.Run("grace "+grace.String(), func(t *testing.T) {
			s := &router{}
			a := newInstall(t, grace, claim("a.lan", "team-a", "a", "u-a", time.Hour, "10.0.0.1"))
			b := newInstall(t, grace, claim("b.lan", "team-b", "b", "u-b", time.Hour, "10.0.0.2"))
			// a's full syncs come on the minute, b's half a minute later; each syncs again
			// when a mark of its own falls due, as the controller does.
			type proc struct {
				in         *install
				next, wake time.Time
			}
			ps := []*proc{{in: a, next: t0}, {in: b, next: t0.Add(interval / 2)}}
			for now := t0; now.Before(t0.Add(20 * time.Minute)); now = now.Add(time.Second) {
				for _, p := range ps {
					if now.Before(p.next) && (p.wake.IsZero() || now.Before(p.wake)) {
						continue
					}
					if !now.Before(p.next) {
						p.next = p.next.Add(interval)
					}
					d := p.in.sync(s, now)
					p.wake = d.NextExpiry
					if !d.NextExpiry.IsZero() && !d.NextExpiry.After(now) {
						p.wake = now.Add(time.Second)
					}
					for _, h := range []string{"a.lan", "b.lan"} {
						if now.After(t0.Add(interval)) && !s.has(h) {
							t.Fatalf("%v: %s is gone (the sync wrote %v)", now.Sub(t0), h, actionsOf(d))
						}
					}
				}
			}
		})
	}

	// A twin creates a name and is away at once, for several grace periods: the other, which
	// never saw it wanted, marks it but keeps it until 30 minutes after the twin's last write,
	// so the twin comes back to it; a twin that stopped leaves it, and it goes after that.
	for _, grace := range []time.Duration{0, 50 * time.Second} {
		t.Run("a twin away keeps its new name, grace "+grace.String(), func(t *testing.T) {
			s := &router{}
			a := newInstall(t, grace, claim("a.lan", "team-a", "a", "u-a", time.Hour, "10.0.0.1"))
			b := newInstall(t, grace, claim("b.lan", "team-b", "b", "u-b", time.Hour, "10.0.0.2"))
			now := t0
			a.sync(s, now)
			b.sync(s, now.Add(time.Second))
			b.eps = append(b.eps, claim("new.lan", "team-b", "new", "u-new", time.Hour, "10.0.0.3"))
			now = now.Add(interval)
			b.sync(s, now)
			if !s.has("new.lan") {
				t.Fatal("b did not create new.lan")
			}
			// b is away from here on; a syncs every interval.
			for now = now.Add(interval / 2); now.Before(t0.Add(30 * time.Minute)); now = now.Add(interval) {
				d := a.sync(s, now)
				if !s.has("new.lan") {
					t.Fatalf("%v: a deleted new.lan of its twin away since %v (it wrote %v)", now.Sub(t0), interval, actionsOf(d))
				}
			}
			for end := now.Add(grace + 4*interval); s.has("new.lan") && now.Before(end); now = now.Add(interval) {
				a.sync(s, now)
			}
			if s.has("new.lan") {
				t.Fatalf("new.lan of a twin gone for %v is still on the router", now.Sub(t0))
			}
		})
	}

	// The object went while the operator was down: its entry, first seen at the first read,
	// goes three whole reads after its grace period at the latest.
	for _, grace := range []time.Duration{0, 90 * time.Second} {
		t.Run("an orphan still goes, grace "+grace.String(), func(t *testing.T) {
			orphan := owned("o1", "old.lan", "10.0.0.9", PrefixSource+"u-old", PrefixNamespace+"apps", IdentityTag("aaaaaaaa"))
			s := &router{entries: []endpoint.Record{orphan}}
			a := newInstall(t, grace, claim("a.lan", "apps", "a", "u-a", time.Hour, "10.0.0.1"))
			now := t0
			for ; s.has("old.lan") && now.Before(t0.Add(grace+4*interval)); now = now.Add(interval) {
				a.sync(s, now)
			}
			if s.has("old.lan") {
				t.Fatalf("the orphan is still on the router after %v", now.Sub(t0))
			}
		})
	}
}

// TestOnlyAProbeAloneIsNoStrike: a rewrite that only puts a release probe (or another
// cluster's co-owner tag) on an entry this process wrote earns no strike; one that changes
// anything else beside it does, and a probe first does not hide a rewrite after it.
func TestOnlyAProbeAloneIsNoStrike(t *testing.T) {
	probe := PrefixReleaseProbe + t0.Format(time.RFC3339)
	for _, tc := range []struct {
		name    string
		rewrite []func(*endpoint.Record)
		strikes int
	}{
		{"a probe alone", []func(*endpoint.Record){func(e *endpoint.Record) { e.Tags = append(e.Tags, probe) }}, 0},
		{"a co-owner tag alone", []func(*endpoint.Record){func(e *endpoint.Record) { e.Tags = append(e.Tags, CoOwnerTag("other", "bbbbbbbb")) }}, 0},
		{"a probe and a new address", []func(*endpoint.Record){func(e *endpoint.Record) { e.Tags, e.IP = append(e.Tags, probe), "10.9.9.9" }}, 1},
		{"a probe and a mark", []func(*endpoint.Record){func(e *endpoint.Record) {
			e.Tags = append(e.Tags, probe, PrefixPending+t0.Format(time.RFC3339))
		}}, 1},
		{"a probe, then a new address", []func(*endpoint.Record){
			func(e *endpoint.Record) { e.Tags = append(e.Tags, probe) },
			func(e *endpoint.Record) { e.IP = "10.9.9.9" },
		}, 1},
		{"a new address", []func(*endpoint.Record){func(e *endpoint.Record) { e.IP = "10.9.9.9" }}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &router{}
			a := newInstall(t, time.Minute, claim("web.lan", "apps", "web", "u-web", time.Hour, "10.0.0.1"))
			now := t0
			a.sync(s, now)
			id := s.entries[0].ID
			for _, rw := range tc.rewrite {
				s.edit(t, "web.lan", rw)
				now = now.Add(time.Minute)
				a.m.sawRead(slices.Clone(s.entries), now)
			}
			if got := a.m.witness.Strikes(id); got != tc.strikes {
				t.Fatalf("strikes %d, want %d", got, tc.strikes)
			}
		})
	}
}

// struck is what this process saw other writers do, as far as the twins stage reads it: the
// strikes against each entry.
type struck map[string]int

func (s struck) Strikes(id string) int          { return s[id] }
func (struck) Alive(string) bool                { return false }
func (struck) Waits(string) bool                { return false }
func (struck) Quiet(string, time.Duration) bool { return false }
func (struck) Proven(string) bool               { return false }

// TestTheTwinsStage: a write to an entry with contestedAt strikes is held (TwinInstallation,
// contested) and the twin reported with the number held; a mark lifted from it still goes,
// and so does every write to another entry.
func TestTheTwinsStage(t *testing.T) {
	web := owned("e1", "web.lan", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u1")
	moved := web
	moved.IP = "10.0.0.9"
	db := owned("e2", "db.lan", "10.0.0.2", PrefixNamespace+"a", PrefixSource+"u2")
	changes := []plan.Change{{Action: plan.Update, Old: &web, New: &moved}, {Action: plan.Mark, Old: &db, New: &db},
		{Action: plan.Create, New: &endpoint.Record{Hostname: "new.lan", IP: "10.0.0.3"}}}
	for _, tc := range []struct {
		name       string
		struck     struck
		changes    []plan.Change
		sent, held []string
	}{
		{name: "no strike", changes: changes, sent: []string{"update web.lan e1", "mark db.lan e2", "create new.lan"}},
		{name: "one strike is no contest", struck: struck{"e1": 1, "e2": 1}, changes: changes,
			sent: []string{"update web.lan e1", "mark db.lan e2", "create new.lan"}},
		{name: "a contested entry holds only itself", struck: struck{"e1": contestedAt}, changes: changes,
			sent: []string{"mark db.lan e2", "create new.lan"}, held: []string{"update web.lan e1 TwinInstallation"}},
		{name: "a mark lifted from a contested entry goes", struck: struck{"e1": contestedAt + 1},
			changes: []plan.Change{{Action: plan.Unmark, Old: &web, New: &web}}, sent: []string{"unmark web.lan e1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.ClusterID = "3f9a0c21" })
			v := r.twins(changesAt(r, []endpoint.Record{web, db}, nil, tc.struck), tc.changes)
			if got := wordsOfChanged(v); !reflect.DeepEqual(got, changeWords{tc.sent, tc.held}) {
				t.Errorf("sent %q, held %q; want %q, %q", got.sent, got.held, tc.sent, tc.held)
			}
			switch {
			case len(tc.held) == 0 && v.twin != nil:
				t.Errorf("a twin reported: %+v", v.twin)
			case len(tc.held) > 0 && (v.twin == nil || v.twin.Disputed != len(tc.held) || v.twin.ClusterID != "3f9a0c21"):
				t.Errorf("twin %+v, want %d disputed of 3f9a0c21", v.twin, len(tc.held))
			}
			for _, h := range v.held {
				if !h.Contested {
					t.Errorf("held %+v, not said to be contested", h)
				}
			}
		})
	}
}
