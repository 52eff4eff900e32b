package registry

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestANamespaceAtItsBudget: its new hostnames wait, oldest claim first; its entries stay;
// other namespaces are not affected; when it has room again the next waiting one is written.
func TestANamespaceAtItsBudget(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets.EntriesPerNamespace = 4 })
	s := &server{}
	have := hostsOf(3, "t.lan", "tenant", "have", "u-have", 2*time.Hour, "10.0.0.1")
	s.sync(r, t0, have...)
	newer := claim("newer.t.lan", "tenant", "newer", "u-newer", time.Minute, "10.0.0.2")
	older := claim("older.t.lan", "tenant", "older", "u-older", time.Hour, "10.0.0.3")
	elsewhere := claim("x.o.lan", "other", "x", "u-x", 0, "10.0.0.4")
	eps := append(slices.Clone(have), newer, older, elsewhere)
	res, st := s.sync(r, t0, eps...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"create older.t.lan", "create x.o.lan"}) {
		t.Fatalf("changes = %q", got)
	}
	if got := problemsOf(st); !reflect.DeepEqual(got, []string{"OverBudget tenant/newer"}) {
		t.Fatalf("problems = %q", got)
	}
	if res, _ := s.sync(r, t0, eps...); len(res.Changes) != 0 {
		t.Fatalf("second sync writes %v", actions(res))
	}
	// One of the three is no longer wanted: marked, it still counts, so newer waits.
	eps = append(slices.Clone(have[:2]), newer, older, elsewhere)
	res, st = s.sync(r, t0, eps...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"mark h0002.t.lan n003"}) || !reflect.DeepEqual(problemsOf(st), []string{"OverBudget tenant/newer"}) {
		t.Fatalf("marked: changes %q problems %q", got, problemsOf(st))
	}
	// Its grace period over, it is deleted; the sync after that writes newer.
	res, _ = s.sync(r, t0.Add(6*time.Minute), eps...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"delete h0002.t.lan n003"}) {
		t.Fatalf("the grace period over: changes %q", got)
	}
	res, st = s.sync(r, t0.Add(6*time.Minute), eps...)
	if got := actions(res); !reflect.DeepEqual(got, []string{"create newer.t.lan"}) || len(st.Problems) != 0 {
		t.Fatalf("with room again: changes %q problems %q", got, problemsOf(st))
	}
}

// TestANamespaceBudgetCountsEntries: the budget counts what the router stores. A hostname it
// has that asks for more addresses grows only within the budget (the entries it has stay,
// and a moved address is re-pointed); entries waiting out a long grace period count until
// they are gone, so deleting and creating objects again never piles up entries past it.
func TestANamespaceBudgetCountsEntries(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets.EntriesPerNamespace = 5 })
	t.Run("one hostname from one address to forty", func(t *testing.T) {
		s := &server{}
		s.sync(r, t0, claim("web.t.lan", "tenant", "web", "u-web", time.Hour, "10.0.0.1"))
		var ips []string
		for i := 1; i <= 40; i++ {
			ips = append(ips, fmt.Sprintf("10.0.1.%d", i))
		}
		for i := 0; i < 3; i++ {
			res, st := s.sync(r, t0, claim("web.t.lan", "tenant", "web", "u-web", time.Hour, ips...))
			if len(s.entries) != 1 || !reflect.DeepEqual(problemsOf(st), []string{"OverBudget tenant/web"}) {
				t.Fatalf("sync %d: %v; %d entries, problems %q", i, actions(res), len(s.entries), problemsOf(st))
			}
			if !strings.Contains(st.Problems[0].Message, "39 of web.t.lan's 40 addresses") {
				t.Fatalf("message %q", st.Problems[0].Message)
			}
		}
		if s.entries[0].IP != "10.0.1.1" {
			t.Fatalf("the address it has was not re-pointed to one wanted: %v", s.entries)
		}
		// Four addresses fit: all of them are written.
		res, st := s.sync(r, t0, claim("web.t.lan", "tenant", "web", "u-web", time.Hour, ips[:4]...))
		if len(s.entries) != 4 || len(st.Problems) != 0 {
			t.Fatalf("within the budget: %v, problems %q", actions(res), problemsOf(st))
		}
	})
	t.Run("delete and create again under a long grace period", func(t *testing.T) {
		s := &server{}
		year := 365 * 24 * time.Hour
		now := t0
		for cycle := 0; cycle < 4; cycle++ {
			var eps []*endpoint.Endpoint
			for i := 0; i < 5; i++ {
				ep := claim(fmt.Sprintf("c%d-%d.t.lan", cycle, i), "tenant", "app", fmt.Sprintf("u-%d-%d", cycle, i), time.Hour, "10.0.0.1")
				ep.GracePeriod = &year
				eps = append(eps, ep)
			}
			for i := 0; i < 2; i++ {
				s.sync(r, now, eps...)
				now = now.Add(time.Minute)
			}
		}
		if len(s.entries) > 5 {
			t.Fatalf("%d entries after four cycles, budget 5", len(s.entries))
		}
	})
}

// TestTheNamespaceBudgetStage: a namespace keeps the entries it has; what it adds beyond its
// budget of entries (marked ones, and the entries of hostnames it let go, count until they are
// gone) waits, the oldest claim admitted first: a new hostname is left out, a grown one keeps as
// many addresses as it has entries, those it has first. Each object left out is reported once;
// other namespaces go on.
func TestTheNamespaceBudgetStage(t *testing.T) {
	have := hostsOf(3, "t.lan", "t", "have", "u-have", 2*time.Hour, "10.0.0.1")
	var haveEntries []endpoint.Record
	for i, ep := range have {
		haveEntries = append(haveEntries, owned(fmt.Sprintf("o%d", i), ep.Hostname, "10.0.0.1", PrefixNamespace+"t", PrefixSource+"u-have"))
	}
	newer := claim("newer.t.lan", "t", "newer", "u-newer", time.Minute, "10.0.0.2")
	older := claim("older.t.lan", "t", "older", "u-older", time.Hour, "10.0.0.3")
	elsewhere := claim("x.o.lan", "o", "x", "u-x", 0, "10.0.0.4")
	all := append(slices.Clone(have), newer, older, elsewhere)
	everything := []string{"h0000.t.lan [10.0.0.1] []", "h0001.t.lan [10.0.0.1] []", "h0002.t.lan [10.0.0.1] []",
		"newer.t.lan [10.0.0.2] []", "older.t.lan [10.0.0.3] []", "x.o.lan [10.0.0.4] []"}
	for _, tc := range []struct {
		name    string
		limit   int
		records []endpoint.Record
		eps     []*endpoint.Endpoint
		want    claimWords
	}{
		{name: "no budget", records: haveEntries, eps: all, want: claimWords{endpoints: everything}},
		{name: "within it", limit: 5, records: haveEntries, eps: all, want: claimWords{endpoints: everything}},
		{name: "new hostnames wait, the oldest claim first", limit: 4, records: haveEntries, eps: all,
			want: claimWords{endpoints: []string{"h0000.t.lan [10.0.0.1] []", "h0001.t.lan [10.0.0.1] []", "h0002.t.lan [10.0.0.1] []",
				"older.t.lan [10.0.0.3] []", "x.o.lan [10.0.0.4] []"}, changed: []string{"newer.t.lan"}, problems: []string{"OverBudget t/newer"}}},
		{name: "a grown hostname keeps the addresses of its entries", limit: 2,
			records: []endpoint.Record{owned("w1", "web.t.lan", "10.0.1.9", PrefixNamespace+"t", PrefixSource+"u-web")},
			eps:     []*endpoint.Endpoint{claim("web.t.lan", "t", "web", "u-web", time.Hour, "10.0.1.1", "10.0.1.2", "10.0.1.9")},
			want:    claimWords{endpoints: []string{"web.t.lan [10.0.1.9] []"}, changed: []string{"web.t.lan"}, problems: []string{"OverBudget t/web"}}},
		{name: "the entries of a hostname let go count until they are gone", limit: 2,
			records: []endpoint.Record{owned("g1", "gone.t.lan", "10.0.0.1", PrefixNamespace+"t", PrefixSource+"u-gone", PrefixPending+t0.Format(time.RFC3339)),
				owned("g2", "gone.t.lan", "10.0.0.2", PrefixNamespace+"t", PrefixSource+"u-gone", PrefixPending+t0.Format(time.RFC3339))},
			eps:  []*endpoint.Endpoint{newer, elsewhere},
			want: claimWords{endpoints: []string{"x.o.lan [10.0.0.4] []"}, changed: []string{"newer.t.lan"}, problems: []string{"OverBudget t/newer"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.Budgets.EntriesPerNamespace = tc.limit })
			in := claimsAt(r, tc.records, tc.eps)
			merged := mergedAt(r, in, tc.eps)
			if got := wordsOfVerdicts(merged, r.namespaceBudget(in, merged)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
