package registry

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestEachEntryNamesItsOwnObjects: an entry's comment names the objects that want its address,
// so an object that comes and goes at another address of the hostname (a flap) rewrites no
// other object's entry, nor spends that object's write budget.
func TestEachEntryNamesItsOwnObjects(t *testing.T) {
	r := newRegWith(t, func(c *Config) {})
	web := claim("web.lan", "default", "web", "u-web", time.Hour, "10.0.0.1")
	api := claim("web.lan", "default", "api", "u-api", time.Minute, "10.0.0.1", "10.0.0.2")
	flap := claim("web.lan", "default", "flap", "u-flap", time.Second, "10.0.0.3")
	comments := func(eps ...*endpoint.Endpoint) map[string]string {
		out := map[string]string{}
		for _, c := range r.Decide(t0, nil, eps, Given{}).Changes {
			out[c.New.IP] = c.New.Comment
		}
		return out
	}
	want := map[string]string{
		"10.0.0.1": "router-hosts-operator: Ingress default/web (+1 more)",
		"10.0.0.2": "router-hosts-operator: Ingress default/api",
	}
	got := comments(web, api)
	for ip, c := range want {
		if got[ip] != c {
			t.Errorf("%s: comment %q, want %q", ip, got[ip], c)
		}
	}
	withFlap := comments(web, api, flap)
	for ip, c := range want {
		if withFlap[ip] != c {
			t.Errorf("with another object at another address, %s: comment %q, want %q", ip, withFlap[ip], c)
		}
	}
}

// TestAnEntrysTagsAreItsObjects: whether an entry shares its hostname comes from the objects
// that want its address alone. An object that does not share, at another
// address, leaves the others' entries as they are; the hostname is then not shared, since not
// every entry of it says so.
func TestAnEntrysTagsAreItsObjects(t *testing.T) {
	r := newRegWith(t, func(c *Config) {})
	web := claim("web.lan", "default", "web", "u-web", time.Hour, "10.0.0.1")
	web.Shared = true
	other := claim("web.lan", "default", "other", "u-other", time.Minute, "10.0.0.2")
	other.Sources[0].Kind = "Service"
	for _, eps := range [][]*endpoint.Endpoint{{web}, {web, other}} {
		m := r.desired(t0, eps, r.classify(nil, nil, nil, nil), nil).Endpoints[0]
		if got, want := m.TargetTags["10.0.0.1"], []string{"shared:true", "source:u-web"}; !slices.Equal(got, want) {
			t.Errorf("with %d objects: 10.0.0.1's tags %q, want %q", len(eps), got, want)
		}
		if shared := len(eps) == 1; m.Shared != shared {
			t.Errorf("with %d objects: the hostname shared %v, want %v", len(eps), m.Shared, shared)
		}
	}
}

// keptMerges is a mergeSource that hands back the merge it holds for a hostname, whatever the
// claims.
type keptMerges map[string]*endpoint.Endpoint

func (k keptMerges) Merged(host string, _ []*endpoint.Endpoint, _ []*endpoint.Record) (*endpoint.Endpoint, bool) {
	m, ok := k[host]
	return m, ok
}

// TestTheMergeStage: one namespace holds a hostname (the one its entries name while it wants
// it, else the oldest claim's) and its claims merge into one endpoint; the other namespaces'
// claims are turned down, naming the holder. A merge made before from the same claims is used
// again, unless a stage before changed the hostname.
func TestTheMergeStage(t *testing.T) {
	held := owned("o1", "web.lan", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u1")
	for _, tc := range []struct {
		name    string
		records []endpoint.Record
		eps     []*endpoint.Endpoint
		kept    keptMerges
		changed []string // by the stages before
		want    claimWords
		made    []string // the hostnames merged afresh, when merges are kept
	}{
		{name: "one namespace's claims merge",
			eps: []*endpoint.Endpoint{claim("web.lan", "a", "web", "u1", time.Hour, "10.0.0.1"), aliased(claim("web.lan", "a", "web2", "u2", 0, "10.0.0.2"), "www.lan"),
				claim("db.lan", "a", "db", "u3", 0, "10.0.0.3")},
			want: claimWords{endpoints: []string{"db.lan [10.0.0.3] []", "web.lan [10.0.0.1 10.0.0.2] [www.lan]"}}},
		{name: "nobody holds it: the oldest claim's namespace",
			eps: []*endpoint.Endpoint{claim("web.lan", "a", "new", "u1", time.Hour, "10.0.0.1"), claim("web.lan", "b", "old", "u2", 2*time.Hour, "10.0.0.2")},
			want: claimWords{endpoints: []string{"web.lan [10.0.0.2] []"}, changed: []string{"web.lan"},
				conflicts: []string{"hostname web.lan of a: b/old"}}},
		{name: "its holder keeps it against an older claim", records: []endpoint.Record{held},
			eps: []*endpoint.Endpoint{claim("web.lan", "a", "new", "u1", time.Hour, "10.0.0.1"), claim("web.lan", "b", "old", "u2", 2*time.Hour, "10.0.0.2")},
			want: claimWords{endpoints: []string{"web.lan [10.0.0.1] []"}, changed: []string{"web.lan"},
				conflicts: []string{"hostname web.lan of b: namespace a"}}},
		{name: "a merge made before is used again",
			eps:  []*endpoint.Endpoint{claim("web.lan", "a", "web", "u1", time.Hour, "10.0.0.1"), claim("db.lan", "a", "db", "u3", 0, "10.0.0.3")},
			kept: keptMerges{"web.lan": claim("web.lan", "a", "web", "u1", time.Hour, "10.9.9.9")},
			want: claimWords{endpoints: []string{"db.lan [10.0.0.3] []", "web.lan [10.9.9.9] []"}}, made: []string{"db.lan"}},
		{name: "not when a stage before changed the hostname",
			eps:  []*endpoint.Endpoint{claim("web.lan", "a", "web", "u1", time.Hour, "10.0.0.1"), claim("db.lan", "a", "db", "u3", 0, "10.0.0.3")},
			kept: keptMerges{"web.lan": claim("web.lan", "a", "web", "u1", time.Hour, "10.9.9.9")}, changed: []string{"web.lan"},
			want: claimWords{endpoints: []string{"db.lan [10.0.0.3] []", "web.lan [10.0.0.1] []"}}, made: []string{"db.lan", "web.lan"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(*Config) {})
			in := claimsAt(r, tc.records, tc.eps)
			if tc.kept != nil {
				in.merges = tc.kept
			}
			in.change(tc.changed)
			v := r.merge(in, tc.eps)
			if got := wordsOfVerdicts(tc.eps, v); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			var made []string
			for _, m := range v.merges {
				made = append(made, m.Host)
			}
			if !reflect.DeepEqual(made, tc.made) {
				t.Errorf("merged afresh %q, want %q", made, tc.made)
			}
			for _, ep := range tc.eps {
				if !slices.Contains(v.grouped[ep.Hostname], ep) {
					t.Errorf("the claims of %s are not grouped with it: %v", ep.Hostname, v.grouped[ep.Hostname])
				}
			}
		})
	}
}
