package operator

import (
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/router-hosts-operator/router-hosts-operator/test/dnstest"
)

// TestDNSServerFlag: --dns-server may be given more than once, in the flag or its environment
// twin (one server a line), and each must be host:port.
func TestDNSServerFlag(t *testing.T) {
	tls := []string{"--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"}
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want []string
		err  string
	}{
		{name: "none: the system's nameservers", args: tls},
		{name: "one", args: append([]string{"--dns-server=10.96.0.10:53"}, tls...), want: []string{"10.96.0.10:53"}},
		{name: "several, in order", args: append([]string{"--dns-server=10.0.0.2:53", "--dns-server=[fd00::53]:53", "--dns-server=10.0.0.1:5353"}, tls...),
			want: []string{"10.0.0.2:53", "[fd00::53]:53", "10.0.0.1:5353"}},
		{name: "the environment, one a line", args: tls, env: "10.0.0.2:53\n10.0.0.1:53", want: []string{"10.0.0.2:53", "10.0.0.1:53"}},
		{name: "without a port", args: append([]string{"--dns-server=10.0.0.1:53", "--dns-server=10.0.0.2"}, tls...), err: `--dns-server "10.0.0.2": want host:port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv(envPrefix+"DNS_SERVER", tc.env)
			}
			cfg, err := ParseFlags(tc.args, Build{Version: "test"})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.DNSServers, tc.want) {
				t.Fatalf("servers %q, want %q", cfg.DNSServers, tc.want)
			}
		})
	}
}

// TestDNSServersAskedInTurn: the servers of --dns-server are the cache's, asked in the order
// given: the first fails, the second answers.
func TestDNSServersAskedInTurn(t *testing.T) {
	const name = "lb.example.com"
	first, second := dnstest.Start(t), dnstest.Start(t)
	first.Set(name, dnstest.Answer{RCode: dnsmessage.RCodeServerFailure})
	second.Set(name, dnstest.Answer{IPs: []string{"10.0.0.2"}, TTL: 60})
	cfg, err := ParseFlags([]string{"--dns-server=" + first.Addr, "--dns-server=" + second.Addr, "--router-hosts-endpoint=r:1",
		"--tls-ca=a", "--tls-cert=b", "--tls-key=c"}, Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dns := newDNS(ctx, cfg.DNSServers, nil, log)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ips, u := dns.Lookup(name)
		if !u.Waiting {
			if strings.Join(ips, ",") != "10.0.0.2" {
				t.Fatalf("answered %v %q, want the second server's 10.0.0.2", ips, u.Why)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	if first.Queries(name) == 0 {
		t.Error("the first server was not asked")
	}
}
