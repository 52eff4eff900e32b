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

// sharing is two installations on one server, each with its claims, as a homelab lives through
// them: each sync applies what it sends, the server refusing a second line of one address and
// hostname as AddHost does.
type sharing struct {
	t    *testing.T
	srv  *server
	a, b *installation
	now  time.Time
}

func newSharing(t *testing.T) *sharing {
	t.Helper()
	a := &installation{name: "a", r: newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "a", "aaaaaaaa" })}
	b := &installation{name: "b", r: newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "b", "bbbbbbbb" })}
	return &sharing{t: t, srv: &server{}, a: a, b: b, now: t0}
}

// shared is a shared claim of web.lan by the object uid at ip.
func sharedClaim(uid, ip string, shared bool) *endpoint.Endpoint {
	ep := claim("web.lan", "apps", "web", uid, time.Hour, ip)
	ep.Shared = shared
	return ep
}

// sync runs one sync of in, checks the server kept one line per address and hostname, and
// returns what the sync sent and decided.
func (s *sharing) sync(in *installation) (Decision, []plan.Change) {
	s.t.Helper()
	d := in.r.Decide(s.now, s.srv.entries, in.eps, Given{})
	for _, c := range d.Changes {
		if c.Old == nil && slices.ContainsFunc(s.srv.entries, func(r endpoint.Record) bool { return r.IP == c.New.IP && strings.EqualFold(r.Hostname, c.New.Hostname) }) {
			s.t.Fatalf("cluster %s creates a second line %s %s: AddHost refuses it", in.name, c.New.Hostname, c.New.IP)
		}
	}
	s.srv.apply(d.Changes)
	return d, d.Changes
}

// answers are the addresses web.lan has on the server.
func (s *sharing) answers() []string {
	var out []string
	for _, e := range s.srv.entries {
		if e.Hostname == "web.lan" {
			out = append(out, e.IP)
		}
	}
	slices.Sort(out)
	return out
}

// settle syncs both clusters in turn until neither writes, and fails if that takes long.
func (s *sharing) settle() {
	s.t.Helper()
	for range 6 {
		_, ca := s.sync(s.a)
		_, cb := s.sync(s.b)
		if len(ca)+len(cb) == 0 {
			return
		}
	}
	s.t.Fatalf("the clusters do not settle: %v", s.srv.entries)
}

func TestTwoClustersShareANameEachWithItsOwnAddress(t *testing.T) {
	s := newSharing(t)
	s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.1.1", true)}
	s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.2.1", true)}
	s.settle()
	if got := s.answers(); !slices.Equal(got, []string{"10.0.1.1", "10.0.2.1"}) {
		t.Fatalf("web.lan answers %v, want both clusters' addresses", got)
	}
	for _, e := range s.srv.entries {
		if !e.HasTag(TagShared) {
			t.Errorf("entry %v lacks %s", e, TagShared)
		}
	}
	// At rest: zero writes from either, whatever time passes.
	s.now = s.now.Add(time.Hour)
	if _, c := s.sync(s.a); len(c) > 0 {
		t.Errorf("cluster a writes at rest: %v", c)
	}
	if _, c := s.sync(s.b); len(c) > 0 {
		t.Errorf("cluster b writes at rest: %v", c)
	}
}

// TestAClaimWithoutConsentIsRefused: a claim without the opt-in on a name another cluster holds,
// or a shared claim on a name held without it, is a HostnameConflict, on both sides.
func TestAClaimWithoutConsentIsRefused(t *testing.T) {
	for _, tc := range []struct {
		desc             string
		aShares, bShares bool
	}{
		{"neither shares", false, false},
		{"the holder shares, the newcomer does not", true, false},
		{"the newcomer shares, the holder does not", false, true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			s := newSharing(t)
			s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.1.1", tc.aShares)}
			s.sync(s.a)
			s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.2.1", tc.bShares)}
			d, _ := s.sync(s.b)
			if len(d.Conflicts) != 1 || d.Conflicts[0].Winner != "cluster a" || d.Conflicts[0].Reason != ReasonHostnameConflict {
				t.Errorf("cluster b's conflicts %+v: want a HostnameConflict naming cluster a", d.Conflicts)
			}
			s.settle()
			if got := s.answers(); !slices.Equal(got, []string{"10.0.1.1"}) {
				t.Errorf("web.lan answers %v: only the holder's address", got)
			}
		})
	}
}

// TestTheSameAddressFromTwoClusters: both clusters want one address; the router keeps one
// line, which the second co-owns. It stays while either wants it, goes only when neither does,
// and never disappears in between, whichever leaves first.
func TestTheSameAddressFromTwoClusters(t *testing.T) {
	for _, first := range []string{"writer", "co-owner"} {
		t.Run("the "+first+" leaves first", func(t *testing.T) {
			s := newSharing(t)
			s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.0.5", true)}
			s.sync(s.a)
			s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.0.5", true)}
			d, changes := s.sync(s.b)
			if len(changes) != 1 || changes[0].Action != ActionCoOwn || len(d.Conflicts) != 0 {
				t.Fatalf("cluster b sends %v (conflicts %+v): want one co-own", changes, d.Conflicts)
			}
			s.settle()
			if len(s.srv.entries) != 1 || !s.srv.entries[0].HasTag(CoOwnerTag("b", "bbbbbbbb")) || !carriesOwner(s.srv.entries[0].Tags, "a", "aaaaaaaa") {
				t.Fatalf("entries %v: want a's line with b's co-owner tag", s.srv.entries)
			}
			leaver, stayer := s.a, s.b
			if first == "co-owner" {
				leaver, stayer = s.b, s.a
			}
			leaver.eps = nil
			for range 4 {
				s.now = s.now.Add(time.Minute)
				for _, in := range []*installation{leaver, stayer} {
					s.sync(in)
					if got := s.answers(); !slices.Equal(got, []string{"10.0.0.5"}) {
						t.Fatalf("after a sync of %s web.lan answers %v: the line must stay while %s wants it", in.name, got, stayer.name)
					}
				}
			}
			e := s.srv.entries[0]
			if !carriesOwner(e.Tags, stayer.name, stayer.r.cfg.ClusterID) || slices.ContainsFunc(e.Tags, func(t string) bool { return strings.HasPrefix(t, PrefixCoOwner) }) {
				t.Errorf("the line %v: want it %s's alone", e, stayer.name)
			}
			// Then the other leaves too: its own grace period, then the line goes.
			stayer.eps = nil
			for range 8 {
				s.now = s.now.Add(time.Minute)
				s.sync(stayer)
			}
			if len(s.srv.entries) != 0 {
				t.Errorf("entries %v: the line goes when neither wants it", s.srv.entries)
			}
		})
	}
}

// TestAMoveWithNoGap: the documented path from cluster a to cluster b. The name answers with at
// least one address at every step, and a's address leaves after a's grace period.
func TestAMoveWithNoGap(t *testing.T) {
	s := newSharing(t)
	s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.1.1", false)}
	s.settle()
	check := func(step string) {
		if len(s.answers()) == 0 {
			t.Fatalf("%s: web.lan answers nothing", step)
		}
	}
	steps := []struct {
		desc string
		do   func()
	}{
		{"annotate a's object shared", func() { s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.1.1", true)} }},
		{"create b's object, shared", func() { s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.2.1", true)} }},
		{"delete a's object", func() { s.a.eps = nil }},
	}
	for _, st := range steps {
		st.do()
		for range 3 {
			s.now = s.now.Add(time.Minute)
			s.sync(s.a)
			check(st.desc)
			s.sync(s.b)
			check(st.desc)
		}
	}
	if got := s.answers(); !slices.Equal(got, []string{"10.0.1.1", "10.0.2.1"}) {
		t.Fatalf("within a's grace period web.lan answers %v, want both", got)
	}
	s.now = s.now.Add(5 * time.Minute)
	s.settle()
	if got := s.answers(); !slices.Equal(got, []string{"10.0.2.1"}) {
		t.Errorf("after a's grace period web.lan answers %v, want b's address alone", got)
	}
}

// TestReleaseOfOneSharingCluster: release gives a line another cluster co-owns to it, takes the
// released cluster's co-owner tags off the other's lines, and touches nothing else.
func TestReleaseOfOneSharingCluster(t *testing.T) {
	s := newSharing(t)
	s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.0.5", true), claim("a-only.lan", "apps", "x", "ua2", time.Hour, "10.0.1.9")}
	s.sync(s.a)
	s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.0.5", true), claim("b-only.lan", "apps", "y", "ub2", time.Hour, "10.0.2.9")}
	s.settle()
	// b's line of its own that a co-owns: a now wants b's address too.
	ep := claim("both.lan", "apps", "z", "ub3", time.Hour, "10.0.3.3")
	ep.Shared = true
	s.b.eps = append(s.b.eps, ep)
	s.settle()
	ep2 := *ep
	ep2.Sources = []endpoint.SourceRef{{Kind: "Ingress", Namespace: "apps", Name: "z", UID: "ua3", CreationTimestamp: t0}}
	s.a.eps = append(s.a.eps, &ep2)
	s.settle()

	l, err := s.a.r.Release(cloneRecords(s.srv.entries))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range l.Changes {
		got = append(got, string(c.Action)+" "+c.Hostname())
	}
	slices.Sort(got)
	want := []string{"delete a-only.lan", "hand-over web.lan", "withdraw both.lan"}
	if !slices.Equal(got, want) {
		t.Fatalf("release of a: %v, want %v", got, want)
	}
	if h, w := countActions(l.Changes, ActionHandOver), countActions(l.Changes, ActionWithdraw); h != 1 || w != 1 {
		t.Errorf("SharedCounts = %d, %d", h, w)
	}
	s.srv.apply(l.Changes)
	s.a.eps = nil
	if got := s.answers(); !slices.Equal(got, []string{"10.0.0.5"}) {
		t.Errorf("web.lan answers %v after the release: %v", got, s.srv.entries)
	}
	s.settle()
	for _, e := range s.srv.entries {
		if !carriesOwner(e.Tags, "b", "bbbbbbbb") || slices.ContainsFunc(e.Tags, func(t string) bool { return strings.HasPrefix(t, PrefixCoOwner) }) {
			t.Errorf("entry %v: every line left is b's alone", e)
		}
	}
	if len(s.srv.entries) != 3 {
		t.Errorf("entries %v: b keeps its three names", s.srv.entries)
	}
}

// TestMarksOfLife: an installation renews its mark once a quarter of the threshold has gone by,
// writes nothing in between, and the other reports it once its newest mark is older than the
// threshold, with its name, identity, entry count and when it was last seen.
func TestMarksOfLife(t *testing.T) {
	const after = time.Hour
	a := &installation{name: "a", r: newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID, c.SilentClusterAfter = "a", "aaaaaaaa", after })}
	b := &installation{name: "b", r: newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID, c.SilentClusterAfter = "b", "bbbbbbbb", after })}
	a.eps = []*endpoint.Endpoint{claim("one.lan", "apps", "one", "u1", time.Hour, "10.0.0.1"), claim("two.lan", "apps", "two", "u2", time.Hour, "10.0.0.2")}
	b.eps = []*endpoint.Endpoint{claim("three.lan", "apps", "three", "u3", time.Hour, "10.0.0.3")}
	srv := &server{}
	now := t0
	writes := func(in *installation) int {
		v, _ := srv.syncAs(in, now)
		return len(v.Changes)
	}
	if n := writes(a); n != 2 || countMarks(srv, "a") != 1 {
		t.Fatalf("%d writes, %d marks: the first sync's two creates, one of them with the mark", n, countMarks(srv, "a"))
	}
	if n := writes(a); n != 0 {
		t.Fatalf("%d writes at the next sync: the mark went on with the creates", n)
	}
	// Nothing more within a quarter of the threshold, one write at it.
	total := 0
	for now = now.Add(time.Minute); now.Before(t0.Add(after / 4)); now = now.Add(time.Minute) {
		total += writes(a)
	}
	if total != 0 {
		t.Errorf("%d writes within a quarter of the threshold", total)
	}
	now = t0.Add(after/4 + time.Minute)
	if n := writes(a); n != 1 {
		t.Errorf("%d writes once a quarter of the threshold is over, want the one renewal", n)
	}
	// a goes silent; b reports it after the threshold, and not before.
	last := now.Truncate(time.Second)
	now = last.Add(after)
	if d := b.r.Decide(now, srv.entries, b.eps, Given{}); len(d.Silent) != 0 {
		t.Errorf("silent %+v at exactly the threshold", d.Silent)
	}
	now = last.Add(after + time.Minute)
	// An installation that never wrote a mark (an earlier version's) is never reported.
	unmarked := endpoint.Record{ID: "00OLD", Hostname: "old.lan", IP: "10.9.9.9", Version: "1", Tags: []string{"k8s-operator", "cluster:old", "cluster-id:0000aaaa"}}
	d := b.r.Decide(now, append(slices.Clone(srv.entries), unmarked), b.eps, Given{})
	want := []SilentCluster{{Cluster: "a", ClusterID: "aaaaaaaa", Entries: 2, LastSeen: last}}
	if !slices.Equal(d.Silent, want) {
		t.Errorf("silent %+v, want %+v", d.Silent, want)
	}
	if cmd := d.Silent[0].ReleaseCommand(); cmd != "router-hosts-operator release --cluster-name=a --cluster-id=aaaaaaaa" {
		t.Errorf("release command %q", cmd)
	}
	// Nothing is deleted for it.
	if slices.ContainsFunc(d.Changes, func(c plan.Change) bool {
		return c.Old != nil && strings.Contains(strings.Join(c.Old.Tags, " "), "cluster:a")
	}) {
		t.Errorf("b writes a's entries: %v", d.Changes)
	}
}

func countMarks(s *server, cluster string) int {
	n := 0
	for _, e := range s.entries {
		if e.HasTag(PrefixCluster+cluster) && slices.ContainsFunc(e.Tags, func(t string) bool { return strings.HasPrefix(t, PrefixAlive) }) {
			n++
		}
	}
	return n
}

// TestAMarkLostWithItsEntryWaitsItsTurn: the entry that carries the only heartbeat is
// deleted; the others now read no mark, which is never silence, so the running process writes
// none until the next is due, and a restarted one, which knows no mark, writes one of its own
// only a quarter of the threshold after it began.
func TestAMarkLostWithItsEntryWaitsItsTurn(t *testing.T) {
	r := newRegWith(t, func(c *Config) {
		c.ClusterName, c.ClusterID, c.SilentClusterAfter, c.GracePeriod = "a", "aaaaaaaa", time.Hour, 0
	})
	one, two := claim("one.lan", "apps", "one", "u1", time.Hour, "10.0.0.1"), claim("two.lan", "apps", "two", "u2", time.Hour, "10.0.0.2")
	srv, mem := &server{}, memoryOf(r)
	sync := func(now time.Time, m *Memory, eps ...*endpoint.Endpoint) []plan.Change {
		d := r.Decide(now, srv.entries, eps, Given{Memory: m})
		results := srv.apply(d.Changes)
		if m != nil {
			m.wrote(d.Changes, results)
			m.end()
		}
		return d.Changes
	}
	sync(t0, mem, one, two)
	if countMarks(srv, "a") != 1 {
		t.Fatalf("entries %v: one mark", srv.entries)
	}
	// The carrier goes (one.lan is the first create), then the other stays.
	carrier := ""
	for _, e := range srv.entries {
		if slices.ContainsFunc(e.Tags, func(t string) bool { return strings.HasPrefix(t, PrefixAlive) }) {
			carrier = e.Hostname
		}
	}
	left := two
	if carrier == "two.lan" {
		left = one
	}
	for i := range 3 {
		sync(t0.Add(time.Duration(i+1)*time.Minute), mem, left)
	}
	if n := countMarks(srv, "a"); n != 0 || len(srv.entries) != 1 {
		t.Fatalf("entries %v: the carrier and its mark are gone", srv.entries)
	}
	if c := sync(t0.Add(5*time.Minute), mem, left); len(c) != 0 {
		t.Errorf("the running process writes %v: its mark is not due", c)
	}
	// A restart: the new process knows no mark and writes none of its own for a quarter of the
	// threshold, then one.
	restarted := memoryOf(r)
	if c := sync(t0.Add(6*time.Minute), restarted, left); len(c) != 0 {
		t.Errorf("the restarted process writes %v at once", c)
	}
	if c := sync(t0.Add(6*time.Minute+time.Hour/4), restarted, left); len(c) != 1 || countMarks(srv, "a") != 1 {
		t.Errorf("the restarted process writes %v a quarter of the threshold later: want one mark", c)
	}
}

// TestOneClustersBrakeHoldsOnlyItsOwnEntries: cluster a loses every object at once, its shared
// name among them, and its brake holds; b, which shares the name, goes on writing its own
// entries of it, and nothing of b's is held or touched by a.
func TestOneClustersBrakeHoldsOnlyItsOwnEntries(t *testing.T) {
	s := newSharing(t)
	s.a.r = newRegWith(t, func(c *Config) {
		c.ClusterName, c.ClusterID, c.Brake = "a", "aaaaaaaa", Brake{Share: 0.5, Minimum: 3}
	})
	s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.1.1", true)}
	for i := range 4 {
		s.a.eps = append(s.a.eps, claim(fmt.Sprintf("a%d.lan", i), "apps", fmt.Sprintf("a%d", i), fmt.Sprintf("ua%d", i), time.Hour, fmt.Sprintf("10.0.1.%d", 10+i)))
	}
	s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.2.1", true)}
	s.settle()
	s.a.eps = nil
	d, changes := s.sync(s.a)
	if d.Braked == nil || len(changes) != 0 {
		t.Fatalf("a's brake: %+v, changes %v: want it holding everything", d.Braked, changes)
	}
	// b moves its address: it creates the new one and marks its old entry (a shared hostname's
	// entries are never re-pointed); a's stays as the brake holds it.
	s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.2.2", true)}
	db, cb := s.sync(s.b)
	if len(db.Held) != 0 || len(cb) != 2 || cb[0].Action != plan.Mark || !carriesOwner(cb[0].Old.Tags, "b", "bbbbbbbb") || cb[1].Action != plan.Create {
		t.Errorf("b sends %v, holds %v: want its old entry marked and the new address created, nothing held", cb, db.Held)
	}
	if got := s.answers(); !slices.Equal(got, []string{"10.0.1.1", "10.0.2.1", "10.0.2.2"}) {
		t.Errorf("web.lan answers %v", got)
	}
}

// TestARenamedCoOwnerRewritesItsTag: a co-owner's tag is its identity's under whatever name it
// had: renamed, it rewrites its tag on the line in one update, and a hand-over then goes to it
// under its new name.
func TestARenamedCoOwnerRewritesItsTag(t *testing.T) {
	s := newSharing(t)
	s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.0.5", true)}
	s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.0.5", true)}
	s.settle()
	s.b.r = newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "b2", "bbbbbbbb" })
	_, changes := s.sync(s.b)
	if len(changes) != 1 || changes[0].Old.HasTag(CoOwnerTag("b2", "bbbbbbbb")) || !changes[0].New.HasTag(CoOwnerTag("b2", "bbbbbbbb")) ||
		changes[0].New.HasTag(CoOwnerTag("b", "bbbbbbbb")) {
		t.Fatalf("the renamed co-owner sends %v: want its tag rewritten in one update", changes)
	}
	s.a.eps = nil
	s.settle()
	if len(s.srv.entries) != 1 || !carriesOwner(s.srv.entries[0].Tags, "b2", "bbbbbbbb") {
		t.Errorf("entries %v: the line handed to b2", s.srv.entries)
	}
}

// TestAHandedOverLineIsTakenUpAfterARename: a line handed over to b carries b's name and
// identity and names no object. b renamed before its next sync takes it up in place as its own
// (its identity, an address it wants) and never co-owns it; a line it co-owned that way anyway
// is taken up too, its co-owner tag dropped. Soak seed 466 found this.
func TestAHandedOverLineIsTakenUpAfterARename(t *testing.T) {
	for _, left := range []string{"as handed over", "co-owned by its own cluster"} {
		t.Run(left, func(t *testing.T) {
			s := newSharing(t)
			s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.0.5", true)}
			s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.0.5", true)}
			s.settle()
			s.a.eps = nil
			if _, changes := s.sync(s.a); len(changes) != 1 || changes[0].Action != ActionHandOver {
				t.Fatalf("cluster a sends %v: want one hand-over", changes)
			}
			id := s.srv.entries[0].ID
			if left == "co-owned by its own cluster" {
				s.srv.entries[0].Tags = append(s.srv.entries[0].Tags, CoOwnerTag("b2", "bbbbbbbb"))
			}
			s.b.r = newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "b2", "bbbbbbbb" })
			_, changes := s.sync(s.b)
			if len(changes) != 1 || changes[0].Action != plan.Update || changes[0].Old.ID != id {
				t.Fatalf("the renamed b sends %v: want one update of the line handed to it", changes)
			}
			s.settle()
			e := s.srv.entries
			if len(e) != 1 || e[0].ID != id || !carriesOwner(e[0].Tags, "b2", "bbbbbbbb") || !e[0].HasTag(PrefixSource+"ub") ||
				slices.ContainsFunc(e[0].Tags, func(t string) bool { return strings.HasPrefix(t, PrefixCoOwner) }) {
				t.Errorf("entries %v: want the line b2's own, in place, with no co-owner tag", e)
			}
		})
	}
}

// TestSharingCannotBeForgedWithTags: an object's own tags cannot give consent or co-ownership:
// shared:, co-owner: and alive: are reserved, dropped with a problem, and a claim that carries
// them without the opt-in stays a conflict on another cluster's shared name.
func TestSharingCannotBeForgedWithTags(t *testing.T) {
	for _, tag := range []string{TagShared, CoOwnerTag("b", "bbbbbbbb"), PrefixAlive + "2026-11-28T00:00:00Z"} {
		if CheckUserTag(tag) == nil {
			t.Errorf("%s is not reserved", tag)
		}
	}
	s := newSharing(t)
	s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.0.5", true)}
	s.settle()
	forged := sharedClaim("ub", "10.0.0.5", false)
	forged.Tags = []string{TagShared, CoOwnerTag("b", "bbbbbbbb")}
	s.b.eps = []*endpoint.Endpoint{forged}
	d, changes := s.sync(s.b)
	if len(changes) != 0 || len(d.Conflicts) != 1 || len(d.Problems) != 2 {
		t.Errorf("a forged claim: changes %v, conflicts %+v, problems %+v; want nothing written, one conflict, both tags dropped", changes, d.Conflicts, d.Problems)
	}
}

// TestTwoLinesOfOneSharedAddressEndAsOne: two clusters put one address on a shared name in one
// moment (one re-pointed an entry, which UpdateHost lets through), so the router holds two
// lines of it. Both decide alike: the older line stays and is co-owned, the newer goes at once,
// and the address answers throughout.
func TestTwoLinesOfOneSharedAddressEndAsOne(t *testing.T) {
	for _, older := range []string{"a", "b"} {
		t.Run(older+"'s line is older", func(t *testing.T) {
			s := newSharing(t)
			s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.0.5", true)}
			s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.0.5", true)}
			line := func(id, cluster, cid, uid string) endpoint.Record {
				return endpoint.Record{ID: id, Hostname: "web.lan", IP: "10.0.0.5", Version: "1",
					Tags: []string{"cluster-id:" + cid, "cluster:" + cluster, "k8s-operator", "kind:Ingress", "namespace:apps", TagShared, "source:" + uid}}
			}
			aID, bID := "01A", "01B"
			if older == "b" {
				aID, bID = "01B", "01A"
			}
			s.srv.entries = []endpoint.Record{line(aID, "a", "aaaaaaaa", "ua"), line(bID, "b", "bbbbbbbb", "ub")}
			for range 4 {
				for _, in := range []*installation{s.a, s.b} {
					s.sync(in)
					if got := s.answers(); len(got) == 0 {
						t.Fatalf("after a sync of %s web.lan answers nothing", in.name)
					}
				}
			}
			if len(s.srv.entries) != 1 || s.srv.entries[0].ID != "01A" || len(s.srv.entries[0].Tags) != 8 {
				t.Errorf("entries %v: want the older line alone, co-owned by the other", s.srv.entries)
			}
		})
	}
}

// TestANamesakesLineIsWithdrawnFrom: the cluster whose line this cluster co-owns takes this
// cluster's name (a namesake); the co-owner tag is still found, and taken off when the address
// is no longer wanted.
func TestANamesakesLineIsWithdrawnFrom(t *testing.T) {
	s := newSharing(t)
	s.a.eps = []*endpoint.Endpoint{sharedClaim("ua", "10.0.0.5", true)}
	s.b.eps = []*endpoint.Endpoint{sharedClaim("ub", "10.0.0.5", true)}
	s.sync(s.b)
	s.settle()
	s.b.r = newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "a", "bbbbbbbb" })
	s.settle()
	if len(s.srv.entries) != 1 || !s.srv.entries[0].HasTag(CoOwnerTag("a", "aaaaaaaa")) {
		t.Fatalf("entries %v: want b's line, renamed a, co-owned by a", s.srv.entries)
	}
	s.a.eps = nil
	s.settle()
	if len(s.srv.entries) != 1 || slices.ContainsFunc(s.srv.entries[0].Tags, func(t string) bool { return strings.HasPrefix(t, PrefixCoOwner) }) {
		t.Errorf("entries %v: a's co-owner tag must come off", s.srv.entries)
	}
}

// TestConsentOutranksAge: when both clusters have entries of a name and only one consents to
// share it (its claim shares it and its entries carry shared:true), the one that consents holds
// it, whichever entry is older; the older entry decides only between two that do not. An entry
// that was shared leaves after its grace period; one that never was, at once.
func TestConsentOutranksAge(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "home", "11111111" })
	for _, tc := range []struct {
		desc                     string
		ours, theirs             string // the entries' IDs: the smaller is older
		claimShares, entryShared bool   // ours
		theyShare                bool
		conflict, atOnce, marked bool
	}{
		{desc: "neither shares, ours is older: ours", ours: "01A", theirs: "01B"},
		{desc: "neither shares, theirs is older: theirs, ours goes at once", ours: "01B", theirs: "01A", conflict: true, atOnce: true},
		{desc: "both share: both stay", ours: "01B", theirs: "01A", claimShares: true, entryShared: true, theyShare: true},
		{desc: "we share, they do not, theirs is older: ours", ours: "01B", theirs: "01A", claimShares: true, entryShared: true},
		{desc: "they share, we never did, ours is older: theirs, ours goes at once", ours: "01A", theirs: "01B", theyShare: true, conflict: true, atOnce: true},
		{desc: "they share, we withdrew, ours is older: theirs, ours after its grace period", ours: "01A", theirs: "01B", entryShared: true, theyShare: true, conflict: true, marked: true},
		{desc: "our claim shares, our entry not yet, they do not, theirs is older: theirs", ours: "01B", theirs: "01A", claimShares: true, conflict: true, atOnce: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ep := claim("web.lan", "apps", "web", "u1", 0, "10.0.0.1")
			ep.Shared = tc.claimShares
			mine := []string{"k8s-operator", "cluster:home", "cluster-id:11111111", "kind:Ingress", "namespace:apps", "source:u1"}
			if tc.entryShared {
				mine = append(mine, TagShared)
			}
			theirs := []string{"k8s-operator", "cluster:lab", "cluster-id:22222222", "namespace:apps", "source:other"}
			if tc.theyShare {
				theirs = append(theirs, TagShared)
			}
			records := []endpoint.Record{
				{ID: tc.ours, Hostname: "web.lan", IP: "10.0.0.1", Version: "1", Tags: mine},
				{ID: tc.theirs, Hostname: "web.lan", IP: "10.9.9.9", Version: "1", Tags: theirs},
			}
			d := r.Decide(t0, records, []*endpoint.Endpoint{ep}, Given{})
			conflict := len(d.Conflicts) == 1 && d.Conflicts[0].Winner == "cluster lab" && d.Conflicts[0].Reason == ReasonHostnameConflict
			atOnce := slices.ContainsFunc(d.Changes, func(c plan.Change) bool { return c.Action == plan.Delete && c.Old.ID == tc.ours })
			marked := slices.ContainsFunc(d.Changes, func(c plan.Change) bool { return c.Action == plan.Mark && c.Old.ID == tc.ours })
			if conflict != tc.conflict || atOnce != tc.atOnce || marked != tc.marked {
				t.Errorf("conflicts %+v, changes %v: want conflict %v, deleted at once %v, marked %v",
					d.Conflicts, actions(d.Verdict), tc.conflict, tc.atOnce, tc.marked)
			}
			if slices.ContainsFunc(d.Changes, func(c plan.Change) bool { return c.Old != nil && c.Old.ID == tc.theirs }) {
				t.Errorf("changes %v touch the other cluster's entry", actions(d.Verdict))
			}
		})
	}
}

// TestAWithdrawnConsentWinsNoName: a and b (a tenant namespace) share web.lan on one address,
// the line a's and b its co-owner; then each row's steps, as a homelab lives them. Whoever
// withdraws its consent gives the name up, even holding the older line (handed over to it); the
// one that still shares is never turned down, its address answers after every sync, and no
// entry goes without its grace period. A hand-over happens only while both consent.
func TestAWithdrawnConsentWinsNoName(t *testing.T) {
	type step struct {
		who    string // "a" or "b"
		ip     string
		shares bool
	}
	for _, tc := range []struct {
		desc     string
		steps    []step
		keeper   string
		handOver bool
	}{
		{"a moves its address, then b drops shared and re-points the name",
			[]step{{"a", "10.0.1.1", true}, {"b", "10.0.0.5", false}, {"b", "10.0.2.2", false}}, "a", true},
		{"a moves its address and drops shared at once",
			[]step{{"a", "10.0.1.1", false}}, "a", false},
		{"b drops shared while it only co-owns",
			[]step{{"b", "10.0.0.5", false}}, "a", false},
		{"a moves its address, then a drops shared",
			[]step{{"a", "10.0.1.1", true}, {"a", "10.0.1.1", false}}, "b", true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			s := newSharing(t)
			at := func(in *installation, ns, uid, ip string, shares bool) {
				ep := claim("web.lan", ns, "web", uid, time.Hour, ip)
				ep.Shared = shares
				in.eps = []*endpoint.Endpoint{ep}
			}
			at(s.a, "apps", "ua", "10.0.0.5", true)
			at(s.b, "tenant", "ub", "10.0.0.5", true)
			s.settle()
			if len(s.srv.entries) != 1 || !s.srv.entries[0].HasTag(CoOwnerTag("b", "bbbbbbbb")) {
				t.Fatalf("entries %v: want a's line co-owned by b", s.srv.entries)
			}
			keeper, loser := s.a, s.b
			if tc.keeper == "b" {
				keeper, loser = s.b, s.a
			}
			wants := map[*installation]string{s.a: "10.0.0.5", s.b: "10.0.0.5"}
			handedOver := false
			var lost Decision
			sync := func(in *installation, step string) {
				t.Helper()
				marked := map[string]bool{}
				for _, e := range s.srv.entries {
					if slices.ContainsFunc(e.Tags, func(t string) bool { return strings.HasPrefix(t, PrefixPending) }) {
						marked[e.ID] = true
					}
				}
				d, changes := s.sync(in)
				for _, c := range changes {
					if c.Action == ActionHandOver {
						handedOver = true
					}
					if c.Action == plan.Delete && !marked[c.Old.ID] {
						t.Errorf("%s: cluster %s deletes %v without its grace period", step, in.name, c.Old)
					}
				}
				if in == keeper && len(d.Conflicts) > 0 {
					t.Errorf("%s: cluster %s, which keeps the name, is turned down: %+v", step, in.name, d.Conflicts)
				}
				if in == loser {
					lost = d
				}
				if !slices.Contains(s.answers(), wants[keeper]) {
					t.Errorf("%s: after a sync of %s web.lan answers %v, without %s's %s", step, in.name, s.answers(), keeper.name, wants[keeper])
				}
			}
			for _, st := range tc.steps {
				in, ns, uid := s.a, "apps", "ua"
				if st.who == "b" {
					in, ns, uid = s.b, "tenant", "ub"
				}
				at(in, ns, uid, st.ip, st.shares)
				wants[in] = st.ip
				desc := fmt.Sprintf("%s wants %s, shared %v", st.who, st.ip, st.shares)
				for range 3 {
					s.now = s.now.Add(time.Minute)
					sync(s.a, desc)
					sync(s.b, desc)
				}
			}
			for range 4 {
				s.now = s.now.Add(3 * time.Minute)
				sync(s.a, "after the grace periods")
				sync(s.b, "after the grace periods")
			}
			if handedOver != tc.handOver {
				t.Errorf("a hand-over: %v, want %v", handedOver, tc.handOver)
			}
			if !slices.ContainsFunc(lost.Conflicts, func(c Conflict) bool { return c.Winner == "cluster "+keeper.name }) {
				t.Errorf("cluster %s's conflicts %+v: want the name held by cluster %s", loser.name, lost.Conflicts, keeper.name)
			}
			if got := s.answers(); !slices.Equal(got, []string{wants[keeper]}) {
				t.Errorf("web.lan answers %v at the end, want %s's address alone: %v", got, keeper.name, s.srv.entries)
			}
		})
	}
}

// TestConsentIsReadFromTheOperatorsTags: on an adopted entry the operator's tags are one block;
// a shared:true outside it is the user's tag, and no consent of the cluster that adopted it.
func TestConsentIsReadFromTheOperatorsTags(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		tags     []string
		conflict bool
	}{
		{"shared:true written by hand before the adoption", []string{"manual", TagShared, TagPreExisting,
			"k8s-operator", "cluster:lab", "cluster-id:22222222", "namespace:apps", "source:other", "original-hostname:web.lan", "original-ip:10.9.9.9"}, true},
		{"shared:true written by hand during the loan", []string{"manual", TagPreExisting,
			"k8s-operator", "cluster:lab", "cluster-id:22222222", "namespace:apps", "source:other", "original-hostname:web.lan", "original-ip:10.9.9.9", TagShared}, true},
		{"shared:true in the operator's block", []string{"manual", TagPreExisting,
			"k8s-operator", "cluster:lab", "cluster-id:22222222", "namespace:apps", TagShared, "source:other", "original-hostname:web.lan", "original-ip:10.9.9.9"}, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "home", "11111111" })
			ep := claim("web.lan", "apps", "web", "u1", 0, "10.0.0.1")
			ep.Shared = true
			records := []endpoint.Record{{ID: "01A", Hostname: "web.lan", IP: "10.9.9.9", Version: "1", Tags: tc.tags}}
			d := r.Decide(t0, records, []*endpoint.Endpoint{ep}, Given{})
			conflict := len(d.Conflicts) == 1 && d.Conflicts[0].Winner == "cluster lab"
			created := slices.ContainsFunc(d.Changes, func(c plan.Change) bool { return c.Action == plan.Create })
			if conflict != tc.conflict || created == tc.conflict {
				t.Errorf("conflicts %+v, changes %v: want a conflict %v", d.Conflicts, actions(d.Verdict), tc.conflict)
			}
		})
	}
}

// TestEachMarkIsReadAgainstItsOwnPeriod: a renews its mark on its own period (a week's
// threshold, so every 42 hours) and b reports silence after a day. While a runs, b never
// reports it; once a stops, b reports it when a's own threshold is over, and not before, with
// a release command that waits long enough for a's interval. A mark without a period (an
// earlier version's) is read against b's threshold, and a changed setting is written at once.
func TestEachMarkIsReadAgainstItsOwnPeriod(t *testing.T) {
	const week, day = 168 * time.Hour, 24 * time.Hour
	a := &installation{name: "a", r: newRegWith(t, func(c *Config) {
		c.ClusterName, c.ClusterID, c.SilentClusterAfter, c.Interval = "a", "aaaaaaaa", week, time.Hour
	})}
	b := &installation{name: "b", r: newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID, c.SilentClusterAfter = "b", "bbbbbbbb", day })}
	a.eps = []*endpoint.Endpoint{claim("one.lan", "apps", "one", "u1", time.Hour, "10.0.0.1")}
	b.eps = []*endpoint.Endpoint{claim("three.lan", "apps", "three", "u3", time.Hour, "10.0.0.3")}
	srv := &server{}
	now := t0
	for ; now.Before(t0.Add(2 * week)); now = now.Add(time.Hour) {
		srv.syncAs(a, now)
		if d := b.r.Decide(now, srv.entries, b.eps, Given{}); len(d.Silent) != 0 {
			t.Fatalf("%s after a's start, while a runs, b reports %+v", now.Sub(t0), d.Silent)
		}
	}
	var mark []string
	for _, e := range srv.entries {
		if e.HasTag(PrefixCluster + "a") {
			mark = slices.DeleteFunc(slices.Clone(e.Tags), func(t string) bool { return !isBeat(t) })
		}
	}
	if len(mark) != 3 || !slices.Contains(mark, PrefixAliveEvery+"151200") || !slices.Contains(mark, PrefixAliveInterval+"3600") {
		t.Fatalf("a's mark %v: want its time, its renewal period and its interval", mark)
	}
	var last time.Time
	for _, tag := range mark {
		if v, ok := strings.CutPrefix(tag, PrefixAlive); ok {
			last, _ = time.Parse(time.RFC3339, v)
		}
	}
	// a stops. An earlier version's installation, whose mark has no period, went quiet a day
	// and a minute before.
	unmarked := endpoint.Record{ID: "00OLD", Hostname: "old.lan", IP: "10.9.9.9", Version: "1",
		Tags: []string{"k8s-operator", "cluster:old", "cluster-id:0000aaaa", PrefixAlive + last.Add(week-day-time.Minute).Format(time.RFC3339)}}
	entries := append(slices.Clone(srv.entries), unmarked)
	d := b.r.Decide(last.Add(week), entries, b.eps, Given{})
	if len(d.Silent) != 1 || d.Silent[0].Cluster != "old" {
		t.Fatalf("at a's own threshold: silent %+v, want the earlier version's alone", d.Silent)
	}
	d = b.r.Decide(last.Add(week+time.Minute), entries, b.eps, Given{})
	if len(d.Silent) != 2 || d.Silent[0].Cluster != "a" || d.Silent[0].Interval != time.Hour {
		t.Fatalf("past a's own threshold: silent %+v", d.Silent)
	}
	if cmd := d.Silent[0].ReleaseCommand(); cmd != "router-hosts-operator release --cluster-name=a --cluster-id=aaaaaaaa --probe-wait=2h30m0s" {
		t.Errorf("release command %q", cmd)
	}
	// a comes back with a day's threshold: its mark says so at once.
	cfg := a.r.cfg
	cfg.SilentClusterAfter = day
	if err := a.r.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	now = last.Add(time.Hour)
	if v, _ := srv.syncAs(a, now); len(v.Changes) != 1 || !slices.Contains(v.Changes[0].New.Tags, PrefixAliveEvery+"21600") {
		t.Fatalf("the changed setting: %v", actions(v))
	}
	if v, _ := srv.syncAs(a, now.Add(time.Hour)); len(v.Changes) != 0 {
		t.Fatalf("written again: %v", actions(v))
	}
}

// TestTheShareStage: an update that puts this cluster's co-owner tag on another cluster's line
// is a co-own, one that takes it off a withdraw; a delete of a line of this cluster another
// cluster co-owns hands it over to that cluster, unless this cluster claims the hostname
// unshared or the line is a duplicate. A line of this identity carrying the tag from before a
// rename is taken up, not withdrawn from.
func TestTheShareStage(t *testing.T) {
	const (
		mine   = "3f9a0c21"
		others = "0badc0de"
	)
	theirs := endpoint.Record{ID: "f1", Hostname: "app.lan", IP: "10.0.0.1", Version: "1",
		Tags: []string{TagOwner, ClusterTag("other"), IdentityTag(others), TagShared, PrefixNamespace + "x", PrefixSource + "ux"}}
	coOwned := theirs
	coOwned.Tags = append(slices.Clone(theirs.Tags), CoOwnerTag("home", mine))
	ours := endpoint.Record{ID: "o1", Hostname: "web.lan", IP: "10.0.0.2", Version: "1",
		Tags: []string{TagOwner, ClusterTag("home"), IdentityTag(mine), TagShared, PrefixNamespace + "a", PrefixSource + "u1", CoOwnerTag("other", others)}}
	renamed := endpoint.Record{ID: "o2", Hostname: "db.lan", IP: "10.0.0.3", Version: "1",
		Tags: []string{TagOwner, ClusterTag("old"), IdentityTag(mine), PrefixNamespace + "a", PrefixSource + "u2", CoOwnerTag("old", mine)}}
	takenUp := renamed
	takenUp.Tags = []string{TagOwner, ClusterTag("home"), IdentityTag(mine), PrefixNamespace + "a", PrefixSource + "u2"}
	del := func(rec endpoint.Record, dup bool) plan.Change {
		return plan.Change{Action: plan.Delete, Old: &rec, Duplicate: dup}
	}
	for _, tc := range []struct {
		name    string
		claims  []*endpoint.Endpoint
		changes []plan.Change
		sent    []string
		newTags []string // of the first change sent
	}{
		{name: "co-own", changes: []plan.Change{{Action: plan.Update, Old: &theirs, New: &coOwned}}, sent: []string{"co-own app.lan f1"}},
		{name: "withdraw", changes: []plan.Change{{Action: plan.Update, Old: &coOwned, New: &theirs}}, sent: []string{"withdraw app.lan f1"}},
		{name: "a line another cluster co-owns is handed over", changes: []plan.Change{del(ours, false)}, sent: []string{"hand-over web.lan o1"},
			newTags: []string{TagOwner, ClusterTag("other"), IdentityTag(others), TagShared}},
		{name: "not while the hostname is claimed here unshared", claims: []*endpoint.Endpoint{claim("web.lan", "a", "web", "u3", time.Hour, "10.0.0.9")},
			changes: []plan.Change{del(ours, false)}, sent: []string{"delete web.lan o1"}},
		{name: "a duplicate goes", changes: []plan.Change{del(ours, true)}, sent: []string{"delete web.lan o1"}},
		{name: "taken up after a rename", changes: []plan.Change{{Action: plan.Update, Old: &renamed, New: &takenUp}}, sent: []string{"update db.lan o2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.ClusterID = mine })
			v := r.share(changesAt(r, []endpoint.Record{theirs, ours, renamed}, tc.claims, nil), tc.changes)
			if got := wordsOfChanged(v); !reflect.DeepEqual(got, changeWords{sent: tc.sent}) {
				t.Errorf("sent %q, held %q; want %q sent", got.sent, got.held, tc.sent)
			}
			if tc.newTags != nil && (len(v.changes) == 0 || !reflect.DeepEqual(v.changes[0].New.Tags, tc.newTags)) {
				t.Errorf("sent %+v, want tags %q", v.changes, tc.newTags)
			}
		})
	}
}

// countActions counts the changes of action a.
func countActions(changes []plan.Change, a plan.Action) int {
	n := 0
	for _, c := range changes {
		if c.Action == a {
			n++
		}
	}
	return n
}
