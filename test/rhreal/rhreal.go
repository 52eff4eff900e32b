// Package rhreal runs the real router-hosts server from its binary, with a configuration of its
// own: a fresh PKI, SQLite on disk (so a restart keeps the data) and the hosts file it renders
// itself. The soak and `make year` run on it; the binary is the one
// ../shared/real-router/build.sh builds.
package rhreal

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

// Server is a real router-hosts server process and the files it keeps in its directory.
type Server struct {
	bin, dir string
	pki      rhtestserver.PKI
	addr     string
	proc     *harness.Process
}

// Start writes a PKI and a configuration into dir and starts the server from bin.
func Start(bin, dir string) (*Server, error) {
	pki, err := rhtestserver.WritePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	addr, err := harness.Addr()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, pki: pki, addr: addr}
	config := fmt.Sprintf("[server]\nbind_address = %q\nhosts_file_path = %q\n\n[database]\npath = %q\n\n[tls]\ncert_path = %q\nkey_path = %q\nca_cert_path = %q\n",
		addr, s.HostsFile(), s.DBFile(), pki.ServerCertFile(), pki.ServerKeyFile(), pki.CAFile())
	// The server refuses a config file others may write.
	if err := os.WriteFile(s.config(), []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("writing the server's config: %w", err)
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) config() string        { return filepath.Join(s.dir, "server.toml") }
func (s *Server) Addr() string          { return s.addr }
func (s *Server) PKI() rhtestserver.PKI { return s.pki }
func (s *Server) HostsFile() string     { return filepath.Join(s.dir, "hosts") }
func (s *Server) Describe() string      { return "router-hosts server (" + s.bin + ")" }

// DBFile is the server's SQLite database; its write-ahead log is beside it (-wal).
func (s *Server) DBFile() string { return filepath.Join(s.dir, "hosts.db") }

// LogPath is where the server's output goes.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "server.log") }

// Start runs the server and waits until it answers Readiness.
func (s *Server) Start() error {
	proc, err := harness.Start(exec.Command(s.bin, "serve", "--config", s.config()), s.LogPath())
	if err != nil {
		return err
	}
	s.proc = proc
	cli, closeCli, err := rhclient.Dial(s.addr, rhclient.Files{CA: s.pki.CAFile(), Cert: s.pki.CertFile(), Key: s.pki.KeyFile()})
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
			return fmt.Errorf("the router-hosts server exited at start; see %s", s.LogPath())
		}
		if time.Now().After(deadline) {
			return errors.Join(errors.New("the router-hosts server did not become ready in 30 s"), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop sends SIGTERM, as a reboot does, and SIGKILL if the server has not drained in 10 s.
func (s *Server) Stop() error {
	if s.proc == nil {
		return nil
	}
	s.proc.Stop(syscall.SIGTERM, 10*time.Second)
	s.proc = nil
	return nil
}

// Close stops the server for good.
func (s *Server) Close() { _ = s.Stop() }
