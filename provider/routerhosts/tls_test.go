package routerhosts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/router-hosts-operator/router-hosts-operator/provider"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// nasOnly is a router impostor's identity: a server certificate the router's CA issued for
// another server, nas.lan, and nothing else.
var nasOnly = rhtestserver.LeafProfile{DNSNames: []string{"nas.lan"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}

func TestVerifiedName(t *testing.T) {
	tests := []struct {
		endpoint, serverName, want, err string
	}{
		{endpoint: "router.lan:50051", want: "router.lan"},
		{endpoint: "192.168.1.1:50051", want: "192.168.1.1"},
		{endpoint: "[fd00::1]:50051", want: "fd00::1"},
		{endpoint: "192.168.1.1:50051", serverName: "router.lan", want: "router.lan"},
		{endpoint: "router.lan", err: "not host:port"},
		{endpoint: ":50051", err: "names no host"},
		{endpoint: "dns:///router.lan:50051", err: "not host:port"},
	}
	for _, tc := range tests {
		t.Run(tc.endpoint+" "+tc.serverName, func(t *testing.T) {
			got, err := verifiedName(tc.endpoint, tc.serverName)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("verifiedName = %q, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("verifiedName = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// leafOf reads the certificate a test PKI's server presents.
func leafOf(t *testing.T, pki rhtestserver.PKI) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(pki.ServerCertFile(), pki.ServerKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	return pair.Leaf
}

// TestVerifyServer is the rule on its own: the router's certificate passes for each name and
// address it carries; a certificate the same CA issued to anyone else fails on the name,
// whatever the endpoint's form; a clientAuth-only certificate fails on the usage.
func TestVerifyServer(t *testing.T) {
	dir := t.TempDir()
	real, err := rhtestserver.WritePKI(filepath.Join(dir, "real"))
	if err != nil {
		t.Fatal(err)
	}
	routerNames := rhtestserver.ServerProfile()
	impostor := func(name string, id rhtestserver.LeafProfile) *x509.Certificate {
		pki, err := rhtestserver.WriteImpostorPKI(filepath.Join(dir, name), real, id)
		if err != nil {
			t.Fatal(err)
		}
		return leafOf(t, pki)
	}
	router := leafOf(t, real)
	nas := impostor("nas", nasOnly)
	clientAuthOnly := routerNames
	clientAuthOnly.Usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	noUsageWithRouterNames := routerNames
	noUsageWithRouterNames.Usages = nil
	files := &reloadingFiles{caFile: real.CAFile(), certFile: real.CertFile(), keyFile: real.KeyFile()}
	tests := []struct {
		name string
		cert *x509.Certificate
		host string
		want string // "" accepts
	}{
		{"the router by DNS name", router, "localhost", ""},
		{"the router by IPv4", router, "127.0.0.1", ""},
		{"the router by IPv6", router, "::1", ""},
		{"the router by an IPv6 literal in brackets", router, "[::1]", ""},
		{"the router for a name it does not carry", router, "nas.lan", "it is valid for localhost, 127.0.0.1, ::1, not nas.lan"},
		{"an impostor by DNS name", nas, "localhost", "it is valid for nas.lan, not localhost"},
		{"an impostor by IPv4", nas, "127.0.0.1", "it is valid for nas.lan, not 127.0.0.1"},
		{"an impostor by IPv6", nas, "::1", "it is valid for nas.lan, not ::1"},
		{"an impostor by the name it carries", nas, "nas.lan", ""},
		{"a client certificate without usages or names", impostor("client", rhtestserver.LeafProfile{}), "127.0.0.1",
			"it is valid for no DNS name or IP address, not 127.0.0.1"},
		{"a clientAuth certificate carrying the router's names", impostor("clientauth", clientAuthOnly), "127.0.0.1", "incompatible key usage"},
		// Why client certificates must not carry the router's names: without usages, a
		// certificate serves any purpose, and the name is all that is left to check.
		{"a certificate without usages carrying the router's names", impostor("nousage", noUsageWithRouterNames), "127.0.0.1", ""},
		{"no name at all", router, "", "no server name or address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := verifyServer(files, []*x509.Certificate{tc.cert}, tc.host, time.Now())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("verifyServer = %v; want a refusal saying %q", err, tc.want)
			case tc.want != "" && tc.host != "" && !strings.Contains(err.Error(), "x509: "):
				t.Fatalf("%v does not keep crypto/x509's words, which mark it as an authentication failure", err)
			}
		})
	}
}

// portOf is the port of a host:port.
func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// startOn starts a test server (impostor when id is not nil, with real's CA) on addr.
func startOn(t *testing.T, real *rhtestserver.Server, id *rhtestserver.LeafProfile, addr string) *rhtestserver.Server {
	t.Helper()
	var (
		srv *rhtestserver.Server
		err error
	)
	if id == nil {
		srv, err = rhtestserver.Start(t.TempDir(), addr)
	} else {
		srv, err = rhtestserver.StartImpostor(t.TempDir(), real.PKI, *id, addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// TestAnImpostorIsRefused: a server the router's CA vouches for, but for nas.lan, is refused
// whether the endpoint is a DNS name, an IPv4 or an IPv6 address, and nothing reaches it; the
// router itself is accepted at all three; --tls-server-name names what is checked instead.
func TestAnImpostorIsRefused(t *testing.T) {
	real4 := startOn(t, nil, nil, "127.0.0.1:0")
	real6 := startOn(t, nil, nil, "[::1]:0")
	// Both servers hold one CA: real4's.
	imp4 := startOn(t, real4, &nasOnly, "127.0.0.1:0")
	imp6 := startOn(t, real4, &nasOnly, "[::1]:0")
	creds := func(srv *rhtestserver.Server) Options {
		return Options{CAFile: srv.CAFile(), CertFile: srv.CertFile(), KeyFile: srv.KeyFile()}
	}
	tests := []struct {
		name       string
		srv        *rhtestserver.Server // the one dialled
		cred       *rhtestserver.Server // whose CA and client certificate the operator holds
		endpoint   string
		serverName string
		want       string // "" accepts
	}{
		{"router by DNS name", real4, real4, "localhost:" + portOf(t, real4.Addr()), "", ""},
		{"router by IPv4", real4, real4, real4.Addr(), "", ""},
		{"router by IPv6", real6, real6, real6.Addr(), "", ""},
		{"impostor by DNS name", imp4, real4, "localhost:" + portOf(t, imp4.Addr()), "", "it is valid for nas.lan, not localhost"},
		{"impostor by IPv4", imp4, real4, imp4.Addr(), "", "it is valid for nas.lan, not 127.0.0.1"},
		{"impostor by IPv6", imp6, real4, imp6.Addr(), "", "it is valid for nas.lan, not ::1"},
		{"server name given: the impostor's own", imp4, real4, imp4.Addr(), "nas.lan", ""},
		{"server name given: not the router's", real4, real4, real4.Addr(), "nas.lan", "it is valid for localhost, 127.0.0.1, ::1, not nas.lan"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := creds(tc.cred)
			opts.Endpoint, opts.ServerName = tc.endpoint, tc.serverName
			tc.srv.Service().ResetCalls()
			for call, err := range calls(t, opts) {
				if tc.want == "" {
					if err != nil && !(call == "GetHost" && strings.Contains(err.Error(), "NotFound")) {
						t.Fatalf("%s: %v", call, err)
					}
					continue
				}
				if !errors.Is(err, provider.ErrAuthentication) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s: %v; want ErrAuthentication saying %q", call, err, tc.want)
				}
			}
			reached := int64(0)
			for _, n := range tc.srv.Service().CallCounts() {
				reached += n
			}
			switch {
			case tc.want == "" && tc.srv.Service().Calls("ListHosts") != 1:
				t.Fatalf("the server saw %v, want the ListHosts", tc.srv.Service().CallCounts())
			case tc.want != "" && reached != 0:
				t.Fatalf("a refused server was called: %v", tc.srv.Service().CallCounts())
			}
		})
	}
}

// TestRetargetChecksTheNewName: the name checked follows the endpoint when a RouterHostsConfig
// changes it live.
func TestRetargetChecksTheNewName(t *testing.T) {
	real := startOn(t, nil, nil, "127.0.0.1:0")
	imp := startOn(t, real, &nasOnly, "[::1]:0")
	p := newTLSProvider(t, Options{Endpoint: real.Addr(), CAFile: real.CAFile(), CertFile: real.CertFile(), KeyFile: real.KeyFile()})
	ctx := context.Background()
	steps := []struct {
		target Target
		want   string
	}{
		{Target{Endpoint: real.Addr()}, ""},
		{Target{Endpoint: imp.Addr()}, "it is valid for nas.lan, not ::1"},
		{Target{Endpoint: imp.Addr(), ServerName: "nas.lan"}, ""},
		{Target{Endpoint: "localhost:" + portOf(t, real.Addr()), ServerName: "nas.lan"}, "it is valid for localhost, 127.0.0.1, ::1, not nas.lan"},
		{Target{Endpoint: "localhost:" + portOf(t, real.Addr())}, ""},
	}
	for i, st := range steps {
		if err := p.Retarget(st.target); err != nil {
			t.Fatalf("step %d: Retarget(%+v): %v", i, st.target, err)
		}
		_, err := p.Records(ctx)
		switch {
		case st.want == "" && err != nil:
			t.Fatalf("step %d, %+v: %v", i, st.target, err)
		case st.want != "" && (!errors.Is(err, provider.ErrAuthentication) || !strings.Contains(err.Error(), st.want)):
			t.Fatalf("step %d, %+v: %v; want ErrAuthentication saying %q", i, st.target, err, st.want)
		}
	}
	if n := imp.Service().Calls("ListHosts"); n != 1 {
		t.Fatalf("the impostor served %d ListHosts; want only the one under its own name", n)
	}
}

// copyFile writes src's content to dst, stamped with mtime: a distinct stamp without a sleep.
func copyFile(t *testing.T, src, dst string, mtime time.Time) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	writeStamped(t, dst, b, mtime)
}

func writeStamped(t *testing.T, dst string, b []byte, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

type loadEvent struct {
	notAfter time.Time
	err      error
}

// TestAFailedReloadIsReportedOnceAndTheLastGoodMaterialStays: files that change and do not
// load (a bad certificate, a missing key) are reported once per change, never at every load,
// and the material read last stays in use until files that load replace it.
func TestAFailedReloadIsReportedOnceAndTheLastGoodMaterialStays(t *testing.T) {
	dir := t.TempDir()
	real, err := rhtestserver.WritePKI(filepath.Join(dir, "real"))
	if err != nil {
		t.Fatal(err)
	}
	// Another client certificate from the same CA, to rotate to.
	next, err := rhtestserver.WriteImpostorPKI(filepath.Join(dir, "next"), real, rhtestserver.ServerProfile())
	if err != nil {
		t.Fatal(err)
	}
	ca, cert, key := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	copyFile(t, real.CAFile(), ca, at)
	copyFile(t, real.CertFile(), cert, at)
	copyFile(t, real.KeyFile(), key, at)
	var events []loadEvent
	r := &reloadingFiles{caFile: ca, certFile: cert, keyFile: key, loaded: func(c *tls.Certificate, err error) {
		events = append(events, loadEvent{notAfter(c), err})
	}}
	first, _, err := r.load()
	if err != nil {
		t.Fatal(err)
	}
	wantNotAfter := notAfter(first)
	if len(events) != 1 || events[0].err != nil || !events[0].notAfter.Equal(wantNotAfter) || wantNotAfter.IsZero() {
		t.Fatalf("first load reported %v; want one event with the certificate's expiry %v", events, wantNotAfter)
	}
	nextLeaf, err := tls.LoadX509KeyPair(next.CertFile(), next.KeyFile())
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func()
		// wantErr is in the one event the change reports; "" is a load that works.
		wantErr  string
		wantCert *tls.Certificate // nil: the first certificate stays
	}{
		{"a certificate that does not parse", func() { writeStamped(t, cert, []byte("not PEM"), at.Add(time.Second)) }, "tls.crt", nil},
		{"then the key goes missing as well", func() { _ = os.Remove(key) }, "tls.key", nil},
		{"a good pair again", func() {
			copyFile(t, next.CertFile(), cert, at.Add(2*time.Second))
			copyFile(t, next.KeyFile(), key, at.Add(2*time.Second))
		}, "", &nextLeaf},
	}
	for _, st := range steps {
		events = nil
		st.change()
		var got *tls.Certificate
		for range 5 { // handshakes, and the watcher's reads
			c, _, err := r.load()
			if err != nil {
				t.Fatalf("%s: load failed although material was loaded before: %v", st.name, err)
			}
			got = c
		}
		if len(events) != 1 {
			t.Fatalf("%s: %d events for one change: %v", st.name, len(events), events)
		}
		ev := events[0]
		switch {
		case st.wantErr != "" && (ev.err == nil || !strings.Contains(ev.err.Error(), st.wantErr)):
			t.Fatalf("%s: reported %v; want an error naming %s", st.name, ev.err, st.wantErr)
		case st.wantErr != "" && (got != first || !ev.notAfter.Equal(wantNotAfter)):
			t.Fatalf("%s: the material in use changed (expiry %v); want the last good one kept", st.name, ev.notAfter)
		case st.wantErr == "" && (ev.err != nil || !ev.notAfter.Equal(st.wantCert.Leaf.NotAfter) || got == first):
			t.Fatalf("%s: reported %v; want the new certificate, expiring %v, in use", st.name, ev, st.wantCert.Leaf.NotAfter)
		}
	}
}

// TestProviderReportsItsCredentials: the provider logs a failed reload once, with the files
// named, keeps syncing with the last good certificate, and tells Options.Credentials the
// client certificate's expiry for files and for a Secret's material.
func TestProviderReportsItsCredentials(t *testing.T) {
	srv := startOn(t, nil, nil, "")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	copyFile(t, srv.CertFile(), cert, at)
	copyFile(t, srv.KeyFile(), key, at)
	log, hook := test.NewNullLogger()
	var events []CredentialsEvent
	p, err := New(Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: cert, KeyFile: key, Timeout: authTimeout, Log: log,
		Credentials: func(ev CredentialsEvent) { events = append(events, ev) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	pair, err := tls.LoadX509KeyPair(srv.CertFile(), srv.KeyFile())
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Err != nil || !events[0].NotAfter.Equal(pair.Leaf.NotAfter) {
		t.Fatalf("New reported %v; want the client certificate's expiry %v", events, pair.Leaf.NotAfter)
	}

	events = nil
	writeStamped(t, cert, []byte("-----BEGIN CERTIFICATE-----\ntruncated"), at.Add(time.Second))
	for range 3 {
		if _, err := p.Records(context.Background()); err != nil {
			t.Fatalf("with a bad certificate file over a good one: %v; want the last good certificate used", err)
		}
	}
	warnings := 0
	for _, e := range hook.AllEntries() {
		if strings.Contains(e.Message, "reconnecting") {
			t.Errorf("logged %q: files that do not load change nothing in use, and need no new connection", e.Message)
		}
		if e.Level == logrus.WarnLevel {
			warnings++
			if e.Data["cert"] != cert || e.Data[logrus.ErrorKey] == nil || e.Data["not_after"] != pair.Leaf.NotAfter {
				t.Errorf("the warning's fields %v do not name the file, the error and the certificate still in use", e.Data)
			}
		}
	}
	if warnings != 1 || len(events) != 1 || events[0].Err == nil || !events[0].NotAfter.Equal(pair.Leaf.NotAfter) {
		t.Fatalf("%d warnings and events %v after three syncs on one bad file; want one of each, with the old expiry", warnings, events)
	}

	// Material from a Secret reports its certificate when it is taken into use.
	other := startOn(t, nil, nil, "")
	keys, err := ParsePEM(mustRead(t, other.CAFile()), mustRead(t, other.CertFile()), mustRead(t, other.KeyFile()))
	if err != nil {
		t.Fatal(err)
	}
	events = nil
	if err := p.Retarget(Target{Endpoint: other.Addr(), Keys: keys}); err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Err != nil || !events[0].NotAfter.Equal(keys.cert.Leaf.NotAfter) {
		t.Fatalf("Retarget to a Secret's material reported %v; want its expiry %v", events, keys.cert.Leaf.NotAfter)
	}
	if _, err := p.Records(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAWaitingProviderCallsNothingUntilARouterIsNamed: a provider started with no server
// fails every call with ErrNoTarget, and Retarget connects it to the first router named.
func TestAWaitingProviderCallsNothingUntilARouterIsNamed(t *testing.T) {
	srv := startOn(t, nil, nil, "127.0.0.1:0")
	p := NewWaiting(Options{CAFile: srv.CAFile(), CertFile: srv.CertFile(), KeyFile: srv.KeyFile()})
	defer p.Close()
	if _, err := p.Records(context.Background()); err == nil || !strings.Contains(err.Error(), ErrNoTarget.Error()) {
		t.Fatalf("Records with no router: %v, want %v", err, ErrNoTarget)
	}
	if err := p.Retarget(Target{Endpoint: srv.Addr()}); err != nil {
		t.Fatalf("Retarget: %v", err)
	}
	if _, err := p.Records(context.Background()); err != nil {
		t.Fatalf("Records once a router is named: %v", err)
	}
	if n := srv.Service().Calls("ListHosts"); n != 1 {
		t.Fatalf("the server saw %d ListHosts, want the one after Retarget", n)
	}
}
