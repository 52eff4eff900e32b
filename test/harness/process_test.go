package harness

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopThenKill: a process that ends on its signal is not killed; one that ignores it is
// killed once the grace period is over; one already gone is left alone. Stop returns only once
// the process has exited.
func TestStopThenKill(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		exitFirst  bool
		ready      string // a line the process logs once its signal handling is set up
		grace      time.Duration
		wantKilled bool
	}{
		{name: "ends on SIGTERM", args: []string{"sleep", "30"}, grace: 10 * time.Second},
		// exec keeps the ignored disposition, so that sleep itself ignores SIGTERM.
		{name: "ignores SIGTERM", args: []string{"sh", "-c", `trap "" TERM; echo ready; exec sleep 30`}, ready: "ready",
			grace: 200 * time.Millisecond, wantKilled: true},
		{name: "already exited", args: []string{"true"}, exitFirst: true, grace: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(exec.Command(tc.args[0], tc.args[1:]...), filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.exitFirst {
				<-p.Done()
			}
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.Log(), tc.ready); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the process never logged %q", tc.ready)
				}
			}
			start := time.Now()
			killed := p.Stop(syscall.SIGTERM, tc.grace)
			took := time.Since(start)
			if killed != tc.wantKilled {
				t.Errorf("killed %v, want %v", killed, tc.wantKilled)
			}
			if !p.Exited() || p.Cmd.ProcessState == nil {
				t.Fatal("Stop returned before the process exited")
			}
			if !tc.wantKilled && took > 5*time.Second {
				t.Errorf("Stop took %v for a process that ended on its signal", took)
			}
			if tc.exitFirst {
				if err := p.Err(); err != nil {
					t.Errorf("a clean exit reads as %v", err)
				}
				return
			}
			want := syscall.SIGTERM
			if tc.wantKilled {
				want = syscall.SIGKILL
			}
			if ws, ok := p.Cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != want {
				t.Errorf("exit %v (%v), want death by %v", p.Cmd.ProcessState, p.Err(), want)
			}
		})
	}
}

// TestAProcessStartedAgainKeepsOneLog: the log is appended to, as the soak's router restarted
// in its directory needs, and Tail reads its last lines.
func TestAProcessStartedAgainKeepsOneLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "server.log")
	for _, word := range []string{"one", "two", "three"} {
		p, err := Start(exec.Command("echo", word), log)
		if err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Start(exec.Command("true"), log)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	for _, tc := range []struct {
		got, want string
	}{
		{p.Log(), "one\ntwo\nthree\n"},
		{p.Tail(2), "two\nthree"},
		{p.Tail(10), "one\ntwo\nthree"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestStartFailsOnAMissingBinary: no process, no goroutine left waiting, and the error names
// the binary.
func TestStartFailsOnAMissingBinary(t *testing.T) {
	_, err := Start(exec.Command(filepath.Join(t.TempDir(), "no-such-binary")), filepath.Join(t.TempDir(), "log"))
	if err == nil || !strings.Contains(err.Error(), "no-such-binary") {
		t.Fatalf("err %v", err)
	}
}
