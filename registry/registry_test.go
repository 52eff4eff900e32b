package registry

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func newReg(t *testing.T, policy plan.Policy) *Registry {
	t.Helper()
	r, err := New(Config{ClusterName: "home", DefaultTags: []string{"homelab"}, GracePeriod: 5 * time.Minute, Policy: policy, Log: logrus.New()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func claim(host, ns, name, uid string, age time.Duration, ips ...string) *endpoint.Endpoint {
	return &endpoint.Endpoint{Hostname: host, Targets: ips, Sources: []endpoint.SourceRef{{Kind: "Ingress", Namespace: ns, Name: name, UID: uid, CreationTimestamp: t0.Add(-age)}}}
}

func owned(id, host, ip string, extra ...string) endpoint.Record {
	return endpoint.Record{ID: id, Hostname: host, IP: ip, Version: "1", Tags: append([]string{"k8s-operator", "cluster:home"}, extra...)}
}

// run is one full registry+plan pass, as the controller does it.
func run(r *Registry, now time.Time, records []endpoint.Record, eps ...*endpoint.Endpoint) Verdict {
	return r.Decide(now, records, eps, Given{}).Verdict
}

func actions(res Verdict) []string {
	var out []string
	for _, c := range res.Changes {
		id := ""
		if c.Old != nil {
			id = " " + c.Old.ID
		}
		out = append(out, string(c.Action)+" "+c.Hostname()+id)
	}
	return out
}

func newRegWith(t *testing.T, set func(*Config)) *Registry {
	t.Helper()
	cfg := Config{ClusterName: "home", GracePeriod: 5 * time.Minute, Log: logrus.New()}
	set(&cfg)
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// server is a router-hosts server as far as these tests need one (twins_test.go's router): the
// changes applied to its entries, as the provider would send them.
type server = router

// sync runs one registry+plan pass over the server's entries, applies what it planned, and
// returns it with what desired reported.
func (s *server) sync(r *Registry, now time.Time, eps ...*endpoint.Endpoint) (Verdict, seen) {
	d := r.Decide(now, s.entries, eps, Given{})
	s.apply(d.Changes)
	return d.Verdict, seen{d.State, Wanted{Endpoints: d.Desired, Conflicts: d.Conflicts, Problems: d.Problems}}
}

// seen is what one sync read and found: the entries by owner, and what desired turned down.
type seen struct {
	*State
	Wanted
}

// byName is the entries carrying name, as hostname or alias: "hostname ip [aliases]".
func (s *server) byName(name string) []string {
	var out []string
	for _, e := range s.entries {
		if e.Hostname == name || slices.Contains(e.Aliases, name) {
			out = append(out, fmt.Sprintf("%s %s %v", e.Hostname, e.IP, e.Aliases))
		}
	}
	sort.Strings(out)
	return out
}

func withAliases(r endpoint.Record, aliases ...string) endpoint.Record {
	r.Aliases = aliases
	return r
}

func aliased(ep *endpoint.Endpoint, aliases ...string) *endpoint.Endpoint {
	ep.Aliases = endpoint.SortedUnique(aliases)
	return ep
}

func conflictsOf(st seen) []string {
	var out []string
	for _, c := range st.Conflicts {
		kind := "hostname"
		if c.Alias {
			kind = "alias"
		}
		out = append(out, fmt.Sprintf("%s %s of %s: %s", kind, c.Hostname, c.Loser.Namespace, c.Winner))
	}
	return out
}

func problemsOf(st seen) []string {
	var out []string
	for _, p := range st.Problems {
		out = append(out, string(p.Kind)+" "+p.Source.Namespace+"/"+p.Source.Name)
	}
	return out
}

// hostsOf is one object's claims on n hostnames under domain, each at ip.
func hostsOf(n int, domain, ns, name, uid string, age time.Duration, ip string) []*endpoint.Endpoint {
	out := make([]*endpoint.Endpoint, n)
	for i := range out {
		out[i] = claim(fmt.Sprintf("h%04d.%s", i, domain), ns, name, uid, age, ip)
	}
	return out
}

func TestTagsOfCreatedEntry(t *testing.T) {
	r := newReg(t, plan.PolicySync)
	ep := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	ep.Tags = []string{"team-a"}
	g := 30 * time.Second
	ep.GracePeriod = &g
	res := run(r, t0, nil, ep)
	if len(res.Changes) != 1 || res.Changes[0].Action != plan.Create {
		t.Fatalf("changes = %v", actions(res))
	}
	want := []string{"cluster:home", "grace-period:30", "homelab", "k8s-operator", "kind:Ingress", "namespace:default", "source:uid-1", "team-a"}
	if got := res.Changes[0].New.Tags; !reflect.DeepEqual(got, want) {
		t.Fatalf("tags = %q, want %q", got, want)
	}
	if got := res.Changes[0].New.Comment; got != "router-hosts-operator: Ingress default/web" {
		t.Fatalf("comment = %q", got)
	}
}

func TestApply(t *testing.T) {
	marked := func(at time.Time, extra ...string) []string {
		return append([]string{PrefixPending + at.Format(time.RFC3339)}, extra...)
	}
	unowned := endpoint.Record{ID: "u1", Hostname: "nas.lan", IP: "192.168.1.5", Tags: []string{"manual"}, Comment: "mine", Version: "3"}
	foreign := endpoint.Record{ID: "f1", Hostname: "shared.lan", IP: "10.9.9.9", Tags: []string{"k8s-operator", "cluster:other"}, Version: "1"}
	tests := []struct {
		name       string
		policy     plan.Policy
		records    []endpoint.Record
		eps        []*endpoint.Endpoint
		want       []string
		pending    int
		nextExpiry time.Time
	}{
		{name: "adopt unowned entry", records: []endpoint.Record{unowned}, eps: []*endpoint.Endpoint{claim("nas.lan", "d", "n", "u", 0, "10.0.0.5")},
			want: []string{"adopt nas.lan u1"}},
		{name: "create-only does not adopt", policy: plan.CreateOnly, records: []endpoint.Record{unowned}, eps: []*endpoint.Endpoint{claim("nas.lan", "d", "n", "u", 0, "10.0.0.5")}},
		{name: "another cluster's hostname is left alone", records: []endpoint.Record{foreign}, eps: []*endpoint.Endpoint{claim("shared.lan", "d", "n", "u", 0, "10.0.0.5")}},
		{name: "gone hostname is marked", records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1")},
			want: []string{"mark old.lan 1"}, pending: 1, nextExpiry: t0.Add(5 * time.Minute)},
		{name: "mark not yet due does nothing", records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1", marked(t0.Add(-time.Minute))...)},
			pending: 1, nextExpiry: t0.Add(4 * time.Minute)},
		{name: "due mark deletes", records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1", marked(t0.Add(-5*time.Minute))...)},
			want: []string{"delete old.lan 1"}},
		{name: "entry's own grace period applies after the object is gone", records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1", marked(t0.Add(-time.Minute), "grace-period:30")...)},
			want: []string{"delete old.lan 1"}},
		{name: "due mark on adopted entry releases", records: []endpoint.Record{owned("1", "nas.lan", "10.0.0.1", marked(t0.Add(-time.Hour), "pre-existing:true", "manual")...)},
			want: []string{"release nas.lan 1"}},
		{name: "reappearing hostname is unmarked", records: []endpoint.Record{owned("1", "web.lan", "10.0.0.1", marked(t0.Add(-time.Minute), "homelab", "kind:Ingress", "namespace:d", "source:u")...)},
			eps: []*endpoint.Endpoint{claim("web.lan", "d", "n", "u", 0, "10.0.0.1")}, want: []string{"unmark web.lan 1"}},
		{name: "a claim with no address keeps its entry as it is", records: []endpoint.Record{func() endpoint.Record {
			r := owned("1", "web.lan", "10.0.0.1", "homelab", "kind:Ingress", "namespace:d", "source:u")
			r.Comment = "router-hosts-operator: Ingress d/n"
			return r
		}()},
			eps: []*endpoint.Endpoint{claim("web.lan", "d", "n", "u", 0)}},
		{name: "a claim with no address does not revive an entry already leaving", records: []endpoint.Record{owned("1", "web.lan", "10.0.0.1", marked(t0.Add(-time.Minute), "source:u")...)},
			eps: []*endpoint.Endpoint{claim("web.lan", "d", "n", "u", 0)}, pending: 1, nextExpiry: t0.Add(4 * time.Minute)},
		{name: "a claim with no address keeps nothing of another object's entry", records: []endpoint.Record{owned("1", "web.lan", "10.0.0.1", "source:other")},
			eps: []*endpoint.Endpoint{claim("web.lan", "d", "n", "u", 0)}, want: []string{"mark web.lan 1"}, pending: 1, nextExpiry: t0.Add(5 * time.Minute)},
		{name: "create-only never unmarks", policy: plan.CreateOnly, records: []endpoint.Record{owned("1", "web.lan", "10.0.0.1", marked(t0.Add(-time.Minute), "homelab", "kind:Ingress", "namespace:d", "source:u")...)},
			eps: []*endpoint.Endpoint{claim("web.lan", "d", "n", "u", 0, "10.0.0.1")}, pending: 1},
		{name: "create-only never changes an entry", policy: plan.CreateOnly, records: []endpoint.Record{owned("1", "web.lan", "10.0.0.1")},
			eps: []*endpoint.Endpoint{claim("web.lan", "d", "n", "u", 0, "10.0.0.2")}},
		{name: "upsert-only never releases", policy: plan.UpsertOnly, records: []endpoint.Record{owned("1", "nas.lan", "10.0.0.1", marked(t0.Add(-time.Hour), "pre-existing:true")...)}, pending: 1},
		{name: "upsert-only never marks", policy: plan.UpsertOnly, records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1")}},
		{name: "unowned entries are never deleted", records: []endpoint.Record{unowned}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			policy := tc.policy
			if policy == "" {
				policy = plan.PolicySync
			}
			res := run(newReg(t, policy), t0, tc.records, tc.eps...)
			if got := actions(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes = %q, want %q", got, tc.want)
			}
			if res.Pending != tc.pending {
				t.Errorf("pending = %d, want %d", res.Pending, tc.pending)
			}
			if !res.NextExpiry.Equal(tc.nextExpiry) {
				t.Errorf("next expiry = %v, want %v", res.NextExpiry, tc.nextExpiry)
			}
		})
	}
}

func TestAdoptKeepsOwnTagsAndReleaseRestoresThem(t *testing.T) {
	r := newReg(t, plan.PolicySync)
	found := endpoint.Record{ID: "u1", Hostname: "NAS.lan", IP: "192.168.1.5", Aliases: []string{"old.lan"},
		Tags: []string{"manual", "kind:printer", "cluster:proxmox", "has space"}, Comment: "mine", Version: "3"}
	res := run(r, t0, []endpoint.Record{found}, claim("nas.lan", "d", "n", "uid", 0, "10.0.0.5"))
	if got := actions(res); !reflect.DeepEqual(got, []string{"adopt nas.lan u1"}) {
		t.Fatalf("changes = %v", got)
	}
	n := res.Changes[0].New
	want := []string{"manual", "kind:printer", "cluster:proxmox", "has space",
		"pre-existing:true", "cluster:home", "k8s-operator", "kind:Ingress", "namespace:d", "source:uid",
		"original-hostname:NAS.lan", "original-alias:old.lan", "original-ip:192.168.1.5"}
	if !reflect.DeepEqual(n.Tags, want) || n.IP != "10.0.0.5" || n.Hostname != "nas.lan" || n.Aliases != nil || n.Comment != "mine" || n.ID != "u1" {
		t.Fatalf("adopted = %+v\nwant tags %q", n, want)
	}
	// The next sync with the same claim is a no-op: the user's look-alike tags are theirs.
	if res := run(r, t0, []endpoint.Record{*n}, claim("nas.lan", "d", "n", "uid", 0, "10.0.0.5")); len(res.Changes) != 0 {
		t.Fatalf("second sync = %v", actions(res))
	}
	// Another cluster sharing the server reads the entry as ours, not its own.
	proxmox, err := New(Config{ClusterName: "proxmox", GracePeriod: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if st := proxmox.classify([]endpoint.Record{*n}, nil, nil, nil); len(st.Owned) != 0 || st.ForeignCount() != 1 {
		t.Fatalf("cluster proxmox owns %d entries; the adopted entry is home's", len(st.Owned))
	}
	// The claim goes: mark, then release after the grace period: exactly what was found.
	res = run(r, t0, []endpoint.Record{*n})
	m := res.Changes[0].New
	res = run(r, t0.Add(6*time.Minute), []endpoint.Record{*m})
	if got := actions(res); !reflect.DeepEqual(got, []string{"release nas.lan u1"}) {
		t.Fatalf("changes = %v", got)
	}
	back := *res.Changes[0].New
	back.Version = found.Version
	if !reflect.DeepEqual(back, found) {
		t.Fatalf("released = %+v\n   found %+v", back, found)
	}
}

func TestDesiredClaims(t *testing.T) {
	r := newReg(t, plan.PolicySync)
	old := claim("app.lan", "team-a", "app", "uid-a", time.Hour, "10.0.0.1")
	sameNS := claim("app.lan", "team-a", "app-api", "uid-a2", time.Minute, "10.0.0.2", "10.0.0.1")
	intruder := claim("app.lan", "team-b", "steal", "uid-b", 0, "10.6.6.6")
	w := r.desired(t0, []*endpoint.Endpoint{intruder, sameNS, old}, r.classify(nil, nil, nil, nil), nil)
	got := w.Endpoints
	if len(got) != 1 {
		t.Fatalf("desired = %d endpoints", len(got))
	}
	if want := []string{"10.0.0.1", "10.0.0.2"}; !reflect.DeepEqual(got[0].Targets, want) {
		t.Fatalf("targets = %q, want %q", got[0].Targets, want)
	}
	want := []string{"cluster:home", "k8s-operator", "kind:Ingress", "namespace:team-a"}
	if !reflect.DeepEqual(got[0].OwnerTags, want) {
		t.Fatalf("owner tags = %q, want %q", got[0].OwnerTags, want)
	}
	wantTargets := map[string][]string{"10.0.0.1": {"source:uid-a", "source:uid-a2"}, "10.0.0.2": {"source:uid-a2"}}
	if !reflect.DeepEqual(got[0].TargetTags, wantTargets) {
		t.Fatalf("target tags = %q, want %q", got[0].TargetTags, wantTargets)
	}
	if len(w.Conflicts) != 1 || w.Conflicts[0].Loser.UID != "uid-b" {
		t.Fatalf("conflicts = %+v", w.Conflicts)
	}
}

func TestHolderNamespaceIsSticky(t *testing.T) {
	r := newReg(t, plan.PolicySync)
	// team-b has held pay.lan for a day; team-a re-points a year-old Ingress at it.
	held := owned("1", "pay.lan", "10.0.0.2", "namespace:team-b", "kind:Ingress", "source:uid-b")
	yearOld := claim("pay.lan", "team-a", "old", "uid-a", 365*24*time.Hour, "10.6.6.6")
	dayOld := claim("pay.lan", "team-b", "pay", "uid-b", 24*time.Hour, "10.0.0.2")
	eps := []*endpoint.Endpoint{yearOld, dayOld}
	w := r.desired(t0, eps, r.classify([]endpoint.Record{held}, eps, nil, nil), nil)
	if got := w.Endpoints; len(got) != 1 || got[0].Sources[0].UID != "uid-b" || len(w.Conflicts) != 1 || w.Conflicts[0].Loser.UID != "uid-a" {
		t.Fatalf("desired %+v conflicts %+v; want team-b to keep it", got, w.Conflicts)
	}
	// team-b deletes its Ingress: the entry is marked, and team-a still waits.
	marked := owned("1", "pay.lan", "10.0.0.2", "namespace:team-b", "source:uid-b", PrefixPending+t0.Format(time.RFC3339))
	eps = []*endpoint.Endpoint{yearOld}
	if w := r.desired(t0, eps, r.classify([]endpoint.Record{marked}, eps, nil, nil), nil); len(w.Endpoints) != 0 || len(w.Conflicts) != 1 {
		t.Fatalf("during team-b's grace: desired %+v conflicts %+v", w.Endpoints, w.Conflicts)
	}
	// Once the entry is gone, the oldest claim wins.
	if got := r.desired(t0, eps, r.classify(nil, eps, nil, nil), nil).Endpoints; len(got) != 1 || got[0].Sources[0].UID != "uid-a" {
		t.Fatalf("after the entry went: %+v", got)
	}
}

// TestAHostnameIsHandedOverInPlace: when the namespace holding a hostname lets go of it while
// another namespace's claim waits, the entry it leaves is re-pointed to the waiting claim in
// one write when its grace period ends, so that the name never stops resolving; the holder
// keeps it if it comes back, at any time before that write.
func TestAHostnameIsHandedOverInPlace(t *testing.T) {
	marked := owned("1", "pay.lan", "10.0.0.2", "namespace:team-b", "kind:Ingress", "source:uid-b", PrefixPending+t0.Format(time.RFC3339))
	waiting := claim("pay.lan", "team-a", "old", "uid-a", 365*24*time.Hour, "10.6.6.6")
	back := claim("pay.lan", "team-b", "pay2", "uid-b2", 0, "10.0.0.2")
	for _, tc := range []struct {
		name   string
		now    time.Time
		claims []*endpoint.Endpoint
		// want is the one change, "" for none; ns and ip what it writes.
		want, ns, ip string
	}{
		{"within team-b's grace period, team-a waits", t0.Add(4 * time.Minute), []*endpoint.Endpoint{waiting}, "", "", ""},
		{"when it ends, team-a gets the entry in place", t0.Add(5 * time.Minute), []*endpoint.Endpoint{waiting}, "unmark pay.lan 1", "team-a", "10.6.6.6"},
		{"long after, the same", t0.Add(time.Hour), []*endpoint.Endpoint{waiting}, "unmark pay.lan 1", "team-a", "10.6.6.6"},
		{"team-b back within its grace period keeps it", t0.Add(4 * time.Minute), []*endpoint.Endpoint{waiting, back}, "unmark pay.lan 1", "team-b", "10.0.0.2"},
		{"team-b back after its grace period keeps it", t0.Add(6 * time.Minute), []*endpoint.Endpoint{waiting, back}, "unmark pay.lan 1", "team-b", "10.0.0.2"},
		{"nobody waits: deleted when due", t0.Add(5 * time.Minute), nil, "delete pay.lan 1", "", ""},
		{"team-b's claim left has no address and no entry of its own: it has let go", t0.Add(5 * time.Minute),
			[]*endpoint.Endpoint{waiting, claim("pay.lan", "team-b", "unresolved", "uid-b3", time.Minute)}, "unmark pay.lan 1", "team-a", "10.6.6.6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(newReg(t, plan.PolicySync), tc.now, []endpoint.Record{marked}, tc.claims...)
			got := actions(res)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("changes = %v, want none", got)
				}
				return
			}
			if !reflect.DeepEqual(got, []string{tc.want}) {
				t.Fatalf("changes = %v, want %s", got, tc.want)
			}
			if n := res.Changes[0].New; n != nil {
				if v := viewOf(n); n.IP != tc.ip || !v.has(PrefixNamespace+tc.ns) || slices.ContainsFunc(n.Tags, func(t string) bool { return strings.HasPrefix(t, PrefixPending) }) {
					t.Fatalf("writes %+v, want it at %s for namespace %s, unmarked", n, tc.ip, tc.ns)
				}
			}
		})
	}
}

// TestADuplicateGoesAtOnce: when an adopted entry takes over the address of an entry the
// operator created (adopted entries are the last to go), the created one is deleted at once,
// before the adopted one is re-pointed, rather than marked: a grace period would leave two
// lines for one (hostname, address). (Found by the soak.)
func TestADuplicateGoesAtOnce(t *testing.T) {
	r := newReg(t, plan.PolicySync)
	adopted := endpoint.Record{ID: "a", Hostname: "nas.lan", IP: "10.0.0.1", Version: "3", Comment: "mine",
		Tags: []string{"manual", TagPreExisting, "cluster:home", "k8s-operator", "kind:Ingress", "namespace:default", "source:uid-old",
			PrefixOriginalHostname + "NAS.lan", PrefixOriginalIP + "192.168.1.9"}}
	created := owned("c", "nas.lan", "10.0.0.3", "kind:Ingress", "namespace:default", "source:uid-1")
	res := run(r, t0, []endpoint.Record{adopted, created}, claim("nas.lan", "default", "nas", "uid-1", time.Hour, "10.0.0.3"))
	if got := actions(res); !reflect.DeepEqual(got, []string{"delete nas.lan c", "update nas.lan a"}) {
		t.Fatalf("changes = %v, want the created entry deleted and the adopted one re-pointed", got)
	}
	if res.Changes[1].New.IP != "10.0.0.3" || res.Pending != 0 {
		t.Fatalf("adopted entry now %+v, %d pending; want it at 10.0.0.3, nothing pending", res.Changes[1].New, res.Pending)
	}
}

// TestAClaimWithNoAddressDoesNotTakeAHostnameFromOneWithAnAddress: a hostname nobody holds
// goes to the oldest claim that wants an address; a claim with no address and no entry of its
// own cannot write one and does not keep the name from the others.
func TestAClaimWithNoAddressDoesNotTakeAHostnameFromOneWithAnAddress(t *testing.T) {
	r := newReg(t, plan.PolicySync)
	noAddress := claim("pay.lan", "team-a", "old", "uid-a", 365*24*time.Hour)
	young := claim("pay.lan", "team-b", "pay", "uid-b", time.Hour, "10.0.0.2")
	res := run(r, t0, nil, noAddress, young)
	if got := actions(res); !reflect.DeepEqual(got, []string{"create pay.lan"}) || !slices.Contains(res.Changes[0].New.Tags, "namespace:team-b") {
		t.Fatalf("changes = %v (%+v), want team-b's entry", got, res.Changes)
	}
	// Alone, the oldest claim still holds the name, with nothing to write.
	if got := actions(run(newReg(t, plan.PolicySync), t0, nil, noAddress)); len(got) != 0 {
		t.Fatalf("changes = %v, want none", got)
	}
}

func TestGraceIsPerClaim(t *testing.T) {
	r := newReg(t, plan.PolicySync) // default 5m
	short, long := 2*time.Second, time.Hour
	a := claim("shop.lan", "d", "a", "uid-a", time.Hour, "10.0.0.1")
	b := claim("shop.lan", "d", "b", "uid-b", time.Hour, "10.0.0.2", "10.0.0.3")
	b.GracePeriod = &short
	c := claim("shop.lan", "d", "c", "uid-c", time.Hour, "10.0.0.3", "10.0.0.4")
	c.GracePeriod = &long
	got := r.desired(t0, []*endpoint.Endpoint{a, b, c}, r.classify(nil, nil, nil, nil), nil).Endpoints[0].TargetTags
	want := map[string][]string{
		"10.0.0.1": {"source:uid-a"},                                      // the default: no tag
		"10.0.0.2": {"grace-period:2", "source:uid-b"},                    // b alone
		"10.0.0.3": {"grace-period:3600", "source:uid-b", "source:uid-c"}, // the longest
		"10.0.0.4": {"grace-period:3600", "source:uid-c"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("target tags = %q\nwant %q", got, want)
	}
	// An object without the annotation counts as the default, which beats a shorter one.
	a2 := claim("shop.lan", "d", "a", "uid-a", time.Hour, "10.0.0.2")
	got = r.desired(t0, []*endpoint.Endpoint{a2, b}, r.classify(nil, nil, nil, nil), nil).Endpoints[0].TargetTags
	if !reflect.DeepEqual(got["10.0.0.2"], []string{"source:uid-a", "source:uid-b"}) {
		t.Fatalf("10.0.0.2 tags = %q; want the default (no tag)", got["10.0.0.2"])
	}
}

func TestReservedUserTagsAreDroppedAndReported(t *testing.T) {
	r := newReg(t, plan.PolicySync)
	ep := claim("web.lan", "d", "web", "uid", 0, "10.0.0.1")
	ep.Tags = []string{"cluster:other", "k8s-operator", "ok", "pending-deletion:2099-01-01T00:00:00Z", "pre-existing:true", "grace-period:0", "source:x", "original-ip:1.2.3.4"}
	w := r.desired(t0, []*endpoint.Endpoint{ep}, r.classify(nil, nil, nil, nil), nil)
	if got := w.Endpoints; !reflect.DeepEqual(got[0].Tags, []string{"homelab", "ok"}) {
		t.Fatalf("tags = %q; want only the user's unreserved ones", got[0].Tags)
	}
	if len(w.Problems) != 7 {
		t.Fatalf("problems = %d, want one per reserved tag: %+v", len(w.Problems), w.Problems)
	}
	for _, p := range w.Problems {
		if p.Source.UID != "uid" || !Reserved(p.Tag) {
			t.Fatalf("problem %+v", p)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{ClusterName: ""},
		{ClusterName: "has space"},
		{ClusterName: "ok", DefaultTags: []string{"a,b"}},
		{ClusterName: "ok", DefaultTags: []string{"k8s-operator"}},
		{ClusterName: "ok", GracePeriod: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
}

// TestDesiredWritesNoInput: desired returns what it turned down as values and leaves the
// entries it was handed and the sources' claims exactly as they were, whatever it refuses.
func TestDesiredWritesNoInput(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets.EntriesPerNamespace = 3 })
	records := []endpoint.Record{
		{ID: "f", Hostname: "theirs.lan", IP: "10.0.9.1", Version: "1", Tags: []string{"k8s-operator", "cluster:work"}},
		owned("1", "pay.lan", "10.0.0.2", "namespace:team-b", "kind:Ingress", "source:uid-b"),
		{ID: "h", Hostname: "nas.lan", IP: "10.0.0.9", Version: "1", Aliases: []string{"files.lan"}},
	}
	reserved := claim("pay.lan", "team-a", "p", "uid-a", time.Hour, "10.6.6.6")
	reserved.Tags = []string{"k8s-operator", "mine"}
	eps := []*endpoint.Endpoint{
		claim("theirs.lan", "team-a", "t", "uid-t", time.Hour, "10.0.0.1"),
		reserved,
		claim("pay.lan", "team-b", "pay", "uid-b", time.Hour, "10.0.0.2"),
		aliased(claim("web.lan", "team-a", "w", "uid-w", time.Hour, "10.0.0.3"), "files.lan"),
		claim("more.lan", "team-a", "m", "uid-m", time.Minute, "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.7"),
	}
	render := func(v any) string { return fmt.Sprintf("%+v", v) }
	claimsOf := func(eps []*endpoint.Endpoint) string {
		var out []string
		for _, ep := range eps {
			out = append(out, render(*ep))
		}
		return strings.Join(out, "\n")
	}
	st := r.classify(records, eps, nil, nil)
	stateOf := func(st *State) string {
		return render([]any{st.Owned, st.Foreign, st.Unowned, st.Namesakes, st.Unclaimed})
	}
	recordsBefore, claimsBefore, stateBefore := render(records), claimsOf(eps), stateOf(st)

	w := r.desired(t0, eps, st, nil)

	var conflicts, problems []string
	for _, c := range w.Conflicts {
		conflicts = append(conflicts, c.Hostname+" "+c.Loser.UID)
	}
	for _, p := range w.Problems {
		problems = append(problems, string(p.Kind)+" "+p.Source.UID)
	}
	slices.Sort(conflicts)
	slices.Sort(problems)
	if want := []string{"files.lan uid-w", "pay.lan uid-a", "theirs.lan uid-t"}; !slices.Equal(conflicts, want) {
		t.Errorf("conflicts %q, want %q", conflicts, want)
	}
	if want := []string{"OverBudget uid-m", "ReservedTag uid-a"}; !slices.Equal(problems, want) {
		t.Errorf("problems %q, want %q", problems, want)
	}
	if got := render(records); got != recordsBefore {
		t.Errorf("records changed:\n%s\nwas\n%s", got, recordsBefore)
	}
	if got := claimsOf(eps); got != claimsBefore {
		t.Errorf("claims changed:\n%s\nwas\n%s", got, claimsBefore)
	}
	if got := stateOf(st); got != stateBefore {
		t.Errorf("state changed:\n%s\nwas\n%s", got, stateBefore)
	}
}
