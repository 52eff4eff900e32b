package operator

import (
	"os"
	"strings"
	"testing"
)

// TestVerifyDNSFlag: --verify-dns and its environment variable name the router's DNS; off by
// default; anything but host:port is refused with the flag's name.
func TestVerifyDNSFlag(t *testing.T) {
	tls := []string{"--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"}
	for _, tc := range []struct {
		name, env string
		args      []string
		want, err string
	}{
		{name: "off by default", args: tls},
		{name: "the flag", args: append([]string{"--verify-dns=192.168.1.1:53"}, tls...), want: "192.168.1.1:53"},
		{name: "its environment variable", env: "[fd00::1]:5353", args: tls, want: "[fd00::1]:5353"},
		{name: "no port", args: append([]string{"--verify-dns=192.168.1.1"}, tls...), err: `--verify-dns "192.168.1.1": want host:port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envPrefix+"VERIFY_DNS", tc.env)
			if tc.env == "" {
				os.Unsetenv(envPrefix + "VERIFY_DNS")
			}
			cfg, err := ParseFlags(tc.args, Build{Version: "test"})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.settings().VerifyDNS; got != tc.want {
				t.Errorf("VerifyDNS %q, want %q", got, tc.want)
			}
		})
	}
}
