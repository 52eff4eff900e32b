package registry

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestInDomains: a claim on a hostname outside --domain-filter, or inside --exclude-domains, is
// set aside; an alias is not this rule's (tenancy drops one outside); with no filter every claim
// goes on as it came.
func TestInDomains(t *testing.T) {
	app := claim("app.home.lan", "a", "app", "u1", time.Hour, "10.0.0.1")
	tv := claim("tv.iot.home.lan", "a", "tv", "u2", time.Hour, "10.0.0.2")
	bank := claim("bank.example.com", "b", "bank", "u3", time.Hour, "10.0.0.3")
	nas := claim("nas.home.lan", "b", "nas", "u4", time.Hour, "10.0.0.4")
	nas.Aliases = []string{"files.example.com"}
	eps := []*endpoint.Endpoint{app, tv, bank, nas}
	for _, tc := range []struct {
		name             string
		include, exclude []string
		want             claimWords
	}{
		{name: "no filter", want: claimWords{endpoints: []string{"app.home.lan [10.0.0.1] []", "tv.iot.home.lan [10.0.0.2] []",
			"bank.example.com [10.0.0.3] []", "nas.home.lan [10.0.0.4] [files.example.com]"}}},
		{name: "a domain filter", include: []string{"home.lan"},
			want: claimWords{endpoints: []string{"app.home.lan [10.0.0.1] []", "tv.iot.home.lan [10.0.0.2] []", "nas.home.lan [10.0.0.4] [files.example.com]"}}},
		{name: "a domain filter and an excluded domain", include: []string{"home.lan"}, exclude: []string{"iot.home.lan"},
			want: claimWords{endpoints: []string{"app.home.lan [10.0.0.1] []", "nas.home.lan [10.0.0.4] [files.example.com]"}}},
		{name: "an excluded domain alone", exclude: []string{"example.com"},
			want: claimWords{endpoints: []string{"app.home.lan [10.0.0.1] []", "tv.iot.home.lan [10.0.0.2] []", "nas.home.lan [10.0.0.4] [files.example.com]"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.DomainFilter, c.ExcludeDomains = tc.include, tc.exclude })
			handed := slices.Clone(eps)
			kept, outside := r.inDomains(handed)
			if got := wordsOfVerdicts(kept, verdicts{endpoints: kept}); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if len(kept)+len(outside) != len(eps) {
				t.Errorf("kept %d and set aside %d of %d claims", len(kept), len(outside), len(eps))
			}
			if !slices.Equal(handed, eps) {
				t.Error("the split wrote to the claims it was handed")
			}
		})
	}
}

// TestTheUnmanagedClaimsAreTheDecisions: the Decision names the claims outside the managed
// domains, and nothing else tells of them: this cluster's entry of such a hostname is marked as
// one no claim wants, and no conflict or problem names the object.
func TestTheUnmanagedClaimsAreTheDecisions(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.DomainFilter = []string{"home.lan"} })
	tv := claim("tv.example.com", "a", "tv", "u2", time.Hour, "10.0.0.2")
	records := []endpoint.Record{owned("e2", "tv.example.com", "10.0.0.2", PrefixNamespace+"a", PrefixSource+"u2")}
	d := r.Decide(t0, records, []*endpoint.Endpoint{claim("app.home.lan", "a", "app", "u1", time.Hour, "10.0.0.1"), tv}, Given{})
	if !slices.Equal(d.Unmanaged, []*endpoint.Endpoint{tv}) || len(d.Conflicts)+len(d.Problems) != 0 {
		t.Errorf("unmanaged %v, conflicts %v, problems %v; want tv's claim alone, and nothing said", d.Unmanaged, d.Conflicts, d.Problems)
	}
	if got := actions(d.Verdict); !slices.Equal(got, []string{"create app.home.lan", "mark tv.example.com e2"}) {
		t.Errorf("changes %q", got)
	}
}
