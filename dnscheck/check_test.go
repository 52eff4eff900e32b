package dnscheck

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/router-hosts-operator/router-hosts-operator/test/dnstest"
)

// TestCheckOneName: the one-shot check against a DNS server on the wire, a finding per row.
func TestCheckOneName(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Set("web.home.arpa", dnstest.Answer{IPs: []string{"10.0.0.1", "fd00::1"}, TTL: 60})
	srv.Set("v4only.home.arpa", dnstest.Answer{IPs: []string{"10.0.0.2"}, TTL: 60})
	srv.Set("broken.home.arpa", dnstest.Answer{RCode: dnsmessage.RCodeServerFailure})
	srv.Set("refused.home.arpa", dnstest.Answer{RCode: dnsmessage.RCodeRefused})
	srv.Set("silent.home.arpa", dnstest.Answer{Silent: true})
	for _, tc := range []struct {
		name, host string
		want       []string
		server     string // default srv
		finding    Finding
		got        []string
		says       string // in the result's sentence
	}{
		{name: "as written, both families", host: "web.home.arpa", want: []string{"fd00::1", "10.0.0.1"}, finding: Answering, got: []string{"10.0.0.1", "fd00::1"},
			says: "web.home.arpa answers 10.0.0.1, fd00::1 as written"},
		{name: "as written, only the type asked for", host: "web.home.arpa", want: []string{"10.0.0.1"}, finding: Answering, got: []string{"10.0.0.1"}},
		{name: "NXDOMAIN", host: "new.home.arpa", want: []string{"10.0.0.3"}, finding: Missing, says: "new.home.arpa has no address (NXDOMAIN), written 10.0.0.3"},
		{name: "no data of the type written", host: "v4only.home.arpa", want: []string{"fd00::2"}, finding: Missing, says: "(no data)"},
		{name: "other addresses", host: "v4only.home.arpa", want: []string{"10.0.0.9"}, finding: Wrong, got: []string{"10.0.0.2"},
			says: "v4only.home.arpa answers 10.0.0.2, written 10.0.0.9"},
		{name: "a name that should not answer, answering", host: "web.home.arpa", finding: StillAnswering, got: []string{"10.0.0.1", "fd00::1"}},
		{name: "a name that should not answer, gone", host: "new.home.arpa", finding: Gone},
		{name: "SERVFAIL is no finding", host: "broken.home.arpa", want: []string{"10.0.0.1"}, finding: NoAnswer, says: "RCodeServerFailure"},
		{name: "REFUSED is no finding", host: "refused.home.arpa", want: []string{"10.0.0.1"}, finding: NoAnswer, says: "RCodeRefused"},
		{name: "no answer in time is no finding", host: "silent.home.arpa", want: []string{"10.0.0.1"}, finding: NoAnswer, says: "deadline exceeded"},
		{name: "no server", host: "web.home.arpa", server: "-", want: []string{"10.0.0.1"}, finding: NoAnswer, says: "--verify-dns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := srv.Addr
			if tc.server == "-" {
				server = ""
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			r := Check(ctx, server, tc.host, parseAddrs(tc.want...))
			if r.Finding != tc.finding || !slices.Equal(r.Got, parseAddrs(tc.got...)) {
				t.Fatalf("%s: finding %s, got %v; want %s, %v", r, r.Finding, r.Got, tc.finding, tc.got)
			}
			if !strings.Contains(r.String(), tc.says) {
				t.Errorf("%q does not say %q", r, tc.says)
			}
			if (r.Err != nil) != (tc.finding == NoAnswer) {
				t.Errorf("err %v with finding %s", r.Err, r.Finding)
			}
		})
	}
}

// TestTypesOf: the record types asked for are those of the addresses written and deleted.
func TestTypesOf(t *testing.T) {
	for _, tc := range []struct {
		want, gone []string
		types      []dnsmessage.Type
	}{
		{want: []string{"10.0.0.1"}, types: []dnsmessage.Type{dnsmessage.TypeA}},
		{want: []string{"fd00::1"}, types: []dnsmessage.Type{dnsmessage.TypeAAAA}},
		{want: []string{"10.0.0.1"}, gone: []string{"fd00::1"}, types: []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA}},
		{gone: []string{"fd00::1"}, types: []dnsmessage.Type{dnsmessage.TypeAAAA}},
		{types: []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA}},
	} {
		if got := typesOf(parseAddrs(tc.want...), parseAddrs(tc.gone...)); !slices.Equal(got, tc.types) {
			t.Errorf("want %v gone %v: %v, want %v", tc.want, tc.gone, got, tc.types)
		}
	}
	// An IPv4-mapped address is the IPv4 address a hosts file line serves.
	if got := sortedUnique([]netip.Addr{netip.MustParseAddr("::ffff:10.0.0.1"), netip.MustParseAddr("10.0.0.1")}); len(got) != 1 || !got[0].Is4() {
		t.Errorf("unmapped: %v", got)
	}
}
