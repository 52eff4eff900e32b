package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/internal/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
)

// helmBin is the helm that hack/helm.sh built from the module proxy; make test builds it and
// passes its path in HELM.
func helmBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("HELM")
	if p == "" {
		p = filepath.Join(repoRoot(), ".cache", "helm", "v3.22.0", "helm")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("helm is not built (run hack/helm.sh, as make test does): %v", err)
	}
	return p
}

func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

func chartDir() string { return filepath.Join(repoRoot(), "charts", "router-hosts-operator") }

// fullValues sets every value that renders a flag, so that the flags test sees them all.
const fullValues = `
sources: [ingress, traefik, hostmapping, service, gateway]
routerHosts: {endpoint: "router.lan:50051", serverName: router.lan}
clusterName: homelab
ipResolution: [ingress-status, "service:traefik/traefik", "static:192.168.1.100"]
gracePeriod: 10m
defaultTags: [homelab, team-a]
policy: upsert-only
interval: 2m
minEventSyncInterval: 2s
writeConcurrency: "8"
requestTimeout: 15s
domainFilter: [home.lan]
excludeDomains: [iot.home.lan]
labelFilter: dns=internal
watchNamespace: apps
kubeAPIQPS: "30"
kubeAPIBurst: "60"
dryRun: true
logLevel: debug
logFormat: text
`

// docs splits a multi-document YAML stream into objects by kind.
func docs(t *testing.T, stream []byte) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for _, d := range strings.Split("\n"+string(stream), "\n---") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(d), &meta); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, d)
		}
		if meta.Kind != "" {
			out[meta.Kind] = append(out[meta.Kind], []byte(d))
		}
	}
	return out
}

// TestHelmChart: helm lint and helm template with the default values and a homelab's; the
// rendered manifests accepted by the real apiserver (server-side dry run); the chart's RBAC and
// hardened Deployment the same as kustomize's; every flag the chart can render accepted by the
// binary.
func TestHelmChart(t *testing.T) {
	ensureNamespace(t, operatorNS)
	installGatewayAPI(t, cp)
	if err := cp.InstallServiceMonitorCRD(); err != nil {
		t.Fatal(err)
	}
	homelab := filepath.Join(repoRoot(), "examples", "helm", "homelab-values.yaml")
	full := filepath.Join(t.TempDir(), "full.yaml")
	if err := os.WriteFile(full, []byte(fullValues), 0o600); err != nil {
		t.Fatal(err)
	}
	renders := map[string][]byte{}
	for name, values := range map[string][]string{"default": nil, "homelab": {"-f", homelab}, "full": {"-f", full}} {
		helm(t, append([]string{"lint", "--strict", chartDir()}, values...)...)
		out := helm(t, append([]string{"template", "rho", chartDir(), "--namespace", operatorNS, "--include-crds"}, values...)...)
		renders[name] = out
		kubectl(t, out, "apply", "--dry-run=server", "-f", "-")

		// Every flag the chart renders is one the binary accepts.
		var dep appsv1.Deployment
		if err := yaml.Unmarshal(docs(t, out)["Deployment"][0], &dep); err != nil {
			t.Fatal(err)
		}
		args := dep.Spec.Template.Spec.Containers[0].Args
		if _, err := operator.ParseFlags(args, "test"); err != nil {
			t.Errorf("%s values: the binary refuses the chart's flags %q: %v", name, args, err)
		}
	}
	// The full values render one flag per value.
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(docs(t, renders["full"])["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")
	for _, flag := range []string{"--router-hosts-endpoint=router.lan:50051", "--tls-server-name=router.lan", "--cluster-name=homelab", "--ip-resolution=static:192.168.1.100",
		"--grace-period=10m", "--default-tag=team-a", "--policy=upsert-only", "--interval=2m", "--min-event-sync-interval=2s", "--write-concurrency=8",
		"--request-timeout=15s", "--domain-filter=home.lan", "--exclude-domains=iot.home.lan", "--label-filter=dns=internal", "--namespace=apps",
		"--kube-api-qps=30", "--kube-api-burst=60", "--dry-run", "--log-level=debug", "--log-format=text", "--source=gateway", "--config-name=default", "--leader-elect"} {
		if !strings.Contains(args, flag) {
			t.Errorf("the full values do not render %s: %s", flag, args)
		}
	}
	if _, err := operator.ParseFlags(dep.Spec.Template.Spec.Containers[0].Args, "test"); err != nil {
		t.Errorf("the binary refuses the full values' flags: %v", err)
	}

	// The same RBAC and the same hardened Deployment as kustomize.
	kust, err := kubetest.Kustomize(filepath.Join(repoRoot(), "kustomize"))
	if err != nil {
		t.Fatal(err)
	}
	k, h := docs(t, kust), docs(t, renders["default"])
	rules := func(kind string, all map[string][][]byte) map[string][]rbacv1.PolicyRule {
		out := map[string][]rbacv1.PolicyRule{}
		for _, d := range all[kind] {
			var r rbacv1.Role // ClusterRole has the same rules field
			if err := yaml.Unmarshal(d, &r); err != nil {
				t.Fatal(err)
			}
			// Named by their part after the operator's name: "", "-leader-election", "-mtls".
			out[strings.TrimPrefix(r.Name, "router-hosts-operator")] = r.Rules
		}
		return out
	}
	for _, kind := range []string{"ClusterRole", "Role"} {
		if a, b := rules(kind, k), rules(kind, h); !reflect.DeepEqual(a, b) {
			t.Errorf("%s rules differ:\nkustomize %+v\nhelm      %+v", kind, a, b)
		}
	}
	var kd, hd appsv1.Deployment
	if err := yaml.Unmarshal(k["Deployment"][0], &kd); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(h["Deployment"][0], &hd); err != nil {
		t.Fatal(err)
	}
	kc, hc := kd.Spec.Template.Spec.Containers[0], hd.Spec.Template.Spec.Containers[0]
	for _, c := range []struct {
		what string
		a, b any
	}{
		{"pod securityContext", kd.Spec.Template.Spec.SecurityContext, hd.Spec.Template.Spec.SecurityContext},
		{"container securityContext", kc.SecurityContext, hc.SecurityContext},
		{"resources", kc.Resources, hc.Resources},
		{"liveness probe", kc.LivenessProbe, hc.LivenessProbe},
		{"readiness probe", kc.ReadinessProbe, hc.ReadinessProbe},
		{"replicas", kd.Spec.Replicas, hd.Spec.Replicas},
		{"volume mounts", kc.VolumeMounts, hc.VolumeMounts},
		{"env", kc.Env, hc.Env},
	} {
		if !reflect.DeepEqual(c.a, c.b) {
			t.Errorf("Deployment %s differs:\nkustomize %+v\nhelm      %+v", c.what, c.a, c.b)
		}
	}
	// Both pass the flags a Deployment needs; the chart renders them from values.
	for _, flag := range []string{"--leader-elect", "--tls-ca=/etc/router-hosts/tls/ca.crt", "--metrics-address=:7979", "--log-format=json"} {
		if !slices.Contains(kc.Args, flag) || !slices.Contains(hc.Args, flag) {
			t.Errorf("%s: kustomize %v, helm %v", flag, slices.Contains(kc.Args, flag), slices.Contains(hc.Args, flag))
		}
	}
	// The chart ships the CRDs kustomize installs, byte for byte.
	for _, f := range []string{"hostmapping.yaml", "routerhostsconfig.yaml"} {
		a, err1 := os.ReadFile(filepath.Join(repoRoot(), "kustomize", "crds", f))
		b, err2 := os.ReadFile(filepath.Join(chartDir(), "crds", f))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("charts/router-hosts-operator/crds/%s differs from kustomize/crds/%s (%v %v)", f, f, err1, err2)
		}
	}
	// The homelab's RouterHostsConfig and ServiceMonitor are rendered; the default's are not.
	hl := docs(t, renders["homelab"])
	if len(hl["RouterHostsConfig"]) != 1 || len(hl["ServiceMonitor"]) != 1 || len(h["RouterHostsConfig"]) != 0 || len(h["ServiceMonitor"]) != 0 {
		t.Errorf("optional objects: homelab %d config %d monitor; default %d config %d monitor",
			len(hl["RouterHostsConfig"]), len(hl["ServiceMonitor"]), len(h["RouterHostsConfig"]), len(h["ServiceMonitor"]))
	}
}

// TestExternalDNSExampleApplies: the README's external-dns example renders, the real apiserver
// accepts it, and the webhook sidecar's flags are ones the binary accepts.
func TestExternalDNSExampleApplies(t *testing.T) {
	ensureNamespace(t, "external-dns")
	out, err := kubetest.Kustomize(filepath.Join(repoRoot(), "examples", "external-dns"))
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, out, "apply", "--dry-run=server", "-f", "-")
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(docs(t, out)["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	var hook []string
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == "router-hosts-webhook" {
			hook = c.Args
		}
		if c.Name == "external-dns" && (!slices.Contains(c.Args, "--provider=webhook") || !slices.Contains(c.Args, "--registry=noop")) {
			t.Errorf("external-dns runs with %v; want --provider=webhook --registry=noop", c.Args)
		}
	}
	cfg, err := operator.ParseFlags(hook, "test")
	if err != nil {
		t.Fatalf("the webhook's flags %v: %v", hook, err)
	}
	if cfg.Command != operator.CommandWebhook || cfg.WebhookAddress != "127.0.0.1:8888" || cfg.ClusterName != "homelab-external-dns" {
		t.Errorf("webhook config %+v", cfg)
	}
}
