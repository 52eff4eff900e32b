// Package rhtestserver is the router-hosts test server: the in-memory implementation of the
// server's semantics served over real gRPC with mutual TLS on a loopback port, with a CA and
// certificates of its own. Integration tests and `make demo` run the operator against it
// exactly as against a router.
package rhtestserver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
)

// Server is a running test server. Its store outlives Stop, so a test can take the server
// down and bring it back with Restart and see the operator recover.
type Server struct {
	dir     string
	addr    string
	svc     *inmemory.Service
	tlsConf *tls.Config

	mu   sync.Mutex
	grpc *grpc.Server
}

// Start writes a fresh CA (ca.crt), a server certificate for localhost, 127.0.0.1 and ::1, and
// a client certificate (tls.crt, tls.key) into dir, and serves on addr ("" means 127.0.0.1 on
// a free port) with the real server's transport rules: mTLS, TLS 1.3, 15 s keepalive floor,
// 4 MiB requests.
func Start(dir, addr string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	authority, err := newCA("router-hosts test CA")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, svc: inmemory.NewService(inmemory.NewStore())}
	if err := os.WriteFile(s.CAFile(), authority.pem, 0o600); err != nil {
		return nil, fmt.Errorf("writing CA: %w", err)
	}
	srvCert, srvKey := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := authority.issue(srvCert, srvKey, "router-hosts test server", x509.ExtKeyUsageServerAuth,
		[]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}); err != nil {
		return nil, err
	}
	if err := authority.issue(s.CertFile(), s.KeyFile(), "router-hosts-operator", x509.ExtKeyUsageClientAuth, nil, nil); err != nil {
		return nil, err
	}
	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	if err != nil {
		return nil, fmt.Errorf("loading server certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(authority.pem) {
		return nil, errors.New("the generated CA does not parse")
	}
	s.tlsConf = &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	s.addr = lis.Addr().String()
	s.serve(lis)
	return s, nil
}

// serve starts a fresh gRPC server on lis; a grpc.Server cannot serve again after Stop.
func (s *Server) serve(lis net.Listener) {
	g := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(s.tlsConf)),
		// As the real server: clients pinging more often than every 15 s are sent away.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
		grpc.MaxRecvMsgSize(4<<20),
	)
	pb.RegisterHostsServiceServer(g, s.svc)
	s.mu.Lock()
	s.grpc = g
	s.mu.Unlock()
	go func() { _ = g.Serve(lis) }()
}

// Addr is the host:port the server listens on, with the real port when Start was given :0.
func (s *Server) Addr() string { return s.addr }

// Service is the gRPC service, for call counts and fault hooks.
func (s *Server) Service() *inmemory.Service { return s.svc }

// Store is the data behind the service, for tests that edit entries behind the operator's back.
func (s *Server) Store() *inmemory.Store { return s.svc.Store() }

// CAFile is the CA that signed both the server's and the client's certificates; the operator
// verifies the server with it.
func (s *Server) CAFile() string { return filepath.Join(s.dir, "ca.crt") }

// CertFile is the client certificate (clientAuth) the operator presents.
func (s *Server) CertFile() string { return filepath.Join(s.dir, "tls.crt") }

// KeyFile is the private key of CertFile.
func (s *Server) KeyFile() string { return filepath.Join(s.dir, "tls.key") }

// Stop stops serving at once, as a crashed or rebooting router: the port closes and calls in
// flight fail with Unavailable. The data stays for Restart. Stopping twice is harmless.
func (s *Server) Stop() {
	s.mu.Lock()
	g := s.grpc
	s.grpc = nil
	s.mu.Unlock()
	if g != nil {
		g.Stop()
	}
}

// Restart serves again on the same address with the same data and certificates, as a router
// coming back; it stops the server first if it is still running.
func (s *Server) Restart() error {
	s.Stop()
	var (
		lis net.Listener
		err error
	)
	// The port may linger for a moment after Stop.
	for i := 0; i < 50; i++ {
		if lis, err = net.Listen("tcp", s.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("listening again on %s: %w", s.addr, err)
	}
	s.serve(lis)
	return nil
}
