package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
)

// TestTheBinaryAsAKubectlPlugin builds the binary and runs it as kubectl runs a plugin, through
// a link named kubectl-router_hosts: its help and --version name it "kubectl router-hosts", as
// its errors do, and its environment variables stay ROUTER_HOSTS_OPERATOR_*; under its own name it
// is router-hosts-operator.
func TestTheBinaryAsAKubectlPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "router-hosts-operator")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version=v9.9.9-test", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	plugin := filepath.Join(dir, operator.PluginBinary)
	if runtime.GOOS == "windows" {
		plugin += ".exe"
	}
	if err := os.Symlink(bin, plugin); err != nil {
		t.Fatal(err)
	}
	run := func(path string, env []string, args ...string) string {
		cmd := exec.Command(path, args...)
		cmd.Env = append(os.Environ(), env...)
		out, _ := cmd.CombinedOutput() // the exit status of an error is checked by its text
		return string(out)
	}
	for _, c := range []struct {
		name string
		path string
		env  []string
		args []string
		want []string
	}{
		{"plugin --help", plugin, nil, []string{"--help"}, []string{"usage: kubectl router-hosts [<flags>] <command>", "($ROUTER_HOSTS_OPERATOR_SOURCE)"}},
		{"plugin --version", plugin, nil, []string{"--version"}, []string{"kubectl router-hosts v9.9.9-test (commit "}},
		{"plugin error", plugin, []string{"ROUTER_HOSTS_OPERATOR_LOG_LEVEL=loud"}, nil, []string{`kubectl router-hosts: --log-level: "loud" is not one of`}},
		{"binary --help", bin, nil, []string{"--help"}, []string{"usage: router-hosts-operator [<flags>] <command>"}},
		{"binary --version", bin, nil, []string{"--version"}, []string{"router-hosts-operator v9.9.9-test (commit "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := run(c.path, c.env, c.args...)
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s %s: want %q in\n%s", filepath.Base(c.path), strings.Join(c.args, " "), w, out)
				}
			}
		})
	}

	// `kubectl router-hosts plan -f -` reads the manifests from stdin, as kubectl does, and says
	// with its exit status that there are changes.
	t.Run("plugin plan -f -", func(t *testing.T) {
		snap := filepath.Join(dir, "snapshot.json")
		if err := os.WriteFile(snap, []byte(`{"version":"router-hosts-operator/explain/v1","entries":[]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(plugin, "plan", "--offline", "-f", "-", "--router-snapshot", snap, "--cluster-id", "0123abcd", "--log-level=error")
		cmd.Stdin = strings.NewReader("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\n  namespace: apps\n" +
			"  annotations: {router-hosts.fzymgc.house/enabled: \"true\", router-hosts.fzymgc.house/ip-address: 10.1.1.1}\nspec:\n  rules: [{host: web.home.lab}]\n")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("exit %v, want 1 (changes)\n%s", err, out)
		}
		if !strings.Contains(string(out), "Ingress apps/web (added, stdin#1)\n  + web.home.lab → 10.1.1.1\n") {
			t.Errorf("plan output:\n%s", out)
		}
	})
}
