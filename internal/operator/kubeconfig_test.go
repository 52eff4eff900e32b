package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubeconfigFile writes a kubeconfig whose contexts are named after the servers they reach,
// the first current.
func kubeconfigFile(t *testing.T, dir, name string, servers ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: " + servers[0] + "\nclusters:\n")
	for _, s := range servers {
		b.WriteString("- name: " + s + "\n  cluster: {server: \"https://" + s + ":6443\"}\n")
	}
	b.WriteString("users:\n- name: me\n  user: {token: t}\ncontexts:\n")
	for _, s := range servers {
		b.WriteString("- name: " + s + "\n  context: {cluster: " + s + ", user: me}\n")
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRESTConfig: the kubeconfig is loaded as kubectl loads it: --kubeconfig (one file, which
// must exist), $KUBECONFIG (a list, merged, the first file's current context winning),
// ~/.kube/config; --context picks another context.
func TestRESTConfig(t *testing.T) {
	dir := t.TempDir()
	one := kubeconfigFile(t, dir, "one", "lab", "home")
	two := kubeconfigFile(t, dir, "two", "office")
	home := kubeconfigFile(t, dir, "home", "laptop")
	defer func(h string) { homeKubeconfig = h }(homeKubeconfig)
	homeKubeconfig = home
	for _, c := range []struct {
		name   string
		args   []string
		env    string // $KUBECONFIG
		server string
		err    string
		noHome bool
	}{
		{name: "--kubeconfig", args: []string{"--kubeconfig=" + one}, server: "lab"},
		{name: "--kubeconfig and --context", args: []string{"--kubeconfig=" + one, "--context=home"}, server: "home"},
		{name: "$KUBECONFIG, one file", env: two, server: "office"},
		{name: "$KUBECONFIG, a list merged", env: two + string(filepath.ListSeparator) + one, args: []string{"--context=home"}, server: "home"},
		{name: "$KUBECONFIG, a list: the first file's current context", env: two + string(filepath.ListSeparator) + one, server: "office"},
		{name: "~/.kube/config", server: "laptop"},
		{name: "~/.kube/config with --context", args: []string{"--context=laptop"}, server: "laptop"},
		{name: "an unknown context", args: []string{"--kubeconfig=" + one, "--context=nowhere"}, err: `context "nowhere" does not exist`},
		{name: "a missing --kubeconfig", args: []string{"--kubeconfig=" + filepath.Join(dir, "missing")}, err: "loading kubeconfig"},
		{name: "nothing at all", noHome: true, err: "loading kubeconfig: none found (--kubeconfig, $KUBECONFIG, "},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", c.env)
			// Outside a pod, whatever machine runs the test.
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			t.Setenv("KUBERNETES_SERVICE_PORT", "")
			homeKubeconfig = home
			if c.noHome {
				homeKubeconfig = filepath.Join(dir, "no-home")
			}
			cfg, err := ParseFlags(append(c.args, "--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"), Build{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			rc, inCluster, err := restConfig(cfg)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
			case err != nil:
				t.Fatal(err)
			case rc.Host != "https://"+c.server+":6443" || inCluster:
				t.Errorf("reached %s (in the cluster: %t), want %s", rc.Host, inCluster, c.server)
			}
		})
	}
}
