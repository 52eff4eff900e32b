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
	return Current{Record: endpoint.Record{ID: id, Hostname: host, IP: ip, Tags: tags, Comment: "c", Version: "1"}}
}

// summary renders changes as "action host ip[→ip] id" strings for compact expectations.
func summary(cs []Change) []string {
	var out []string
	for _, c := range cs {
		switch {
		case c.Old == nil:
			out = append(out, string(c.Action)+" "+c.New.Hostname+" "+c.New.IP)
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
	adopted := cur("1", "a.lan", "10.0.0.1", "k8s-operator", "mine", "pre-existing:true")
	adopted.Adopted, adopted.Keep, adopted.Comment = true, []string{"mine", "pre-existing:true"}, "user's own"

	tests := []struct {
		name    string
		current []Current
		desired []*endpoint.Endpoint
		policy  Policy
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
		{name: "duplicate entry for one ip is a delete", current: []Current{cur("1", "a.lan", "10.0.0.1"), cur("2", "a.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.1")},
			want: []string{"delete a.lan 10.0.0.1 2"}},
		{name: "hostname gone is a delete", current: []Current{cur("1", "a.lan", "10.0.0.1")},
			want: []string{"delete a.lan 10.0.0.1 1"}},
		{name: "held endpoint keeps entries", current: []Current{cur("1", "a.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("a.lan")}},
		{name: "held endpoint creates nothing", desired: []*endpoint.Endpoint{ep("a.lan")}},
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
		{name: "upsert-only never deletes", policy: UpsertOnly, current: []Current{cur("1", "a.lan", "10.0.0.1"), cur("2", "b.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.2")},
			want: []string{"update a.lan 10.0.0.1→10.0.0.2 1 ip"}},
		{name: "create-only neither updates nor deletes", policy: CreateOnly, current: []Current{cur("1", "a.lan", "10.0.0.1"), cur("2", "b.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("a.lan", "10.0.0.2"), ep("c.lan", "10.0.0.3")},
			want: []string{"create a.lan 10.0.0.2", "create c.lan 10.0.0.3"}},
		{name: "sorted by hostname then action", current: []Current{cur("9", "b.lan", "10.0.0.1"), cur("8", "z.lan", "10.0.0.1")}, desired: []*endpoint.Endpoint{ep("c.lan", "10.0.0.2"), ep("a.lan", "10.0.0.3"), ep("b.lan", "10.0.0.2", "10.0.0.4")},
			want: []string{"create a.lan 10.0.0.3", "update b.lan 10.0.0.1→10.0.0.2 9 ip", "create b.lan 10.0.0.4", "create c.lan 10.0.0.2", "delete z.lan 10.0.0.1 8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Current: tc.current, Desired: tc.desired, Policy: tc.policy}
			got := summary(p.Calculate())
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCalculateAdoptedUpdateKeepsOwnTags(t *testing.T) {
	c := cur("1", "a.lan", "10.0.0.1", "k8s-operator", "mine", "pre-existing:true")
	c.Adopted, c.Keep, c.Comment = true, []string{"mine", "pre-existing:true"}, "user's own"
	want := ep("a.lan", "10.0.0.2")
	want.Tags = []string{"user-tag"}
	cs := (&Plan{Current: []Current{c}, Desired: []*endpoint.Endpoint{want}}).Calculate()
	if len(cs) != 1 {
		t.Fatalf("want one change, got %v", summary(cs))
	}
	got := cs[0].New
	if !reflect.DeepEqual(got.Tags, []string{"k8s-operator", "mine", "pre-existing:true"}) || got.Comment != "user's own" || got.IP != "10.0.0.2" {
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
