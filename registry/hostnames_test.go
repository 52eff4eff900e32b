package registry

import (
	"reflect"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestTheHostnamesStage: before the merge, a hostname claim is turned down when the name is an
// alias another cluster's or a hand-made entry carries, an alias another namespace's entry
// carries and still asks for, or a hand-made entry the claim's namespace may not adopt (or
// that says no-adopt); unless an entry of this cluster has the hostname.
func TestTheHostnamesStage(t *testing.T) {
	hand := endpoint.Record{ID: "h1", Hostname: "nas.lan", IP: "192.168.1.5", Aliases: []string{"files.lan"}, Tags: []string{"manual"}, Version: "1"}
	locked := endpoint.Record{ID: "l1", Hostname: "vault.lan", IP: "192.168.1.6", Tags: []string{"manual", TagNoAdopt}, Version: "1"}
	theirs := endpoint.Record{ID: "f1", Hostname: "shared.lan", IP: "10.9.9.9", Aliases: []string{"other-alias.lan"},
		Tags: []string{TagOwner, PrefixCluster + "other", PrefixNamespace + "x"}, Version: "1"}
	nsA := withAliases(owned("a1", "a.lan", "10.0.0.1", PrefixNamespace+"ns-a", PrefixSource+"uid-a"), "held.lan")
	web := claim("web.lan", "ns", "web", "u0", time.Hour, "10.0.0.8")
	for _, tc := range []struct {
		name    string
		set     func(*Config)
		records []endpoint.Record
		eps     []*endpoint.Endpoint
		want    claimWords
	}{
		{name: "no entry carries the name", records: []endpoint.Record{hand, theirs},
			eps:  []*endpoint.Endpoint{web},
			want: claimWords{endpoints: []string{"web.lan [10.0.0.8] []"}}},
		{name: "a hand-made entry's alias", records: []endpoint.Record{hand},
			eps: []*endpoint.Endpoint{claim("files.lan", "ns", "f", "u1", time.Hour, "10.0.0.1"), web},
			want: claimWords{endpoints: []string{"web.lan [10.0.0.8] []"}, changed: []string{"files.lan"},
				conflicts: []string{"hostname files.lan of ns: the hand-made entry nas.lan"}}},
		{name: "another cluster's alias", records: []endpoint.Record{theirs},
			eps: []*endpoint.Endpoint{web, claim("other-alias.lan", "ns", "o", "u1", time.Hour, "10.0.0.1")},
			want: claimWords{endpoints: []string{"web.lan [10.0.0.8] []"}, changed: []string{"other-alias.lan"},
				conflicts: []string{"hostname other-alias.lan of ns: cluster other"}}},
		{name: "a hand-made entry tagged no-adopt", records: []endpoint.Record{locked},
			eps:  []*endpoint.Endpoint{claim("vault.lan", "infra", "v", "u1", time.Hour, "10.0.0.1")},
			want: claimWords{changed: []string{"vault.lan"}, conflicts: []string{"hostname vault.lan of infra: a hand-made entry tagged no-adopt"}}},
		{name: "a hand-made entry the namespace may not adopt", set: func(c *Config) { c.Tenancy.Adopters = []string{"infra"} },
			records: []endpoint.Record{hand},
			eps:     []*endpoint.Endpoint{claim("nas.lan", "tenant", "n", "u1", 2*time.Hour, "10.0.0.1"), claim("nas.lan", "infra", "n", "u2", time.Hour, "10.0.0.2")},
			want: claimWords{endpoints: []string{"nas.lan [10.0.0.2] []"}, changed: []string{"nas.lan"},
				conflicts: []string{"hostname nas.lan of tenant: a hand-made entry, which namespace tenant may not adopt"}}},
		{name: "an alias another namespace's entry carries and still asks for", records: []endpoint.Record{nsA},
			eps: []*endpoint.Endpoint{aliased(claim("a.lan", "ns-a", "a", "uid-a", time.Minute, "10.0.0.1"), "held.lan"),
				claim("held.lan", "ns-b", "b", "uid-b", 365*24*time.Hour, "10.6.6.6")},
			want: claimWords{endpoints: []string{"a.lan [10.0.0.1] [held.lan]"}, changed: []string{"held.lan"},
				conflicts: []string{"hostname held.lan of ns-b: namespace ns-a"}}},
		{name: "a hostname this cluster has an entry of", records: []endpoint.Record{hand, owned("w1", "files.lan", "10.0.0.1", PrefixNamespace+"ns", PrefixSource+"u1")},
			eps:  []*endpoint.Endpoint{claim("files.lan", "ns", "f", "u1", time.Hour, "10.0.0.1")},
			want: claimWords{endpoints: []string{"files.lan [10.0.0.1] []"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := tc.set
			if set == nil {
				set = func(*Config) {}
			}
			r := newRegWith(t, set)
			if got := wordsOfVerdicts(tc.eps, r.hostnames(claimsAt(r, tc.records, tc.eps), tc.eps)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
