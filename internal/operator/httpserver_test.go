package operator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/health"
	"github.com/router-hosts-operator/router-hosts-operator/metrics"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
	"github.com/router-hosts-operator/router-hosts-operator/webhook"
)

// TestProductionLimits: both servers have every limit, and the webhook's leave its own answer
// time to go out.
func TestProductionLimits(t *testing.T) {
	for _, c := range []struct {
		name string
		l    serverLimits
		// answers is the longest a handler takes to answer.
		answers time.Duration
	}{
		{"metrics and health", probeLimits, time.Second},
		{"webhook", webhookLimits, webhook.DefaultAnswerWithin},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := c.l
			if l.ReadHeader <= 0 || l.Read < l.ReadHeader || l.Idle <= 0 {
				t.Errorf("read limits %+v: each must be set, and Read covers ReadHeader", l)
			}
			if l.Write <= c.answers {
				t.Errorf("Write %v does not leave an answer of up to %v time to go out", l.Write, c.answers)
			}
			if l.MaxHeaderBytes <= 0 || l.MaxHeaderBytes >= http.DefaultMaxHeaderBytes {
				t.Errorf("MaxHeaderBytes %d: want a bound below Go's default of %d", l.MaxHeaderBytes, http.DefaultMaxHeaderBytes)
			}
			srv := l.server(http.NotFoundHandler())
			if srv.ReadHeaderTimeout != l.ReadHeader || srv.ReadTimeout != l.Read || srv.WriteTimeout != l.Write ||
				srv.IdleTimeout != l.Idle || srv.MaxHeaderBytes != l.MaxHeaderBytes {
				t.Errorf("the server does not carry the limits: %+v", srv)
			}
		})
	}
	if hook := newTestWebhook(t); hook.limits != webhookLimits || hook.probes != probeLimits {
		t.Errorf("NewWebhook's limits %+v %+v, want the production ones", hook.limits, hook.probes)
	}
}

// short are limits a test can wait out: real servers, real timeouts, far below the
// production values.
var short = serverLimits{ReadHeader: 200 * time.Millisecond, Read: 400 * time.Millisecond, Write: time.Second,
	Idle: 300 * time.Millisecond, MaxHeaderBytes: 1 << 10}

// TestSlowClientsAreCutOff: a client that trickles its headers (slowloris), never finishes its
// body or keeps an idle connection is cut off by either server within its limits, and headers
// over the limit are refused; a client that behaves is answered.
func TestSlowClientsAreCutOff(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	// The metrics and health server, as Run starts it.
	checker := health.New(time.Minute, func() bool { return true }, nil)
	stop, addr := serveProbes(t, checker, log)
	defer stop()
	// The webhook's server, as Run starts it.
	hook := newTestWebhook(t)
	hook.limits = short
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hook.Serve(ctx, lis) }()
	defer func() { cancel(); <-done }()

	for _, srv := range []struct{ name, addr, get, post string }{
		{"metrics", addr, "/healthz", "/healthz"},
		{"webhook", lis.Addr().String(), "/", "/records"},
	} {
		t.Run(srv.name, func(t *testing.T) {
			req := "GET " + srv.get + " HTTP/1.1\r\nHost: x\r\n"
			for _, c := range []struct {
				name string
				// talk writes to the connection, and returns when it has written all it will.
				talk func(conn net.Conn)
				// within is how long the server may keep the connection open.
				within time.Duration
				// status is the answer's, when one is due.
				status int
			}{
				{"headers trickled", func(conn net.Conn) {
					_, _ = io.WriteString(conn, req)
					for i := 0; ; i++ {
						time.Sleep(50 * time.Millisecond) // each write well within any idle limit
						if _, err := fmt.Fprintf(conn, "X-Slow-%d: y\r\n", i); err != nil {
							return
						}
					}
				}, 2 * time.Second, 0},
				{"body never finished", func(conn net.Conn) {
					_, _ = io.WriteString(conn, "POST "+srv.post+" HTTP/1.1\r\nHost: x\r\nContent-Type: "+webhook.MediaType+"\r\nContent-Length: 1000\r\n\r\n{\"create\":[")
				}, 2 * time.Second, -1},
				{"kept idle after an answer", func(conn net.Conn) { _, _ = io.WriteString(conn, req+"\r\n") }, 2 * time.Second, http.StatusOK},
				{"headers over the limit", func(conn net.Conn) {
					_, _ = io.WriteString(conn, req+"X-Big: "+strings.Repeat("a", short.MaxHeaderBytes+8<<10)+"\r\n\r\n")
				}, 2 * time.Second, http.StatusRequestHeaderFieldsTooLarge},
			} {
				t.Run(c.name, func(t *testing.T) {
					conn, err := net.Dial("tcp", srv.addr)
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close()
					start := time.Now()
					go c.talk(conn)
					status, err := readUntilClosed(conn, 10*time.Second)
					if err != nil {
						t.Fatalf("the server kept the connection: %v", err)
					}
					if took := time.Since(start); took > c.within {
						t.Errorf("cut off after %v, want within %v", took, c.within)
					}
					if c.status > 0 && status != c.status {
						t.Errorf("answered %d, want %d", status, c.status)
					}
				})
			}
		})
	}
}

// readUntilClosed reads conn until the server closes it, and returns the status of the first
// answer (0 for none); an error says the connection was still open at the deadline.
func readUntilClosed(conn net.Conn, deadline time.Duration) (int, error) {
	_ = conn.SetReadDeadline(time.Now().Add(deadline))
	r := bufio.NewReader(conn)
	status := 0
	if resp, err := http.ReadResponse(r, nil); err == nil {
		status = resp.StatusCode
	}
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return status, err
	}
	return status, nil
}

// serveProbes starts the metrics and health server on a loopback port within short.
func serveProbes(t *testing.T, checker *health.Checker, log *logrus.Logger) (stop func(), addr string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = lis.Addr().String()
	lis.Close()
	stop, err = serveHTTP(addr, short, metrics.New([]string{"ingress"}), checker, log)
	if err != nil {
		t.Fatal(err)
	}
	return stop, addr
}

// newTestWebhook is the webhook as the binary wires it, against the router-hosts test server.
func newTestWebhook(t *testing.T) *Webhook {
	t.Helper()
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	cfg, err := ParseFlags([]string{"webhook", "--router-hosts-endpoint=" + srv.Addr(), "--tls-ca=" + srv.CAFile(), "--tls-cert=" + srv.CertFile(),
		"--tls-key=" + srv.KeyFile(), "--interval=1h", "--metrics-address=", "--cluster-id=0a1b2c3d"}, Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	w, err := NewWebhook(cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}
