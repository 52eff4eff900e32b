package registry

import (
	"reflect"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestTheReservedTagsStage: each tag of the operator's among a claim's tags is reported on the
// claim's object, with the tag; the claims go on as they came, since merge writes none of them.
func TestTheReservedTagsStage(t *testing.T) {
	tagged := func(host, name, uid string, tags ...string) *endpoint.Endpoint {
		ep := claim(host, "a", name, uid, time.Hour, "10.0.0.1")
		ep.Tags = tags
		return ep
	}
	mark := PrefixPending + t0.Format(time.RFC3339)
	for _, tc := range []struct {
		name     string
		eps      []*endpoint.Endpoint
		problems []string
	}{
		{name: "a user's own tags", eps: []*endpoint.Endpoint{tagged("web.lan", "web", "u1", "team-a", "homelab", "clusters:many")}},
		{name: "the owner tag", eps: []*endpoint.Endpoint{tagged("web.lan", "web", "u1", "team-a", TagOwner)},
			problems: []string{"ReservedTag a/web k8s-operator"}},
		{name: "each reserved tag, on its own object",
			eps: []*endpoint.Endpoint{tagged("web.lan", "web", "u1", PrefixCluster+"other", "team-a", mark), tagged("db.lan", "db", "u2", TagShared),
				tagged("ok.lan", "ok", "u3", "team-b")},
			problems: []string{"ReservedTag a/web cluster:other", "ReservedTag a/web " + mark, "ReservedTag a/db shared:true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReg(t, "")
			v := r.reservedTags(claimsAt(r, nil, tc.eps), tc.eps)
			if got := wordsOfVerdicts(tc.eps, v); !reflect.DeepEqual(got.problems, tc.problems) || got.changed != nil || got.conflicts != nil {
				t.Errorf("problems %q, changed %q, conflicts %q; want the problems %q alone", got.problems, got.changed, got.conflicts, tc.problems)
			}
			if !reflect.DeepEqual(v.endpoints, tc.eps) {
				t.Errorf("sent on %v, want the claims as they came", wordsOfVerdicts(tc.eps, v).endpoints)
			}
		})
	}
}
