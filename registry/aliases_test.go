package registry

import (
	"reflect"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestTheAliasesStage: after the merge, every alias obeys the rule hostnames obey: an alias
// that is another namespace's hostname, another cluster's or a hand-made entry's name, or that
// an older claim of another namespace asks for too, is taken off a copy of the merged endpoint
// and reported on the objects that asked for it.
func TestTheAliasesStage(t *testing.T) {
	hand := endpoint.Record{ID: "h1", Hostname: "nas.lan", IP: "192.168.1.5", Tags: []string{"manual"}, Version: "1"}
	theirs := endpoint.Record{ID: "f1", Hostname: "shared.lan", IP: "10.9.9.9", Version: "1", Tags: []string{TagOwner, PrefixCluster + "other", PrefixNamespace + "x"}}
	mine := func(aliases ...string) *endpoint.Endpoint {
		return aliased(claim("mine.lan", "ns", "m", "u-m", 0, "10.0.0.1"), aliases...)
	}
	for _, tc := range []struct {
		name    string
		records []endpoint.Record
		eps     []*endpoint.Endpoint
		want    claimWords
	}{
		{name: "no name of anyone else's", records: []endpoint.Record{hand, theirs},
			eps:  []*endpoint.Endpoint{mine("www.lan")},
			want: claimWords{endpoints: []string{"mine.lan [10.0.0.1] [www.lan]"}}},
		{name: "another namespace's hostname",
			eps: []*endpoint.Endpoint{claim("grafana.lan", "monitoring", "g", "u-g", time.Hour, "10.0.0.3"),
				aliased(claim("app.lan", "tenant", "app", "u-t", 2*time.Hour, "10.6.6.6"), "grafana.lan", "app2.lan")},
			want: claimWords{endpoints: []string{"app.lan [10.6.6.6] [app2.lan]", "grafana.lan [10.0.0.3] []"}, changed: []string{"app.lan"},
				conflicts: []string{"alias grafana.lan of tenant: namespace monitoring"}}},
		{name: "two namespaces ask for one alias: the older claim's",
			eps: []*endpoint.Endpoint{aliased(claim("a.lan", "ns-a", "a", "u-a", time.Hour, "10.0.0.1"), "both.lan"),
				aliased(claim("b.lan", "ns-b", "b", "u-b", time.Minute, "10.0.0.2"), "both.lan")},
			want: claimWords{endpoints: []string{"a.lan [10.0.0.1] [both.lan]", "b.lan [10.0.0.2] []"}, changed: []string{"b.lan"},
				conflicts: []string{"alias both.lan of ns-b: namespace ns-a"}}},
		{name: "a hand-made entry's hostname", records: []endpoint.Record{hand},
			eps: []*endpoint.Endpoint{mine("nas.lan", "www.lan")},
			want: claimWords{endpoints: []string{"mine.lan [10.0.0.1] [www.lan]"}, changed: []string{"mine.lan"},
				conflicts: []string{"alias nas.lan of ns: the hand-made entry nas.lan"}}},
		{name: "another cluster's hostname", records: []endpoint.Record{theirs},
			eps: []*endpoint.Endpoint{mine("shared.lan")},
			want: claimWords{endpoints: []string{"mine.lan [10.0.0.1] []"}, changed: []string{"mine.lan"},
				conflicts: []string{"alias shared.lan of ns: cluster other"}}},
		{name: "a hostname of the namespace's own",
			eps: []*endpoint.Endpoint{claim("grafana.lan", "monitoring", "g", "u-g", time.Hour, "10.0.0.3"),
				aliased(claim("dash.lan", "monitoring", "d", "u-d", 2*time.Hour, "10.0.0.3"), "grafana.lan")},
			want: claimWords{endpoints: []string{"dash.lan [10.0.0.3] [grafana.lan]", "grafana.lan [10.0.0.3] []"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(*Config) {})
			in := claimsAt(r, tc.records, tc.eps)
			merged := mergedAt(r, in, tc.eps)
			if got := wordsOfVerdicts(merged, r.aliases(in, merged)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
