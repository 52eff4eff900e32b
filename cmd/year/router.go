package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhreal"
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

// realRouter is the real router-hosts server (test/rhreal), a process of its own with its
// SQLite event log.
type realRouter struct{ srv *rhreal.Server }

func startReal(bin, dir string) (*realRouter, error) {
	srv, err := rhreal.Start(bin, dir)
	if err != nil {
		return nil, err
	}
	return &realRouter{srv: srv}, nil
}

func (r *realRouter) conn() conn {
	p := r.srv.PKI()
	return conn{endpoint: r.srv.Addr(), ca: p.CAFile(), cert: p.CertFile(), key: p.KeyFile()}
}

// log reads the server's database beside it, read-only, with the sqlite3 shell: the server
// has no call that tells its log's size.
func (r *realRouter) log(ctx context.Context) (logSize, error) {
	db := r.srv.DBFile()
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
	for _, f := range []string{db, db + "-wal"} {
		if st, err := os.Stat(f); err == nil {
			l.bytes += st.Size()
		}
	}
	return l, nil
}

func (r *realRouter) stop() { r.srv.Close() }

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
