package registry

import (
	"reflect"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestTheAdoptionStage: a hand-made entry of the hostname is adoptable when the namespace may
// adopt and the entry does not say no-adopt; an address one it may not adopt already serves
// is taken off a copy of the merged endpoint: the name answers with it already, and a line
// beside the user's would double it.
func TestTheAdoptionStage(t *testing.T) {
	hand := endpoint.Record{ID: "h1", Hostname: "nas.lan", IP: "192.168.1.5", Tags: []string{"manual"}, Version: "1"}
	locked := endpoint.Record{ID: "l1", Hostname: "nas.lan", IP: "192.168.1.6", Tags: []string{"manual", TagNoAdopt}, Version: "1"}
	nobody := func(c *Config) { c.Tenancy.Adopters = []string{} }
	for _, tc := range []struct {
		name    string
		set     func(*Config)
		records []endpoint.Record
		eps     []*endpoint.Endpoint
		want    claimWords
	}{
		{name: "every namespace may adopt", set: func(*Config) {}, records: []endpoint.Record{hand},
			eps:  []*endpoint.Endpoint{claim("nas.lan", "tenant", "n", "u1", time.Hour, "192.168.1.5", "10.0.0.9")},
			want: claimWords{endpoints: []string{"nas.lan [10.0.0.9 192.168.1.5] []"}, adopt: []string{"nas.lan h1"}}},
		{name: "a namespace that may not adopt", set: nobody, records: []endpoint.Record{hand},
			eps: []*endpoint.Endpoint{claim("nas.lan", "tenant", "n", "u1", time.Hour, "192.168.1.5", "10.0.0.9"),
				claim("web.lan", "tenant", "w", "u2", time.Hour, "192.168.1.5")},
			want: claimWords{endpoints: []string{"nas.lan [10.0.0.9] []", "web.lan [192.168.1.5] []"}, changed: []string{"nas.lan"}}},
		{name: "an entry that says no-adopt", set: func(*Config) {}, records: []endpoint.Record{hand, locked},
			eps:  []*endpoint.Endpoint{claim("nas.lan", "infra", "n", "u1", time.Hour, "192.168.1.5", "192.168.1.6", "10.0.0.9")},
			want: claimWords{endpoints: []string{"nas.lan [10.0.0.9 192.168.1.5] []"}, changed: []string{"nas.lan"}, adopt: []string{"nas.lan h1"}}},
		{name: "a hand-made entry at another address", set: nobody, records: []endpoint.Record{hand},
			eps:  []*endpoint.Endpoint{claim("nas.lan", "tenant", "n", "u1", time.Hour, "10.0.0.9")},
			want: claimWords{endpoints: []string{"nas.lan [10.0.0.9] []"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, tc.set)
			in := claimsAt(r, tc.records, tc.eps)
			merged := mergedAt(r, in, tc.eps)
			v := r.adoption(in, merged)
			if got := wordsOfVerdicts(merged, v); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			for _, ep := range v.endpoints {
				if len(ep.TargetTags) != len(ep.Targets) {
					t.Errorf("%s: tags for %d addresses, has %d", ep.Hostname, len(ep.TargetTags), len(ep.Targets))
				}
			}
		})
	}
}
