package registry

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

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
}

// TestTheTenancyStage: a claim on a name its namespace may not claim is dropped; an alias its
// namespace may not claim, or the domain filter does not manage, is taken off a copy; a grace
// period over the maximum is capped on a copy. Each is reported on the claim's object, and its
// hostname changed; with no rule, no filter and no cap every claim goes on as it came.
func TestTheTenancyStage(t *testing.T) {
	year := 365 * 24 * time.Hour
	media := Tenancy{Domains: []NamespaceDomains{{Namespace: "media", Domains: []string{"media.lan"}}}}
	graced := func(ep *endpoint.Endpoint, d time.Duration) *endpoint.Endpoint {
		ep.GracePeriod = &d
		return ep
	}
	for _, tc := range []struct {
		name string
		set  func(*Config)
		eps  []*endpoint.Endpoint
		want claimWords
	}{
		{name: "no rule, no filter, no cap", set: func(*Config) {},
			eps:  []*endpoint.Endpoint{graced(aliased(claim("bank.lan", "media", "tv", "u1", 0, "10.0.0.1"), "x.example.com"), year)},
			want: claimWords{endpoints: []string{"bank.lan [10.0.0.1] [x.example.com] grace 8760h0m0s"}}},
		{name: "a hostname outside the namespace's domains", set: func(c *Config) { c.Tenancy = media },
			eps:  []*endpoint.Endpoint{claim("tv.media.lan", "media", "tv", "u1", 0, "10.0.0.1"), claim("bank.lan", "media", "bank", "u2", 0, "10.0.0.2")},
			want: claimWords{endpoints: []string{"tv.media.lan [10.0.0.1] []"}, changed: []string{"bank.lan"}, problems: []string{"NotPermitted media/bank"}}},
		{name: "an alias outside them", set: func(c *Config) { c.Tenancy = media },
			eps: []*endpoint.Endpoint{aliased(claim("tv.media.lan", "media", "tv", "u1", 0, "10.0.0.1"), "films.media.lan", "bank.lan")},
			want: claimWords{endpoints: []string{"tv.media.lan [10.0.0.1] [films.media.lan]"}, changed: []string{"tv.media.lan"},
				problems: []string{"NotPermitted media/tv"}}},
		{name: "an alias outside the domain filter", set: func(c *Config) { c.DomainFilter = []string{"home.lan"} },
			eps: []*endpoint.Endpoint{aliased(claim("app.home.lan", "a", "app", "u1", 0, "10.0.0.1"), "app2.home.lan", "bank.example.com"),
				aliased(claim("db.home.lan", "a", "db", "u2", 0, "10.0.0.2"), "db2.home.lan")},
			want: claimWords{endpoints: []string{"app.home.lan [10.0.0.1] [app2.home.lan]", "db.home.lan [10.0.0.2] [db2.home.lan]"},
				changed: []string{"app.home.lan"}, problems: []string{"OutsideDomains a/app"}}},
		{name: "a grace period over the maximum", set: func(c *Config) { c.Tenancy.MaxGracePeriod = time.Hour },
			eps: []*endpoint.Endpoint{graced(claim("keep.lan", "a", "keep", "u1", 0, "10.0.0.1"), year), graced(claim("short.lan", "a", "short", "u2", 0, "10.0.0.2"), time.Minute)},
			want: claimWords{endpoints: []string{"keep.lan [10.0.0.1] [] grace 1h0m0s", "short.lan [10.0.0.2] [] grace 1m0s"},
				changed: []string{"keep.lan"}, problems: []string{"GracePeriodCapped a/keep"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, tc.set)
			before := wordsOfVerdicts(tc.eps, verdicts{endpoints: tc.eps})
			if got := wordsOfVerdicts(tc.eps, r.tenancy(claimsAt(r, nil, tc.eps), tc.eps)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if after := wordsOfVerdicts(tc.eps, verdicts{endpoints: tc.eps}); !reflect.DeepEqual(after, before) {
				t.Errorf("the claims handed in changed: %q, were %q", after.endpoints, before.endpoints)
			}
		})
	}
}
