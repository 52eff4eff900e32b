package source

import (
	"reflect"
	"testing"
	"time"
)

func TestParseOverrides(t *testing.T) {
	sec := func(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }
	tests := []struct {
		name     string
		ann      map[string]string
		ips      []string
		badIPs   bool
		tags     []string
		aliases  []string
		grace    *time.Duration
		problems int
	}{
		{name: "none", ann: map[string]string{}},
		{name: "one ip", ann: map[string]string{AnnotationIPAddress: "10.0.0.1"}, ips: []string{"10.0.0.1"}},
		{name: "v4 and v6, canonicalised", ann: map[string]string{AnnotationIPAddress: " FD00::0001 , 10.0.0.1"}, ips: []string{"10.0.0.1", "fd00::1"}},
		{name: "one bad ip holds", ann: map[string]string{AnnotationIPAddress: "10.0.0.1,10.0.0.300"}, ips: []string{"10.0.0.1"}, badIPs: true, problems: 1},
		{name: "empty ip holds", ann: map[string]string{AnnotationIPAddress: " , "}, badIPs: true, problems: 1},
		{name: "tags, bad one dropped", ann: map[string]string{AnnotationTags: "b, a ,a,with space"}, tags: []string{"a", "b"}, problems: 1},
		{name: "aliases are passed on for per-host normalisation", ann: map[string]string{AnnotationAliases: "x.lan, y.lan,,"}, aliases: []string{"x.lan", "y.lan"}},
		{name: "grace period", ann: map[string]string{AnnotationGracePeriod: "30"}, grace: sec(30)},
		{name: "grace period zero", ann: map[string]string{AnnotationGracePeriod: "0"}, grace: sec(0)},
		{name: "grace period negative", ann: map[string]string{AnnotationGracePeriod: "-1"}, problems: 1},
		{name: "grace period not a number", ann: map[string]string{AnnotationGracePeriod: "5m"}, problems: 1},
		{name: "grace period over a year", ann: map[string]string{AnnotationGracePeriod: "9223372036854775807"}, problems: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := parseOverrides(tc.ann)
			if !reflect.DeepEqual(o.ips, tc.ips) || o.badIPs != tc.badIPs || !reflect.DeepEqual(o.tags, tc.tags) ||
				!reflect.DeepEqual(o.aliases, tc.aliases) || !reflect.DeepEqual(o.gracePeriod, tc.grace) {
				t.Fatalf("got ips=%q bad=%v tags=%q aliases=%q grace=%v", o.ips, o.badIPs, o.tags, o.aliases, o.gracePeriod)
			}
			if len(o.problems) != tc.problems {
				t.Fatalf("problems = %q, want %d", o.problems, tc.problems)
			}
		})
	}
}

func TestParseIPResolution(t *testing.T) {
	got, err := ParseIPResolution([]string{"ingress-status", "service:traefik/traefik", "static:0::1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Strategy{{Kind: StrategyIngressStatus}, {Kind: StrategyService, Namespace: "traefik", Name: "traefik"}, {Kind: StrategyStatic, IP: "::1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{"dns", "service:traefik", "service:/x", "service:Bad_NS/x", "static:", "static:10.0.0.300", "ingress-status:x", ""} {
		if _, err := ParseIPResolution([]string{bad}); err == nil {
			t.Errorf("ParseIPResolution(%q) accepted", bad)
		}
	}
	if _, err := ParseIPResolution(nil); err == nil {
		t.Error("an empty chain was accepted")
	}
}
