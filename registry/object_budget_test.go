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
