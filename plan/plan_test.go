package plan

import (
	"reflect"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

func ep(host string, ips ...string) *endpoint.Endpoint {
	return &endpoint.Endpoint{Hostname: host, Targets: ips, OwnerTags: []string{"k8s-operator"}, Comment: "c"}
}

func cur(id, host, ip string, tags ...string) Current {
	if tags == nil {
		tags = []string{"k8s-operator"}
	}
	return Current{Record: endpoint.Record{ID: id, Hostname: host, IP: ip, Tags: tags, Comment: "c", Version: "1"}, Owner: endpoint.OwnerThis}
}

// summary renders changes as "action host ip[→ip] id" strings for compact expectations.
func summary(cs []Change) []string {
	var out []string
	for _, c := range cs {
		switch {
		case c.Old == nil:
			out = append(out, string(c.Action)+" "+c.New.Hostname+" "+c.New.IP)
		case c.New == nil && c.Duplicate:
			out = append(out, string(c.Action)+" "+c.Old.Hostname+" "+c.Old.IP+" "+c.Old.ID+" duplicate")
		case c.New == nil:
			out = append(out, string(c.Action)+" "+c.Old.Hostname+" "+c.Old.IP+" "+c.Old.ID)
		default:
			out = append(out, string(c.Action)+" "+c.Old.Hostname+" "+c.Old.IP+"→"+c.New.IP+" "+c.Old.ID+" "+c.Fields().String())
		}
	}
	return out
}

func TestCalculate(t *testing.T) {
	withAliases := ep("a.lan", "10.0.0.1")
	withAliases.Aliases = []string{"x.lan", "y.lan"}
	withTags := ep("a.lan", "10.0.0.1")
	withTags.Tags = []string{"team-a"}
	adopted := cur("1", "a.lan", "10.0.0.1", "mine", "pre-existing:true", "k8s-operator")
	adopted.Owner, adopted.Keep, adopted.Comment = endpoint.OwnerAdopted, []string{"mine", "pre-existing:true"}, "user's own"
	// as builds an entry of another class, with its own tags kept.
	as := func(c Current, class endpoint.Owner) Current {
		c.Owner = class
		if class != endpoint.OwnerThis {
			c.Keep = []string{"user"}
			c.Tags = []string{"user", "k8s-operator"}
			if class == endpoint.OwnerHandMade {
				c.Tags = []string{"user"}
			}
		}
		return c
	}

	tests := []struct {
		name    string
		current []Current
		desired []*endpoint.Endpoint
		want    []string
	}{
		{name: "create", desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			want: []string{"create a.lan 10.0.0.1"}},
		{name: "no-op", current: []Current{cur("1", "a.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")}},
		{name: "ip change updates in place", current: []Current{cur("1", "a.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.2")},
			want: []string{"update a.lan 10.0.0.1→10.0.0.2 1 ip"}},
		{name: "second target is a create", current: []Current{cur("1", "a.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1", "fd00::1")},
			want: []string{"create a.lan fd00::1"}},
		{name: "target removed is a delete", current: []Current{cur("1", "a.lan", "10.0.0.1"), cur("2", "a.lan", "fd00::1")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			want: []string{"delete a.lan fd00::1 2"}},
		{name: "duplicate entry for one ip is a delete at once", current: []Current{cur("1", "a.lan", "10.0.0.1"), cur("2", "a.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			want: []string{"delete a.lan 10.0.0.1 2 duplicate"}},
		{name: "hostname gone is a delete", current: []Current{cur("1", "a.lan", "10.0.0.1")},
			want: []string{"delete a.lan 10.0.0.1 1"}},
		{name: "no target deletes what the registry did not keep", current: []Current{cur("1", "a.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("a.lan")},
			want: []string{"delete a.lan 10.0.0.1 1"}},
		{name: "no target creates nothing", desired: []*endpoint.Endpoint{ep("a.lan")}},
		{name: "candidate with a wanted ip is adopted for it, the other ip created",
			current: []Current{as(cur("u", "a.lan", "10.0.0.2"), endpoint.OwnerHandMade)}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1", "10.0.0.2")},
			want: []string{"adopt a.lan 10.0.0.2→10.0.0.2 u tags", "create a.lan 10.0.0.1"}},
		{name: "candidates match without case and are re-spelled",
			current: []Current{as(cur("u", "NAS.lan", "10.0.0.5"), endpoint.OwnerHandMade)}, desired: []*endpoint.Endpoint{ep("nas.lan", "10.0.0.1")},
			want: []string{"adopt NAS.lan 10.0.0.5→10.0.0.1 u ip,hostname,tags"}},
		{name: "surplus candidates are left alone",
			current: []Current{as(cur("u1", "a.lan", "10.0.0.1"), endpoint.OwnerHandMade), as(cur("u2", "a.lan", "10.0.0.2"), endpoint.OwnerHandMade)}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			want: []string{"adopt a.lan 10.0.0.1→10.0.0.1 u1 tags"}},
		{name: "candidates of unwanted hostnames are left alone", current: []Current{as(cur("u", "a.lan", "10.0.0.1"), endpoint.OwnerHandMade)}},
		{name: "an adopted entry outlasts a created one while the hostname is wanted; the created one goes at once, never beside it at one address",
			current: []Current{as(cur("a", "a.lan", "10.0.0.1"), endpoint.OwnerAdopted), cur("c", "a.lan", "10.0.0.3")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.3")},
			want: []string{"delete a.lan 10.0.0.3 c duplicate", "update a.lan 10.0.0.1→10.0.0.3 a ip"}},
		{name: "an adopted entry does not take a candidate's address, which would leave two lines for it",
			current: []Current{as(cur("a", "a.lan", "10.0.0.1"), endpoint.OwnerAdopted), as(cur("u", "a.lan", "10.0.0.3"), endpoint.OwnerHandMade)}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.3")},
			want: []string{"delete a.lan 10.0.0.1 a", "adopt a.lan 10.0.0.3→10.0.0.3 u tags"}},
		{name: "shrinking to the adopted ip deletes the created entry",
			current: []Current{as(cur("a", "a.lan", "10.0.0.2"), endpoint.OwnerAdopted), cur("c", "a.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.2")},
			want: []string{"delete a.lan 10.0.0.1 c"}},
		{name: "a stale hand-made line is adopted rather than left beside a re-pointed created one",
			current: []Current{cur("c", "a.lan", "10.0.0.7"), as(cur("u", "a.lan", "10.0.0.9"), endpoint.OwnerHandMade)}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			want: []string{"delete a.lan 10.0.0.7 c", "adopt a.lan 10.0.0.9→10.0.0.1 u ip,tags"}},
		{name: "an owned entry with the ip wins over a candidate with it",
			current: []Current{cur("c", "a.lan", "10.0.0.1"), as(cur("u", "A.lan", "10.0.0.1"), endpoint.OwnerHandMade)}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")}},
		{name: "hostname gone deletes adopted entries too, never candidates",
			current: []Current{as(cur("a", "a.lan", "10.0.0.1"), endpoint.OwnerAdopted), as(cur("u", "a.lan", "10.0.0.2"), endpoint.OwnerHandMade)},
			want:    []string{"delete a.lan 10.0.0.1 a"}},
		{name: "aliases compare as sets", current: []Current{func() Current {
			c := cur("1", "a.lan", "10.0.0.1")
			c.Aliases = []string{"y.lan", "x.lan"}
			return c
		}()}, desired: []*endpoint.Endpoint{withAliases}},
		{name: "tags compare as sets", current: []Current{cur("1", "a.lan", "10.0.0.1", "team-a", "k8s-operator")}, desired: []*endpoint.Endpoint{withTags}},
		{name: "tag change updates only tags", current: []Current{cur("1", "a.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{withTags},
			want: []string{"update a.lan 10.0.0.1→10.0.0.1 1 tags"}},
		{name: "adopted entry keeps its tags and comment", current: []Current{adopted}, desired: []*endpoint.Endpoint{withTags}},
		{name: "pending mark not wanted is removed", current: []Current{cur("1", "a.lan", "10.0.0.1", "k8s-operator", "pending-deletion:2026-01-01T00:00:00Z")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			want: []string{"update a.lan 10.0.0.1→10.0.0.1 1 tags"}},
		{name: "sorted by hostname then action", current: []Current{cur("9", "b.lan", "10.0.0.1"), cur("8", "z.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("c.lan", "10.0.0.2"), ep("a.lan", "10.0.0.3"), ep("b.lan", "10.0.0.2", "10.0.0.4")},
			want: []string{"create a.lan 10.0.0.3", "update b.lan 10.0.0.1→10.0.0.2 9 ip", "create b.lan 10.0.0.4", "create c.lan 10.0.0.2", "delete z.lan 10.0.0.1 8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Current: tc.current, Desired: tc.desired}
			got := summary(p.Calculate())
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCalculateAdoptedUpdateKeepsOwnTags(t *testing.T) {
	c := cur("1", "a.lan", "10.0.0.1", "mine", "pre-existing:true", "k8s-operator")
	c.Owner, c.Keep, c.Comment = endpoint.OwnerAdopted, []string{"mine", "pre-existing:true"}, "user's own"
	want := ep("a.lan", "10.0.0.2")
	want.Tags = []string{"user-tag"}
	cs := (&Plan{Current: []Current{c}, Desired: []*endpoint.Endpoint{want}}).Calculate()
	if len(cs) != 1 {
		t.Fatalf("want one change, got %v", summary(cs))
	}
	got := cs[0].New
	if !reflect.DeepEqual(got.Tags, []string{"mine", "pre-existing:true", "k8s-operator"}) || got.Comment != "user's own" || got.IP != "10.0.0.2" {
		t.Fatalf("adopted update = %+v", got)
	}
}

func TestParsePolicy(t *testing.T) {
	for _, s := range []string{"sync", "upsert-only", "create-only"} {
		if _, err := ParsePolicy(s); err != nil {
			t.Errorf("ParsePolicy(%q): %v", s, err)
		}
	}
	if _, err := ParsePolicy("delete-all"); err == nil {
		t.Error("ParsePolicy accepted an unknown policy")
	}
}

func TestTargetTagsGoToTheirOwnEntry(t *testing.T) {
	want := ep("a.lan", "10.0.0.1", "10.0.0.2")
	want.TargetTags = map[string][]string{"10.0.0.1": {"source:a"}, "10.0.0.2": {"grace-period:2", "source:b"}}
	held := cur("2", "a.lan", "10.0.0.2", "grace-period:2", "k8s-operator", "source:b")
	cs := (&Plan{Current: []Current{held}, Desired: []*endpoint.Endpoint{want}}).Calculate()
	if got := summary(cs); !reflect.DeepEqual(got, []string{"create a.lan 10.0.0.1"}) {
		t.Fatalf("changes = %q; the entry already right must not be written", got)
	}
	if tags := cs[0].New.Tags; !reflect.DeepEqual(tags, []string{"k8s-operator", "source:a"}) {
		t.Fatalf("created tags = %q; want only its own target's tags", tags)
	}
}

func TestAdoptionKeepsUserTagsInOrderAheadOfOwnership(t *testing.T) {
	u := Current{Record: endpoint.Record{ID: "u", Hostname: "NAS.lan", IP: "10.0.0.5", Tags: []string{"z", "kind:printer", "a b"}, Comment: "mine"},
		Owner: endpoint.OwnerHandMade, Keep: []string{"z", "kind:printer", "a b", "pre-existing:true"}}
	want := ep("nas.lan", "10.0.0.5")
	want.Tags = []string{"cluster-user-tag"}
	want.TargetTags = map[string][]string{"10.0.0.5": {"source:x"}}
	cs := (&Plan{Current: []Current{u}, Desired: []*endpoint.Endpoint{want}}).Calculate()
	if len(cs) != 1 || cs[0].Action != Adopt {
		t.Fatalf("changes = %q", summary(cs))
	}
	n := cs[0].New
	if !reflect.DeepEqual(n.Tags, []string{"z", "kind:printer", "a b", "pre-existing:true", "k8s-operator", "source:x"}) || n.Comment != "mine" || n.Hostname != "nas.lan" {
		t.Fatalf("adopted = %+v", n)
	}
}

func sharedEp(host string, ips ...string) *endpoint.Endpoint {
	e := ep(host, ips...)
	e.Shared = true
	return e
}

// TestCoOwnedLines: another cluster's line of a shared hostname serves the address this cluster
// wants, gains this cluster's co-owner tag and nothing else, is never re-pointed or deleted, and
// loses the tag when the address is no longer wanted; a created line another cluster co-owns
// keeps that cluster's tag and is never re-pointed.
func TestCoOwnedLines(t *testing.T) {
	coOwned := func(ip string, tags ...string) Current {
		c := cur("9", "a.lan", ip, tags...)
		c.Owner, c.Keep, c.Trail = endpoint.OwnerCoOwned, []string{"k8s-operator", "cluster:a"}, []string{"co-owner:b@12345678"}
		return c
	}
	pinned := cur("1", "a.lan", "10.0.0.1", "k8s-operator", "co-owner:b@12345678")
	pinned.Keep, pinned.Pinned = []string{"co-owner:b@12345678"}, true
	yielding := cur("2", "a.lan", "10.0.0.1")
	yielding.Yields = true
	tests := []struct {
		name    string
		current []Current
		desired []*endpoint.Endpoint
		want    []string
	}{
		{"a co-owned line serves the address: only the tag is added",
			[]Current{coOwned("10.0.0.1", "k8s-operator", "cluster:a")}, []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			[]string{"update a.lan 10.0.0.1→10.0.0.1 9 tags"}},
		{"a co-owned line already tagged: nothing",
			[]Current{coOwned("10.0.0.1", "k8s-operator", "cluster:a", "co-owner:b@12345678")}, []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			nil},
		{"a co-owned line of another address is never re-pointed: the address is created, the tag withdrawn",
			[]Current{coOwned("10.0.0.2", "k8s-operator", "cluster:a", "co-owner:b@12345678")}, []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			[]string{"update a.lan 10.0.0.2→10.0.0.2 9 tags", "create a.lan 10.0.0.1"}},
		{"a hostname no longer wanted: the tag is withdrawn, the line never deleted",
			[]Current{coOwned("10.0.0.1", "k8s-operator", "cluster:a", "co-owner:b@12345678")}, nil,
			[]string{"update a.lan 10.0.0.1→10.0.0.1 9 tags"}},
		{"a created line another cluster co-owns keeps its tag",
			[]Current{pinned}, []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")}, nil},
		{"a created line that yields to an older co-owned line of its address is a duplicate: the co-owned line serves, gains the tag",
			[]Current{yielding, coOwned("10.0.0.1", "k8s-operator", "cluster:a")}, []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			[]string{"delete a.lan 10.0.0.1 2 duplicate", "update a.lan 10.0.0.1→10.0.0.1 9 tags"}},
		{"a shared hostname's entry is not re-pointed: the new address is created (AddHost refuses a double), the old deleted",
			[]Current{cur("3", "a.lan", "10.0.0.1")}, []*endpoint.Endpoint{sharedEp("a.lan", "10.0.0.2")},
			[]string{"delete a.lan 10.0.0.1 3", "create a.lan 10.0.0.2"}},
		{"a pinned line is not re-pointed: the new address is created, the line deleted (the registry hands it over)",
			[]Current{pinned}, []*endpoint.Endpoint{ep("a.lan", "10.0.0.2")},
			[]string{"delete a.lan 10.0.0.1 1", "create a.lan 10.0.0.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary((&Plan{Current: tt.current, Desired: tt.desired}).Calculate())
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
