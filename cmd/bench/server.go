package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// benchCluster is the operator's --cluster-name in every run, so that on a real server the
// bench's entries are told apart from the user's by their cluster:rho-bench tag.
const benchCluster = "rho-bench"

// conn is how the operator and the plain client reach a server.
type conn struct {
	endpoint, ca, cert, key, serverName string
}

// env is the operator's environment for conn.
func (c conn) env() []string {
	return []string{
		envPrefix + "ROUTER_HOSTS_ENDPOINT=" + c.endpoint, envPrefix + "TLS_CA=" + c.ca,
		envPrefix + "TLS_CERT=" + c.cert, envPrefix + "TLS_KEY=" + c.key, envPrefix + "TLS_SERVER_NAME=" + c.serverName,
	}
}

// client dials conn as a plain router-hosts client, nothing of the operator's own code, so the
// floor measures the server and gRPC.
func (c conn) client() (pb.HostsServiceClient, func(), error) {
	return rhclient.Dial(c.endpoint, rhclient.Files{CA: c.ca, Cert: c.cert, Key: c.key, ServerName: c.serverName})
}

// server is the router-hosts server a run writes to.
type server interface {
	// describe names the server for the table's heading.
	describe() string
	// fresh prepares a server holding none of the bench's entries and says how to reach it; a
	// test server is new and empty, a real one has the bench's leftovers deleted.
	fresh(ctx context.Context, replayCost time.Duration) (conn, error)
	// count is the number of the bench's entries on the server; ok is false when the server
	// cannot be counted without loading it (a real router replays its log for every listing),
	// and the operator's own count of acknowledged AddHost calls stands in.
	count(ctx context.Context) (n int, ok bool, err error)
	// ipOf is the address of hostname's entry, "" when there is none.
	ipOf(ctx context.Context, hostname string) (string, error)
	// pollEvery is how often count and ipOf may be called without loading the server.
	pollEvery() time.Duration
	// calls is the server's own count of calls per RPC, or nil when the server cannot tell
	// (a real router); the operator's metrics count them either way.
	calls() map[string]int64
	// cleanup removes what the run left: the test server stops, a real one loses the bench's entries.
	cleanup(ctx context.Context) error
}

// testServer runs the router-hosts test server in this process: an in-memory event log over
// real gRPC with mTLS. Its store is watched directly, at no cost to the server.
type testServer struct {
	dir string
	srv *rhtestserver.Server
	n   atomic.Int64
	// stopDNS stops the dnsmasq serving srv's hosts file, when a run started one.
	stopDNS func()
}

// stopAll stops the server and the dnsmasq beside it.
func (t *testServer) stopAll() {
	if t.stopDNS != nil {
		t.stopDNS()
		t.stopDNS = nil
	}
	if t.srv != nil {
		t.srv.Stop()
	}
}

func (t *testServer) describe() string {
	return "router-hosts test server (in-memory event log over mTLS gRPC, in the bench process)"
}

func (t *testServer) fresh(_ context.Context, replayCost time.Duration) (conn, error) {
	t.stopAll()
	dir, err := os.MkdirTemp(t.dir, "server-")
	if err != nil {
		return conn{}, fmt.Errorf("server dir: %w", err)
	}
	t.srv, err = rhtestserver.Start(dir, "")
	if err != nil {
		return conn{}, fmt.Errorf("starting the test server: %w", err)
	}
	t.srv.Store().SetReplayCost(replayCost)
	return conn{endpoint: t.srv.Addr(), ca: t.srv.CAFile(), cert: t.srv.CertFile(), key: t.srv.KeyFile()}, nil
}

func (t *testServer) count(context.Context) (int, bool, error) { return t.srv.Store().Len(), true, nil }

func (t *testServer) ipOf(_ context.Context, hostname string) (string, error) {
	if es := t.srv.Store().Lookup(hostname); len(es) > 0 {
		return es[0].GetIpAddress(), nil
	}
	return "", nil
}

func (t *testServer) pollEvery() time.Duration { return time.Millisecond }

func (t *testServer) calls() map[string]int64 { return t.srv.Service().CallCounts() }

func (t *testServer) cleanup(context.Context) error {
	t.stopAll()
	return nil
}

// realServer is a user's router-hosts server, reached with the operator's environment. The
// bench writes only entries tagged cluster:rho-bench and deletes them when it is done.
type realServer struct {
	c   conn
	cli pb.HostsServiceClient

	mu  sync.Mutex
	ids map[string]string // hostname → entry ID, learnt by the last listing
}

// connFromEnv reads a connection from the operator's own variables.
func connFromEnv() conn {
	return conn{endpoint: os.Getenv(envPrefix + "ROUTER_HOSTS_ENDPOINT"), ca: os.Getenv(envPrefix + "TLS_CA"),
		cert: os.Getenv(envPrefix + "TLS_CERT"), key: os.Getenv(envPrefix + "TLS_KEY"), serverName: os.Getenv(envPrefix + "TLS_SERVER_NAME")}
}

func newRealServer() (*realServer, error) {
	c := connFromEnv()
	if c.endpoint == "" || c.ca == "" || c.cert == "" || c.key == "" {
		return nil, errors.New("-server=real needs ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT, _TLS_CA, _TLS_CERT and _TLS_KEY")
	}
	cli, _, err := c.client() // kept for the whole run
	if err != nil {
		return nil, err
	}
	return &realServer{c: c, cli: cli, ids: map[string]string{}}, nil
}

func (r *realServer) describe() string { return "router-hosts server at " + r.c.endpoint }

func (r *realServer) fresh(ctx context.Context, replayCost time.Duration) (conn, error) {
	if replayCost != 0 {
		return conn{}, errors.New("a replay cost applies to the test server only")
	}
	return r.c, r.cleanup(ctx)
}

// mine lists the bench's entries; each call replays the server's log, hence pollEvery.
func (r *realServer) mine(ctx context.Context) ([]*pb.HostEntry, error) {
	all, err := rhclient.List(ctx, r.cli)
	if err != nil {
		return nil, err
	}
	var out []*pb.HostEntry
	ids := map[string]string{}
	for _, e := range all {
		if slices.Contains(e.GetTags(), "cluster:"+benchCluster) {
			out = append(out, e)
			ids[e.GetHostname()] = e.GetId()
		}
	}
	r.mu.Lock()
	r.ids = ids
	r.mu.Unlock()
	return out, nil
}

func (r *realServer) count(context.Context) (int, bool, error) { return 0, false, nil }

// ipOf reads one entry by the ID the last listing found, so polling costs one GetHost; an ID
// that is unknown or gone is looked up again with one listing.
func (r *realServer) ipOf(ctx context.Context, hostname string) (string, error) {
	for attempt := 0; ; attempt++ {
		r.mu.Lock()
		id := r.ids[hostname]
		r.mu.Unlock()
		if id == "" && attempt == 0 {
			if _, err := r.mine(ctx); err != nil {
				return "", err
			}
			continue
		}
		if id == "" {
			return "", nil
		}
		resp, err := r.cli.GetHost(ctx, &pb.GetHostRequest{Id: id})
		if status.Code(err) == codes.NotFound && attempt == 0 {
			r.mu.Lock()
			delete(r.ids, hostname)
			r.mu.Unlock()
			continue
		}
		if err != nil {
			return "", fmt.Errorf("GetHost %s: %w", id, err)
		}
		return resp.GetEntry().GetIpAddress(), nil
	}
}

func (r *realServer) pollEvery() time.Duration { return 20 * time.Millisecond }

func (r *realServer) calls() map[string]int64 { return nil }

func (r *realServer) cleanup(ctx context.Context) error {
	es, err := r.mine(ctx)
	if err != nil {
		return err
	}
	for _, e := range es {
		if _, err := r.cli.DeleteHost(ctx, &pb.DeleteHostRequest{Id: e.GetId()}); err != nil && status.Code(err) != codes.NotFound {
			return fmt.Errorf("deleting the bench's entry %s: %w", e.GetHostname(), err)
		}
	}
	r.mu.Lock()
	r.ids = map[string]string{}
	r.mu.Unlock()
	return nil
}

// The RPC names the tables use.
const (
	rpcAdd    = inmemory.MethodAdd
	rpcUpdate = inmemory.MethodUpdate
	rpcDelete = inmemory.MethodDelete
	rpcGet    = inmemory.MethodGet
	rpcList   = inmemory.MethodList
)
