package registry

import (
	"reflect"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestThePolicyStage: the plan knows no policy; the policy stage holds what --policy forbids,
// each with PolicyForbids and the policy, as external-dns applies its policy after its plan.
// A re-point that would put an address on a name whose held deletion still serves it is held
// with that deletion.
func TestThePolicyStage(t *testing.T) {
	adopted := endpoint.Record{ID: "a", Hostname: "app.lan", IP: "10.0.0.1", Version: "1",
		Tags: []string{"manual", "pre-existing:true", "k8s-operator", "cluster:home", "kind:Ingress", "namespace:d", "source:u", "original-ip:10.0.0.1"}}
	created := owned("c", "app.lan", "10.0.0.3", "kind:Ingress", "namespace:d", "source:u")
	for _, tc := range []struct {
		name    string
		policy  plan.Policy
		records []endpoint.Record
		eps     []*endpoint.Endpoint
		sent    []string
		held    []string
	}{
		{name: "sync marks a name no object wants", policy: plan.PolicySync, records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1")},
			sent: []string{"mark old.lan 1"}},
		{name: "upsert-only holds the deletion", policy: plan.UpsertOnly, records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1")},
			held: []string{"delete old.lan 1"}},
		{name: "upsert-only re-points", policy: plan.UpsertOnly, records: []endpoint.Record{owned("1", "web.lan", "10.0.0.1", "kind:Ingress", "namespace:d", "source:u")},
			eps: []*endpoint.Endpoint{claim("web.lan", "d", "n", "u", 0, "10.0.0.2")}, sent: []string{"update web.lan 1"}},
		{name: "upsert-only: an adopted entry takes no address a held deletion keeps", policy: plan.UpsertOnly, records: []endpoint.Record{adopted, created},
			eps: []*endpoint.Endpoint{claim("app.lan", "d", "n", "u", 0, "10.0.0.3")}, held: []string{"delete app.lan c", "update app.lan a"}},
		{name: "create-only creates a new name and holds the re-point", policy: plan.CreateOnly, records: []endpoint.Record{owned("1", "web.lan", "10.0.0.1", "kind:Ingress", "namespace:d", "source:u")},
			eps:  []*endpoint.Endpoint{claim("web.lan", "d", "n", "u", 0, "10.0.0.2"), claim("new.lan", "d", "m", "v", 0, "10.0.0.4")},
			sent: []string{"create new.lan"}, held: []string{"update web.lan 1"}},
		{name: "create-only holds a deletion and an adoption", policy: plan.CreateOnly,
			records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1"), {ID: "h", Hostname: "nas.lan", IP: "10.0.0.9", Version: "1"}},
			eps:     []*endpoint.Endpoint{claim("nas.lan", "d", "n", "u", 0, "10.0.0.9")}, held: []string{"adopt nas.lan h", "delete old.lan 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := run(newReg(t, tc.policy), t0, tc.records, tc.eps...)
			if got := actions(v); !reflect.DeepEqual(got, tc.sent) {
				t.Errorf("sent %q, want %q", got, tc.sent)
			}
			var held []string
			for _, h := range v.Held {
				if h.Stage != "policy" || h.Reason != ReasonPolicy || h.Policy != tc.policy {
					t.Errorf("held %+v: want the policy stage's PolicyForbids under %s", h, tc.policy)
				}
				id := ""
				if h.Change.Old != nil {
					id = " " + h.Change.Old.ID
				}
				held = append(held, string(h.Change.Action)+" "+h.Change.Hostname()+id)
			}
			if !reflect.DeepEqual(held, tc.held) {
				t.Errorf("held %q, want %q", held, tc.held)
			}
		})
	}
}
