package registry

import (
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
