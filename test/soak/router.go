package soak

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/internal/rhclient"
	"github.com/router-hosts-operator/router-hosts-operator/internal/rhtestserver"
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
	cmd      *exec.Cmd
	done     chan struct{}
}

func startRealRouter(bin, dir string) (*realRouter, error) {
	pki, err := rhtestserver.WritePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("finding a port: %w", err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
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
func (r *realRouter) logFile() (*os.File, error) {
	return os.OpenFile(filepath.Join(r.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
}

// Start runs the server and waits until it answers Readiness.
func (r *realRouter) Start() error {
	log, err := r.logFile()
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	cmd := exec.Command(r.bin, "serve", "--config", r.config())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", r.bin, err)
	}
	r.cmd, r.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(r.done) }()
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
		select {
		case <-r.done:
			return fmt.Errorf("the router-hosts server exited at start; see %s", filepath.Join(r.dir, "server.log"))
		default:
		}
		if time.Now().After(deadline) {
			return errors.Join(errors.New("the router-hosts server did not become ready in 30 s"), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop sends SIGTERM, as a reboot does, and SIGKILL if the server has not drained in 10 s.
func (r *realRouter) Stop() error {
	if r.cmd == nil {
		return nil
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	r.cmd = nil
	return nil
}

func (r *realRouter) Close() { _ = r.Stop() }
