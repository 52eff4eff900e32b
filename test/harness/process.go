package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Process is a child process whose output goes to a log file. One goroutine waits for it, so
// that any number of callers can watch Done and a stop can time its grace period.
type Process struct {
	Cmd     *exec.Cmd
	LogPath string
	// Started is the moment just before the process was started, the origin of the times a
	// caller measures from its start.
	Started time.Time

	done chan struct{}
	err  error
}

// Start starts cmd with its standard output and error appended to the file at logPath, which
// it creates if need be: a process started again in the same place keeps one log.
func Start(cmd *exec.Cmd, logPath string) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("the log of %s: %w", cmd.Path, err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	p := &Process{Cmd: cmd, LogPath: logPath, Started: time.Now(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has exited and its log is closed.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process exited, as exec.Cmd.Wait says; nil until Done is closed.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends sig and waits up to grace for the process to exit, then kills it, and returns
// once it has exited: a process that ignores its signal or hangs draining still ends. killed
// says whether it took SIGKILL; a process that had already exited is left as it was.
func (p *Process) Stop(sig os.Signal, grace time.Duration) (killed bool) {
	if err := p.Cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		// The signal could not be sent: waiting out the grace period would only delay the kill.
		grace = 0
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return false
	case <-t.C:
	}
	_ = p.Cmd.Process.Kill()
	<-p.done
	return true
}

// Log is what the process has written so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// Tail is the last n lines of the process's log, for error messages.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
