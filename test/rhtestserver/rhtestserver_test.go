package rhtestserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// clientConfig is what an mTLS client of the real server uses; certFile "" sends no certificate.
type clientConfig struct {
	caFile, certFile, keyFile, serverName string
	maxVersion                            uint16
}

func dial(t *testing.T, addr string, cc clientConfig) pb.HostsServiceClient {
	t.Helper()
	caPEM, err := os.ReadFile(cc.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s", cc.caFile)
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: cc.maxVersion, RootCAs: pool, ServerName: cc.serverName}
	if cc.certFile != "" {
		pair, err := tls.LoadX509KeyPair(cc.certFile, cc.keyFile)
		if err != nil {
			t.Fatal(err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(conf)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pb.NewHostsServiceClient(conn)
}

func start(t *testing.T) *Server {
	t.Helper()
	srv, err := Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func listAll(t *testing.T, c pb.HostsServiceClient) ([]*pb.HostEntry, error) {
	t.Helper()
	stream, err := c.ListHosts(ctx(t), &pb.ListHostsRequest{})
	if err != nil {
		return nil, err
	}
	var out []*pb.HostEntry
	for {
		r, err := stream.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r.GetEntry())
	}
}

func TestMutualTLS(t *testing.T) {
	srv := start(t)
	c := dial(t, srv.Addr(), clientConfig{caFile: srv.CAFile(), certFile: srv.CertFile(), keyFile: srv.KeyFile()})
	var p peer.Peer
	if _, err := c.AddHost(ctx(t), &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "nas.lan"}, grpc.Peer(&p)); err != nil {
		t.Fatalf("AddHost over mTLS: %v", err)
	}
	if info, ok := p.AuthInfo.(credentials.TLSInfo); !ok || info.State.Version != tls.VersionTLS13 {
		t.Fatalf("connection is not TLS 1.3: %#v", p.AuthInfo)
	}
	entries, err := listAll(t, c)
	if err != nil || len(entries) != 1 || entries[0].GetHostname() != "nas.lan" || srv.Store().Len() != 1 {
		t.Fatalf("ListHosts = %v, %v", entries, err)
	}
	if srv.Service().Calls("AddHost") != 1 || srv.Service().Calls("ListHosts") != 1 {
		t.Fatalf("counts %v", srv.Service().CallCounts())
	}
	// The server refuses requests over 4 MiB, as the real one.
	big := strings.Repeat("x", 5<<20)
	if _, err := c.AddHost(ctx(t), &pb.AddHostRequest{IpAddress: "10.0.0.2", Hostname: "big.lan", Comment: proto.String(big)}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("5 MiB request: %v, want ResourceExhausted", err)
	}
}

func TestTLSRefusals(t *testing.T) {
	srv := start(t)
	foreignCert, foreignKey, err := WriteForeignClientCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good := clientConfig{caFile: srv.CAFile(), certFile: srv.CertFile(), keyFile: srv.KeyFile()}
	tests := []struct {
		name string
		edit func(*clientConfig)
		code codes.Code
	}{
		{"valid", func(*clientConfig) {}, codes.OK},
		{"server name localhost", func(c *clientConfig) { c.serverName = "localhost" }, codes.OK},
		{"server name ::1", func(c *clientConfig) { c.serverName = "::1" }, codes.OK},
		{"server name not in the certificate", func(c *clientConfig) { c.serverName = "router.lan" }, codes.Unavailable},
		{"no client certificate", func(c *clientConfig) { c.certFile, c.keyFile = "", "" }, codes.Unavailable},
		{"client certificate from another CA", func(c *clientConfig) { c.certFile, c.keyFile = foreignCert, foreignKey }, codes.Unavailable},
		{"server not signed by the client's CA", func(c *clientConfig) { c.caFile = foreignCert }, codes.Unavailable},
		{"TLS 1.2 only", func(c *clientConfig) { c.maxVersion = tls.VersionTLS12 }, codes.Unavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc := good
			tc.edit(&cc)
			_, err := listAll(t, dial(t, srv.Addr(), cc))
			if status.Code(err) != tc.code {
				t.Fatalf("ListHosts: %v, want %v", err, tc.code)
			}
		})
	}
}

func TestStopRestart(t *testing.T) {
	srv := start(t)
	addr := srv.Addr()
	c := dial(t, addr, clientConfig{caFile: srv.CAFile(), certFile: srv.CertFile(), keyFile: srv.KeyFile()})
	if _, err := c.AddHost(ctx(t), &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "nas.lan"}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	srv.Stop() // twice is harmless
	if _, err := listAll(t, c); status.Code(err) != codes.Unavailable {
		t.Fatalf("while stopped: %v, want Unavailable", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if srv.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", srv.Addr(), addr)
	}
	// The same client reconnects; the data survived. Reconnection backs off, so allow time.
	rctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := c.ListHosts(rctx, &pb.ListHostsRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil || r.GetEntry().GetHostname() != "nas.lan" {
		t.Fatalf("after restart: %v, %v", r, err)
	}
	// Restart while running also works.
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart while running: %v", err)
	}
}

func TestStartOnGivenAddress(t *testing.T) {
	var (
		srv  *Server
		addr string
	)
	// A port freed here can be taken by any other socket before it is listened on again (it is
	// in the ephemeral range every client connection on the machine draws from, and other test
	// packages run meanwhile), so a few attempts are allowed for that one error.
	for attempt := 1; srv == nil; attempt++ {
		first := start(t)
		addr = first.Addr()
		first.Stop()
		var err error
		srv, err = Start(t.TempDir(), addr)
		if err != nil && (attempt == 5 || !strings.Contains(err.Error(), "address already in use")) {
			t.Fatal(err)
		}
	}
	defer srv.Stop()
	if srv.Addr() != addr {
		t.Fatalf("listening on %s, want %s", srv.Addr(), addr)
	}
	if _, err := Start(t.TempDir(), addr); err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("second server on a busy address: %v", err)
	}
}

// TestStopDropsEveryConnectionAtOnce: Stop is a crash, not a drain. A client whose TLS
// handshake never arrives (behind a dead network) neither delays it nor keeps its connection.
func TestStopDropsEveryConnectionAtOnce(t *testing.T) {
	srv := start(t)
	raw, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	done := make(chan struct{})
	go func() { srv.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop waited for a TLS handshake that never comes")
	}
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	var ne net.Error
	if _, err := raw.Read(make([]byte, 1)); err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("the connection outlived Stop: read returned %v", err)
	}
}

// TestImpostor: an impostor's certificate is signed by the real server's CA and says exactly
// the identity asked for, and the impostor serves the real server's clients.
func TestImpostor(t *testing.T) {
	srv := start(t)
	tests := []struct {
		name string
		id   LeafProfile
	}{
		{"another name", LeafProfile{DNSNames: []string{"nas.lan"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}},
		{"an address and no usage", LeafProfile{IPs: []net.IP{net.ParseIP("10.0.0.9")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			imp, err := StartImpostor(t.TempDir(), srv.PKI, tc.id, "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(imp.Stop)
			raw, err := os.ReadFile(imp.ServerCertFile())
			if err != nil {
				t.Fatal(err)
			}
			pair, err := tls.X509KeyPair(raw, mustRead(t, imp.ServerKeyFile()))
			if err != nil {
				t.Fatal(err)
			}
			cert := pair.Leaf
			if !slices.Equal(cert.DNSNames, tc.id.DNSNames) || len(cert.IPAddresses) != len(tc.id.IPs) || !slices.Equal(cert.ExtKeyUsage, tc.id.Usages) {
				t.Fatalf("certificate for %v %v %v, want %+v", cert.DNSNames, cert.IPAddresses, cert.ExtKeyUsage, tc.id)
			}
			for i, ip := range tc.id.IPs {
				if !cert.IPAddresses[i].Equal(ip) {
					t.Fatalf("IP SANs %v, want %v", cert.IPAddresses, tc.id.IPs)
				}
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(mustRead(t, srv.CAFile()))
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				t.Fatalf("the impostor's certificate does not chain to the real CA: %v", err)
			}
			// The real server's client, told the impostor's name, is served.
			name := "10.0.0.9"
			if len(tc.id.DNSNames) > 0 {
				name = tc.id.DNSNames[0]
			}
			c := dial(t, imp.Addr(), clientConfig{caFile: srv.CAFile(), certFile: srv.CertFile(), keyFile: srv.KeyFile(), serverName: name})
			if _, err := c.AddHost(ctx(t), &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "web.lan"}); err != nil {
				t.Fatalf("AddHost to the impostor: %v", err)
			}
			if imp.Store().Len() != 1 || srv.Store().Len() != 0 || imp.Service().WriteCalls() != 1 {
				t.Fatalf("impostor store %d, real store %d: each server must have a store of its own", imp.Store().Len(), srv.Store().Len())
			}
		})
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
