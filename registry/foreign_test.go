package registry

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestTheForeignStage: a claim on a hostname another cluster holds is turned down, naming that
// cluster, unless both consent to share it (the claim is shared, and so is every entry of the
// other cluster's); where both have entries and neither consents, the older entry's cluster
// holds it.
func TestTheForeignStage(t *testing.T) {
	theirs := endpoint.Record{ID: "f1", Hostname: "app.lan", IP: "10.9.9.9", Version: "1", Tags: []string{TagOwner, PrefixCluster + "other", PrefixNamespace + "x"}}
	theirsShared := theirs
	theirsShared.Tags = append(slices.Clone(theirs.Tags), TagShared)
	app := func(shared bool) *endpoint.Endpoint {
		ep := claim("app.lan", "a", "app", "u1", time.Hour, "10.0.0.1")
		ep.Shared = shared
		return ep
	}
	web := claim("web.lan", "a", "web", "u2", time.Hour, "10.0.0.2")
	refused := claimWords{endpoints: []string{"web.lan [10.0.0.2] []"}, changed: []string{"app.lan"}, conflicts: []string{"hostname app.lan of a: cluster other"}}
	for _, tc := range []struct {
		name    string
		records []endpoint.Record
		eps     []*endpoint.Endpoint
		want    claimWords
	}{
		{name: "no other cluster's entry", eps: []*endpoint.Endpoint{app(false), web},
			want: claimWords{endpoints: []string{"app.lan [10.0.0.1] []", "web.lan [10.0.0.2] []"}}},
		{name: "another cluster holds it", records: []endpoint.Record{theirs}, eps: []*endpoint.Endpoint{app(false), web}, want: refused},
		{name: "both share it", records: []endpoint.Record{theirsShared}, eps: []*endpoint.Endpoint{app(true), web},
			want: claimWords{endpoints: []string{"app.lan [10.0.0.1] []", "web.lan [10.0.0.2] []"}}},
		{name: "shared here, not there", records: []endpoint.Record{theirs}, eps: []*endpoint.Endpoint{app(true), web}, want: refused},
		{name: "shared there, not here", records: []endpoint.Record{theirsShared}, eps: []*endpoint.Endpoint{app(false), web}, want: refused},
		{name: "after a race, neither sharing: the older entry's, here ours",
			records: []endpoint.Record{theirs, owned("a0", "app.lan", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u1")},
			eps:     []*endpoint.Endpoint{app(false), web},
			want:    claimWords{endpoints: []string{"app.lan [10.0.0.1] []", "web.lan [10.0.0.2] []"}}},
		{name: "after a race, neither sharing: the older entry's, here theirs",
			records: []endpoint.Record{theirs, owned("g0", "app.lan", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u1")},
			eps:     []*endpoint.Endpoint{app(false), web}, want: refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(*Config) {})
			if got := wordsOfVerdicts(tc.eps, r.foreign(claimsAt(r, tc.records, tc.eps), tc.eps)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
