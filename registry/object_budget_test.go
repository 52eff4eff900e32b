package registry

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestAnObjectOverItsBudgetKeepsWhatItHas: an object that grows past its budget gets no new
// name, keeps its entries exactly (not marked, not changed), and is reported; back within, it
// syncs again.
func TestAnObjectOverItsBudgetKeepsWhatItHas(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets = Budgets{EntriesPerObject: 10, AliasesPerObject: 8, TagsPerObject: 4} })
	s := &server{}
	small := hostsOf(3, "app.lan", "tenant", "big", "u-big", time.Hour, "10.0.0.1")
	other := claim("other.lan", "tenant", "other", "u-other", time.Hour, "10.0.0.2")
	s.sync(r, t0, append(slices.Clone(small), other)...)
	before := slices.Clone(s.entries)
	if len(before) != 4 {
		t.Fatalf("entries = %d, want 4", len(before))
	}
	for _, tc := range []struct {
		name string
		eps  []*endpoint.Endpoint
	}{
		{"3,000 hostnames", hostsOf(3000, "app.lan", "tenant", "big", "u-big", time.Hour, "10.6.6.6")},
		{"too many aliases", func() []*endpoint.Endpoint {
			out := hostsOf(3, "app.lan", "tenant", "big", "u-big", time.Hour, "10.0.0.1")
			for _, ep := range out {
				aliased(ep, "a1.app.lan", "a2.app.lan", "a3.app.lan")
			}
			return out
		}()},
		{"too many tags", func() []*endpoint.Endpoint {
			out := hostsOf(3, "app.lan", "tenant", "big", "u-big", time.Hour, "10.0.0.1")
			for _, ep := range out {
				ep.Tags = []string{"t1", "t2", "t3", "t4", "t5"}
			}
			return out
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &server{entries: slices.Clone(before), next: 100}
			changedOther := claim("other.lan", "tenant", "other", "u-other", time.Hour, "10.0.0.3")
			res, st := s.sync(r, t0, append(slices.Clone(tc.eps), changedOther)...)
			// The other object of the namespace still syncs; the big one writes nothing.
			if got := actions(res); len(got) != 1 || got[0] != "update other.lan n004" {
				t.Fatalf("changes = %q, want only other.lan's update", got)
			}
			if got := problemsOf(st); !reflect.DeepEqual(got, []string{"OverBudget tenant/big"}) {
				t.Fatalf("problems = %q", got)
			}
			for _, e := range s.entries[:3] {
				if !slices.ContainsFunc(before, func(b endpoint.Record) bool { return reflect.DeepEqual(b, e) }) {
					t.Fatalf("entry %s changed: %+v", e.Hostname, e)
				}
			}
			if res, _ := s.sync(r, t0, append(slices.Clone(tc.eps), changedOther)...); len(res.Changes) != 0 {
				t.Fatalf("second sync writes %v", actions(res))
			}
		})
	}
	// Back within the budget with a fourth hostname: it is written.
	s = &server{entries: slices.Clone(before), next: 100}
	res, st := s.sync(r, t0, append(hostsOf(4, "app.lan", "tenant", "big", "u-big", time.Hour, "10.0.0.1"), other)...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"create h0003.app.lan"}) || len(st.Problems) != 0 {
		t.Fatalf("within budget: changes %q problems %q", got, problemsOf(st))
	}
}

// TestAnObjectsMarkedEntriesCount: an object's entries marked for deletion count against its
// budget until they are gone, so an object that keeps trading names for others cannot have
// more than its budget on the router.
func TestAnObjectsMarkedEntriesCount(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets = Budgets{EntriesPerObject: 4} })
	s := &server{}
	s.sync(r, t0, hostsOf(3, "old.lan", "tenant", "app", "u-app", time.Hour, "10.0.0.1")...)
	// The object lets its three names go: they are marked, and stay until their grace period
	// ends.
	s.sync(r, t0.Add(time.Minute), claim("keep.lan", "tenant", "app", "u-app", time.Hour, "10.0.0.1"))
	// Three marked and two new names is five: the new names wait.
	eps := []*endpoint.Endpoint{claim("a.new.lan", "tenant", "app", "u-app", time.Hour, "10.0.0.1"), claim("b.new.lan", "tenant", "app", "u-app", time.Hour, "10.0.0.1")}
	res, st := s.sync(r, t0.Add(2*time.Minute), eps...)
	if got := problemsOf(st); !reflect.DeepEqual(got, []string{"OverBudget tenant/app"}) || slices.ContainsFunc(res.Changes, func(c plan.Change) bool { return c.Action == plan.Create }) {
		t.Fatalf("with three marked: %v, problems %q", actions(res), got)
	}
	// Once they are gone, the new names are written.
	s.sync(r, t0.Add(10*time.Minute), eps...)
	res, st = s.sync(r, t0.Add(10*time.Minute), eps...)
	if got := actions(res); len(st.Problems) != 0 || len(s.byName("a.new.lan")) != 1 || len(s.byName("b.new.lan")) != 1 {
		t.Fatalf("after the grace period: %v, problems %q, entries %v", got, problemsOf(st), s.entries)
	}
}

// TestTheObjectBudgetStage: an object over a budget per object is reported once, and each of
// its hostnames is changed: a claim on one it has entries of is frozen (no address, so its
// entries keep theirs, with their aliases and tags), one on a new name is dropped. Its entries
// marked for deletion count until they are gone. The other objects go on.
func TestTheObjectBudgetStage(t *testing.T) {
	budgets := Budgets{EntriesPerObject: 2, AliasesPerObject: 2, TagsPerObject: 2}
	big := func(host string) *endpoint.Endpoint { return claim(host, "a", "big", "u1", time.Hour, "10.0.0.1") }
	other := claim("other.lan", "a", "other", "u2", time.Hour, "10.0.0.2")
	entry := withAliases(owned("o1", "a.lan", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u1", "team-a"), "x.lan")
	for _, tc := range []struct {
		name    string
		records []endpoint.Record
		eps     []*endpoint.Endpoint
		want    claimWords
	}{
		{name: "within every budget", records: []endpoint.Record{entry},
			eps:  []*endpoint.Endpoint{big("a.lan"), big("b.lan"), other},
			want: claimWords{endpoints: []string{"a.lan [10.0.0.1] []", "b.lan [10.0.0.1] []", "other.lan [10.0.0.2] []"}}},
		{name: "over the entries: no new name",
			eps: []*endpoint.Endpoint{big("a.lan"), big("b.lan"), big("c.lan"), other},
			want: claimWords{endpoints: []string{"other.lan [10.0.0.2] []"}, changed: []string{"a.lan", "b.lan", "c.lan"},
				problems: []string{"OverBudget a/big"}}},
		{name: "over the tags: what it has is frozen as it is", records: []endpoint.Record{entry},
			eps: func() []*endpoint.Endpoint {
				a, b := big("a.lan"), big("b.lan")
				a.Tags, b.Tags = []string{"t1", "t2", "t3"}, []string{"t1", "t2", "t3"}
				return []*endpoint.Endpoint{a, b, other}
			}(),
			want: claimWords{endpoints: []string{"a.lan [] [x.lan] tags [team-a]", "other.lan [10.0.0.2] []"}, changed: []string{"a.lan", "b.lan"},
				problems: []string{"OverBudget a/big"}}},
		{name: "over the aliases",
			eps:  []*endpoint.Endpoint{aliased(big("a.lan"), "x.lan", "y.lan", "z.lan"), other},
			want: claimWords{endpoints: []string{"other.lan [10.0.0.2] []"}, changed: []string{"a.lan"}, problems: []string{"OverBudget a/big"}}},
		{name: "an entry marked for deletion counts until it is gone",
			records: []endpoint.Record{owned("m1", "old.lan", "10.0.0.9", PrefixNamespace+"a", PrefixSource+"u1", PrefixPending+t0.Format(time.RFC3339))},
			eps:     []*endpoint.Endpoint{big("a.lan"), big("b.lan"), other},
			want: claimWords{endpoints: []string{"other.lan [10.0.0.2] []"}, changed: []string{"a.lan", "b.lan"},
				problems: []string{"OverBudget a/big"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.Budgets = budgets })
			if got := wordsOfVerdicts(tc.eps, r.objectBudget(claimsAt(r, tc.records, tc.eps), tc.eps)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
