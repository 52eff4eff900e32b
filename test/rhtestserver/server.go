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
	PKI
	addr    string
	svc     *inmemory.Service
	tlsConf *tls.Config

	mu   sync.Mutex
	grpc *grpc.Server
	lis  *DropListener
	// hostsErr is the first error writing the hosts file met.
	hostsErr error
	// hooks runs the on-success hook (OnSuccess) after the writes.
	hooks hookRunner
}

// Start writes a fresh PKI into dir (WritePKI) and serves on addr ("" means 127.0.0.1 on a
// free port) with the real server's transport rules: mTLS, TLS 1.3, 15 s keepalive floor,
// 4 MiB requests.
func Start(dir, addr string) (*Server, error) {
	pki, err := WritePKI(dir)
	if err != nil {
		return nil, err
	}
	return startPKI(pki, addr)
}

// StartImpostor serves on addr ("" as for Start) as a server that real's CA vouches for but
// whose certificate says id (WriteImpostorPKI, into dir): a router impostor, for tests that a
// client refuses it. It accepts the client certificates real's CA signed, so a client that
// trusts the CA and does not check the server's name talks to it as to the real server; its
// Service counts what reached it.
func StartImpostor(dir string, real PKI, id LeafProfile, addr string) (*Server, error) {
	pki, err := WriteImpostorPKI(dir, real, id)
	if err != nil {
		return nil, err
	}
	return startPKI(pki, addr)
}

// startPKI serves pki's server certificate on addr.
func startPKI(pki PKI, addr string) (*Server, error) {
	s := &Server{PKI: pki, svc: inmemory.NewService(inmemory.NewStore())}
	srvCert, srvKey := pki.ServerCertFile(), pki.ServerKeyFile()
	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	if err != nil {
		return nil, fmt.Errorf("loading server certificate: %w", err)
	}
	caPEM, err := os.ReadFile(pki.CAFile())
	if err != nil {
		return nil, fmt.Errorf("reading CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
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

// DropListener is a listener that remembers the connections it accepted, so that Stop can
// drop them all at once as a crashing router does: gRPC's own Stop waits for every TLS
// handshake under way, which a client behind a dead network never finishes.
type DropListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func (l *DropListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns == nil {
		// Accepted while drop ran: the connection goes the way of the others.
		_ = c.Close()
		return nil, net.ErrClosed
	}
	l.conns[c] = true
	return c, nil
}

// NewDropListener wraps lis; the soak's relays drop their connections as the server does.
func NewDropListener(lis net.Listener) *DropListener {
	return &DropListener{Listener: lis, conns: map[net.Conn]bool{}}
}

// Drop closes the listener and every connection it accepted.
func (l *DropListener) Drop() {
	_ = l.Listener.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		_ = c.Close()
	}
	l.conns = nil
}

// serve starts a fresh gRPC server on lis; a grpc.Server cannot serve again after Stop.
func (s *Server) serve(lis net.Listener) {
	g := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(s.tlsConf)),
		// As the real server: clients pinging more often than every 15 s are sent away.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
		grpc.MaxRecvMsgSize(4<<20),
		grpc.UnaryInterceptor(s.afterWrites),
	)
	pb.RegisterHostsServiceServer(g, s.svc)
	dl := NewDropListener(lis)
	s.mu.Lock()
	s.grpc, s.lis = g, dl
	s.mu.Unlock()
	go func() { _ = g.Serve(dl) }()
}

// Addr is the host:port the server listens on, with the real port when Start was given :0.
func (s *Server) Addr() string { return s.addr }

// Service is the gRPC service, for call counts and fault hooks.
func (s *Server) Service() *inmemory.Service { return s.svc }

// Store is the data behind the service, for tests that edit entries behind the operator's back.
func (s *Server) Store() *inmemory.Store { return s.svc.Store() }

// Stop stops serving at once, as a crashed or rebooting router: the port closes and calls in
// flight fail with Unavailable. The data stays for Restart. Stopping twice is harmless.
func (s *Server) Stop() {
	s.mu.Lock()
	g, lis := s.grpc, s.lis
	s.grpc, s.lis = nil, nil
	s.mu.Unlock()
	if g != nil {
		lis.Drop()
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
