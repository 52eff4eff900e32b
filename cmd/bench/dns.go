package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/test/dnsmasq"
)

// dnsMode is a run's router DNS: none, or a dnsmasq serving the test server's hosts file, which
// the server rewrites at every write as a router does; checked adds --verify-dns. A run with the
// hosts file alone is what a checked run compares with: both pay the server's rewrite.
type dnsMode uint8

const (
	noDNS dnsMode = iota
	hostsFile
	checked
)

func (m dnsMode) label() string {
	switch m {
	case hostsFile:
		return " +router DNS"
	case checked:
		return " +router DNS +verify-dns"
	}
	return ""
}

// routerDNS starts a dnsmasq serving the hosts file of the test server the run just started,
// re-read through the server's on-success hook after each write, as a router's DNS is: the
// server --verify-dns names. It stops with that test server.
func (b *bench) routerDNS() (string, error) {
	ts, ok := b.srv.(*testServer)
	if !ok {
		return "", errors.New("the run with the DNS check needs the test server")
	}
	dir, err := os.MkdirTemp(b.dir, "dns-")
	if err != nil {
		return "", fmt.Errorf("dnsmasq dir: %w", err)
	}
	hosts := filepath.Join(dir, "hosts")
	dns, err := dnsmasq.Start(dir, hosts)
	if err != nil {
		return "", err
	}
	ts.srv.WriteHostsFile(hosts)
	ts.srv.OnSuccess(dns.Reload)
	ts.stopDNS = dns.Stop
	return dns.Addr, nil
}

// dnsQuestions is the questions the operator has put to the router's DNS so far.
func dnsQuestions(ctx context.Context, op *operator) (float64, time.Time, error) {
	m, err := op.scrape(ctx)
	if err != nil {
		return 0, time.Time{}, err
	}
	return m.sum("router_hosts_operator_verify_dns_queries_total", nil), time.Now(), nil
}
