package soak

import (
	"fmt"
	"path/filepath"

	"github.com/router-hosts-operator/router-hosts-operator/test/rhreal"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// router is the router-hosts server the clusters share: the test server in this process or
// the real server as a process of its own. Either keeps a hosts file and its data over a
// restart.
type router interface {
	Addr() string
	PKI() rhtestserver.PKI
	// HostsFile is the file a resolver serves.
	HostsFile() string
	// Stop takes the router down as a reboot does; Start brings it back with its data.
	Stop() error
	Start() error
	Close()
	Describe() string
}

// testRouter is the router-hosts test server: the API page's semantics over real mTLS gRPC.
type testRouter struct {
	srv   *rhtestserver.Server
	hosts string
}

func startTestRouter(dir string) (*testRouter, error) {
	srv, err := rhtestserver.Start(filepath.Join(dir, "pki"), "")
	if err != nil {
		return nil, fmt.Errorf("test server: %w", err)
	}
	r := &testRouter{srv: srv, hosts: filepath.Join(dir, "hosts")}
	srv.WriteHostsFile(r.hosts)
	return r, nil
}

func (r *testRouter) Addr() string          { return r.srv.Addr() }
func (r *testRouter) PKI() rhtestserver.PKI { return r.srv.PKI }
func (r *testRouter) HostsFile() string     { return r.hosts }
func (r *testRouter) Stop() error           { r.srv.Stop(); return nil }
func (r *testRouter) Start() error          { return r.srv.Restart() }
func (r *testRouter) Close()                { r.srv.Stop() }
func (r *testRouter) Describe() string      { return "router-hosts test server" }
func (r *testRouter) hostsErr() error       { return r.srv.HostsFileErr() }

// startRealRouter runs the real server from bin (test/rhreal).
func startRealRouter(bin, dir string) (*rhreal.Server, error) { return rhreal.Start(bin, dir) }
