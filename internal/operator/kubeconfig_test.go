package operator

import (
	"context"
	"io"
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

// TestReadOnlyConfigDecides: the running operator's configuration is looked for from a
// kubeconfig when the person named no router, or asked with --from-cluster; never with
// --no-from-cluster or a router named.
func TestReadOnlyConfigDecides(t *testing.T) {
	// A server nothing listens on: looking for the operator fails at once, which tells that it
	// was looked for.
	kc := kubeconfigFile(t, t.TempDir(), "kc", "127.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", kc)
	conn := []string{"--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"}
	for _, c := range []struct {
		name   string
		args   []string
		env    map[string]string
		looked bool
	}{
		{name: "nothing named", looked: true},
		{name: "a router named", args: conn},
		{name: "the in-process store", args: []string{"--provider=inmemory"}},
		{name: "a router named by the environment", env: map[string]string{"ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT": "r:1",
			"ROUTER_HOSTS_OPERATOR_TLS_CA": "a", "ROUTER_HOSTS_OPERATOR_TLS_CERT": "b", "ROUTER_HOSTS_OPERATOR_TLS_KEY": "c"}},
		{name: "--from-cluster, a router named", args: append([]string{"--from-cluster"}, conn...), looked: true},
		{name: "--no-from-cluster", args: []string{"--no-from-cluster"}},
		{name: "--from-cluster by the environment", env: map[string]string{"ROUTER_HOSTS_OPERATOR_FROM_CLUSTER": "true"}, args: conn, looked: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			given, err := ParseFlags(c.args, Build{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			cfg, rc, err := ReadOnlyConfig(context.Background(), given, io.Discard)
			switch {
			case c.looked && (err == nil || !strings.Contains(err.Error(), "listing the Leases named router-hosts-operator in any namespace")):
				t.Errorf("want the running operator looked for, got %v", err)
			case !c.looked && err != nil:
				t.Errorf("want the flags alone, got %v", err)
			case !c.looked && (cfg != given || rc == nil || rc.Host != "https://127.0.0.1:6443"):
				t.Errorf("want the flags as given and the kubeconfig's server, got %p (given %p), %+v", cfg, given, rc)
			}
		})
	}
}
