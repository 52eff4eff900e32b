package source

import (
	"strings"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// FuzzParseOverrides feeds arbitrary annotation values and checks that what survives parsing
// is always writable: canonical IPs, valid tags, a non-negative grace period.
func FuzzParseOverrides(f *testing.F) {
	f.Add("10.0.0.1,fd00::1", "a,b", "x.lan", "30")
	f.Add("10.0.0.300", "with space,ok", "bad_alias", "-1")
	f.Add("", ",,,", "", "99999999999999999999")
	f.Add("::ffff:1.2.3.4", strings.Repeat("t", 300), "a.lan,A.LAN", "0")
	f.Fuzz(func(t *testing.T, ips, tags, aliases, grace string) {
		o := parseOverrides(map[string]string{AnnotationIPAddress: ips, AnnotationTags: tags, AnnotationAliases: aliases, AnnotationGracePeriod: grace})
		for _, ip := range o.ips {
			if c, err := endpoint.NormalizeIP(ip); err != nil || c != ip {
				t.Fatalf("ip %q kept from %q is not canonical", ip, ips)
			}
		}
		for _, tag := range o.tags {
			if err := endpoint.ValidateTag(tag); err != nil {
				t.Fatalf("tag %q kept from %q: %v", tag, tags, err)
			}
		}
		if o.gracePeriod != nil && *o.gracePeriod < 0 {
			t.Fatalf("negative grace period from %q", grace)
		}
		if len(o.ips) > 0 && o.badIPs && !strings.Contains(ips, ",") {
			t.Fatalf("one IP both kept and bad: %q", ips)
		}
		got, _ := endpoint.NormalizeAliases("host.lan", o.aliases)
		if err := endpoint.ValidateAliases("host.lan", got); err != nil {
			t.Fatalf("aliases %q from %q fail validation: %v", got, aliases, err)
		}
	})
}
