package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestJSONLogsAreAllJSON runs the binary with --log-format=json and leader election against
// the apiserver, so that client-go logs through klog (acquiring the Lease, releasing it on
// SIGTERM), and reads everything the process wrote: every line is one JSON object, client-go's
// among them.
func TestJSONLogsAreAllJSON(t *testing.T) {
	ns := createNamespace(t, cp)
	var out lockedLog
	cmd := exec.Command(operatorBin, "--provider=inmemory", "--namespace="+ns, "--leader-elect", "--leader-election-namespace="+ns,
		"--leader-election-id=jsonlogs", "--log-format=json", "--log-level=debug", "--metrics-address=", "--interval=1m")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("the operator wrote:\n%s", out.logText())
		}
	})
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.logText(), "became leader; syncing") })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the operator did not exit within 15 s of SIGTERM")
	}

	var clientGo []string
	lines := strings.Split(strings.TrimRight(out.logText(), "\n"), "\n")
	for _, line := range lines {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Errorf("a line that is not JSON: %q", line)
			continue
		}
		if e["component"] == "client-go" {
			clientGo = append(clientGo, e["level"].(string)+" "+e["msg"].(string))
		}
	}
	t.Logf("%d lines, client-go's: %q", len(lines), clientGo)
	for _, want := range []string{"info Attempting to acquire leader lease...", "info Successfully acquired lease"} {
		if !strings.Contains(strings.Join(clientGo, "\n"), want) {
			t.Errorf("client-go's lines lack %q", want)
		}
	}
}
