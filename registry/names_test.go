package registry

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

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
