package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
)

// deployment renders a kustomization and returns its Deployment.
func deployment(t *testing.T, dir string) *appsv1.Deployment {
	t.Helper()
	out, err := kubetest.Kustomize(dir)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
		if err != nil {
			continue // the CRD is not in the typed scheme
		}
		if d, ok := obj.(*appsv1.Deployment); ok {
			return d
		}
	}
	t.Fatalf("no Deployment in %s", dir)
	return nil
}

// TestManifestsMatchTheBinary parses the Deployment's arguments with the binary's own flag
// parser, so a renamed or mistyped flag in the manifests fails here rather than in a cluster.
func TestManifestsMatchTheBinary(t *testing.T) {
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	image := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+)`).FindSubmatch(makefile)
	if image == nil {
		t.Fatal("Makefile has no IMAGE")
	}
	for _, dir := range []string{"kustomize", "examples/homelab"} {
		t.Run(dir, func(t *testing.T) {
			d := deployment(t, dir)
			c := d.Spec.Template.Spec.Containers[0]
			if !strings.HasPrefix(c.Image, string(image[1])+":") {
				t.Errorf("image %s is not the one `make image` builds (%s)", c.Image, image[1])
			}
			cfg, err := operator.ParseFlags(c.Args, operator.Build{Version: "test"})
			if err != nil {
				t.Fatalf("the binary rejects the Deployment's args: %v", err)
			}
			if !cfg.LeaderElect || cfg.MetricsAddress != ":7979" || *d.Spec.Replicas != 2 {
				t.Errorf("want leader election on :7979 with 2 replicas, got %+v replicas=%d", cfg, *d.Spec.Replicas)
			}
			port := c.Ports[0].ContainerPort
			if port != 7979 || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("probes or port do not match the binary's server: %+v", c)
			}
		})
	}
}

// TestWebhookDefaults: the webhook sidecar serves /metrics and the probes on :8080 by default,
// external-dns's webhook convention, clear of external-dns's own :7979 in the same pod, and
// writes as cluster external-dns; the operator keeps :7979 and default; a value given as a flag
// or by its environment variable wins.
func TestWebhookDefaults(t *testing.T) {
	tls := []string{"--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"}
	for _, c := range []struct {
		name             string
		args             []string
		env              map[string]string
		metrics, cluster string
		// perNamespace is the budget of entries per namespace: the webhook's one namespace is
		// no tenant.
		perNamespace int
	}{
		{"operator", tls, nil, ":7979", "default", 1000},
		{"webhook", append([]string{"webhook"}, tls...), nil, ":8080", "external-dns", 0},
		{"webhook, flags", append([]string{"webhook", "--metrics-address=:9100", "--cluster-name=lab", "--max-entries-per-namespace=500"}, tls...), nil, ":9100", "lab", 500},
		{"webhook, metrics off", append([]string{"webhook", "--metrics-address="}, tls...), nil, "", "external-dns", 0},
		{"webhook, env variables", append([]string{"webhook"}, tls...),
			map[string]string{"ROUTER_HOSTS_OPERATOR_METRICS_ADDRESS": ":9200", "ROUTER_HOSTS_OPERATOR_CLUSTER_NAME": "home", "ROUTER_HOSTS_OPERATOR_MAX_ENTRIES_PER_NAMESPACE": "7"}, ":9200", "home", 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := operator.ParseFlags(c.args, operator.Build{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MetricsAddress != c.metrics || cfg.ClusterName != c.cluster || cfg.Budgets.EntriesPerNamespace != c.perNamespace {
				t.Errorf("metrics address %q, cluster %q, entries per namespace %d; want %q, %q, %d", cfg.MetricsAddress, cfg.ClusterName,
					cfg.Budgets.EntriesPerNamespace, c.metrics, c.cluster, c.perNamespace)
			}
		})
	}
}

// TestTheBinaryLinksNoClientset: the operator's binary links none of client-go's clientset,
// its scheme of every API group, its informers or its discovery client (package kube says
// why); a new import of one of them shows here rather than in the memory budget.
func TestTheBinaryLinksNoClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/client-go/discovery"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("the binary links %s; go list -deps -f '{{.ImportPath}}: {{.Imports}}' . names its importer", dep)
			}
		}
	}
}

// TestLogLinesCarryMilliseconds: both formats stamp a line to the millisecond, so that a
// sync's lines can be set beside other traces of the same change.
func TestLogLinesCarryMilliseconds(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"text", `time="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)" level=info msg=hello`},
		{"json", `"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)"`},
	} {
		t.Run(tc.format, func(t *testing.T) {
			log, err := newLogger("info", tc.format)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			log.SetOutput(&b)
			log.Info("hello")
			if !regexp.MustCompile(tc.want).MatchString(b.String()) {
				t.Errorf("line %q does not match %s", b.String(), tc.want)
			}
		})
	}
}
