package soak

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
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

// realRouter is the real router-hosts server, run from its binary with a config of its own:
// SQLite on disk, so a restart keeps the data, and the hosts file it renders itself.
type realRouter struct {
	bin, dir string
	pki      rhtestserver.PKI
	addr     string
	proc     *harness.Process
}

func startRealRouter(bin, dir string) (*realRouter, error) {
	pki, err := rhtestserver.WritePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	addr, err := harness.Addr()
	if err != nil {
		return nil, err
	}
	r := &realRouter{bin: bin, dir: dir, pki: pki, addr: addr}
	config := fmt.Sprintf("[server]\nbind_address = %q\nhosts_file_path = %q\n\n[database]\npath = %q\n\n[tls]\ncert_path = %q\nkey_path = %q\nca_cert_path = %q\n",
		addr, r.HostsFile(), filepath.Join(dir, "hosts.db"), pki.ServerCertFile(), pki.ServerKeyFile(), pki.CAFile())
	// The server refuses a config file others may write.
	if err := os.WriteFile(r.config(), []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("writing the server's config: %w", err)
	}
	if err := r.Start(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *realRouter) config() string        { return filepath.Join(r.dir, "server.toml") }
func (r *realRouter) Addr() string          { return r.addr }
func (r *realRouter) PKI() rhtestserver.PKI { return r.pki }
func (r *realRouter) HostsFile() string     { return filepath.Join(r.dir, "hosts") }
func (r *realRouter) Describe() string      { return "router-hosts server (" + r.bin + ")" }
func (r *realRouter) logPath() string       { return filepath.Join(r.dir, "server.log") }

// Start runs the server and waits until it answers Readiness.
func (r *realRouter) Start() error {
	proc, err := harness.Start(exec.Command(r.bin, "serve", "--config", r.config()), r.logPath())
	if err != nil {
		return err
	}
	r.proc = proc
	cli, closeCli, err := rhclient.Dial(r.addr, rhclient.Files{CA: r.pki.CAFile(), Cert: r.pki.CertFile(), Key: r.pki.KeyFile()})
	if err != nil {
		return err
	}
	defer closeCli()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := cli.Readiness(ctx, &pb.ReadinessRequest{})
		cancel()
		if err == nil && resp.GetReady() {
			return nil
		}
		if proc.Exited() {
			return fmt.Errorf("the router-hosts server exited at start; see %s", r.logPath())
		}
		if time.Now().After(deadline) {
			return errors.Join(errors.New("the router-hosts server did not become ready in 30 s"), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop sends SIGTERM, as a reboot does, and SIGKILL if the server has not drained in 10 s.
func (r *realRouter) Stop() error {
	if r.proc == nil {
		return nil
	}
	r.proc.Stop(syscall.SIGTERM, 10*time.Second)
	r.proc = nil
	return nil
}

func (r *realRouter) Close() { _ = r.Stop() }
