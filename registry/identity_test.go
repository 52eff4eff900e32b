package registry

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// installation is one cluster's operator: its registry and the objects it has.
type installation struct {
	r    *Registry
	eps  []*endpoint.Endpoint
	name string
}

func newInstallation(t *testing.T, name, id string, hosts ...string) *installation {
	t.Helper()
	in := &installation{name: name, r: newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = name, id })}
	for i, h := range hosts {
		in.eps = append(in.eps, claim(h, "default", h, fmt.Sprintf("%s-uid-%d", id, i), time.Hour, fmt.Sprintf("10.0.%d.%d", len(id), i+1)))
	}
	return in
}

// writes is the number of changes a sync of in sent.
func (s *server) syncAs(in *installation, now time.Time) (Verdict, seen) {
	return s.sync(in.r, now, in.eps...)
}

func tagsOf(s *server, host string) []string {
	for _, e := range s.entries {
		if e.Hostname == host {
			return e.Tags
		}
	}
	return nil
}

// carriesOwner reports whether tags name the cluster and the identity as the design writes
// them, cluster:<name> and cluster-id:<id>, and no other cluster or identity.
func carriesOwner(tags []string, name, id string) bool {
	var clusters, ids []string
	for _, t := range tags {
		switch {
		case strings.HasPrefix(t, PrefixCluster):
			clusters = append(clusters, t)
		case strings.HasPrefix(t, PrefixClusterID):
			ids = append(ids, t)
		}
	}
	return slices.Equal(clusters, []string{"cluster:" + name}) && slices.Equal(ids, []string{"cluster-id:" + id})
}

// TestNamesakesNeverFight: two clusters that both keep the name "home" share a router. Each
// writes its own entries once and then nothing, reports the other, never touches the other's
// entries however long it is away, and a claim on the other's name is a conflict.
func TestNamesakesNeverFight(t *testing.T) {
	srv := &server{}
	a := newInstallation(t, "home", "aaaaaaaa", "a1.lan", "a2.lan")
	b := newInstallation(t, "home", "bbbbbbbb", "b1.lan", "b2.lan")
	now := t0
	for i := 0; i < 5; i++ {
		for _, in := range []*installation{a, b} {
			res, st := srv.syncAs(in, now)
			if i > 0 && len(res.Changes) != 0 {
				t.Fatalf("round %d: %s's identity %s wrote %v; want nothing once settled", i, in.name, in.r.cfg.ClusterID, actions(res))
			}
			if i > 0 && (len(st.Namesakes) != 1 || st.Namesakes[0].Entries != 2) {
				t.Fatalf("round %d: namesakes %+v, want the other installation with 2 entries", i, st.Namesakes)
			}
		}
		now = now.Add(time.Minute)
	}
	if tags := tagsOf(srv, "a1.lan"); !carriesOwner(tags, "home", "aaaaaaaa") {
		t.Fatalf("a1.lan tags %v, want cluster:home and cluster-id:aaaaaaaa", tags)
	}
	before := slices.Clone(srv.entries)

	// b is away for three grace periods; a syncs all along, and a claims b1.lan too.
	a.eps = append(a.eps, claim("b1.lan", "default", "late", "a-late", time.Minute, "10.9.9.9"))
	for i := 0; i < 4; i++ {
		now = now.Add(5 * time.Minute)
		res, st := srv.syncAs(a, now)
		if len(res.Changes) != 0 {
			t.Fatalf("with b away: a wrote %v", actions(res))
		}
		if c := conflictsOf(st); len(c) != 1 || !strings.Contains(c[0], "another installation of this name, cluster-id bbbbbbbb") {
			t.Fatalf("conflicts %v, want b1.lan held by the namesake", c)
		}
	}
	if !slices.EqualFunc(before, srv.entries, func(x, y endpoint.Record) bool { return x.ID == y.ID && x.Version == y.Version }) {
		t.Fatalf("entries changed while b was away:\nbefore %v\nafter  %v", before, srv.entries)
	}
}

// TestARenameTakesTheEntriesAlong: a cluster renamed keeps its entries: one update each, the
// same IDs, the new name; a namesake of the old name is untouched.
func TestARenameTakesTheEntriesAlong(t *testing.T) {
	srv := &server{}
	a := newInstallation(t, "default", "aaaaaaaa", "a1.lan", "a2.lan", "a3.lan")
	b := newInstallation(t, "default", "bbbbbbbb", "b1.lan")
	srv.syncAs(a, t0)
	srv.syncAs(b, t0)
	ids := map[string]string{}
	for _, e := range srv.entries {
		ids[e.Hostname] = e.ID
	}
	cfg := a.r.cfg
	cfg.ClusterName = "alpha"
	if err := a.r.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	res, _ := srv.syncAs(a, t0.Add(time.Minute))
	want := []string{"update a1.lan n001", "update a2.lan n002", "update a3.lan n003"}
	if got := actions(res); !slices.Equal(got, want) {
		t.Fatalf("rename: %v, want %v", got, want)
	}
	for _, e := range srv.entries {
		if ids[e.Hostname] != e.ID {
			t.Errorf("%s changed ID %s → %s", e.Hostname, ids[e.Hostname], e.ID)
		}
		wantName, wantID := "alpha", "aaaaaaaa"
		if e.Hostname == "b1.lan" {
			wantName, wantID = "default", "bbbbbbbb"
		}
		if !carriesOwner(e.Tags, wantName, wantID) {
			t.Errorf("%s tags %v, want cluster:%s and cluster-id:%s", e.Hostname, e.Tags, wantName, wantID)
		}
	}
	for _, in := range []*installation{a, b} {
		if res, _ := srv.syncAs(in, t0.Add(2*time.Minute)); len(res.Changes) != 0 {
			t.Errorf("after the rename %s wrote %v", in.name, actions(res))
		}
	}
}

// TestARenameTakesAnEntryItsObjectLeftUnseen: an object deleted while the operator was away,
// then a rename before any sync: its entry names no object, but its name is the cluster's
// former name (another entry under it names an object here), so it is taken up, marked and
// deleted, as it is when the operator synced once before the rename.
func TestARenameTakesAnEntryItsObjectLeftUnseen(t *testing.T) {
	for _, syncedFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("synced before the rename: %v", syncedFirst), func(t *testing.T) {
			srv := &server{}
			a := newInstallation(t, "default", "aaaaaaaa", "a1.lan", "a2.lan")
			srv.syncAs(a, t0)
			a.eps = a.eps[:1] // a2.lan's object goes while the operator is away
			if syncedFirst {
				srv.syncAs(a, t0.Add(time.Minute))
			}
			cfg := a.r.cfg
			cfg.ClusterName = "alpha"
			if err := a.r.Reconfigure(cfg); err != nil {
				t.Fatal(err)
			}
			for i := 2; i < 200; i++ {
				srv.syncAs(a, t0.Add(time.Duration(i)*time.Minute))
			}
			res, st := srv.syncAs(a, t0.Add(200*time.Minute))
			var a2 *endpoint.Record
			for i := range srv.entries {
				if srv.entries[i].Hostname == "a2.lan" {
					a2 = &srv.entries[i]
				}
			}
			if a2 != nil || st.Unclaimed != 0 || len(res.Changes) != 0 {
				t.Errorf("a2.lan %v, unclaimed %d, changes %v: the former name's entries are this cluster's, and it goes after its grace period", a2, st.Unclaimed, actions(res))
			}
		})
	}
}

// TestTwoNamesOnOneIdentity: two installations that share an identity (one cluster, one Lease
// name and namespace) under two names, with objects of their own, leave each other's entries
// alone (no rename fight), while a rename still takes along the entries of the objects that
// want them, and one already on its way out.
func TestTwoNamesOnOneIdentity(t *testing.T) {
	srv := &server{}
	a := newInstallation(t, "a", "aaaaaaaa", "a1.lan", "a2.lan")
	b := &installation{name: "b", r: newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "b", "aaaaaaaa" }),
		eps: []*endpoint.Endpoint{claim("b1.lan", "default", "b1", "b-uid", time.Hour, "10.0.0.9")}}
	for i := 0; i < 4; i++ {
		for _, in := range []*installation{a, b} {
			res, st := srv.syncAs(in, t0.Add(time.Duration(i)*time.Minute))
			if i > 0 && len(res.Changes) != 0 {
				t.Fatalf("round %d: %s wrote %v", i, in.name, actions(res))
			}
			if want := map[string]int{"a": 1, "b": 2}[in.name]; i > 0 && st.Unclaimed != want {
				t.Fatalf("round %d: %s counts %d unclaimed, want %d", i, in.name, st.Unclaimed, want)
			}
		}
	}
	// a lets a2.lan go (marked), then is renamed: a1.lan is renamed, a2.lan too, on its way out.
	a.eps = a.eps[:1]
	srv.syncAs(a, t0.Add(10*time.Minute))
	cfg := a.r.cfg
	cfg.ClusterName = "alpha"
	if err := a.r.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	res, _ := srv.syncAs(a, t0.Add(11*time.Minute))
	if got, want := actions(res), []string{"update a1.lan n001"}; !slices.Equal(got, want) {
		t.Fatalf("rename: %v, want %v", got, want)
	}
	if res, _ := srv.syncAs(a, t0.Add(16*time.Minute)); !slices.Equal(actions(res), []string{"delete a2.lan n002"}) {
		t.Fatalf("after the grace period: %v, want a2.lan deleted", actions(res))
	}
	if tags := tagsOf(srv, "b1.lan"); !carriesOwner(tags, "b", "aaaaaaaa") {
		t.Fatalf("b1.lan %v", tags)
	}
}

// legacyEntry is an entry an earlier version wrote: no identity.
func legacyEntry(id, host, ip, cluster, uid string, extra ...string) endpoint.Record {
	return endpoint.Record{ID: id, Hostname: host, IP: ip, Version: "1", Comment: "router-hosts-operator: Ingress default/" + host,
		Tags: append([]string{"k8s-operator", "cluster:" + cluster, "kind:Ingress", "namespace:default", "source:" + uid}, extra...)}
}

// TestEarlierVersionsEntriesAreTakenUp: after an upgrade, each cluster takes up the entries
// its objects want (by their UIDs), a few a sync and without any other change; an entry no
// object here wants is this cluster's while no namesake shows, and left alone once one does;
// a rename at the upgrade still takes the cluster's own entries along.
func TestEarlierVersionsEntriesAreTakenUp(t *testing.T) {
	// No identity (cluster:home), or the identity after the name (cluster:home@aaaaaaaa):
	// either is given the design's two tags, 50 a sync.
	for _, form := range []struct{ name, cluster string }{{"a trickle", "home"}, {"a trickle of the identity in the cluster tag", "home@aaaaaaaa"}} {
		t.Run(form.name, func(t *testing.T) {
			srv := &server{}
			a := newInstallation(t, "home", "aaaaaaaa")
			for i := 0; i < 120; i++ {
				h := fmt.Sprintf("h%03d.lan", i)
				uid := fmt.Sprintf("uid-%d", i)
				a.eps = append(a.eps, claim(h, "default", h, uid, time.Hour, "10.0.0.1"))
				srv.entries = append(srv.entries, legacyEntry(fmt.Sprintf("e%03d", i), h, "10.0.0.1", form.cluster, uid))
			}
			var per []int
			for i := 0; i < 5; i++ {
				res, _ := srv.syncAs(a, t0.Add(time.Duration(i)*time.Minute))
				for _, c := range res.Changes {
					if c.Action != plan.Update || !carriesOwner(c.New.Tags, "home", "aaaaaaaa") || len(c.New.Tags) != len(c.Old.Tags)+1 || c.Fields() != endpoint.Fields(endpoint.FieldTags) {
						t.Fatalf("take-up wrote %s: %v → %v", c.Action, c.Old, c.New)
					}
				}
				per = append(per, len(res.Changes))
			}
			if want := []int{50, 50, 20, 0, 0}; !slices.Equal(per, want) {
				t.Fatalf("writes per sync %v, want %v", per, want)
			}
			for _, e := range srv.entries {
				if !carriesOwner(e.Tags, "home", "aaaaaaaa") {
					t.Fatalf("%s after the take-up: %v", e.Hostname, e.Tags)
				}
			}
		})
	}
	t.Run("the identity in the cluster tag", func(t *testing.T) {
		// Versions before the design's tags wrote the identity after the name,
		// cluster:<name>@<id>: that entry is this installation's and takes the design's form
		// as a take-up; a namesake's stays its.
		srv := &server{entries: []endpoint.Record{
			legacyEntry("e1", "a1.lan", "10.0.0.1", "home@aaaaaaaa", "a-uid-0"),
			legacyEntry("e2", "n1.lan", "10.0.0.2", "home@bbbbbbbb", "n-uid-0"),
		}}
		a := newInstallation(t, "home", "aaaaaaaa")
		a.eps = []*endpoint.Endpoint{claim("a1.lan", "default", "a1", "a-uid-0", time.Hour, "10.0.0.1")}
		for i := 0; i < 3; i++ {
			res, st := srv.syncAs(a, t0.Add(time.Duration(i)*time.Minute))
			want := []string{}
			if i == 0 {
				want = []string{"update a1.lan e1"}
			}
			if got := actions(res); !slices.Equal(got, want) || len(st.Namesakes) != 1 || st.Namesakes[0].ID != "bbbbbbbb" {
				t.Fatalf("sync %d: %v, namesakes %+v; want %v and the namesake bbbbbbbb", i, got, st.Namesakes, want)
			}
		}
		if tags := tagsOf(srv, "a1.lan"); !carriesOwner(tags, "home", "aaaaaaaa") {
			t.Fatalf("a1.lan %v, want cluster:home and cluster-id:aaaaaaaa alone", tags)
		}
		if tags := tagsOf(srv, "n1.lan"); !slices.Contains(tags, "cluster:home@bbbbbbbb") || slices.ContainsFunc(tags, func(t string) bool { return strings.HasPrefix(t, PrefixClusterID) }) {
			t.Fatalf("the namesake's n1.lan was written: %v", tags)
		}
	})
	t.Run("two namesakes upgraded", func(t *testing.T) {
		srv := &server{entries: []endpoint.Record{
			legacyEntry("e1", "a1.lan", "10.0.0.1", "home", "a-uid-0"),
			legacyEntry("e2", "b1.lan", "10.0.0.2", "home", "b-uid-0"),
			legacyEntry("e3", "gone.lan", "10.0.0.3", "home", "gone-uid"),
		}}
		a := &installation{name: "home", r: newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "home", "aaaaaaaa" }),
			eps: []*endpoint.Endpoint{claim("a1.lan", "default", "a1", "a-uid-0", time.Hour, "10.0.0.1")}}
		b := &installation{name: "home", r: newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "home", "bbbbbbbb" }),
			eps: []*endpoint.Endpoint{claim("b1.lan", "default", "b1", "b-uid-0", time.Hour, "10.0.0.2")}}
		// b upgrades first: it takes up b1.lan; with no namesake yet, the other entries
		// of its name are its own, and it marks them.
		res, _ := srv.syncAs(b, t0)
		if got, want := actions(res), []string{"mark a1.lan e1", "update b1.lan e2", "mark gone.lan e3"}; !slices.Equal(got, want) {
			t.Fatalf("b's first sync: %v, want %v", got, want)
		}
		// a upgrades: its object wants a1.lan, so it takes it up and lifts the mark; b's
		// entry names another identity, so gone.lan may be b's: left alone.
		res, st := srv.syncAs(a, t0.Add(time.Minute))
		if got, want := actions(res), []string{"unmark a1.lan e1"}; !slices.Equal(got, want) {
			t.Fatalf("a's first sync: %v, want %v", got, want)
		}
		if st.Unclaimed != 1 {
			t.Fatalf("a: unclaimed %d, want gone.lan", st.Unclaimed)
		}
		if tags := tagsOf(srv, "a1.lan"); !carriesOwner(tags, "home", "aaaaaaaa") || slices.ContainsFunc(tags, func(t string) bool { return strings.HasPrefix(t, PrefixPending) }) {
			t.Fatalf("a1.lan after a's take-up: %v", tags)
		}
		// From now on neither writes at all: gone.lan may be either's, so neither deletes it
		// (its object is gone wherever it was; it is counted as unclaimed).
		for i := 2; i < 20; i++ {
			now := t0.Add(time.Duration(i) * time.Minute)
			ra, sa := srv.syncAs(a, now)
			rb, sb := srv.syncAs(b, now)
			if len(ra.Changes)+len(rb.Changes) != 0 || sa.Unclaimed != 1 || sb.Unclaimed != 1 {
				t.Fatalf("minute %d: a %v, b %v; unclaimed %d, %d", i, actions(ra), actions(rb), sa.Unclaimed, sb.Unclaimed)
			}
		}
		if len(srv.entries) != 3 {
			t.Fatalf("entries %v", srv.entries)
		}
	})
	t.Run("a rename at the upgrade", func(t *testing.T) {
		srv := &server{entries: []endpoint.Record{
			legacyEntry("e1", "a1.lan", "10.0.0.1", "default", "a-uid-0"),
			legacyEntry("e2", "other.lan", "10.0.0.9", "default", "someone-else"),
		}}
		a := &installation{name: "alpha", r: newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "alpha", "aaaaaaaa" }),
			eps: []*endpoint.Endpoint{claim("a1.lan", "default", "a1", "a-uid-0", time.Hour, "10.0.0.1")}}
		res, _ := srv.syncAs(a, t0)
		if got, want := actions(res), []string{"update a1.lan e1"}; !slices.Equal(got, want) {
			t.Fatalf("%v, want %v", got, want)
		}
		if tags := tagsOf(srv, "a1.lan"); !carriesOwner(tags, "alpha", "aaaaaaaa") {
			t.Fatalf("a1.lan %v", tags)
		}
	})
}

// TestTheBrake: a sync that would take most of the cluster's entries at once holds every mark
// and deletion until that set is confirmed or the cause goes away; everyday churn and a small
// cluster never trip it; a confirmed removal completes with its grace period.
func TestTheBrake(t *testing.T) {
	world := func(t *testing.T, n int, confirm string) (*server, *installation) {
		srv := &server{}
		in := newInstallation(t, "home", "aaaaaaaa")
		cfg := in.r.cfg
		cfg.Brake = DefaultBrake()
		cfg.Brake.Confirm = confirm
		if err := in.r.Reconfigure(cfg); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			h := fmt.Sprintf("h%02d.lan", i)
			in.eps = append(in.eps, claim(h, "default", h, "uid-"+h, time.Hour, "10.0.0.1"))
		}
		srv.syncAs(in, t0)
		return srv, in
	}
	t.Run("held, then confirmed", func(t *testing.T) {
		srv, in := world(t, 20, "")
		all := in.eps
		in.eps = all[:5]
		res, _ := srv.syncAs(in, t0.Add(time.Minute))
		if res.Braked == nil || res.Braked.Leaving != 15 || res.Braked.Owned != 20 || len(res.Changes) != 0 {
			t.Fatalf("15 of 20 leaving: braked %+v, changes %v", res.Braked, actions(res))
		}
		token := res.Braked.Token
		if again, _ := srv.syncAs(in, t0.Add(2*time.Minute)); again.Braked == nil || again.Braked.Token != token {
			t.Fatalf("the same cause gave another token: %+v", again.Braked)
		}
		cfg := in.r.cfg
		cfg.Brake.Confirm = token
		if err := in.r.Reconfigure(cfg); err != nil {
			t.Fatal(err)
		}
		res, _ = srv.syncAs(in, t0.Add(3*time.Minute))
		if res.Braked != nil || count(res, plan.Mark) != 15 {
			t.Fatalf("confirmed: braked %+v, %v", res.Braked, actions(res))
		}
		res, _ = srv.syncAs(in, t0.Add(4*time.Minute))
		if res.Braked != nil || len(res.Changes) != 0 {
			t.Fatalf("within the grace period: braked %+v, %v", res.Braked, actions(res))
		}
		res, _ = srv.syncAs(in, t0.Add(9*time.Minute))
		if res.Braked != nil || count(res, plan.Delete) != 15 || len(srv.entries) != 5 {
			t.Fatalf("after the grace period: braked %+v, %v; %d entries", res.Braked, actions(res), len(srv.entries))
		}
	})
	t.Run("the cause goes away", func(t *testing.T) {
		srv, in := world(t, 20, "")
		all := in.eps
		in.eps = all[:5]
		if res, _ := srv.syncAs(in, t0.Add(time.Minute)); res.Braked == nil {
			t.Fatal("not held")
		}
		in.eps = all
		if res, _ := srv.syncAs(in, t0.Add(2*time.Minute)); res.Braked != nil || len(res.Changes) != 0 {
			t.Fatalf("back: braked %+v, %v", res.Braked, actions(res))
		}
	})
	t.Run("marks while some are on their way out", func(t *testing.T) {
		srv, in := world(t, 20, "")
		all := in.eps
		in.eps = all[:16] // 4 leave: everyday
		if res, _ := srv.syncAs(in, t0.Add(time.Minute)); res.Braked != nil || count(res, plan.Mark) != 4 {
			t.Fatalf("4 of 20: braked %+v, %v", res.Braked, actions(res))
		}
		in.eps = all[:9] // 7 more within their grace period: 11 of 20 leaving
		res, _ := srv.syncAs(in, t0.Add(3*time.Minute))
		if res.Braked == nil || res.Braked.Leaving != 11 || res.Braked.Stopped != 7 || len(res.Changes) != 0 {
			t.Fatalf("11 of 20: braked %+v, %v", res.Braked, actions(res))
		}
		// The 4 marked first may be the start of the same mistake: while the brake holds,
		// they are not deleted either.
		res, _ = srv.syncAs(in, t0.Add(7*time.Minute))
		if res.Braked == nil || res.Braked.Stopped != 11 || len(res.Changes) != 0 {
			t.Fatalf("the first four due: braked %+v, %v", res.Braked, actions(res))
		}
	})
	t.Run("a confirmed set goes whatever the grace periods", func(t *testing.T) {
		srv, in := world(t, 20, "")
		long := 20 * time.Minute
		for _, ep := range in.eps[10:] {
			ep.GracePeriod = &long
		}
		srv.syncAs(in, t0.Add(time.Minute)) // the grace-period tags
		all := in.eps
		in.eps = all[:4]
		res, _ := srv.syncAs(in, t0.Add(2*time.Minute))
		if res.Braked == nil {
			t.Fatal("not held")
		}
		cfg := in.r.cfg
		cfg.Brake.Confirm = res.Braked.Token
		if err := in.r.Reconfigure(cfg); err != nil {
			t.Fatal(err)
		}
		if res, _ := srv.syncAs(in, t0.Add(3*time.Minute)); count(res, plan.Mark) != 16 {
			t.Fatalf("confirmed: %v", actions(res))
		}
		if res, _ := srv.syncAs(in, t0.Add(9*time.Minute)); res.Braked != nil || count(res, plan.Delete) != 6 {
			t.Fatalf("the default grace period over: braked %+v, %v", res.Braked, actions(res))
		}
		if res, _ := srv.syncAs(in, t0.Add(24*time.Minute)); res.Braked != nil || count(res, plan.Delete) != 10 || len(srv.entries) != 4 {
			t.Fatalf("the long grace period over: braked %+v, %v; %d entries", res.Braked, actions(res), len(srv.entries))
		}
	})
	for _, tc := range []struct {
		name       string
		n, keep    int
		wantMarked int
	}{
		{"everyday churn", 30, 27, 3},
		{"half exactly", 20, 10, 10},
		{"a handful", 8, 0, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, in := world(t, tc.n, "")
			in.eps = in.eps[:tc.keep]
			if res, _ := srv.syncAs(in, t0.Add(time.Minute)); res.Braked != nil || count(res, plan.Mark) != tc.wantMarked {
				t.Fatalf("braked %+v, %v", res.Braked, actions(res))
			}
		})
	}
}

// TestIdentityConfig: an identity is 8 lowercase hex digits, derived the same way each time,
// and differs between two Leases of one cluster.
func TestIdentityConfig(t *testing.T) {
	id := Identity("6f1c…uid", "router-hosts", "router-hosts-operator")
	if err := checkIdentity(id); err != nil || id != Identity("6f1c…uid", "router-hosts", "router-hosts-operator") {
		t.Fatalf("identity %q: %v", id, err)
	}
	if id == Identity("6f1c…uid", "team-b", "router-hosts-operator") {
		t.Fatal("two installations in one cluster share an identity")
	}
	for _, bad := range []string{"ABCDEF12", "abc", "abcdefgh", "0123456789"} {
		if _, err := New(Config{ClusterName: "home", ClusterID: bad}); err == nil {
			t.Errorf("identity %q accepted", bad)
		}
	}
	for _, b := range []Brake{{Share: -0.1}, {Share: 1.5}, {Share: 0.5, Minimum: -1}} {
		if _, err := New(Config{ClusterName: "home", Brake: b}); err == nil {
			t.Errorf("brake %+v accepted", b)
		}
	}
}

// TestClusterTag: the cluster: tag is the design's, the identity has a tag of its own; the
// identity after the name in the cluster: tag of earlier versions is still read, and a value
// whose end is not an identity is a name as a whole.
func TestClusterTag(t *testing.T) {
	if got := ClusterTag("home"); got != "cluster:home" {
		t.Fatalf("ClusterTag = %q", got)
	}
	if got := IdentityTag("aaaaaaaa"); got != "cluster-id:aaaaaaaa" {
		t.Fatalf("IdentityTag = %q", got)
	}
	for _, tc := range []struct {
		tag, id string
		ok      bool
	}{
		{"cluster-id:aaaaaaaa", "aaaaaaaa", true},
		{"cluster:home@aaaaaaaa", "aaaaaaaa", true},
		{"cluster:home", "", false},
		{"cluster:home@AAAAAAAA", "", false},
		{"source:u1", "", false},
	} {
		if id, ok := TagIdentity(tc.tag); id != tc.id || ok != tc.ok {
			t.Errorf("TagIdentity(%q) = %q, %v; want %q, %v", tc.tag, id, ok, tc.id, tc.ok)
		}
	}
	for _, tc := range []struct{ value, name, id string }{
		{"home@aaaaaaaa", "home", "aaaaaaaa"},
		{"home", "home", ""},
		{"a@b@0123abcd", "a@b", "0123abcd"},
		{"home@AAAAAAAA", "home@AAAAAAAA", ""},
		{"home@aaaaaaa", "home@aaaaaaa", ""},
		{"home@", "home@", ""},
		{"@aaaaaaaa", "", "aaaaaaaa"},
	} {
		if name, id := splitCluster(tc.value); name != tc.name || id != tc.id {
			t.Errorf("splitCluster(%q) = %q, %q; want %q, %q", tc.value, name, id, tc.name, tc.id)
		}
	}
	if _, err := New(Config{ClusterName: "a@b", ClusterID: "aaaaaaaa"}); err == nil {
		t.Error("a cluster name with @ was accepted")
	}
}

// TestOwnedAmong: outside a sync (the webhook's GET /records), an earlier version's entry of
// this cluster's name is this cluster's only while no other identity writes the name: once a
// namesake shows, it may be the namesake's, and it is not listed (external-dns deletes what it
// lists and does not publish).
func TestOwnedAmong(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.ClusterName, c.ClusterID = "external-dns", "aaaaaaaa" })
	own := endpoint.Record{ID: "e1", Hostname: "a.lan", IP: "10.0.0.1", Tags: []string{"k8s-operator", "cluster:external-dns", "cluster-id:aaaaaaaa"}}
	old := endpoint.Record{ID: "e2", Hostname: "old.lan", IP: "10.0.0.2", Tags: []string{"k8s-operator", "cluster:external-dns"}}
	other := endpoint.Record{ID: "e3", Hostname: "b.lan", IP: "10.0.0.3", Tags: []string{"k8s-operator", "cluster:external-dns", "cluster-id:bbbbbbbb"}}
	for _, tc := range []struct {
		name    string
		records []endpoint.Record
		want    map[string]bool
	}{
		{"no namesake", []endpoint.Record{own, old}, map[string]bool{"e1": true, "e2": true}},
		{"a namesake shows", []endpoint.Record{own, old, other}, map[string]bool{"e1": true, "e2": false, "e3": false}},
	} {
		owns := r.OwnedAmong(tc.records)
		for i := range tc.records {
			if got := owns(&tc.records[i]); got != tc.want[tc.records[i].ID] {
				t.Errorf("%s: %s owned %v, want %v", tc.name, tc.records[i].ID, got, tc.want[tc.records[i].ID])
			}
		}
	}
}

// TestAFormerIdentity: installation a wrote two names under identity aaaaaaaa; then b, of the
// same cluster name under identity cccccccc, syncs with claims on the first keep of a's objects
// (their UIDs, at a's addresses or at ip). b is a itself after its Lease was renamed, or a
// webhook whose source: UIDs are hashed from the hostname, as every webhook's are. An identity
// is this cluster's former one, every entry of it, when one of its entries names an object
// here by a UID no other installation writes, and nothing was seen writing it.
func TestAFormerIdentity(t *testing.T) {
	cases := []struct {
		name         string
		hostnameUIDs bool // b is a webhook
		seenWriting  bool // a was seen rewriting an entry before b's first decision
		keep         int
		ip           string
		// silent is b's --silent-cluster-after; syncs how many minutes b syncs (20 if 0).
		silent time.Duration
		syncs  int
		// want is each name's owner after b's syncs: the identity it carries, "" for deleted.
		want      map[string]string
		conflicts int
	}{
		{name: "the Lease renamed", keep: 2,
			want: map[string]string{"a1.lan": "cccccccc", "a2.lan": "cccccccc"}},
		// The entry of the object that went names no object here, and may be an idle copy's:
		// it is left alone (release --cluster-id lets it go).
		{name: "the Lease renamed after an object went", keep: 1,
			want: map[string]string{"a1.lan": "cccccccc", "a2.lan": "aaaaaaaa"}},
		// Once the old identity has been quiet longer than a running copy takes to renew its
		// heartbeat, no copy runs: the entry is taken up too, and goes.
		{name: "the Lease renamed after an object went, the old identity quiet past a renewal", keep: 1, silent: time.Hour, syncs: 40,
			want: map[string]string{"a1.lan": "cccccccc", "a2.lan": ""}},
		{name: "the old identity still writes, quiet or not", keep: 1, seenWriting: true, silent: time.Hour, syncs: 40, conflicts: 1,
			want: map[string]string{"a1.lan": "aaaaaaaa", "a2.lan": "aaaaaaaa"}},
		{name: "the Lease renamed after every object went", keep: 0,
			want: map[string]string{"a1.lan": "aaaaaaaa", "a2.lan": "aaaaaaaa"}},
		{name: "the old identity still writes", keep: 2, seenWriting: true, conflicts: 2,
			want: map[string]string{"a1.lan": "aaaaaaaa", "a2.lan": "aaaaaaaa"}},
		{name: "a webhook publishes another's name", hostnameUIDs: true, keep: 1, ip: "10.9.9.9", conflicts: 1,
			want: map[string]string{"a1.lan": "aaaaaaaa", "a2.lan": "aaaaaaaa"}},
		{name: "a webhook publishes every name of another", hostnameUIDs: true, keep: 2, conflicts: 2,
			want: map[string]string{"a1.lan": "aaaaaaaa", "a2.lan": "aaaaaaaa"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := &server{}
			a := newInstallation(t, "home", "aaaaaaaa", "a1.lan", "a2.lan")
			srv.syncAs(a, t0)
			b := newRegWith(t, func(c *Config) {
				c.ClusterID, c.HostnameUIDs, c.SilentClusterAfter, c.Interval = "cccccccc", tc.hostnameUIDs, tc.silent, time.Minute
			})
			var eps []*endpoint.Endpoint
			for _, ep := range a.eps[:tc.keep] {
				c := *ep
				if tc.ip != "" {
					c.Targets = []string{tc.ip}
				}
				eps = append(eps, &c)
			}
			mem := memoryOf(b)
			if tc.seenWriting {
				mem.sawRead(slices.Clone(srv.entries), t0)
				srv.entries[0].Version += "+"
			}
			before := map[string]endpoint.Record{}
			for _, e := range srv.entries {
				before[e.Hostname] = e
			}
			var st seen
			syncs := tc.syncs
			if syncs == 0 {
				syncs = 20
			}
			for i := 1; i <= syncs; i++ {
				now := t0.Add(time.Duration(i) * time.Minute)
				d := b.Decide(now, srv.entries, eps, Given{Memory: mem})
				srv.apply(d.Changes)
				mem.end()
				st = seen{d.State, Wanted{Endpoints: d.Desired, Conflicts: d.Conflicts, Problems: d.Problems}}
				if i == 1 && tc.want["a2.lan"] == "" && tc.silent == 0 {
					if tags := tagsOf(srv, "a2.lan"); !carriesOwner(tags, "home", "cccccccc") || !slices.ContainsFunc(tags, func(t string) bool { return strings.HasPrefix(t, PrefixPending) }) {
						t.Errorf("a2.lan after the first sync: %v; want it marked, under this identity", tags)
					}
				}
			}
			for host, id := range tc.want {
				var got *endpoint.Record
				for i := range srv.entries {
					if srv.entries[i].Hostname == host {
						got = &srv.entries[i]
					}
				}
				switch {
				case id == "" && got != nil:
					t.Errorf("%s: %v; want it deleted after its grace period", host, got.Tags)
				case id == "aaaaaaaa" && (got == nil || got.Version != before[host].Version):
					t.Errorf("%s: %v; want it untouched, as a wrote it", host, got)
				case id == "cccccccc" && (got == nil || got.ID != before[host].ID || !carriesOwner(got.Tags, "home", id)):
					t.Errorf("%s: %v; want it taken up in place under %s", host, got, id)
				}
			}
			if n := len(st.Conflicts); n != tc.conflicts {
				t.Errorf("conflicts %v; want %d", conflictsOf(st), tc.conflicts)
			}
		})
	}
}

func TestObjectUIDs(t *testing.T) {
	rec := func(comment string, uids ...string) endpoint.Record {
		r := endpoint.Record{Comment: comment}
		for _, u := range uids {
			r.Tags = append(r.Tags, PrefixSource+u)
		}
		return r
	}
	got := ObjectUIDs([]endpoint.Record{
		rec(commentPrefix+"Ingress apps/web", "u1"),
		rec(commentPrefix+"Ingress apps/web", "u1"),                 // its second address
		rec(commentPrefix+"Ingress apps/two (+1 more)", "u2", "u3"), // two objects: no pairing
		rec(commentPrefix+"Ingress apps/again", "u4"),
		rec(commentPrefix+"Ingress apps/again", "u5"), // made again: which is it?
		rec("a person's note", "u6"),
	})
	want := map[string]string{"Ingress apps/web": "u1"}
	if len(got) != len(want) || got["Ingress apps/web"] != "u1" {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestHeartbeatOnly(t *testing.T) {
	old := &endpoint.Record{Hostname: "a.lan", IP: "10.0.0.1", Tags: []string{TagOwner, PrefixAlive + "2026-11-20T00:00:00Z", PrefixAliveEvery + "60"}}
	renewed := *old
	renewed.Tags = []string{TagOwner, PrefixAlive + "2026-12-02T00:00:00Z", PrefixAliveEvery + "60"}
	moved := renewed
	moved.IP = "10.0.0.2"
	tagged := renewed
	tagged.Tags = append([]string{"team:a"}, renewed.Tags...)
	for _, tc := range []struct {
		name string
		cur  *endpoint.Record
		want bool
	}{
		{"a renewal", &renewed, true},
		{"a renewal with a move", &moved, false},
		{"a renewal with a user's tag", &tagged, false},
		{"nothing at all", old, false},
	} {
		if got := HeartbeatOnly(old, tc.cur); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
