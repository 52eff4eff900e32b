package registry

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestEveryRefusalNamesItsStage: each claim stage that turns a claim down, or a part of one,
// says so in the verdict's Stage, with the word of its Event as the Reason, whatever it is;
// what no stage refuses is merged.
func TestEveryRefusalNamesItsStage(t *testing.T) {
	r := newRegWith(t, func(c *Config) {
		c.Tenancy = Tenancy{Domains: []NamespaceDomains{{Namespace: "*", Domains: []string{"lan"}}}}
		c.Budgets = Budgets{EntriesPerObject: 3, EntriesPerNamespace: 4}
	})
	foreign := endpoint.Record{ID: "f1", Hostname: "theirs.lan", IP: "10.9.9.9", Version: "1", Tags: []string{TagOwner, ClusterTag("other")}}
	hand := endpoint.Record{ID: "h1", Hostname: "nas.lan", IP: "192.168.1.5", Version: "1", Tags: []string{TagNoAdopt}}
	held := owned("o1", "held.lan", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u-held")
	tagged := claim("tagged.lan", "a", "tagged", "u1", time.Hour, "10.0.1.1")
	tagged.Tags = []string{"k8s-operator"}
	wide := claim("wide.lan", "a", "wide", "u2", time.Hour, "10.0.2.1", "10.0.2.2", "10.0.2.3", "10.0.2.4")
	aliased := claim("aliased.lan", "b", "aliased", "u9", 3*time.Hour, "10.0.9.1")
	aliased.Aliases = []string{"held.lan"}
	eps := []*endpoint.Endpoint{
		tagged, wide, aliased,
		claim("tv.example.net", "b", "tv", "u3", time.Hour, "10.0.3.1"),
		claim("theirs.lan", "a", "theirs", "u4", time.Hour, "10.0.4.1"),
		claim("nas.lan", "a", "nas", "u5", time.Hour, "192.168.1.5"),
		claim("held.lan", "a", "held", "u-held", 2*time.Hour, "10.0.0.1"),
		claim("held.lan", "b", "steal", "u6", 3*time.Hour, "10.0.6.1"),
		claim("one.lan", "c", "one", "u7", time.Hour, "10.0.7.1", "10.0.7.2", "10.0.7.3"),
		claim("two.lan", "c", "two", "u8", 30*time.Minute, "10.0.8.1", "10.0.8.2"),
	}
	records := []endpoint.Record{foreign, hand, held}
	st := r.classify(records, eps, nil, nil)
	w := r.desired(t0, eps, st, nil)
	stages := map[string]string{}
	for _, c := range w.Conflicts {
		stages[c.Loser.Name+" "+c.Hostname] = c.Stage + " " + c.Reason
	}
	for _, p := range w.Problems {
		stages[p.Source.Name+" "+string(p.Kind)] = p.Stage + " " + p.Reason
	}
	for what, stage := range map[string]string{
		"tagged ReservedTag": "reserved-tags InvalidAnnotation",
		"wide OverBudget":    "object-budget OverBudget",
		"tv NotPermitted":    "tenancy NameNotPermitted",
		"nas nas.lan":        "hostnames HostnameConflict",
		"theirs theirs.lan":  "foreign HostnameConflict",
		"steal held.lan":     "merge HostnameConflict",
		"aliased held.lan":   "aliases HostnameConflict",
		"two OverBudget":     "namespace-budget OverBudget",
	} {
		if got, ok := stages[what]; !ok || got != stage {
			t.Errorf("%s: stage %q (reported: %v), want %q", what, got, ok, stage)
		}
	}
	if len(stages) != 8 {
		t.Errorf("refusals: %v", stages)
	}
	var hosts []string
	for _, ep := range w.Endpoints {
		hosts = append(hosts, ep.Hostname)
	}
	if got, want := strings.Join(hosts, " "), "aliased.lan held.lan one.lan tagged.lan"; got != want {
		t.Errorf("merged %s, want %s", got, want)
	}
}

// TestEveryHeldChangeNamesItsStageAndFacts: what a change stage does not send is in the
// verdict's Held, with the stage, the reason and the fact behind it: the policy, the time a
// marked entry goes, the brake's token.
func TestEveryHeldChangeNamesItsStageAndFacts(t *testing.T) {
	entry := func(id string, extra ...string) endpoint.Record {
		return owned(id, id+".lan", "10.0.0.1", append([]string{PrefixNamespace + "a", PrefixSource + "gone-" + id}, extra...)...)
	}
	marked := PrefixPending + t0.Format(time.RFC3339)
	for _, tc := range []struct {
		name    string
		set     func(*Config)
		records []endpoint.Record
		claims  []*endpoint.Endpoint
		now     time.Time
		given   Given
		want    Held
	}{
		{name: "create-only adopts nothing", set: func(c *Config) { c.Policy = plan.CreateOnly },
			records: []endpoint.Record{{ID: "h1", Hostname: "nas.lan", IP: "10.0.0.9", Version: "1"}}, now: t0,
			claims: []*endpoint.Endpoint{claim("nas.lan", "a", "nas", "u1", time.Hour, "10.0.0.9")},
			want:   Held{Stage: "policy", Reason: ReasonPolicy, Policy: plan.CreateOnly}},
		{name: "a marked entry waits out its grace period", set: func(c *Config) {},
			records: []endpoint.Record{entry("e1", marked)}, now: t0.Add(time.Minute),
			want: Held{Stage: "grace", Reason: ReasonGracePeriod, Due: t0.Add(5 * time.Minute)}},
		{name: "the brake holds a mass deletion", set: func(c *Config) { c.Brake = DefaultBrake() },
			records: func() []endpoint.Record {
				var out []endpoint.Record
				for i := range 12 {
					out = append(out, entry(fmt.Sprintf("e%d", i)))
				}
				return out
			}(), now: t0,
			want: Held{Stage: "brake", Reason: ReasonMassDeletionHeld}},
		{name: "a plan from the known state creates no hostname not searched", set: func(c *Config) {},
			claims: []*endpoint.Endpoint{claim("new.lan", "a", "new", "u1", time.Hour, "10.0.0.7")}, now: t0,
			given: Given{Read: Read{Partial: true, Searched: "other.lan"}},
			want:  Held{Stage: "whole-read", Reason: ReasonWholeReadNeeded}},
		{name: "a plan from the known state deletes nothing", set: func(c *Config) {},
			records: []endpoint.Record{entry("e1", PrefixPending+t0.Add(-time.Hour).Format(time.RFC3339))}, now: t0,
			given: Given{Read: Read{Partial: true, SearchesLone: true}},
			want:  Held{Stage: "whole-read", Reason: ReasonWholeReadNeeded}},
		{name: "an object over its write-rate budget waits", set: func(c *Config) { c.Budgets.ObjectWritesPerMinute = 2 },
			claims: []*endpoint.Endpoint{claim("fast.lan", "a", "fast", "u1", time.Hour, "10.0.0.7")}, now: t0,
			given: Given{Rates: Rates{"object/u1": {Tokens: 0, Cap: 2, At: t0}}},
			want:  Held{Stage: "rate", Reason: ReasonOverBudget, Due: t0.Add(30 * time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, tc.set)
			v := r.Decide(tc.now, tc.records, tc.claims, tc.given).Verdict
			if len(v.Held) == 0 || len(v.Changes) != 0 {
				t.Fatalf("sent %v, held %d", actions(v), len(v.Held))
			}
			want := tc.want
			if v.Braked != nil {
				want.Token = v.Braked.Token
			}
			for _, h := range v.Held {
				h.Change = plan.Change{}
				if h != want {
					t.Errorf("held %+v, want %+v", h, want)
				}
			}
		})
	}
}
