package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// conn is how the operator and the probes reach a router: its address and the TLS files.
type conn struct {
	endpoint, ca, cert, key string
}

func (c conn) dial() (pb.HostsServiceClient, func(), error) {
	return rhclient.Dial(c.endpoint, rhclient.Files{CA: c.ca, Cert: c.cert, Key: c.key})
}

// logSize is the server's event log: events per aggregate (an entry's, live or deleted) and
// the bytes it takes on disk (0 where it has none).
type logSize struct {
	eventsOf map[string]int
	bytes    int64
}

func (l logSize) events() int {
	n := 0
	for _, e := range l.eventsOf {
		n += e
	}
	return n
}

// router is a router-hosts server a year runs on.
type router interface {
	conn() conn
	log(ctx context.Context) (logSize, error)
	stop()
}

// realRouter is the real router-hosts server, a process of its own with its SQLite event log.
type realRouter struct {
	dir  string
	pki  rhtestserver.PKI
	addr string
	proc *harness.Process
}

// startReal starts the real server from bin with a fresh database in dir.
func startReal(ctx context.Context, bin, dir string) (*realRouter, error) {
	pki, err := rhtestserver.WritePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("writing the PKI: %w", err)
	}
	addr, err := harness.Addr()
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("[server]\nbind_address = %q\nhosts_file_path = %q\n\n[database]\npath = %q\n\n[tls]\ncert_path = %q\nkey_path = %q\nca_cert_path = %q\n",
		addr, filepath.Join(dir, "hosts"), filepath.Join(dir, "hosts.db"), pki.ServerCertFile(), pki.ServerKeyFile(), pki.CAFile())
	toml := filepath.Join(dir, "server.toml")
	if err := os.WriteFile(toml, []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("writing the server's configuration: %w", err)
	}
	proc, err := harness.Start(exec.Command(bin, "serve", "--config", toml), filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, fmt.Errorf("starting router-hosts: %w", err)
	}
	r := &realRouter{dir: dir, pki: pki, addr: addr, proc: proc}
	cli, closeCli, err := r.conn().dial()
	if err != nil {
		r.stop()
		return nil, err
	}
	defer closeCli()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err = rhclient.List(ctx, cli); err == nil {
			return r, nil
		}
		if proc.Exited() || time.Now().After(deadline) {
			r.stop()
			return nil, fmt.Errorf("router-hosts did not answer (%w); its log:\n%s", err, proc.Tail(20))
		}
	}
}

func (r *realRouter) conn() conn {
	return conn{endpoint: r.addr, ca: r.pki.CAFile(), cert: r.pki.CertFile(), key: r.pki.KeyFile()}
}

// log reads the server's database beside it, read-only, with the sqlite3 shell: the server
// has no call that tells its log's size.
func (r *realRouter) log(ctx context.Context) (logSize, error) {
	db := filepath.Join(r.dir, "hosts.db")
	out, err := exec.CommandContext(ctx, "sqlite3", "-readonly", "-separator", " ", db,
		"SELECT aggregate_id, count(*) FROM events GROUP BY aggregate_id").Output()
	if err != nil {
		return logSize{}, fmt.Errorf("reading the server's log with sqlite3: %w", err)
	}
	l := logSize{eventsOf: map[string]int{}}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, n, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		c, err := strconv.Atoi(n)
		if err != nil {
			return logSize{}, fmt.Errorf("the server's log: %q: %w", line, err)
		}
		l.eventsOf[strings.ToUpper(id)] = c
	}
	for _, f := range []string{"hosts.db", "hosts.db-wal"} {
		if st, err := os.Stat(filepath.Join(r.dir, f)); err == nil {
			l.bytes += st.Size()
		}
	}
	return l, nil
}

func (r *realRouter) stop() { r.proc.Stop(syscall.SIGTERM, 10*time.Second) }

// testRouter is the router-hosts test server in this process (in-memory event log, real gRPC
// and mTLS): what the year's own test runs on.
type testRouter struct{ srv *rhtestserver.Server }

func startTest(dir string) (*testRouter, error) {
	srv, err := rhtestserver.Start(dir, "")
	if err != nil {
		return nil, fmt.Errorf("starting the test server: %w", err)
	}
	return &testRouter{srv: srv}, nil
}

func (t *testRouter) conn() conn {
	return conn{endpoint: t.srv.Addr(), ca: t.srv.CAFile(), cert: t.srv.CertFile(), key: t.srv.KeyFile()}
}

func (t *testRouter) log(context.Context) (logSize, error) {
	return logSize{eventsOf: t.srv.Store().EventCounts()}, nil
}

func (t *testRouter) stop() { t.srv.Stop() }
