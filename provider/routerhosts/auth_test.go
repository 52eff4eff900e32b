package routerhosts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	testingclock "k8s.io/utils/clock/testing"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// authTimeout bounds every call in these tests: a refused handshake fails at once, so a test
// that waits longer has found a hang, not a slow server.
const authTimeout = 2 * time.Second

func startServer(t *testing.T, dir string) *rhtestserver.Server {
	t.Helper()
	srv, err := rhtestserver.Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

func newTLSProvider(t *testing.T, opts Options) *Provider {
	t.Helper()
	opts.Timeout = authTimeout
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	opts.Log = log
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// calls runs the reads the operator makes on a fresh connection, each first on its own
// provider so that each meets the handshake: ListHosts (a stream), Readiness and GetHost
// (unary).
func calls(t *testing.T, opts Options) map[string]error {
	t.Helper()
	ctx := context.Background()
	out := map[string]error{}
	_, out["Records"] = newTLSProvider(t, opts).Records(ctx)
	out["Ping"] = newTLSProvider(t, opts).Ping(ctx)
	p := newTLSProvider(t, opts)
	ctx, cancel := context.WithTimeout(ctx, authTimeout)
	defer cancel()
	_, err := p.rpc().GetHost(ctx, &pb.GetHostRequest{Id: "01ARZ3NDEKTSV4RRFFQ69G5FAV"})
	out["GetHost"] = authError(err)
	return out
}

func TestAuthenticationFailures(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir)
	// A second server's CA signed nothing the first server holds.
	other := startServer(t, filepath.Join(dir, "other"))
	foreignCert, foreignKey, err := rhtestserver.WriteForeignClientCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want string // in the error's text, from the original error
		// ours: the operator refused the server's certificate (ErrServerCertificate), rather
		// than the server the operator's.
		ours bool
	}{
		{"client certificate from another CA",
			Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: foreignCert, KeyFile: foreignKey},
			"remote error: tls: unknown certificate authority", false},
		{"server certificate from another CA",
			Options{Endpoint: srv.Addr(), CAFile: other.CAFile(), CertFile: srv.CertFile(), KeyFile: srv.KeyFile()},
			"x509: certificate signed by unknown authority", true},
		{"server certificate for another name",
			Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: srv.CertFile(), KeyFile: srv.KeyFile(), ServerName: "router.example"},
			"x509: certificate is valid for localhost, not router.example", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Several fresh connections: with TLS 1.3 the server's refusal races gRPC's first
			// write, and the error must say so whichever wins.
			for i := 0; i < 5; i++ {
				for call, err := range calls(t, tc.opts) {
					if !errors.Is(err, provider.ErrAuthentication) {
						t.Fatalf("%s: %v; want ErrAuthentication", call, err)
					}
					if status.Code(err) != codes.Unavailable {
						t.Fatalf("%s: code %v, want Unavailable kept through the wrapping", call, status.Code(err))
					}
					if !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("%s: %q does not keep the cause %q", call, err, tc.want)
					}
					// The text says which side refused: the fix is on that side.
					if ours := errors.Is(err, provider.ErrServerCertificate); ours != tc.ours ||
						!strings.Contains(err.Error(), provider.AuthFailure(err)) {
						t.Fatalf("%s: %q; the operator refused the server's certificate: %v, want %v", call, err, ours, tc.ours)
					}
				}
			}
		})
	}
}

// TestNoClientCertificate presents no certificate at all, which New cannot be configured to
// do: the server's refusal must be told apart all the same.
func TestNoClientCertificate(t *testing.T) {
	srv := startServer(t, t.TempDir())
	caPEM, err := os.ReadFile(srv.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	for i := 0; i < 5; i++ {
		conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(
			acceptedCreds{credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool})}))
		if err != nil {
			t.Fatal(err)
		}
		p := NewFromConn(conn, Options{Timeout: authTimeout})
		_, rerr := p.Records(context.Background())
		perr := p.Ping(context.Background())
		_ = conn.Close()
		for _, err := range []error{rerr, perr} {
			if !errors.Is(err, provider.ErrAuthentication) || !strings.Contains(err.Error(), "remote error: tls: certificate required") {
				t.Fatalf("without a client certificate: %v; want ErrAuthentication for the certificate required alert", err)
			}
		}
	}
}

func TestNotAuthenticationFailures(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir)
	valid := Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: srv.CertFile(), KeyFile: srv.KeyFile()}

	t.Run("valid certificates", func(t *testing.T) {
		for call, err := range calls(t, valid) {
			if call == "GetHost" && status.Code(err) == codes.NotFound {
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", call, err)
			}
		}
	})

	// A port that refuses connections, and one that accepts and hangs up before any TLS: both
	// outages, though the second fails "the authentication handshake" in gRPC's words.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = lis.Close() })
	stopped := startServer(t, filepath.Join(dir, "stopped"))
	stopped.Stop()
	for _, tc := range []struct{ name, addr, want string }{
		{"server stopped", stopped.Addr(), "connection refused"},
		{"connection closed during the handshake", lis.Addr().String(), "authentication handshake failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := valid
			opts.Endpoint = tc.addr
			for call, err := range calls(t, opts) {
				if err == nil || errors.Is(err, provider.ErrAuthentication) || status.Code(err) != codes.Unavailable {
					t.Fatalf("%s: %v; want Unavailable and not ErrAuthentication", call, err)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s: %v; want it to say %q", call, err, tc.want)
				}
			}
		})
	}
}

func TestAuthErrorRule(t *testing.T) {
	alert := status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: router-hosts closed the connection at the end of the handshake: remote error: tls: certificate required"`)
	tests := []struct {
		name string
		err  error
		auth bool
	}{
		{"nil", nil, false},
		{"alert", alert, true},
		{"alert with context", errors.Join(errors.New("AddHost a.lan"), alert), true},
		{"expired", status.Error(codes.Unavailable, "error reading server preface: remote error: tls: expired certificate"), true},
		{"our verification", status.Error(codes.Unavailable, "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate has expired or is not yet valid"), true},
		{"waiting for a connection", status.Error(codes.DeadlineExceeded, "latest balancer error: connection error: desc = \"transport: authentication handshake failed: verifying router-hosts server certificate: x509: certificate signed by unknown authority\""), true},
		{"refused", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), false},
		{"broken pipe", status.Error(codes.Unavailable, "write tcp 127.0.0.1:2->127.0.0.1:1: write: broken pipe"), false},
		{"handshake EOF", status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: EOF"`), false},
		{"other alert", status.Error(codes.Unavailable, "error reading server preface: remote error: tls: protocol version not supported"), false},
		{"server's own message", status.Error(codes.InvalidArgument, "comment mentions x509: certificates"), false},
		{"not gRPC", errors.New("x509: certificate signed by unknown authority"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := authError(tc.err)
			if errors.Is(got, provider.ErrAuthentication) != tc.auth {
				t.Fatalf("authError(%v) = %v; ErrAuthentication %v, want %v", tc.err, got, !tc.auth, tc.auth)
			}
			if !tc.auth {
				if got != tc.err {
					t.Fatalf("authError changed %v into %v", tc.err, got)
				}
				return
			}
			if status.Code(got) != status.Code(tc.err) || !strings.Contains(got.Error(), tc.err.Error()) {
				t.Fatalf("authError(%v) = %v (code %v): the original code and text must stay", tc.err, got, status.Code(got))
			}
			if again := authError(got); again != got {
				t.Fatalf("marked twice: %v", again)
			}
		})
	}
}

// waitUntil polls cond, a state a goroutine of the code under test reaches on its own; the
// deadline only catches one that never does.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// step moves clk by d once the watcher under test waits on it, and returns once it waits on
// it again: whatever the step woke it for is done. The watcher must be the only one to set
// timers on clk.
func step(t *testing.T, clk *testingclock.FakeClock, d time.Duration) {
	t.Helper()
	waitUntil(t, "the watcher to wait on its clock", clk.HasWaiters)
	clk.Step(d)
	waitUntil(t, "the watcher to wait on its clock again", clk.HasWaiters)
}

func TestWatchCredentials(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir)
	certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	for src, dst := range map[string]string{srv.CertFile(): certFile, srv.KeyFile(): keyFile} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var reported []CredentialsEvent // the watcher's goroutine appends before it calls fn
	var reportedMu sync.Mutex
	clk := testingclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	p := newTLSProvider(t, Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: certFile, KeyFile: keyFile, Clock: clk,
		Credentials: func(ev CredentialsEvent) {
			reportedMu.Lock()
			defer reportedMu.Unlock()
			reported = append(reported, ev)
		}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const every = 10 * time.Second
	var calls atomic.Int32
	p.WatchCredentials(ctx, every, func() { calls.Add(1) })

	for range 10 {
		step(t, clk, every)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("fn called %d times in ten checks of unchanged files", n)
	}

	foreign, _, err := rhtestserver.WriteForeignClientCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(foreign)
	if err != nil {
		t.Fatal(err)
	}
	// Written beside it and renamed into place, as a Secret update is, so the watcher sees one
	// change; new content may have the old size, a later modification time makes it certain.
	tmp := certFile + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(tmp, later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, certFile); err != nil {
		t.Fatal(err)
	}
	// Not looked at before the next check is due: the timer is still set, or fn was called
	// before it was set again.
	clk.Step(every - time.Nanosecond)
	if !clk.HasWaiters() || calls.Load() != 0 {
		t.Fatalf("the files were checked before %v had passed", every)
	}
	step(t, clk, time.Nanosecond)
	if n := calls.Load(); n != 1 {
		t.Fatalf("fn called %d times at the check after the certificate file changed, want 1", n)
	}
	// The watcher read the changed files itself, without a handshake, as a standby that never
	// calls the router must: only the certificate changed, so they do not load as a pair.
	reportedMu.Lock()
	got := slices.Clone(reported)
	reportedMu.Unlock()
	if len(got) != 2 || got[1].Err == nil || !strings.Contains(got[1].Err.Error(), "private key does not match") {
		t.Fatalf("reported %v; want the first load, then the changed files' failure", got)
	}
	for range 10 {
		step(t, clk, every)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("fn called %d times for one change, want 1", n)
	}

	// Once ctx ends, the watcher returns: its timer is stopped, so nothing more is checked.
	cancel()
	waitUntil(t, "the watcher to stop once ctx ended", func() bool { return !clk.HasWaiters() })
}

func TestWatchCredentialsWithoutFiles(t *testing.T) {
	_, conn := inmemory.DialTest(t)
	clk := testingclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	p := NewFromConn(conn, Options{Clock: clk})
	p.WatchCredentials(context.Background(), time.Millisecond, func() { t.Error("fn called without files to watch") })
	if clk.HasWaiters() {
		t.Fatal("a provider on a caller's connection watches files it does not have")
	}
}

// TestWatchConnectionReportsTheServersReturn: a call that fails on a stopped server marks the
// connection down; fn is called once the server answers again, without any call from the
// caller, and never while the connection stays up. The watcher's second look runs on a fake
// clock the test steps; the server's stop and return, and gRPC's reconnection to it, are real.
func TestWatchConnectionReportsTheServersReturn(t *testing.T) {
	srv := startServer(t, t.TempDir())
	clk := testingclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	p := newTLSProvider(t, Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: srv.CertFile(), KeyFile: srv.KeyFile(), Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	back := make(chan time.Time, 10)
	p.WatchConnection(ctx, func() { back <- time.Now() })
	if _, err := p.Records(ctx); err != nil {
		t.Fatal(err)
	}
	// A look once the connection is up, so that the watcher has not last seen it connecting:
	// in the operator it has been up for a while before any call fails.
	step(t, clk, time.Second)
	// A server that refuses a call for a moment on a connection that stays up is no return:
	// the watcher's next look finds the connection up and reports nothing.
	_ = p.callError(status.Error(codes.Unavailable, "server busy"))
	step(t, clk, time.Second)
	if len(back) != 0 {
		t.Fatal("fn called while the connection was up")
	}

	srv.Stop()
	if _, err := p.Records(ctx); err == nil {
		t.Fatal("ListHosts succeeded with the server stopped")
	}
	// Down for several of the watcher's looks: gRPC keeps the connection in TRANSIENT_FAILURE
	// through its reconnection attempts, so these looks are all the watcher sees of the outage.
	for range 3 {
		step(t, clk, time.Second)
	}
	if len(back) != 0 {
		t.Fatal("fn called while the server was down")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	select {
	case at := <-back:
		// The reconnection backoff is capped at 3 s (+20 % jitter).
		if d := at.Sub(restarted); d > 5*time.Second {
			t.Fatalf("the server's return was reported %v after it", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fn not called after the server came back")
	}
	// One return is reported once: neither the watcher's next look, nor one after a call got
	// through, reports it again.
	step(t, clk, time.Second)
	if _, err := p.Records(ctx); err != nil {
		t.Fatalf("ListHosts after the return: %v", err)
	}
	step(t, clk, time.Second)
	if len(back) != 0 {
		t.Fatal("fn called more than once for one return")
	}

	// Once ctx ends, the watcher returns and sets no more timers.
	cancel()
	waitUntil(t, "the watcher to stop once ctx ended", func() bool { return !clk.HasWaiters() })
}
