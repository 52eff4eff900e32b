package operator

import (
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/health"
)

func flagModel(t *testing.T) *kingpin.ApplicationModel {
	t.Helper()
	m, err := FlagModel()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEveryFlagHasItsEnvironmentTwin: each flag of the model the docs are written from is also
// ROUTER_HOSTS_OPERATOR_<FLAG_IN_CAPS>, as docs/configuration.md says; only --help and
// --version are not. The model is the same whatever the environment it is built in says.
func TestEveryFlagHasItsEnvironmentTwin(t *testing.T) {
	m := flagModel(t)
	flags := slices.Clone(m.Flags)
	for _, c := range m.Commands {
		flags = append(flags, c.Flags...)
	}
	seen := 0
	for _, f := range flags {
		if f.Hidden { // kingpin's own (--help-long, --completion-bash...), in no doc
			continue
		}
		want := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if f.Name == "help" || f.Name == "version" {
			want = ""
		} else {
			seen++
		}
		if f.Envar != want {
			t.Errorf("--%s: environment variable %q, want %q", f.Name, f.Envar, want)
		}
	}
	if seen < 40 {
		t.Fatalf("the model has %d flags; it lost some", seen)
	}

	defaults := func(m *kingpin.ApplicationModel) map[string][]string {
		out := map[string][]string{}
		for _, f := range m.Flags {
			out[f.Name] = f.Default
		}
		return out
	}
	clean := defaults(m)
	if got := clean["leader-election-namespace"]; !reflect.DeepEqual(got, []string{"default"}) {
		t.Errorf("--leader-election-namespace's default in the model is %q, want [default]", got)
	}
	t.Setenv("KUBECONFIG", "/home/someone/.kube/config")
	t.Setenv("POD_NAMESPACE", "router-hosts-system")
	if got := defaults(flagModel(t)); !reflect.DeepEqual(got, clean) {
		t.Errorf("the model depends on the environment:\n%v\nwant\n%v", got, clean)
	}
	// The binary itself does read them.
	cfg, err := ParseFlags([]string{"--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"}, Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Kubeconfig != "/home/someone/.kube/config" || cfg.LeaderElectionNS != "router-hosts-system" {
		t.Errorf("kubeconfig %q, Lease namespace %q: the environment's defaults are not read", cfg.Kubeconfig, cfg.LeaderElectionNS)
	}
}

// TestEnvironmentTwins: what docs/configuration.md says of the environment variables: each sets
// its flag, a repeatable flag's takes one value a line, and a flag on the command line wins.
func TestEnvironmentTwins(t *testing.T) {
	conn := []string{"--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		// envConn: the environment names the router, so the flags do not.
		envConn bool
		want    func(*Config) bool
	}{
		{"a value", map[string]string{"ROUTER_HOSTS_OPERATOR_CLUSTER_NAME": "homelab"}, nil, false,
			func(c *Config) bool { return c.ClusterName == "homelab" }},
		{"a duration", map[string]string{"ROUTER_HOSTS_OPERATOR_GRACE_PERIOD": "90s"}, nil, false,
			func(c *Config) bool { return c.GracePeriod == 90*time.Second }},
		{"a switch", map[string]string{"ROUTER_HOSTS_OPERATOR_LEADER_ELECT": "true"}, nil, false,
			func(c *Config) bool { return c.LeaderElect }},
		{"a repeatable flag, one value a line", map[string]string{"ROUTER_HOSTS_OPERATOR_DEFAULT_TAG": "homelab\nlan"}, nil, false,
			func(c *Config) bool { return slices.Equal(c.DefaultTags, []string{"homelab", "lan"}) }},
		{"a repeatable list of sources", map[string]string{"ROUTER_HOSTS_OPERATOR_SOURCE": "ingress\nservice"}, nil, false,
			func(c *Config) bool { return slices.Equal(c.Sources, []string{"ingress", "service"}) }},
		{"the connection itself", map[string]string{"ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT": "router.lan:50051",
			"ROUTER_HOSTS_OPERATOR_TLS_CA": "a", "ROUTER_HOSTS_OPERATOR_TLS_CERT": "b", "ROUTER_HOSTS_OPERATOR_TLS_KEY": "c"}, nil, true,
			func(c *Config) bool { return c.Endpoint == "router.lan:50051" && c.TLSKey == "c" }},
		{"the command line wins", map[string]string{"ROUTER_HOSTS_OPERATOR_CLUSTER_NAME": "from-env", "ROUTER_HOSTS_OPERATOR_DEFAULT_TAG": "env"},
			[]string{"--cluster-name=from-flag", "--default-tag=flag"}, false,
			func(c *Config) bool {
				return c.ClusterName == "from-flag" && slices.Equal(c.DefaultTags, []string{"flag"})
			}},
		{"nothing set: the defaults", nil, nil, false,
			func(c *Config) bool {
				return c.ClusterName == "default" && c.GracePeriod == 5*time.Minute && !c.LeaderElect
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			args := slices.Clone(c.args)
			if !c.envConn {
				args = append(args, conn...)
			}
			cfg, err := ParseFlags(args, Build{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if !c.want(cfg) {
				t.Errorf("env %v args %v: got %+v", c.env, c.args, cfg)
			}
		})
	}
}

// TestMetricsAddressHelpNamesWhatItServes: --metrics-address's help names every path the server
// behind it answers, and nothing it does not.
func TestMetricsAddressHelpNamesWhatItServes(t *testing.T) {
	var help string
	for _, f := range flagModel(t).Flags {
		if f.Name == "metrics-address" {
			help = f.Help
		}
	}
	paths := regexp.MustCompile(`/[a-z]+z?\b`).FindAllString(help, -1)
	want := []string{"/metrics", "/healthz", "/readyz", "/routerz"}
	if !slices.Equal(paths, want) {
		t.Errorf("--metrics-address's help names %v, want %v: %q", paths, want, help)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	stop, addr := serveProbes(t, health.New(time.Minute, func() bool { return true }, nil), log)
	defer stop()
	status := func(path string) int {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, p := range paths {
		if s := status(p); s == http.StatusNotFound {
			t.Errorf("%s, which the help names, is not served (%d)", p, s)
		}
	}
	if s := status("/nothing"); s != http.StatusNotFound {
		t.Errorf("/nothing answered %d: the server answers anything, so the check above proves nothing", s)
	}
}
