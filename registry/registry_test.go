package registry

import (
	"reflect"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func newReg(t *testing.T, policy plan.Policy) *Registry {
	t.Helper()
	r, err := New(Config{ClusterName: "home", DefaultTags: []string{"homelab"}, GracePeriod: 5 * time.Minute, Policy: policy, Log: logrus.New()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func claim(host, ns, name, uid string, age time.Duration, ips ...string) *endpoint.Endpoint {
	return &endpoint.Endpoint{Hostname: host, Targets: ips, Sources: []endpoint.SourceRef{{Kind: "Ingress", Namespace: ns, Name: name, UID: uid, CreationTimestamp: t0.Add(-age)}}}
}

func owned(id, host, ip string, extra ...string) endpoint.Record {
	return endpoint.Record{ID: id, Hostname: host, IP: ip, Version: "1", Tags: append([]string{"k8s-operator", "cluster:home"}, extra...)}
}

// run is one full registry+plan pass, as the controller does it.
func run(r *Registry, now time.Time, records []endpoint.Record, eps ...*endpoint.Endpoint) Result {
	st := r.Classify(records)
	desired := r.Desired(eps, st)
	changes := (&plan.Plan{Current: r.Current(st), Desired: desired, Policy: r.cfg.Policy}).Calculate()
	return r.Apply(now, st, desired, changes)
}

func actions(res Result) []string {
	var out []string
	for _, c := range res.Changes {
		id := ""
		if c.Old != nil {
			id = " " + c.Old.ID
		}
		out = append(out, string(c.Action)+" "+c.Hostname()+id)
	}
	return out
}

func TestTagsOfCreatedEntry(t *testing.T) {
	r := newReg(t, plan.Sync)
	ep := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	ep.Tags = []string{"team-a"}
	g := 30 * time.Second
	ep.GracePeriod = &g
	res := run(r, t0, nil, ep)
	if len(res.Changes) != 1 || res.Changes[0].Action != plan.Create {
		t.Fatalf("changes = %v", actions(res))
	}
	want := []string{"cluster:home", "grace-period:30", "homelab", "k8s-operator", "kind:Ingress", "namespace:default", "source:uid-1", "team-a"}
	if got := res.Changes[0].New.Tags; !reflect.DeepEqual(got, want) {
		t.Fatalf("tags = %q, want %q", got, want)
	}
	if got := res.Changes[0].New.Comment; got != "router-hosts-operator: Ingress default/web" {
		t.Fatalf("comment = %q", got)
	}
}

func TestApply(t *testing.T) {
	marked := func(at time.Time, extra ...string) []string {
		return append([]string{PrefixPending + at.Format(time.RFC3339)}, extra...)
	}
	unowned := endpoint.Record{ID: "u1", Hostname: "nas.lan", IP: "192.168.1.5", Tags: []string{"manual"}, Comment: "mine", Version: "3"}
	foreign := endpoint.Record{ID: "f1", Hostname: "shared.lan", IP: "10.9.9.9", Tags: []string{"k8s-operator", "cluster:other"}, Version: "1"}
	tests := []struct {
		name       string
		policy     plan.Policy
		records    []endpoint.Record
		eps        []*endpoint.Endpoint
		want       []string
		pending    int
		nextExpiry time.Time
	}{
		{name: "adopt unowned entry", records: []endpoint.Record{unowned}, eps: []*endpoint.Endpoint{claim("nas.lan", "d", "n", "u", 0, "10.0.0.5")},
			want: []string{"adopt nas.lan u1"}},
		{name: "create-only does not adopt", policy: plan.CreateOnly, records: []endpoint.Record{unowned}, eps: []*endpoint.Endpoint{claim("nas.lan", "d", "n", "u", 0, "10.0.0.5")}},
		{name: "another cluster's hostname is left alone", records: []endpoint.Record{foreign}, eps: []*endpoint.Endpoint{claim("shared.lan", "d", "n", "u", 0, "10.0.0.5")}},
		{name: "gone hostname is marked", records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1")},
			want: []string{"mark old.lan 1"}, pending: 1, nextExpiry: t0.Add(5 * time.Minute)},
		{name: "mark not yet due does nothing", records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1", marked(t0.Add(-time.Minute))...)},
			pending: 1, nextExpiry: t0.Add(4 * time.Minute)},
		{name: "due mark deletes", records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1", marked(t0.Add(-5*time.Minute))...)},
			want: []string{"delete old.lan 1"}},
		{name: "entry's own grace period applies after the object is gone", records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1", marked(t0.Add(-time.Minute), "grace-period:30")...)},
			want: []string{"delete old.lan 1"}},
		{name: "due mark on adopted entry releases", records: []endpoint.Record{owned("1", "nas.lan", "10.0.0.1", marked(t0.Add(-time.Hour), "pre-existing:true", "manual")...)},
			want: []string{"release nas.lan 1"}},
		{name: "reappearing hostname is unmarked", records: []endpoint.Record{owned("1", "web.lan", "10.0.0.1", marked(t0.Add(-time.Minute), "homelab", "kind:Ingress", "namespace:d", "source:u")...)},
			eps: []*endpoint.Endpoint{claim("web.lan", "d", "n", "u", 0, "10.0.0.1")}, want: []string{"unmark web.lan 1"}},
		{name: "held hostname is unmarked", records: []endpoint.Record{owned("1", "web.lan", "10.0.0.1", marked(t0.Add(-time.Minute))...)},
			eps: []*endpoint.Endpoint{claim("web.lan", "d", "n", "u", 0)}, want: []string{"unmark web.lan 1"}},
		{name: "upsert-only never marks", policy: plan.UpsertOnly, records: []endpoint.Record{owned("1", "old.lan", "10.0.0.1")}},
		{name: "unowned entries are never deleted", records: []endpoint.Record{unowned}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			policy := tc.policy
			if policy == "" {
				policy = plan.Sync
			}
			res := run(newReg(t, policy), t0, tc.records, tc.eps...)
			if got := actions(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes = %q, want %q", got, tc.want)
			}
			if res.Pending != tc.pending {
				t.Errorf("pending = %d, want %d", res.Pending, tc.pending)
			}
			if !res.NextExpiry.Equal(tc.nextExpiry) {
				t.Errorf("next expiry = %v, want %v", res.NextExpiry, tc.nextExpiry)
			}
		})
	}
}

func TestAdoptKeepsOwnTagsAndReleaseRestoresThem(t *testing.T) {
	r := newReg(t, plan.Sync)
	unowned := endpoint.Record{ID: "u1", Hostname: "nas.lan", IP: "192.168.1.5", Tags: []string{"manual"}, Comment: "mine", Version: "3"}
	res := run(r, t0, []endpoint.Record{unowned}, claim("nas.lan", "d", "n", "uid", 0, "10.0.0.5"))
	n := res.Changes[0].New
	want := []string{"cluster:home", "k8s-operator", "kind:Ingress", "manual", "namespace:d", "pre-existing:true", "source:uid"}
	if !reflect.DeepEqual(n.Tags, want) || n.IP != "10.0.0.5" || n.Comment != "mine" || n.ID != "u1" {
		t.Fatalf("adopted = %+v", n)
	}
	// The next sync with the same claim is a no-op.
	if res := run(r, t0, []endpoint.Record{*n}, claim("nas.lan", "d", "n", "uid", 0, "10.0.0.5")); len(res.Changes) != 0 {
		t.Fatalf("second sync = %v", actions(res))
	}
	// The claim goes: mark, then release after the grace period with the user's tags only.
	res = run(r, t0, []endpoint.Record{*n})
	m := res.Changes[0].New
	res = run(r, t0.Add(6*time.Minute), []endpoint.Record{*m})
	if got := actions(res); !reflect.DeepEqual(got, []string{"release nas.lan u1"}) {
		t.Fatalf("changes = %v", got)
	}
	if got := res.Changes[0].New.Tags; !reflect.DeepEqual(got, []string{"manual"}) {
		t.Fatalf("released tags = %q", got)
	}
}

func TestDesiredClaims(t *testing.T) {
	r := newReg(t, plan.Sync)
	old := claim("app.lan", "team-a", "app", "uid-a", time.Hour, "10.0.0.1")
	sameNS := claim("app.lan", "team-a", "app-api", "uid-a2", time.Minute, "10.0.0.2")
	intruder := claim("app.lan", "team-b", "steal", "uid-b", 0, "10.6.6.6")
	got := r.Desired([]*endpoint.Endpoint{intruder, sameNS, old}, r.Classify(nil))
	if len(got) != 1 {
		t.Fatalf("desired = %d endpoints", len(got))
	}
	if want := []string{"10.0.0.1", "10.0.0.2"}; !reflect.DeepEqual(got[0].Targets, want) {
		t.Fatalf("targets = %q, want %q", got[0].Targets, want)
	}
	want := []string{"cluster:home", "k8s-operator", "kind:Ingress", "namespace:team-a", "source:uid-a", "source:uid-a2"}
	if !reflect.DeepEqual(got[0].OwnerTags, want) {
		t.Fatalf("owner tags = %q, want %q", got[0].OwnerTags, want)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{ClusterName: ""},
		{ClusterName: "has space"},
		{ClusterName: "ok", DefaultTags: []string{"a,b"}},
		{ClusterName: "ok", DefaultTags: []string{"k8s-operator"}},
		{ClusterName: "ok", GracePeriod: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
}
