package registry

import (
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
