package endpoint

import (
	"strings"
	"testing"
)

// FuzzNormalizeHostname checks that whatever NormalizeHostname accepts, the server would accept
// too, is lowercase and stable under a second normalisation.
func FuzzNormalizeHostname(f *testing.F) {
	for _, s := range []string{"web.example.com", "Web.Example.COM.", "bücher.example", "*.x", "a_b", "-a.b", "a..b",
		strings.Repeat("a", 63) + ".lan", strings.Repeat("a.", 127), "xn--bcher-kva.example", "10.0.0.1", " x ", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		h, err := NormalizeHostname(in)
		if err != nil {
			return
		}
		if err := ValidateHostname(h); err != nil {
			t.Fatalf("NormalizeHostname(%q) = %q, which the server rejects: %v", in, h, err)
		}
		if h != strings.ToLower(h) {
			t.Fatalf("NormalizeHostname(%q) = %q is not lowercase", in, h)
		}
		if again, err := NormalizeHostname(h); err != nil || again != h {
			t.Fatalf("normalising %q again gave %q, %v", h, again, err)
		}
	})
}

// FuzzNormalizeIP checks that accepted IPs come out canonical and stable.
func FuzzNormalizeIP(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "0::1", "::ffff:1.2.3.4", "fe80::1%eth0", "010.0.0.1", "FD00::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ip, err := NormalizeIP(in)
		if err != nil {
			return
		}
		if again, err := NormalizeIP(ip); err != nil || again != ip {
			t.Fatalf("NormalizeIP(%q) = %q is not stable: %q, %v", in, ip, again, err)
		}
	})
}
