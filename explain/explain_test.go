package explain

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

const id = "0123abcd"

// decided runs the registry's decision over records and claims, as a sync does, and wraps it
// as the Input explain reads.
func decided(t *testing.T, records []endpoint.Record, claims ...*endpoint.Endpoint) *Input {
	t.Helper()
	return decidedWithin(t, nil, []string{"guest.home.arpa"}, records, claims...)
}

// decidedWithin is decided with the domain filter include, exclude, which the Input carries as
// the operator's does.
func decidedWithin(t *testing.T, include, exclude []string, records []endpoint.Record, claims ...*endpoint.Endpoint) *Input {
	t.Helper()
	reg, err := registry.New(registry.Config{ClusterName: "home", ClusterID: id, GracePeriod: 5 * time.Minute, Brake: registry.DefaultBrake(),
		Budgets: registry.DefaultBudgets(), DomainFilter: include, ExcludeDomains: exclude})
	if err != nil {
		t.Fatal(err)
	}
	filter, err := endpoint.NewDomainFilter(include, exclude)
	if err != nil {
		t.Fatal(err)
	}
	d := reg.Decide(now, records, claims, registry.Given{})
	objects := map[string]controller.Object{}
	for _, ep := range claims {
		o := objects[ep.Sources[0].UID]
		o.Endpoints = append(o.Endpoints, ep)
		objects[ep.Sources[0].UID] = o
	}
	rep := &controller.Report{Desired: d.Desired, Changes: d.Changes, Held: d.Held, Conflicts: d.Conflicts, Problems: d.Problems,
		State: d.State, Objects: objects, Unmanaged: d.Unmanaged, Started: now}
	return &Input{Report: rep, Owners: reg.Ownerships(d.State, d.Silent), Now: now, DomainFilter: filter}
}

func claim(ns, name, uid, host string, ips ...string) *endpoint.Endpoint {
	return &endpoint.Endpoint{Hostname: host, Targets: ips,
		Sources: []endpoint.SourceRef{{Kind: "Ingress", Group: "networking.k8s.io", Namespace: ns, Name: name, UID: uid, CreationTimestamp: now.Add(-time.Hour)}}}
}

// ours is an entry this installation wrote for the object uid.
func ours(rid, host, ip, ns, uid string, extra ...string) endpoint.Record {
	tags := append([]string{"k8s-operator", "cluster:home", "cluster-id:" + id, "namespace:" + ns, "kind:Ingress", "source:" + uid}, extra...)
	return endpoint.Record{ID: rid, Hostname: host, IP: ip, Tags: tags, Version: "1", Comment: "router-hosts-operator: Ingress " + ns + "/web"}
}

// TestExplainName: each situation a name can be in gives its code, the facts and the summary,
// as the registry decided them.
func TestExplainName(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		records  []endpoint.Record
		claims   []*endpoint.Endpoint
		name     string
		code     string // the first claim's first outcome, or the first note
		holder   string
		state    string // the first entry's
		words    string // in the first entry's owner
		asWanted bool
	}{
		{desc: "synced", records: []endpoint.Record{ours("1", "web.home.arpa", "10.0.0.1", "apps", "u1")},
			claims: []*endpoint.Endpoint{claim("apps", "web", "u1", "web.home.arpa", "10.0.0.1")},
			name:   "web.home.arpa", code: Synced, state: StateSynced, words: "Ingress apps/web", asWanted: true},
		{desc: "a create the next sync writes", claims: []*endpoint.Endpoint{claim("apps", "web", "u1", "web.home.arpa", "10.0.0.1")},
			name: "WEB.home.arpa.", code: Pending},
		{desc: "an address the next sync changes", records: []endpoint.Record{ours("1", "web.home.arpa", "10.0.0.1", "apps", "u1")},
			claims: []*endpoint.Endpoint{claim("apps", "web", "u1", "web.home.arpa", "10.0.0.2")},
			name:   "web.home.arpa", code: Pending, state: StateWillChange},
		{desc: "another cluster holds it",
			records: []endpoint.Record{{ID: "9", Hostname: "web.home.arpa", IP: "10.9.9.9", Tags: []string{"k8s-operator", "cluster:lab", "cluster-id:fedcba98"}}},
			claims:  []*endpoint.Endpoint{claim("apps", "web", "u1", "web.home.arpa", "10.0.0.1")},
			name:    "web.home.arpa", code: registry.ReasonHostnameConflict, holder: "cluster lab", state: "other-cluster", words: "another cluster: cluster lab"},
		{desc: "a namesake's entry",
			records: []endpoint.Record{{ID: "9", Hostname: "old.home.arpa", IP: "10.9.9.9", Tags: []string{"k8s-operator", "cluster:home", "cluster-id:fedcba98", "source:elsewhere"}}},
			name:    "old.home.arpa", code: Unclaimed, state: "namesake", words: "cluster-id fedcba98"},
		{desc: "hand-made, nobody claims it", records: []endpoint.Record{{ID: "5", Hostname: "nas.home.arpa", IP: "192.168.1.10", Tags: []string{"mine"}}},
			name: "nas.home.arpa", code: Unclaimed, state: "hand-made", words: "hand-made"},
		{desc: "an object gone: marked, goes after the grace period",
			records: []endpoint.Record{ours("1", "old.home.arpa", "10.0.0.1", "apps", "gone", "pending-deletion:"+now.Add(-time.Minute).Format(time.RFC3339))},
			name:    "old.home.arpa", code: Unclaimed, state: StatePendingDeletion, words: "no longer in the cluster (uid gone)"},
		{desc: "an alias", records: []endpoint.Record{ours("1", "web.home.arpa", "10.0.0.1", "apps", "u1")},
			claims: []*endpoint.Endpoint{func() *endpoint.Endpoint {
				ep := claim("apps", "web", "u1", "web.home.arpa", "10.0.0.1")
				ep.Aliases = []string{"www.home.arpa"}
				return ep
			}()},
			name: "www.home.arpa", code: Pending},
		{desc: "outside the domain filter: its entry goes", records: []endpoint.Record{ours("1", "tv.guest.home.arpa", "10.0.0.1", "apps", "u1")},
			claims: []*endpoint.Endpoint{claim("apps", "web", "u1", "tv.guest.home.arpa", "10.0.0.1")},
			name:   "tv.guest.home.arpa", code: OutsideDomainFilter, state: StateWillChange, words: "Ingress apps/web"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := ExplainName(decided(t, tc.records, tc.claims...), tc.name)
			code, holder := "", ""
			if len(got.Claims) > 0 {
				code, holder = got.Claims[0].Outcomes[0].Code, got.Claims[0].Outcomes[0].Holder
			} else if len(got.Notes) > 0 {
				code = got.Notes[0].Code
			}
			if code != tc.code || holder != tc.holder {
				t.Errorf("code %s holder %q, want %s %q: %+v", code, holder, tc.code, tc.holder, got)
			}
			if got.AsWanted != tc.asWanted {
				t.Errorf("as wanted %v, want %v", got.AsWanted, tc.asWanted)
			}
			if tc.state != "" {
				if len(got.Entries) == 0 {
					t.Fatalf("no entries, want one %s", tc.state)
				}
				if e := got.Entries[0]; e.State != tc.state || !strings.Contains(e.Owner.Words, tc.words) {
					t.Errorf("entry %s %q, want %s containing %q", e.State, e.Owner.Words, tc.state, tc.words)
				}
			}
		})
	}
}

// TestOutsideDomainFilterNamesTheFilter: a claim outside the domain filter is told the
// filter's value as the decision had it, the domain that excludes it when one does, and where
// to widen it: the flags, or the RouterHostsConfig that sets it.
func TestOutsideDomainFilterNamesTheFilter(t *testing.T) {
	for _, tc := range []struct {
		desc             string
		include, exclude []string
		setBy            string
		host             string
		message, fix     string
	}{
		{desc: "under no domain of the filter", include: []string{"home.lab", "lab.internal"}, host: "web.example.org",
			message: "web.example.org is outside the names this operator manages (--domain-filter=home.lab --domain-filter=lab.internal)",
			fix:     "add the name's domain to --domain-filter (now --domain-filter=home.lab --domain-filter=lab.internal)"},
		{desc: "excluded", include: []string{"home.lab"}, exclude: []string{"guest.home.lab"}, host: "tv.guest.home.lab",
			message: "tv.guest.home.lab is outside the names this operator manages (--domain-filter=home.lab --exclude-domains=guest.home.lab): it is under the excluded guest.home.lab",
			fix:     "take guest.home.lab out of --exclude-domains (now --domain-filter=home.lab --exclude-domains=guest.home.lab)"},
		{desc: "set by a RouterHostsConfig", include: []string{"home.lab"}, setBy: "default", host: "web.example.org",
			message: "web.example.org is outside the names this operator manages (--domain-filter=home.lab, as RouterHostsConfig default sets it)",
			fix:     "add the name's domain to spec.domainFilter of RouterHostsConfig default (now --domain-filter=home.lab)"},
		{desc: "excluded by a RouterHostsConfig", exclude: []string{"guest.home.lab"}, setBy: "default", host: "tv.guest.home.lab",
			message: "(--exclude-domains=guest.home.lab, as RouterHostsConfig default sets it): it is under the excluded guest.home.lab",
			fix:     "take guest.home.lab out of spec.excludeDomains of RouterHostsConfig default"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			in := decidedWithin(t, tc.include, tc.exclude, nil, claim("apps", "web", "u1", tc.host, "10.0.0.1"))
			in.DomainFilterSetBy = tc.setBy
			got := ExplainName(in, tc.host)
			if len(got.Claims) != 1 || len(got.Claims[0].Outcomes) == 0 {
				t.Fatalf("%+v: want one claim with outcomes", got)
			}
			o := got.Claims[0].Outcomes[0]
			if o.Code != OutsideDomainFilter || !strings.Contains(o.Message, tc.message) || !strings.Contains(o.Fix, tc.fix) {
				t.Errorf("%s: %q, fix %q; want %s with %q, fix with %q", o.Code, o.Message, o.Fix, OutsideDomainFilter, tc.message, tc.fix)
			}
		})
	}
}

// TestTheDNSAnswerDecidesAsWanted: a name on the router that its DNS does not answer as written
// is not as wanted, and says why.
func TestTheDNSAnswerDecidesAsWanted(t *testing.T) {
	in := decided(t, []endpoint.Record{ours("1", "web.home.arpa", "10.0.0.1", "apps", "u1")}, claim("apps", "web", "u1", "web.home.arpa", "10.0.0.1"))
	in.Answers = map[string]Answer{"web.home.arpa": {Server: "192.168.1.1:53", Want: []string{"10.0.0.1"}}}
	got := ExplainName(in, "web.home.arpa")
	if got.AsWanted || len(got.Notes) != 1 || got.Notes[0].Code != NotAnswering || !strings.Contains(got.Notes[0].Message, "answers nothing") {
		t.Errorf("%+v: want NotAnswering and not as wanted", got)
	}
	in.Answers["web.home.arpa"] = Answer{Server: "192.168.1.1:53", Answering: true, Got: []string{"10.0.0.1"}, Want: []string{"10.0.0.1"}}
	if got := ExplainName(in, "web.home.arpa"); !got.AsWanted {
		t.Errorf("%+v: want as wanted once it answers", got)
	}
}

// TestListFilters: list's filters pick by owner, state and namespace.
func TestListFilters(t *testing.T) {
	in := decided(t, []endpoint.Record{
		ours("1", "web.home.arpa", "10.0.0.1", "apps", "u1"),
		ours("2", "old.home.arpa", "10.0.0.2", "tools", "gone", "pending-deletion:"+now.Format(time.RFC3339)),
		{ID: "5", Hostname: "nas.home.arpa", IP: "192.168.1.10"},
		{ID: "9", Hostname: "lab.home.arpa", IP: "10.9.9.9", Tags: []string{"k8s-operator", "cluster:lab"}},
	}, claim("apps", "web", "u1", "web.home.arpa", "10.0.0.1"))
	hosts := func(f Filter) []string {
		var out []string
		for _, e := range List(in, f) {
			out = append(out, e.Hostname)
		}
		return out
	}
	for _, tc := range []struct {
		f    Filter
		want []string
	}{
		{Filter{}, []string{"lab.home.arpa", "nas.home.arpa", "old.home.arpa", "web.home.arpa"}},
		{Filter{Owner: "this"}, []string{"old.home.arpa", "web.home.arpa"}},
		{Filter{Owner: "other"}, []string{"lab.home.arpa"}},
		{Filter{Owner: "hand-made"}, []string{"nas.home.arpa"}},
		{Filter{State: StatePendingDeletion}, []string{"old.home.arpa"}},
		{Filter{Namespace: "apps"}, []string{"web.home.arpa"}},
	} {
		if got := hosts(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
	}
	if err := (Filter{Owner: "mine"}).Check(); err == nil {
		t.Error("--owner=mine accepted")
	}
}

// TestTheDocsListEveryCodeAndState: docs/explain.md, which scripts read for the codes, lists
// each code explain gives and each state list prints.
func TestTheDocsListEveryCodeAndState(t *testing.T) {
	doc, err := os.ReadFile("../docs/explain.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Codes() {
		if !strings.Contains(strings.ReplaceAll(string(doc), "`", ""), "| "+c.Code+" | "+c.Meaning) {
			t.Errorf("docs/explain.md lacks the row of %s (%s)", c.Code, c.Meaning)
		}
	}
	for _, s := range States() {
		if !strings.Contains(string(doc), "`"+s+"`") {
			t.Errorf("docs/explain.md lacks the state %s", s)
		}
	}
}

// TestListSharedAndSilent: another cluster's line this cluster co-owns lists as co-owned (under
// --owner=this), an entry of a shared name says so with its co-owners, and the entries of an
// installation whose newest heartbeat is older than the threshold list as silent-cluster
// (under --owner=other), with when it was last seen and the release command.
func TestListSharedAndSilent(t *testing.T) {
	reg, err := registry.New(registry.Config{ClusterName: "home", ClusterID: id, GracePeriod: 5 * time.Minute, SilentClusterAfter: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	shared := claim("apps", "web", "u1", "web.home.arpa", "10.0.0.5")
	shared.Shared = true
	records := []endpoint.Record{
		{ID: "01A", Hostname: "web.home.arpa", IP: "10.0.0.5", Version: "1",
			Tags: []string{"k8s-operator", "cluster:lab", "cluster-id:1111aaaa", "shared:true", "alive:" + now.Add(-time.Hour).Format(time.RFC3339), registry.CoOwnerTag("home", id)}},
		{ID: "01B", Hostname: "old.home.arpa", IP: "10.0.0.6", Version: "1",
			Tags: []string{"k8s-operator", "cluster:gone", "cluster-id:2222bbbb", "alive:" + now.Add(-72*time.Hour).Format(time.RFC3339)}},
	}
	d := reg.Decide(now, records, []*endpoint.Endpoint{shared}, registry.Given{})
	if len(d.Changes) != 0 {
		t.Fatalf("changes %v: the co-owned line is as wanted", d.Changes)
	}
	rep := &controller.Report{Desired: d.Desired, Changes: d.Changes, Held: d.Held, State: d.State, Started: now}
	in := &Input{Report: rep, Owners: reg.Ownerships(d.State, d.Silent), Now: now}
	got := map[string]RouterEntry{}
	for _, e := range List(in, Filter{}) {
		got[e.Hostname] = e
	}
	if e := got["web.home.arpa"]; e.State != "co-owned" || !e.Owner.Shared || !strings.Contains(e.Owner.Words, "co-owns") {
		t.Errorf("web.home.arpa: %+v, want co-owned and shared", e)
	}
	if e := got["old.home.arpa"]; e.State != "silent-cluster" || e.Owner.LastSeen == nil ||
		!strings.Contains(e.Owner.Words, "router-hosts-operator release --cluster-name=gone --cluster-id=2222bbbb") {
		t.Errorf("old.home.arpa: %+v, want silent-cluster with the release command", e)
	}
	for f, want := range map[string]string{"this": "web.home.arpa", "other": "old.home.arpa"} {
		l := List(in, Filter{Owner: f})
		if len(l) != 1 || l[0].Hostname != want {
			t.Errorf("--owner=%s lists %v, want %s", f, l, want)
		}
	}
}
