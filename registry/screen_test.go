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

// server is a router-hosts server as far as these tests need one: the changes applied to its
// entries, as the provider would send them.
type server struct {
	entries []endpoint.Record
	next    int
}

func (s *server) apply(changes []plan.Change) {
	for _, c := range changes {
		switch {
		case c.Old == nil:
			s.next++
			n := *c.New
			n.ID, n.Version = fmt.Sprintf("n%03d", s.next), "1"
			s.entries = append(s.entries, n)
		case c.New == nil:
			s.entries = slices.DeleteFunc(s.entries, func(r endpoint.Record) bool { return r.ID == c.Old.ID })
		default:
			for i := range s.entries {
				if s.entries[i].ID == c.Old.ID {
					n := *c.New
					n.Version = s.entries[i].Version + "+"
					s.entries[i] = n
				}
			}
		}
	}
}

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

// TestEveryNameObeysOneRule: an alias is held, refused and reported exactly as a hostname is;
// the rest of the object still syncs; a second sync writes nothing (no write storm).
func TestEveryNameObeysOneRule(t *testing.T) {
	foreign := endpoint.Record{ID: "f1", Hostname: "shared.lan", IP: "10.9.9.9", Aliases: []string{"other-alias.lan"},
		Tags: []string{TagOwner, PrefixCluster + "other", PrefixNamespace + "x"}, Version: "1"}
	hand := endpoint.Record{ID: "h1", Hostname: "nas.lan", IP: "192.168.1.5", Aliases: []string{"files.lan"}, Tags: []string{"manual"}, Version: "1"}
	grafana := owned("g1", "grafana.lan", "10.0.0.3", PrefixNamespace+"monitoring", PrefixKind+"Ingress", PrefixSource+"uid-g")
	for _, tc := range []struct {
		name      string
		records   []endpoint.Record
		eps       []*endpoint.Endpoint
		name2     string   // a name whose entries the test checks
		want      []string // the entries carrying name2 after the sync
		conflicts []string
	}{
		{name: "an alias another namespace holds as a hostname is refused; the hostname syncs",
			records: []endpoint.Record{grafana},
			eps: []*endpoint.Endpoint{claim("grafana.lan", "monitoring", "g", "uid-g", time.Hour, "10.0.0.3"),
				aliased(claim("app.lan", "tenant", "app", "uid-t", 2*time.Hour, "10.6.6.6"), "grafana.lan", "app2.lan")},
			name2: "grafana.lan", want: []string{"grafana.lan 10.0.0.3 []"},
			conflicts: []string{"alias grafana.lan of tenant: namespace monitoring"}},
		{name: "a new hostname claim goes before a new alias, however old the alias's object",
			eps: []*endpoint.Endpoint{claim("wiki.lan", "docs", "wiki", "uid-w", 0, "10.0.0.4"),
				aliased(claim("app.lan", "tenant", "app", "uid-t", 24*time.Hour, "10.6.6.6"), "wiki.lan")},
			name2: "wiki.lan", want: []string{"wiki.lan 10.0.0.4 []"},
			conflicts: []string{"alias wiki.lan of tenant: namespace docs"}},
		{name: "two namespaces' aliases: the older claim's",
			eps: []*endpoint.Endpoint{aliased(claim("a.lan", "ns-a", "a", "uid-a", time.Hour, "10.0.0.1"), "both.lan"),
				aliased(claim("b.lan", "ns-b", "b", "uid-b", time.Minute, "10.0.0.2"), "both.lan")},
			name2: "both.lan", want: []string{"a.lan 10.0.0.1 [both.lan]"},
			conflicts: []string{"alias both.lan of ns-b: namespace ns-a"}},
		{name: "an alias an entry already carries is held against an older hostname claim",
			records: []endpoint.Record{func() endpoint.Record {
				r := owned("a1", "a.lan", "10.0.0.1", PrefixNamespace+"ns-a", PrefixKind+"Ingress", PrefixSource+"uid-a")
				r.Aliases = []string{"held.lan"}
				return r
			}()},
			eps: []*endpoint.Endpoint{aliased(claim("a.lan", "ns-a", "a", "uid-a", time.Minute, "10.0.0.1"), "held.lan"),
				claim("held.lan", "ns-b", "b", "uid-b", 365*24*time.Hour, "10.6.6.6")},
			name2: "held.lan", want: []string{"a.lan 10.0.0.1 [held.lan]"},
			conflicts: []string{"hostname held.lan of ns-b: namespace ns-a"}},
		{name: "an alias another cluster's entry carries is refused",
			records: []endpoint.Record{foreign},
			eps:     []*endpoint.Endpoint{aliased(claim("mine.lan", "ns", "m", "uid-m", 0, "10.0.0.1"), "shared.lan", "other-alias.lan")},
			name2:   "mine.lan", want: []string{"mine.lan 10.0.0.1 []"},
			conflicts: []string{"alias other-alias.lan of ns: cluster other", "alias shared.lan of ns: cluster other"}},
		{name: "a hostname another cluster's entry carries as an alias is refused",
			records: []endpoint.Record{foreign},
			eps:     []*endpoint.Endpoint{claim("other-alias.lan", "ns", "m", "uid-m", 0, "10.0.0.1")},
			name2:   "other-alias.lan", want: []string{"shared.lan 10.9.9.9 [other-alias.lan]"},
			conflicts: []string{"hostname other-alias.lan of ns: cluster other"}},
		{name: "an alias naming a hand-made entry is refused",
			records: []endpoint.Record{hand},
			eps:     []*endpoint.Endpoint{aliased(claim("mine.lan", "ns", "m", "uid-m", 0, "10.0.0.1"), "nas.lan", "files.lan")},
			name2:   "nas.lan", want: []string{"nas.lan 192.168.1.5 [files.lan]"},
			conflicts: []string{"alias files.lan of ns: the hand-made entry nas.lan", "alias nas.lan of ns: the hand-made entry nas.lan"}},
		{name: "a hostname a hand-made entry carries as an alias is refused",
			records: []endpoint.Record{hand},
			eps:     []*endpoint.Endpoint{claim("files.lan", "ns", "m", "uid-m", 0, "10.0.0.1")},
			name2:   "files.lan", want: []string{"nas.lan 192.168.1.5 [files.lan]"},
			conflicts: []string{"hostname files.lan of ns: the hand-made entry nas.lan"}},
		{name: "two clusters that added one alias at once: the older entry, theirs, keeps it",
			records: []endpoint.Record{withAliases(owned("b2", "mine.lan", "10.0.0.1", PrefixNamespace+"ns", PrefixKind+"Ingress", PrefixSource+"uid-m"), "race.lan"),
				withAliases(endpoint.Record{ID: "a1", Hostname: "theirs.lan", IP: "10.9.9.8", Tags: []string{TagOwner, PrefixCluster + "other", PrefixNamespace + "x"}, Version: "1"}, "race.lan")},
			eps:   []*endpoint.Endpoint{aliased(claim("mine.lan", "ns", "m", "uid-m", 0, "10.0.0.1"), "race.lan")},
			name2: "race.lan", want: []string{"theirs.lan 10.9.9.8 [race.lan]"},
			conflicts: []string{"alias race.lan of ns: cluster other"}},
		{name: "two clusters that added one alias at once: the older entry, ours, keeps it (the other cluster lets it go)",
			records: []endpoint.Record{withAliases(owned("a0", "mine.lan", "10.0.0.1", PrefixNamespace+"ns", PrefixKind+"Ingress", PrefixSource+"uid-m"), "race.lan"),
				withAliases(endpoint.Record{ID: "a1", Hostname: "theirs.lan", IP: "10.9.9.8", Tags: []string{TagOwner, PrefixCluster + "other", PrefixNamespace + "x"}, Version: "1"}, "race.lan")},
			eps:   []*endpoint.Endpoint{aliased(claim("mine.lan", "ns", "m", "uid-m", 0, "10.0.0.1"), "race.lan")},
			name2: "race.lan", want: []string{"mine.lan 10.0.0.1 [race.lan]", "theirs.lan 10.9.9.8 [race.lan]"}},
		{name: "an alias another cluster holds as its hostname is let go, whatever the entries' age",
			records: []endpoint.Record{withAliases(owned("a0", "mine.lan", "10.0.0.1", PrefixNamespace+"ns", PrefixKind+"Ingress", PrefixSource+"uid-m"), "shared.lan"), foreign},
			eps:     []*endpoint.Endpoint{aliased(claim("mine.lan", "ns", "m", "uid-m", 0, "10.0.0.1"), "shared.lan")},
			name2:   "shared.lan", want: []string{"shared.lan 10.9.9.9 [other-alias.lan]"},
			conflicts: []string{"alias shared.lan of ns: cluster other"}},
		{name: "an alias an entry of the namespace's own carries stays",
			records: []endpoint.Record{grafana},
			eps: []*endpoint.Endpoint{claim("grafana.lan", "monitoring", "g", "uid-g", time.Hour, "10.0.0.3"),
				aliased(claim("dash.lan", "monitoring", "d", "uid-d", time.Hour, "10.0.0.3"), "grafana.lan")},
			name2: "grafana.lan", want: []string{"dash.lan 10.0.0.3 [grafana.lan]", "grafana.lan 10.0.0.3 []"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(*Config) {})
			s := &server{entries: slices.Clone(tc.records)}
			_, st := s.sync(r, t0, tc.eps...)
			if got := conflictsOf(st); !reflect.DeepEqual(got, tc.conflicts) {
				t.Errorf("conflicts = %q\nwant        %q", got, tc.conflicts)
			}
			if got := s.byName(tc.name2); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries carrying %s = %q, want %q", tc.name2, got, tc.want)
			}
			// Settled: the next sync writes nothing, and reports the same conflicts.
			res, st := s.sync(r, t0, tc.eps...)
			if len(res.Changes) != 0 {
				t.Errorf("second sync writes %v", actions(res))
			}
			if got := conflictsOf(st); !reflect.DeepEqual(got, tc.conflicts) {
				t.Errorf("second sync's conflicts = %q", got)
			}
		})
	}
}

// TestATenantsAliasIsTakenOffTheEntryItWasOn: an alias written before the rule (a tenant's
// entry carrying another namespace's hostname) is removed from the tenant's entry, in one
// update, and never comes back.
func TestATenantsAliasIsTakenOffTheEntryItWasOn(t *testing.T) {
	r := newRegWith(t, func(*Config) {})
	tenant := owned("t1", "app.lan", "10.6.6.6", PrefixNamespace+"tenant", PrefixKind+"Ingress", PrefixSource+"uid-t")
	tenant.Aliases = []string{"grafana.lan"}
	tenant.Comment = "router-hosts-operator: Ingress tenant/app"
	grafana := owned("g1", "grafana.lan", "10.0.0.3", PrefixNamespace+"monitoring", PrefixKind+"Ingress", PrefixSource+"uid-g")
	grafana.Comment = "router-hosts-operator: Ingress monitoring/g"
	s := &server{entries: []endpoint.Record{grafana, tenant}}
	eps := []*endpoint.Endpoint{claim("grafana.lan", "monitoring", "g", "uid-g", time.Hour, "10.0.0.3"),
		aliased(claim("app.lan", "tenant", "app", "uid-t", 2*time.Hour, "10.6.6.6"), "grafana.lan")}
	res, _ := s.sync(r, t0, eps...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"update app.lan t1"}) || res.Changes[0].New.Aliases != nil {
		t.Fatalf("changes = %v (aliases %v), want the alias taken off t1", got, res.Changes[0].New.Aliases)
	}
	if got := s.byName("grafana.lan"); !reflect.DeepEqual(got, []string{"grafana.lan 10.0.0.3 []"}) {
		t.Fatalf("grafana.lan = %q", got)
	}
	if res, _ := s.sync(r, t0, eps...); len(res.Changes) != 0 {
		t.Fatalf("second sync writes %v", actions(res))
	}
}

// TestTenancy: namespaces claim only the names their rules give them, adopt only when the
// rules let them, and never an entry tagged no-adopt.
func TestTenancy(t *testing.T) {
	router := endpoint.Record{ID: "r1", Hostname: "router.lan", IP: "192.168.1.1", Tags: []string{"manual"}, Version: "1"}
	locked := endpoint.Record{ID: "l1", Hostname: "nas.lan", IP: "192.168.1.5", Tags: []string{"manual", TagNoAdopt}, Version: "1"}
	rules := Tenancy{Domains: []NamespaceDomains{{Namespace: "media", Domains: []string{"media.lan"}}, {Namespace: "infra", Domains: []string{"lan"}}},
		Adopters: []string{"infra"}}
	for _, tc := range []struct {
		name      string
		tenancy   Tenancy
		records   []endpoint.Record
		eps       []*endpoint.Endpoint
		changes   []string
		conflicts []string
		problems  []string
	}{
		{name: "a namespace within its domains", tenancy: rules,
			eps:     []*endpoint.Endpoint{aliased(claim("tv.media.lan", "media", "tv", "u1", 0, "10.0.0.1"), "films.media.lan")},
			changes: []string{"create tv.media.lan"}},
		{name: "a namespace outside its domains: the hostname is not written", tenancy: rules,
			eps:      []*endpoint.Endpoint{claim("bank.lan", "media", "tv", "u1", 0, "10.0.0.1")},
			problems: []string{"NotPermitted media/tv"}},
		{name: "an alias outside the namespace's domains is dropped, the rest syncs", tenancy: rules,
			eps:      []*endpoint.Endpoint{aliased(claim("tv.media.lan", "media", "tv", "u1", 0, "10.0.0.1"), "bank.lan")},
			changes:  []string{"create tv.media.lan"},
			problems: []string{"NotPermitted media/tv"}},
		{name: "a namespace no rule names claims nothing", tenancy: rules,
			eps:      []*endpoint.Endpoint{claim("x.media.lan", "default", "x", "u1", 0, "10.0.0.1")},
			problems: []string{"NotPermitted default/x"}},
		{name: "the router's own name: a tenant may not adopt it", tenancy: Tenancy{Adopters: []string{"infra"}}, records: []endpoint.Record{router},
			eps:       []*endpoint.Endpoint{claim("router.lan", "tenant", "r", "u1", 365*24*time.Hour, "10.6.6.6")},
			conflicts: []string{"hostname router.lan of tenant: a hand-made entry, which namespace tenant may not adopt"}},
		{name: "a namespace the rules let adopt does", tenancy: rules, records: []endpoint.Record{router},
			eps:     []*endpoint.Endpoint{claim("router.lan", "infra", "r", "u1", 0, "192.168.1.2")},
			changes: []string{"adopt router.lan r1"}},
		{name: "an empty list of adopters lets none", tenancy: Tenancy{Adopters: []string{}}, records: []endpoint.Record{router},
			eps:       []*endpoint.Endpoint{claim("router.lan", "infra", "r", "u1", 0, "192.168.1.2")},
			conflicts: []string{"hostname router.lan of infra: a hand-made entry, which namespace infra may not adopt"}},
		{name: "no-adopt holds even when the namespace carries the name as an alias of its own",
			records: []endpoint.Record{locked, withAliases(owned("o1", "files.lan", "10.0.0.8", PrefixNamespace+"infra", PrefixKind+"Ingress", PrefixSource+"u2"), "nas.lan")},
			eps: []*endpoint.Endpoint{claim("nas.lan", "infra", "n", "u1", 0, "10.0.0.9"),
				aliased(claim("files.lan", "infra", "f", "u2", 0, "10.0.0.8"), "nas.lan")},
			changes:   []string{"update files.lan o1"},
			conflicts: []string{"hostname nas.lan of infra: a hand-made entry tagged no-adopt", "alias nas.lan of infra: the hand-made entry nas.lan"}},
		{name: "no-adopt is never adopted, whoever asks", records: []endpoint.Record{locked},
			eps:       []*endpoint.Endpoint{claim("nas.lan", "infra", "n", "u1", 0, "10.0.0.9")},
			conflicts: []string{"hostname nas.lan of infra: a hand-made entry tagged no-adopt"}},
		{name: "a namespace that holds a name by entries of its own does not double a hand-made line it may not adopt",
			tenancy: Tenancy{Adopters: []string{}},
			records: []endpoint.Record{owned("o1", "nas.lan", "10.0.0.9", PrefixNamespace+"infra", PrefixKind+"Ingress", PrefixSource+"u1"), locked},
			eps:     []*endpoint.Endpoint{claim("nas.lan", "infra", "n", "u1", 0, "10.0.0.9", "192.168.1.5")},
			changes: []string{"update nas.lan o1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.Tenancy = tc.tenancy })
			s := &server{entries: slices.Clone(tc.records)}
			res, st := s.sync(r, t0, tc.eps...)
			if got := actions(res); !reflect.DeepEqual(got, tc.changes) {
				t.Errorf("changes = %q, want %q", got, tc.changes)
			}
			if got := conflictsOf(st); !reflect.DeepEqual(got, tc.conflicts) {
				t.Errorf("conflicts = %q, want %q", got, tc.conflicts)
			}
			if got := problemsOf(st); !reflect.DeepEqual(got, tc.problems) {
				t.Errorf("problems = %q, want %q", got, tc.problems)
			}
			for _, e := range s.entries {
				if e.ID == router.ID && !reflect.DeepEqual(e, router) && !slices.Contains(tc.changes, "adopt router.lan r1") {
					t.Errorf("the router's entry changed: %+v", e)
				}
				if e.ID == locked.ID && !reflect.DeepEqual(e, locked) {
					t.Errorf("the no-adopt entry changed: %+v", e)
				}
			}
		})
	}
}

// TestMaxGracePeriod: an object's grace period is capped, and so is one an entry carries from
// before the cap.
func TestMaxGracePeriod(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Tenancy.MaxGracePeriod = time.Hour })
	year := 365 * 24 * time.Hour
	ep := claim("keep.lan", "tenant", "k", "u1", 0, "10.0.0.1")
	ep.GracePeriod = &year
	s := &server{}
	res, st := s.sync(r, t0, ep)
	if len(res.Changes) != 1 || !slices.Contains(res.Changes[0].New.Tags, PrefixGracePeriod+"3600") {
		t.Fatalf("changes = %v, want one create with grace-period:3600", actions(res))
	}
	if got := problemsOf(st); !reflect.DeepEqual(got, []string{"GracePeriodCapped tenant/k"}) {
		t.Fatalf("problems = %q", got)
	}
	// An entry written with a year before the cap: marked, then gone an hour later.
	s = &server{entries: []endpoint.Record{owned("e1", "old.lan", "10.0.0.2", PrefixGracePeriod+"31536000")}}
	if res, _ := s.sync(r, t0); !reflect.DeepEqual(actions(res), []string{"mark old.lan e1"}) || !res.NextExpiry.Equal(t0.Add(time.Hour)) {
		t.Fatalf("changes %v, next expiry %v; want a mark due in an hour", actions(res), res.NextExpiry)
	}
	if res, _ := s.sync(r, t0.Add(time.Hour)); !reflect.DeepEqual(actions(res), []string{"delete old.lan e1"}) {
		t.Fatalf("an hour later: %v, want the delete", actions(res))
	}
	if _, err := New(Config{ClusterName: "c", GracePeriod: 2 * time.Hour, Tenancy: Tenancy{MaxGracePeriod: time.Hour}}); err == nil {
		t.Fatal("a default grace period above the maximum was accepted")
	}
}

// hostsOf is one object's claims on n hostnames under domain, each at ip.
func hostsOf(n int, domain, ns, name, uid string, age time.Duration, ip string) []*endpoint.Endpoint {
	out := make([]*endpoint.Endpoint, n)
	for i := range out {
		out[i] = claim(fmt.Sprintf("h%04d.%s", i, domain), ns, name, uid, age, ip)
	}
	return out
}

// TestAnObjectOverItsBudgetKeepsWhatItHas: an object that grows past its budget gets no new
// name, keeps its entries exactly (not marked, not changed), and is reported; back within, it
// syncs again.
func TestAnObjectOverItsBudgetKeepsWhatItHas(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets = Budgets{EntriesPerObject: 10, AliasesPerObject: 8, TagsPerObject: 4} })
	s := &server{}
	small := hostsOf(3, "app.lan", "tenant", "big", "u-big", time.Hour, "10.0.0.1")
	other := claim("other.lan", "tenant", "other", "u-other", time.Hour, "10.0.0.2")
	s.sync(r, t0, append(slices.Clone(small), other)...)
	before := slices.Clone(s.entries)
	if len(before) != 4 {
		t.Fatalf("entries = %d, want 4", len(before))
	}
	for _, tc := range []struct {
		name string
		eps  []*endpoint.Endpoint
	}{
		{"3,000 hostnames", hostsOf(3000, "app.lan", "tenant", "big", "u-big", time.Hour, "10.6.6.6")},
		{"too many aliases", func() []*endpoint.Endpoint {
			out := hostsOf(3, "app.lan", "tenant", "big", "u-big", time.Hour, "10.0.0.1")
			for _, ep := range out {
				aliased(ep, "a1.app.lan", "a2.app.lan", "a3.app.lan")
			}
			return out
		}()},
		{"too many tags", func() []*endpoint.Endpoint {
			out := hostsOf(3, "app.lan", "tenant", "big", "u-big", time.Hour, "10.0.0.1")
			for _, ep := range out {
				ep.Tags = []string{"t1", "t2", "t3", "t4", "t5"}
			}
			return out
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &server{entries: slices.Clone(before), next: 100}
			changedOther := claim("other.lan", "tenant", "other", "u-other", time.Hour, "10.0.0.3")
			res, st := s.sync(r, t0, append(slices.Clone(tc.eps), changedOther)...)
			// The other object of the namespace still syncs; the big one writes nothing.
			if got := actions(res); len(got) != 1 || got[0] != "update other.lan n004" {
				t.Fatalf("changes = %q, want only other.lan's update", got)
			}
			if got := problemsOf(st); !reflect.DeepEqual(got, []string{"OverBudget tenant/big"}) {
				t.Fatalf("problems = %q", got)
			}
			for _, e := range s.entries[:3] {
				if !slices.ContainsFunc(before, func(b endpoint.Record) bool { return reflect.DeepEqual(b, e) }) {
					t.Fatalf("entry %s changed: %+v", e.Hostname, e)
				}
			}
			if res, _ := s.sync(r, t0, append(slices.Clone(tc.eps), changedOther)...); len(res.Changes) != 0 {
				t.Fatalf("second sync writes %v", actions(res))
			}
		})
	}
	// Back within the budget with a fourth hostname: it is written.
	s = &server{entries: slices.Clone(before), next: 100}
	res, st := s.sync(r, t0, append(hostsOf(4, "app.lan", "tenant", "big", "u-big", time.Hour, "10.0.0.1"), other)...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"create h0003.app.lan"}) || len(st.Problems) != 0 {
		t.Fatalf("within budget: changes %q problems %q", got, problemsOf(st))
	}
}

// TestAnObjectsMarkedEntriesCount: an object's entries marked for deletion count against its
// budget until they are gone, so an object that keeps trading names for others cannot have
// more than its budget on the router.
func TestAnObjectsMarkedEntriesCount(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets = Budgets{EntriesPerObject: 4} })
	s := &server{}
	s.sync(r, t0, hostsOf(3, "old.lan", "tenant", "app", "u-app", time.Hour, "10.0.0.1")...)
	// The object lets its three names go: they are marked, and stay until their grace period
	// ends.
	s.sync(r, t0.Add(time.Minute), claim("keep.lan", "tenant", "app", "u-app", time.Hour, "10.0.0.1"))
	// Three marked and two new names is five: the new names wait.
	eps := []*endpoint.Endpoint{claim("a.new.lan", "tenant", "app", "u-app", time.Hour, "10.0.0.1"), claim("b.new.lan", "tenant", "app", "u-app", time.Hour, "10.0.0.1")}
	res, st := s.sync(r, t0.Add(2*time.Minute), eps...)
	if got := problemsOf(st); !reflect.DeepEqual(got, []string{"OverBudget tenant/app"}) || slices.ContainsFunc(res.Changes, func(c plan.Change) bool { return c.Action == plan.Create }) {
		t.Fatalf("with three marked: %v, problems %q", actions(res), got)
	}
	// Once they are gone, the new names are written.
	s.sync(r, t0.Add(10*time.Minute), eps...)
	res, st = s.sync(r, t0.Add(10*time.Minute), eps...)
	if got := actions(res); len(st.Problems) != 0 || len(s.byName("a.new.lan")) != 1 || len(s.byName("b.new.lan")) != 1 {
		t.Fatalf("after the grace period: %v, problems %q, entries %v", got, problemsOf(st), s.entries)
	}
}

// TestANamespaceAtItsBudget: its new hostnames wait, oldest claim first; its entries stay;
// other namespaces are not affected; when it has room again the next waiting one is written.
func TestANamespaceAtItsBudget(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets.EntriesPerNamespace = 4 })
	s := &server{}
	have := hostsOf(3, "t.lan", "tenant", "have", "u-have", 2*time.Hour, "10.0.0.1")
	s.sync(r, t0, have...)
	newer := claim("newer.t.lan", "tenant", "newer", "u-newer", time.Minute, "10.0.0.2")
	older := claim("older.t.lan", "tenant", "older", "u-older", time.Hour, "10.0.0.3")
	elsewhere := claim("x.o.lan", "other", "x", "u-x", 0, "10.0.0.4")
	eps := append(slices.Clone(have), newer, older, elsewhere)
	res, st := s.sync(r, t0, eps...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"create older.t.lan", "create x.o.lan"}) {
		t.Fatalf("changes = %q", got)
	}
	if got := problemsOf(st); !reflect.DeepEqual(got, []string{"OverBudget tenant/newer"}) {
		t.Fatalf("problems = %q", got)
	}
	if res, _ := s.sync(r, t0, eps...); len(res.Changes) != 0 {
		t.Fatalf("second sync writes %v", actions(res))
	}
	// One of the three is no longer wanted: marked, it still counts, so newer waits.
	eps = append(slices.Clone(have[:2]), newer, older, elsewhere)
	res, st = s.sync(r, t0, eps...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"mark h0002.t.lan n003"}) || !reflect.DeepEqual(problemsOf(st), []string{"OverBudget tenant/newer"}) {
		t.Fatalf("marked: changes %q problems %q", got, problemsOf(st))
	}
	// Its grace period over, it is deleted; the sync after that writes newer.
	res, _ = s.sync(r, t0.Add(6*time.Minute), eps...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"delete h0002.t.lan n003"}) {
		t.Fatalf("the grace period over: changes %q", got)
	}
	res, st = s.sync(r, t0.Add(6*time.Minute), eps...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"create newer.t.lan"}) || len(st.Problems) != 0 {
		t.Fatalf("with room again: changes %q problems %q", got, problemsOf(st))
	}
}

// TestANamespaceBudgetCountsEntries: the budget counts what the router stores. A hostname it
// has that asks for more addresses grows only within the budget (the entries it has stay,
// and a moved address is re-pointed); entries waiting out a long grace period count until
// they are gone, so deleting and creating objects again never piles up entries past it.
func TestANamespaceBudgetCountsEntries(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets.EntriesPerNamespace = 5 })
	t.Run("one hostname from one address to forty", func(t *testing.T) {
		s := &server{}
		s.sync(r, t0, claim("web.t.lan", "tenant", "web", "u-web", time.Hour, "10.0.0.1"))
		var ips []string
		for i := 1; i <= 40; i++ {
			ips = append(ips, fmt.Sprintf("10.0.1.%d", i))
		}
		for i := 0; i < 3; i++ {
			res, st := s.sync(r, t0, claim("web.t.lan", "tenant", "web", "u-web", time.Hour, ips...))
			if len(s.entries) != 1 || !reflect.DeepEqual(problemsOf(st), []string{"OverBudget tenant/web"}) {
				t.Fatalf("sync %d: %v; %d entries, problems %q", i, actions(res), len(s.entries), problemsOf(st))
			}
			if !strings.Contains(st.Problems[0].Message, "39 of web.t.lan's 40 addresses") {
				t.Fatalf("message %q", st.Problems[0].Message)
			}
		}
		if s.entries[0].IP != "10.0.1.1" {
			t.Fatalf("the address it has was not re-pointed to one wanted: %v", s.entries)
		}
		// Four addresses fit: all of them are written.
		res, st := s.sync(r, t0, claim("web.t.lan", "tenant", "web", "u-web", time.Hour, ips[:4]...))
		if len(s.entries) != 4 || len(st.Problems) != 0 {
			t.Fatalf("within the budget: %v, problems %q", actions(res), problemsOf(st))
		}
	})
	t.Run("delete and create again under a long grace period", func(t *testing.T) {
		s := &server{}
		year := 365 * 24 * time.Hour
		now := t0
		for cycle := 0; cycle < 4; cycle++ {
			var eps []*endpoint.Endpoint
			for i := 0; i < 5; i++ {
				ep := claim(fmt.Sprintf("c%d-%d.t.lan", cycle, i), "tenant", "app", fmt.Sprintf("u-%d-%d", cycle, i), time.Hour, "10.0.0.1")
				ep.GracePeriod = &year
				eps = append(eps, ep)
			}
			for i := 0; i < 2; i++ {
				s.sync(r, now, eps...)
				now = now.Add(time.Minute)
			}
		}
		if len(s.entries) > 5 {
			t.Fatalf("%d entries after four cycles, budget 5", len(s.entries))
		}
	})
}

// TestBadPolicyConfig: the tenancy's and budgets' mistakes are refused at configuration.
func TestBadPolicyConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"a bad namespace pattern": {Tenancy: Tenancy{Domains: []NamespaceDomains{{Namespace: "[", Domains: []string{"lan"}}}}},
		"a rule without domains":  {Tenancy: Tenancy{Domains: []NamespaceDomains{{Namespace: "a"}}}},
		"a bad domain":            {Tenancy: Tenancy{Domains: []NamespaceDomains{{Namespace: "a", Domains: []string{"*.lan"}}}}},
		"a bad adopter pattern":   {Tenancy: Tenancy{Adopters: []string{"["}}},
		"a negative budget":       {Budgets: Budgets{WritesPerSync: -1}},
		"a bad domain filter":     {DomainFilter: []string{"bad_domain"}},
	} {
		cfg.ClusterName = "c"
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestAnAliasOutsideTheDomainFilter: an alias the domain filter does not manage is dropped and
// reported, as a hostname outside it is never managed; the rest of the claim is written.
func TestAnAliasOutsideTheDomainFilter(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.DomainFilter, c.ExcludeDomains = []string{"home.lan"}, []string{"private.home.lan"} })
	s := &server{}
	_, st := s.sync(r, t0, aliased(claim("app.home.lan", "tenant", "app", "u1", 0, "10.0.0.1"), "bank.example.com", "x.private.home.lan", "app2.home.lan"))
	if got := s.byName("app.home.lan"); !reflect.DeepEqual(got, []string{"app.home.lan 10.0.0.1 [app2.home.lan]"}) {
		t.Fatalf("entries = %q", got)
	}
	if got := problemsOf(st); !reflect.DeepEqual(got, []string{"OutsideDomains tenant/app", "OutsideDomains tenant/app"}) {
		t.Fatalf("problems = %q", got)
	}
	if r.Manages("bank.example.com") || !r.Manages("app.home.lan") {
		t.Fatal("Manages does not follow the domain filter")
	}
}
