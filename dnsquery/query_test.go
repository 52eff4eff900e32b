package dnsquery

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/router-hosts-operator/router-hosts-operator/test/dnstest"
)

// TestQueryTellsAnswersFromErrors: each way a question ends, against a server on the wire:
// addresses, no such name, no data of the type, and the errors that say nothing of the name.
func TestQueryTellsAnswersFromErrors(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Set("web.home.arpa", dnstest.Answer{IPs: []string{"10.0.0.1", "10.0.0.2", "fd00::1"}, TTL: 30})
	srv.Set("mapped.home.arpa", dnstest.Answer{IPs: []string{"::ffff:10.0.0.9"}, TTL: 30})
	srv.Set("big.home.arpa", dnstest.Answer{IPs: []string{"10.0.0.3"}, TTL: 30, Truncate: true})
	srv.Set("broken.home.arpa", dnstest.Answer{RCode: dnsmessage.RCodeServerFailure})
	srv.Set("refused.home.arpa", dnstest.Answer{RCode: dnsmessage.RCodeRefused})
	srv.Set("silent.home.arpa", dnstest.Answer{Silent: true})
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	for _, tc := range []struct {
		name, host string
		typ        dnsmessage.Type
		want       Answer
		wantRCode  dnsmessage.RCode // an *RCodeError with this code
		wantErr    string           // another error containing this
	}{
		{name: "A records", host: "web.home.arpa", typ: dnsmessage.TypeA, want: Answer{Addrs: addrs("10.0.0.1", "10.0.0.2"), TTL: 30 * time.Second}},
		{name: "AAAA records", host: "web.home.arpa.", typ: dnsmessage.TypeAAAA, want: Answer{Addrs: addrs("fd00::1"), TTL: 30 * time.Second}},
		{name: "any case", host: "WEB.Home.Arpa", typ: dnsmessage.TypeA, want: Answer{Addrs: addrs("10.0.0.1", "10.0.0.2"), TTL: 30 * time.Second}},
		{name: "an IPv4-mapped AAAA stays IPv6", host: "mapped.home.arpa", typ: dnsmessage.TypeAAAA, want: Answer{Addrs: []netip.Addr{netip.AddrFrom16(netip.MustParseAddr("::ffff:10.0.0.9").As16())}, TTL: 30 * time.Second}},
		{name: "no data of the type", host: "big.home.arpa", typ: dnsmessage.TypeAAAA, want: Answer{Status: NoData, TTL: MaxTTL}},
		{name: "truncated over UDP, asked again over TCP", host: "big.home.arpa", typ: dnsmessage.TypeA, want: Answer{Addrs: addrs("10.0.0.3"), TTL: 30 * time.Second}},
		{name: "no such name", host: "gone.home.arpa", typ: dnsmessage.TypeA, want: Answer{Status: NXDomain, TTL: MaxTTL}},
		{name: "SERVFAIL is an error", host: "broken.home.arpa", typ: dnsmessage.TypeA, wantRCode: dnsmessage.RCodeServerFailure},
		{name: "REFUSED is an error", host: "refused.home.arpa", typ: dnsmessage.TypeA, wantRCode: dnsmessage.RCodeRefused},
		{name: "no answer ends with the caller's cause", host: "silent.home.arpa", typ: dnsmessage.TypeA, wantErr: "no answer in 200ms"},
		{name: "a name no server would take", host: strings.Repeat("a", 64) + ".home.arpa", typ: dnsmessage.TypeA, wantErr: "DNS query for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			stop := time.AfterFunc(200*time.Millisecond, func() { cancel(errors.New("no answer in 200ms")) })
			defer stop.Stop()
			got, err := Query(ctx, srv.Addr, tc.host, tc.typ)
			var rc *RCodeError
			switch {
			case tc.wantRCode != 0:
				if !errors.As(err, &rc) || rc.RCode != tc.wantRCode {
					t.Fatalf("err %v, want an RCodeError %s", err, tc.wantRCode)
				}
				if !strings.Contains(err.Error(), srv.Addr) || !strings.Contains(err.Error(), tc.host) {
					t.Errorf("error %q does not name the server and the name", err)
				}
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &rc) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("err %v", err)
			case got.Status != tc.want.Status || !slices.Equal(got.Addrs, tc.want.Addrs) || got.TTL != tc.want.TTL:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestStatusNames: the statuses read as DNS people say them.
func TestStatusNames(t *testing.T) {
	for s, want := range map[Status]string{Answered: "answered", NoData: "no data", NXDomain: "NXDOMAIN"} {
		if s.String() != want {
			t.Errorf("%d reads %q, want %q", s, s, want)
		}
	}
}
