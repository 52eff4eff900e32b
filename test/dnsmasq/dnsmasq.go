// Package dnsmasq runs a real dnsmasq (Debian's dnsmasq-base) for tests, unprivileged on a
// loopback port, serving a hosts file as a router's dnsmasq serves the one router-hosts writes:
// it reads the file at start and again on SIGHUP, and only then. So a test sees what a router's
// users see: a name answers once the file has it and dnsmasq was reloaded, not before.
//
// Every name is local to it (--local=/#/), as the names under a router's local domain are: a
// name the file lacks is NXDOMAIN. Without that, a dnsmasq with no upstream server answers
// REFUSED, which says nothing about the name.
package dnsmasq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
)

// DebianPath is where Debian's dnsmasq-base installs the binary.
const DebianPath = "/usr/sbin/dnsmasq"

// Binary is the dnsmasq to run: $DNSMASQ, else dnsmasq on the PATH, else DebianPath; an error
// says how to install it when there is none.
func Binary() (string, error) {
	if p := os.Getenv("DNSMASQ"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("dnsmasq"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(DebianPath); err == nil {
		return DebianPath, nil
	}
	return "", errors.New("dnsmasq is not installed: make test installs it (apt-get install -y dnsmasq-base), or set DNSMASQ")
}

// Server is a running dnsmasq.
type Server struct {
	// Addr is 127.0.0.1:port, for UDP and TCP.
	Addr string
	// HostsFile is the file it serves.
	HostsFile string

	proc *harness.Process
}

// startTimeout bounds how long dnsmasq has to read its file, at start and on a reload.
const startTimeout = 10 * time.Second

// Start runs dnsmasq serving hostsFile on a free loopback port, its log in dir, until Stop.
// The file may not exist yet: dnsmasq then serves no name until a reload finds it.
func Start(dir, hostsFile string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var last error
	// Another process may take the free port before dnsmasq binds it: try another.
	for range 5 {
		port, err := harness.FreePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), HostsFile: hostsFile}
		args := []string{"-k", "--conf-file=/dev/null", fmt.Sprintf("--port=%d", port), "--listen-address=127.0.0.1",
			"--bind-interfaces", "--no-resolv", "--no-hosts", "--addn-hosts=" + hostsFile, "--local=/#/",
			"--pid-file=", "--log-facility=-"}
		if os.Geteuid() == 0 {
			// As root, dnsmasq would become nobody, who may not read a test's private files.
			if u, err := user.Current(); err == nil {
				args = append(args, "--user="+u.Username)
			}
		}
		cmd := exec.Command(bin, args...)
		s.proc, err = harness.Start(cmd, filepath.Join(dir, fmt.Sprintf("dnsmasq-%d.log", port)))
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		for !strings.Contains(s.proc.Log(), "started,") && err == nil {
			err = s.pause(ctx)
		}
		cancel()
		if err == nil {
			return s, nil
		}
		s.Stop()
		last = err
	}
	return nil, last
}

// Reload makes dnsmasq read its hosts file again (SIGHUP, as `systemctl reload dnsmasq` does)
// and returns once it has, as its log says, or with the error it logged when it could not.
func (s *Server) Reload() error {
	reads, fails := s.reads(), s.failures()
	if err := s.proc.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("reloading dnsmasq: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for s.reads() == reads && s.failures() == fails {
		if err := s.pause(ctx); err != nil {
			return fmt.Errorf("reloading dnsmasq: %w", err)
		}
	}
	if s.failures() > fails {
		return fmt.Errorf("dnsmasq could not read %s: %s", s.HostsFile, s.proc.Tail(1))
	}
	return nil
}

// Reloads is the number of times dnsmasq has read its hosts file, its start included.
func (s *Server) Reloads() int { return s.reads() }

// Stop ends dnsmasq.
func (s *Server) Stop() {
	if s.proc != nil && !s.proc.Exited() {
		s.proc.Stop(syscall.SIGTERM, 5*time.Second)
	}
}

// Log is what dnsmasq has logged so far.
func (s *Server) Log() string { return s.proc.Log() }

// readLine starts dnsmasq's log line for a read of the hosts file ("read FILE - N names").
func (s *Server) readLine() string { return "read " + s.HostsFile + " " }

// reads counts the reads of the hosts file in the log; a read that failed (a file missing or
// unreadable) is a failure instead.
func (s *Server) reads() int { return strings.Count(s.proc.Log(), s.readLine()) }

// failures counts the reads of the hosts file that failed.
func (s *Server) failures() int {
	return strings.Count(s.proc.Log(), "failed to load names from "+s.HostsFile+":")
}

// pause gives dnsmasq a moment to log more, for the callers that wait on its log; it fails
// when dnsmasq has exited or ctx has ended.
func (s *Server) pause(ctx context.Context) error {
	if s.proc.Exited() {
		return fmt.Errorf("dnsmasq exited (%v): %s", s.proc.Err(), s.proc.Tail(5))
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting for dnsmasq's log: %w: %s", ctx.Err(), s.proc.Tail(5))
	case <-time.After(10 * time.Millisecond):
		return nil
	}
}
