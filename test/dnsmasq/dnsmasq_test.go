package dnsmasq

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/dnsquery"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

func start(t *testing.T, hosts string) *Server {
	t.Helper()
	s, err := Start(t.TempDir(), hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// ask is what s answers for name's A records: the addresses, or the status's word.
func ask(t *testing.T, s *Server, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a, err := dnsquery.Query(ctx, s.Addr, name, dnsmessage.TypeA)
	if err != nil {
		t.Fatalf("asking dnsmasq: %v", err)
	}
	if a.Status != dnsquery.Answered {
		return a.Status.String()
	}
	var out []string
	for _, addr := range a.Addrs {
		out = append(out, addr.String())
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// TestDnsmasqServesItsFileAsReadAtTheLastReload: dnsmasq answers what the file said when it
// last read it, a name it lacks is NXDOMAIN, and a reload it could not do is an error.
func TestDnsmasqServesItsFileAsReadAtTheLastReload(t *testing.T) {
	hosts := filepath.Join(t.TempDir(), "hosts")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(hosts, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("10.0.0.1\tweb.home.arpa alias.home.arpa\n")
	s := start(t, hosts)
	for name, want := range map[string]string{"web.home.arpa": "10.0.0.1", "alias.home.arpa": "10.0.0.1", "new.home.arpa": "NXDOMAIN"} {
		if got := ask(t, s, name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	write("10.0.0.2\tweb.home.arpa\n10.0.0.3\tnew.home.arpa\n")
	if got := ask(t, s, "new.home.arpa"); got != "NXDOMAIN" {
		t.Errorf("before the reload, new.home.arpa: %s", got)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"web.home.arpa": "10.0.0.2", "alias.home.arpa": "NXDOMAIN", "new.home.arpa": "10.0.0.3"} {
		if got := ask(t, s, name); got != want {
			t.Errorf("after the reload, %s: %s, want %s", name, got, want)
		}
	}
	if n := s.Reloads(); n != 2 {
		t.Errorf("%d reads of the file, want 2", n)
	}
	if err := os.Remove(hosts); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil {
		t.Error("a reload without the file succeeded")
	}
}

// TestTheTestServersHookReloadsDnsmasq: the router-hosts test server writes its hosts file at
// each write and runs its on-success hook after the reply; with the hook reloading dnsmasq, a
// name written answers, and without it, dnsmasq keeps serving the file it read last.
func TestTheTestServersHookReloadsDnsmasq(t *testing.T) {
	dir := t.TempDir()
	srv, err := rhtestserver.Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	hosts := filepath.Join(dir, "hosts")
	srv.WriteHostsFile(hosts)
	dns := start(t, hosts)
	cli, stop, err := rhclient.Dial(srv.Addr(), rhclient.Files{CA: srv.CAFile(), Cert: srv.CertFile(), Key: srv.KeyFile()})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	add := func(ip, host string) {
		t.Helper()
		if _, err := cli.AddHost(ctx, &pb.AddHostRequest{IpAddress: ip, Hostname: host}); err != nil {
			t.Fatal(err)
		}
		if err := srv.HooksIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	srv.OnSuccess(dns.Reload)
	add("10.0.0.1", "web.home.arpa")
	if got := ask(t, dns, "web.home.arpa"); got != "10.0.0.1" {
		t.Errorf("web.home.arpa, written and reloaded: %s", got)
	}
	srv.OnSuccess(nil)
	add("10.0.0.2", "db.home.arpa")
	if got := ask(t, dns, "db.home.arpa"); got != "NXDOMAIN" {
		t.Errorf("db.home.arpa, written without a reload: %s", got)
	}
	if runs, err := srv.HookRuns(); runs != 1 || err != nil {
		t.Errorf("%d hook runs (%v), want 1", runs, err)
	}
}
