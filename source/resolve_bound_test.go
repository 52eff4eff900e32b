package source

import (
	"fmt"
	"strings"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/test/dnstest"
)

// TestOneObjectResolvesABoundedNumberOfNames: an object whose addresses are hostnames (a
// target annotation's, a load balancer's) has at most MaxNamesPerObject of them looked up;
// one that names more is held with a reason that says so, and none of its names reaches DNS,
// so one object cannot fill the cache or keep the DNS server busy.
func TestOneObjectResolvesABoundedNumberOfNames(t *testing.T) {
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("lb-%03d.example.com", i)
		}
		return out
	}
	tests := []struct {
		name  string
		ips   []string
		names []string
		// asked is how many names the cache is asked for (the first, while it waits for its
		// answer); why a text the reason must hold.
		asked int
		why   string
	}{
		{name: "addresses only", ips: []string{"10.0.0.1"}},
		{name: "one name", names: names(1), asked: 1, why: "waiting for DNS"},
		{name: "as many as the bound", names: names(MaxNamesPerObject), asked: 1, why: "waiting for DNS"},
		{name: "one more than the bound", names: names(MaxNamesPerObject + 1),
			why: fmt.Sprintf("%d hostnames to resolve, more than the %d one object may name; none is looked up", MaxNamesPerObject+1, MaxNamesPerObject)},
		{name: "many more, beside an address", ips: []string{"10.0.0.1"}, names: names(500), why: "500 hostnames to resolve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, _ := dnsUnderTest(t, dnstest.Start(t))
			r := &Resolver{}
			r.UseDNS(d)
			ips, u := r.Addresses(tt.ips, tt.names)
			if tt.why == "" && (u.Why != "" || strings.Join(ips, ",") != strings.Join(tt.ips, ",")) {
				t.Fatalf("addresses %v, %q; want %v", ips, u.Why, tt.ips)
			}
			if tt.why != "" && (ips != nil || !strings.Contains(u.Why, tt.why)) {
				t.Fatalf("addresses %v, %q; want none, and why: %q", ips, u.Why, tt.why)
			}
			d.mu.Lock()
			asked := len(d.names)
			d.mu.Unlock()
			if asked != tt.asked {
				t.Errorf("the cache was asked for %d names, want %d", asked, tt.asked)
			}
		})
	}
}
