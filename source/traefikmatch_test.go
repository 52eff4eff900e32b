package source

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Rules from Traefik's documentation (v2 and v3 routers, HTTP and TCP) and from common homelab
// manifests.
func TestParseMatch(t *testing.T) {
	tests := []struct {
		rule string
		want []string
	}{
		{"Host(`example.com`)", []string{"example.com"}},
		{"Host(`foo.example.com`)", []string{"foo.example.com"}},
		{"Host(`a.com`) || Host(`b.com`)", []string{"a.com", "b.com"}},
		{"Host(`a.com`, `b.com`)", []string{"a.com", "b.com"}},
		{"Host(`a.com`,`b.com`,  `c.com`)", []string{"a.com", "b.com", "c.com"}},
		{`Host("example.org")`, []string{"example.org"}},
		{"Host(`example.com`) && PathPrefix(`/api`)", []string{"example.com"}},
		{"Host(`example.com`) && (PathPrefix(`/api`) || PathPrefix(`/dashboard`))", []string{"example.com"}},
		{"(Host(`grafana.home.lan`) || Host(`grafana.lan`)) && PathPrefix(`/`)", []string{"grafana.home.lan", "grafana.lan"}},
		{"Host(`traefik.example.com`) && (PathPrefix(`/api`) || PathPrefix(`/dashboard`))", []string{"traefik.example.com"}},
		{"HostRegexp(`^.+\\.example\\.com$`)", nil},
		{"HostRegexp(`{subdomain:[a-z]+}.example.com`)", nil},
		{"Host(`example.com`) || HostRegexp(`{sub:[a-z]+}.example.com`)", []string{"example.com"}},
		{"HostSNI(`db.example.com`)", []string{"db.example.com"}},
		{"HostSNI(`*`)", nil},
		{"HostSNI(`mqtt.home.lan`) || HostSNI(`mqtts.home.lan`)", []string{"mqtt.home.lan", "mqtts.home.lan"}},
		{"HostSNIRegexp(`^.+\\.example\\.com$`)", nil},
		{"HostSNI(`postgres.lan`) && ClientIP(`10.0.0.0/8`)", []string{"postgres.lan"}},
		{"Host(`*.example.com`)", nil},
		{"Host(`Example.COM.`)", []string{"example.com"}},
		{"Host(`bücher.example`)", []string{"xn--bcher-kva.example"}},
		{"  Host (  `spaced.lan`  )  ", []string{"spaced.lan"}},
		{"Host(`home-assistant.home.lan`) && !PathPrefix(`/api/websocket`)", []string{"home-assistant.home.lan"}},
		{"!Host(`excluded.lan`)", []string{"excluded.lan"}},
		{"Path(`/Host(`) && Host(`real.lan`)", []string{"real.lan"}},
		{"PathPrefix(`/`)", nil},
		{"Method(`GET`) && Header(`X-Host`, `fake.lan`)", nil},
		{"HostHeader(`legacy.lan`)", []string{"legacy.lan"}},
		{"host(`lower.lan`)", []string{"lower.lan"}},
		{"Host(`dup.lan`) || Host(`dup.lan`)", []string{"dup.lan"}},
		{"Host(`under_score.lan`) || Host(`ok.lan`)", []string{"ok.lan"}},
		{"Host(`unterminated.lan`", []string{"unterminated.lan"}},
		{"Host(`open", nil},
		{"Host(", nil},
		{"", nil},
		{`Host("esc\"aped.lan")`, nil},
		{"Host(`jellyfin.media.svc`) && Query(`x`, `Host(`)", []string{"jellyfin.media.svc"}},
	}
	for _, tc := range tests {
		got, _ := ParseMatch(tc.rule)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseMatch(%q) = %q, want %q", tc.rule, got, tc.want)
		}
	}
}

func TestParseMatchReportsSkippedArguments(t *testing.T) {
	_, problems := ParseMatch("Host(`bad_host.lan`, `ok.lan`) || Host(`x.lan`")
	if len(problems) != 2 {
		t.Fatalf("problems = %q, want the invalid name and the unterminated call", problems)
	}
}

// FuzzParseMatch checks that no input panics, and that everything returned is a normalised
// hostname the server accepts, without duplicates.
func FuzzParseMatch(f *testing.F) {
	for _, s := range []string{
		"Host(`a.com`) || Host(`b.com`)", "Host(`a.com`, `b.com`)", `Host("x.lan")`, "HostSNI(`*`)",
		"HostRegexp(`{a:[a-z]+}.lan`)", "Host(`", "Host(((`a`)))", "Host(`a`\\", "Path(`/Host(`)",
		`Host("\`, "HOST ( 'x.lan' )", "Host(`xn--bcher-kva.example`)", "Host(`ü.lan`)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rule string) {
		hosts, _ := ParseMatch(rule)
		seen := map[string]bool{}
		for _, h := range hosts {
			if err := endpoint.ValidateHostname(h); err != nil {
				t.Fatalf("ParseMatch(%q) returned invalid hostname %q: %v", rule, h, err)
			}
			if h != strings.ToLower(h) || !utf8.ValidString(h) {
				t.Fatalf("ParseMatch(%q) returned unnormalised %q", rule, h)
			}
			if seen[h] {
				t.Fatalf("ParseMatch(%q) returned %q twice", rule, h)
			}
			seen[h] = true
		}
	})
}
