package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
)

// builtTool is a tool make test builds from the module proxy (hack/go-tool.sh) and passes in
// env; fallback is where make puts it, for a run by hand ("" for none).
func builtTool(t *testing.T, env, fallback string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		p = fallback
	}
	if p == "" {
		t.Fatalf("%s is not set: make test builds the tool and passes its path", env)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not built (run make test, which builds it): %v", env, err)
	}
	return p
}

// helmBin is the helm make test builds.
func helmBin(t *testing.T) string {
	return builtTool(t, "HELM", filepath.Join(repoRoot(), ".cache", "helm", "v3.22.0", "helm"))
}

func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := helmRun(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// helmRun runs helm; its error carries helm's output. helm template renders for the test
// apiserver's version unless told another: the chart's kubeVersion refuses helm's built-in
// default, which a helm built without the release's ldflags leaves at Kubernetes 1.20.
func helmRun(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	if len(args) > 0 && args[0] == "template" && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--kube-version") }) {
		args = append(args, "--kube-version", clusterVersion(t))
	}
	cmd := exec.Command(helmBin(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out, nil
}

func chartDir() string { return filepath.Join(repoRoot(), "charts", "router-hosts-operator") }

var (
	clusterVersionOnce sync.Once
	clusterVersionText string
	clusterVersionErr  error
)

// clusterVersion is the test apiserver's release, e.g. v1.37.0 (its major and minor: an
// apiserver built from source reports no patch release in its git version).
func clusterVersion(t *testing.T) string {
	t.Helper()
	clusterVersionOnce.Do(func() {
		info, err := cp.Client.Discovery().ServerVersion()
		if err != nil {
			clusterVersionErr = fmt.Errorf("asking the apiserver its version: %w", err)
			return
		}
		clusterVersionText = "v" + info.Major + "." + strings.TrimSuffix(info.Minor, "+") + ".0"
	})
	if clusterVersionErr != nil {
		t.Fatal(clusterVersionErr)
	}
	return clusterVersionText
}

// allSources are the values of every source, from the operator's table: the rights
// kustomize's RBAC grants (make generate-sources renders it from the chart with these).
var allSources = "sources: [" + strings.Join(source.Names(), ", ") + "]\n"

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
ingressClasses: [lan]
gatewayNames: [infra/lan]
externalDNSAnnotations: true
dnsServer: "10.96.0.10:53"
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
	// The full values watch apps and resolve through a Service in traefik: Roles go there.
	for _, ns := range []string{operatorNS, "apps", "traefik"} {
		ensureNamespace(t, ns)
	}
	installGatewayAPI(t, cp)
	if err := cp.InstallServiceMonitorCRD(); err != nil {
		t.Fatal(err)
	}
	homelab := filepath.Join(repoRoot(), "examples", "helm", "homelab-values.yaml")
	full := filepath.Join(t.TempDir(), "full.yaml")
	if err := os.WriteFile(full, []byte(fullValues), 0o600); err != nil {
		t.Fatal(err)
	}
	everySource := filepath.Join(t.TempDir(), "every-source.yaml")
	if err := os.WriteFile(everySource, []byte(allSources), 0o600); err != nil {
		t.Fatal(err)
	}
	renders := map[string][]byte{}
	for name, values := range map[string][]string{"default": nil, "homelab": {"-f", homelab}, "full": {"-f", full}, "every source": {"-f", everySource}} {
		helm(t, append([]string{"lint", "--strict", chartDir()}, values...)...)
		out := helm(t, append([]string{"template", "router-hosts-operator", chartDir(), "--namespace", operatorNS, "--include-crds"}, values...)...)
		renders[name] = out
		kubectl(t, out, "apply", "--dry-run=server", "-f", "-")

		// Every flag the chart renders is one the binary accepts.
		var dep appsv1.Deployment
		if err := yaml.Unmarshal(docs(t, out)["Deployment"][0], &dep); err != nil {
			t.Fatal(err)
		}
		args := dep.Spec.Template.Spec.Containers[0].Args
		if _, err := operator.ParseFlags(args, operator.Build{Version: "test"}); err != nil {
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
		"--request-timeout=15s", "--domain-filter=home.lan", "--exclude-domains=iot.home.lan", "--label-filter=dns=internal", "--ingress-class=lan", "--gateway-name=infra/lan", "--namespace=apps",
		"--kube-api-qps=30", "--kube-api-burst=60", "--dry-run", "--log-level=debug", "--log-format=text", "--source=gateway", "--config-name=default", "--leader-elect"} {
		if !strings.Contains(args, flag) {
			t.Errorf("the full values do not render %s: %s", flag, args)
		}
	}
	if _, err := operator.ParseFlags(dep.Spec.Template.Spec.Containers[0].Args, operator.Build{Version: "test"}); err != nil {
		t.Errorf("the binary refuses the full values' flags: %v", err)
	}

	// The same RBAC as kustomize with every source (the chart's follows sources; kustomize's
	// is rendered from it, and hack/sourcegen's test fails when it is stale), and the same
	// hardened Deployment.
	kust, err := kubetest.Kustomize(filepath.Join(repoRoot(), "kustomize"))
	if err != nil {
		t.Fatal(err)
	}
	k, h := docs(t, kust), docs(t, renders["default"])
	every := docs(t, renders["every source"])
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
		if a, b := rules(kind, k), rules(kind, every); !reflect.DeepEqual(a, b) {
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
	cfg, err := operator.ParseFlags(hook, operator.Build{Version: "test"})
	if err != nil {
		t.Fatalf("the webhook's flags %v: %v", hook, err)
	}
	if cfg.Command != operator.CommandWebhook || cfg.WebhookAddress != "127.0.0.1:8888" || cfg.ClusterName != "homelab-external-dns" {
		t.Errorf("webhook config %+v", cfg)
	}
}

// everyValue sets the values a user reaches for beside the flags, each away from its default.
const everyValue = `
nameOverride: rho
replicaCount: 3
imagePullSecrets: [{name: regcred}]
serviceAccount: {create: true, name: dns-operator, annotations: {team: infra}}
extraEnv: [{name: GOGC, value: "50"}]
extraVolumes: [{name: scratch, emptyDir: {}}]
extraVolumeMounts: [{name: scratch, mountPath: /scratch}]
podLabels: {team: infra}
priorityClassName: system-cluster-critical
topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app.kubernetes.io/name: rho}}}
podDisruptionBudget: {minAvailable: 2}
startupProbe: null
metrics: {port: 9090, service: {annotations: {prometheus.io/scrape: "true"}}}
routerHosts: {compactOwnEntries: false}
`

// TestHelmChartValues: values.schema.json turns a typo into helm's error, naming the value, on
// every command that reads values; the values beside the flags render what they say; two
// releases never share a name.
func TestHelmChartValues(t *testing.T) {
	ensureNamespace(t, operatorNS)
	for _, c := range []struct{ name, values, want string }{
		{"unknown source", "sources: [ingres]", "sources"},
		{"wrong type", "replicaCount: two", "replicaCount"},
		{"misspelt key", "replicas: 3", "replicas"},
		{"unknown pull policy", "image: {pullPolicy: Sometimes}", "pullPolicy"},
		{"port out of range", "metrics: {port: 70000}", "port"},
		{"unknown log level", "logLevel: verbose", "logLevel"},
		{"endpoint without a port", "routerHosts: {endpoint: router.lan}", "endpoint"},
		{"reserved character in a tag", "defaultTags: [\"a,b\"]", "defaultTags"},
		{"unknown nested key", "leaderElection: {enable: true}", "enable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(c.values), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range [][]string{{"lint", "--strict", chartDir(), "-f", f}, {"template", "x", chartDir(), "-f", f}} {
				_, err := helmRun(t, cmd...)
				if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") || !strings.Contains(err.Error(), c.want) {
					t.Errorf("helm %s with %q: %v; want the schema's error naming %s", cmd[0], c.values, err, c.want)
				}
			}
		})
	}

	f := filepath.Join(t.TempDir(), "every.yaml")
	if err := os.WriteFile(f, []byte(everyValue), 0o600); err != nil {
		t.Fatal(err)
	}
	helm(t, "lint", "--strict", chartDir(), "-f", f)
	out := helm(t, "template", "home", chartDir(), "--namespace", operatorNS, "-f", f)
	kubectl(t, out, "apply", "--dry-run=server", "-f", "-")
	all := docs(t, out)
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(all["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	for _, chk := range []struct {
		what string
		ok   bool
	}{
		{"name from nameOverride, scoped by the release", dep.Name == "home-rho"},
		{"the named ServiceAccount", pod.ServiceAccountName == "dns-operator" && strings.Contains(string(all["ServiceAccount"][0]), "name: dns-operator")},
		{"imagePullSecrets", len(pod.ImagePullSecrets) == 1 && pod.ImagePullSecrets[0].Name == "regcred"},
		{"extraEnv after POD_NAMESPACE", len(c.Env) == 2 && c.Env[1].Name == "GOGC"},
		{"extraVolumes beside the TLS Secret", len(pod.Volumes) == 2 && pod.Volumes[1].Name == "scratch"},
		{"extraVolumeMounts", len(c.VolumeMounts) == 2 && c.VolumeMounts[1].MountPath == "/scratch"},
		{"podLabels on the pod, not in the selector", dep.Spec.Template.Labels["team"] == "infra" && dep.Spec.Selector.MatchLabels["team"] == ""},
		{"priorityClassName", pod.PriorityClassName == "system-cluster-critical"},
		{"topologySpreadConstraints", len(pod.TopologySpreadConstraints) == 1},
		{"startup probe off", c.StartupProbe == nil && c.LivenessProbe != nil && c.ReadinessProbe != nil},
		{"metrics port", slices.Contains(c.Args, "--metrics-address=:9090") && c.Ports[0].ContainerPort == 9090},
		{"compaction turned off", slices.Contains(c.Args, "--no-compact-own-entries")},
		{"a PodDisruptionBudget of 2", len(all["PodDisruptionBudget"]) == 1 && strings.Contains(string(all["PodDisruptionBudget"][0]), "minAvailable: 2")},
		{"the metrics Service, annotated", len(all["Service"]) == 1 && strings.Contains(string(all["Service"][0]), "prometheus.io/scrape")},
	} {
		if !chk.ok {
			t.Errorf("every value: %s not rendered", chk.what)
		}
	}

	// One replica, no metrics, no RBAC, an existing ServiceAccount: no PodDisruptionBudget (it
	// would block every drain), no Service, no probes, and the metrics server off.
	out = helm(t, "template", "home", chartDir(), "--namespace", operatorNS, "--set", "replicaCount=1,metrics.enabled=false,rbac.create=false,serviceAccount.create=false,serviceAccount.name=existing")
	all = docs(t, out)
	dep = appsv1.Deployment{} // Unmarshal merges into what is there
	if err := yaml.Unmarshal(all["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	c = dep.Spec.Template.Spec.Containers[0]
	for kind, n := range map[string]int{"PodDisruptionBudget": 0, "Service": 0, "ClusterRole": 0, "Role": 0, "RoleBinding": 0, "ClusterRoleBinding": 0, "ServiceAccount": 0} {
		if len(all[kind]) != n {
			t.Errorf("minimal values render %d %s, want %d", len(all[kind]), kind, n)
		}
	}
	if c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil || len(c.Ports) != 0 || !slices.Contains(c.Args, "--metrics-address=") ||
		slices.ContainsFunc(c.Args, func(a string) bool { return strings.Contains(a, "compact-own-entries") }) ||
		dep.Spec.Template.Spec.ServiceAccountName != "existing" {
		t.Errorf("minimal values: probes %v %v %v, ports %v, args %v, service account %q", c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Ports, c.Args, dep.Spec.Template.Spec.ServiceAccountName)
	}

	// Two releases in one cluster: every cluster-scoped name differs.
	names := func(release string) []string {
		var out []string
		for _, d := range docs(t, helm(t, "template", release, chartDir(), "--namespace", operatorNS))["ClusterRole"] {
			var r rbacv1.ClusterRole
			if err := yaml.Unmarshal(d, &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r.Name)
		}
		return out
	}
	if a, b := names("lab"), names("office"); len(a) != 1 || len(b) != 1 || a[0] == b[0] || a[0] != "lab-router-hosts-operator" {
		t.Errorf("ClusterRoles of two releases: %v and %v", a, b)
	}
}

// TestCertManagerExampleIssuesTheMountedSecret: examples/cert-manager is accepted by the real
// apiserver with cert-manager's own CRDs (server-side dry run), and its Certificate writes the
// Secret, in the namespace, that the chart's and kustomize's Deployments mount.
func TestCertManagerExampleIssuesTheMountedSecret(t *testing.T) {
	ensureNamespace(t, operatorNS)
	if err := cp.InstallCertManagerCRDs(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "cert-manager", "certificate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, raw, "apply", "--dry-run=server", "-f", "-")
	var cert struct {
		Metadata struct{ Namespace string }
		Spec     struct {
			SecretName string   `json:"secretName"`
			Usages     []string `json:"usages"`
		}
	}
	if err := yaml.Unmarshal(docs(t, raw)["Certificate"][0], &cert); err != nil {
		t.Fatal(err)
	}
	kust, err := kubetest.Kustomize(filepath.Join(repoRoot(), "kustomize"))
	if err != nil {
		t.Fatal(err)
	}
	mounted := map[string]string{}
	for name, stream := range map[string][]byte{"kustomize": kust, "the chart": helm(t, "template", "router-hosts-operator", chartDir(), "--namespace", operatorNS)} {
		var dep appsv1.Deployment
		if err := yaml.Unmarshal(docs(t, stream)["Deployment"][0], &dep); err != nil {
			t.Fatal(err)
		}
		for _, v := range dep.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				mounted[name] = dep.Namespace + "/" + v.Secret.SecretName
			}
		}
	}
	want := cert.Metadata.Namespace + "/" + cert.Spec.SecretName
	for name, got := range mounted {
		if got != want {
			t.Errorf("%s mounts %s; the Certificate writes %s", name, got, want)
		}
	}
	if len(mounted) != 2 || !slices.Contains(cert.Spec.Usages, "client auth") {
		t.Errorf("mounted %v; usages %v (the server wants clientAuth)", mounted, cert.Spec.Usages)
	}
}

// TestNetworkPolicy: the chart renders its NetworkPolicy only with networkPolicy.enabled, the
// same as kustomize's component; each admits ingress on the metrics port alone, selects its
// Deployment's pods, leaves egress open, and the apiserver accepts it. The values narrow the
// scrapers, and without the metrics server nothing is admitted.
func TestNetworkPolicy(t *testing.T) {
	ensureNamespace(t, operatorNS)
	if n := len(docs(t, helm(t, "template", "router-hosts-operator", chartDir(), "--namespace", operatorNS))["NetworkPolicy"]); n != 0 {
		t.Errorf("the default values render %d NetworkPolicies, want none", n)
	}
	chart := helm(t, "template", "router-hosts-operator", chartDir(), "--namespace", operatorNS, "--set", "networkPolicy.enabled=true")
	kubectl(t, chart, "apply", "--dry-run=server", "-f", "-")
	kust := networkPolicyOverlay(t, "")
	kubectl(t, kust, "apply", "--server-side", "--dry-run=server", "-f", "-")

	rules := map[string][]networkingv1.NetworkPolicyIngressRule{}
	for name, stream := range map[string][]byte{"the chart": chart, "kustomize": kust} {
		np, dep := networkPolicy(t, stream)
		if np == nil {
			t.Fatalf("%s renders no NetworkPolicy", name)
		}
		if np.Namespace != dep.Namespace {
			t.Errorf("%s: the NetworkPolicy is in %q, the Deployment in %q", name, np.Namespace, dep.Namespace)
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("%s: the NetworkPolicy's pod selector %v does not select the Deployment's pods %v", name, np.Spec.PodSelector, dep.Spec.Template.Labels)
		}
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Egress) != 0 {
			t.Errorf("%s: policy types %v, egress %v; want Ingress only", name, np.Spec.PolicyTypes, np.Spec.Egress)
		}
		port := dep.Spec.Template.Spec.Containers[0].Ports[0]
		if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != int(port.ContainerPort) {
			t.Errorf("%s: ingress %+v; want one rule, for the metrics port %d alone", name, np.Spec.Ingress, port.ContainerPort)
		}
		rules[name] = np.Spec.Ingress
	}
	if !reflect.DeepEqual(rules["the chart"], rules["kustomize"]) {
		t.Errorf("the NetworkPolicies differ:\nkustomize %+v\nhelm      %+v", rules["kustomize"], rules["the chart"])
	}

	// Narrowed to one Prometheus: by the values, and by the patch docs/operations.md shows.
	narrow := filepath.Join(t.TempDir(), "values.yaml")
	values := `networkPolicy:
  enabled: true
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
  podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}
`
	if err := os.WriteFile(narrow, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	helm(t, "lint", "--strict", chartDir(), "-f", narrow)
	out := helm(t, "template", "router-hosts-operator", chartDir(), "--namespace", operatorNS, "-f", narrow)
	kubectl(t, out, "apply", "--dry-run=server", "-f", "-")
	np, _ := networkPolicy(t, out)
	from := np.Spec.Ingress[0].From
	if len(from) != 1 || from[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" ||
		from[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "prometheus" {
		t.Errorf("the narrowed values render the peers %+v", from)
	}
	patched, _ := networkPolicy(t, networkPolicyOverlay(t, `patches:
  - target: {kind: NetworkPolicy, name: router-hosts-operator}
    patch: |-
      - op: replace
        path: /spec/ingress/0/from
        value:
          - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
            podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}
`))
	if !reflect.DeepEqual(patched.Spec.Ingress, np.Spec.Ingress) {
		t.Errorf("narrowed, the NetworkPolicies differ:\nkustomize %+v\nhelm      %+v", patched.Spec.Ingress, np.Spec.Ingress)
	}
	// Further peers, verbatim.
	np, _ = networkPolicy(t, helm(t, "template", "router-hosts-operator", chartDir(), "--namespace", operatorNS, "-f", narrow,
		"--set-json", `networkPolicy.extraFrom=[{"ipBlock":{"cidr":"192.168.1.0/24"}}]`))
	if from := np.Spec.Ingress[0].From; len(from) != 2 || from[1].IPBlock == nil || from[1].IPBlock.CIDR != "192.168.1.0/24" {
		t.Errorf("extraFrom renders the peers %+v", from)
	}
	np, _ = networkPolicy(t, helm(t, "template", "router-hosts-operator", chartDir(), "--namespace", operatorNS, "--set", "networkPolicy.enabled=true,metrics.enabled=false"))
	if len(np.Spec.Ingress) != 0 || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("without the metrics server: policy types %v, ingress %+v; want no ingress admitted", np.Spec.PolicyTypes, np.Spec.Ingress)
	}
}

// networkPolicyOverlay builds an overlay as a user writes one: the manifests, the component,
// and more of the kustomization's own.
func networkPolicyOverlay(t *testing.T, more string) []byte {
	t.Helper()
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, filepath.Join(repoRoot(), "kustomize"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf("resources: [%s]\ncomponents: [%s]\n%s", rel, filepath.Join(rel, "components", "networkpolicy"), more)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := kubetest.Kustomize(overlay)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// networkPolicy returns the NetworkPolicy of a rendered stream, nil for none, and its Deployment.
func networkPolicy(t *testing.T, stream []byte) (*networkingv1.NetworkPolicy, *appsv1.Deployment) {
	t.Helper()
	all := docs(t, stream)
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(all["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	if len(all["NetworkPolicy"]) != 1 {
		return nil, &dep
	}
	var np networkingv1.NetworkPolicy
	if err := yaml.Unmarshal(all["NetworkPolicy"][0], &np); err != nil {
		t.Fatal(err)
	}
	return &np, &dep
}

// TestTheLeaseRoleNamesTheLease: the leader-election Role grants get and update on the one
// Lease the Deployment elects its leader on, by resourceNames, and create (which no name can
// restrict, since it is authorized before the object exists) alone; in kustomize, and in the
// chart whatever the release's name or leaderElection.id.
func TestTheLeaseRoleNamesTheLease(t *testing.T) {
	kust, err := kubetest.Kustomize(filepath.Join(repoRoot(), "kustomize"))
	if err != nil {
		t.Fatal(err)
	}
	for name, stream := range map[string][]byte{
		"kustomize":         kust,
		"the chart":         helm(t, "template", "router-hosts-operator", chartDir(), "--namespace", operatorNS),
		"another release":   helm(t, "template", "lab", chartDir(), "--namespace", operatorNS),
		"leaderElection.id": helm(t, "template", "router-hosts-operator", chartDir(), "--namespace", operatorNS, "--set", "leaderElection.id=dns-leader"),
	} {
		all := docs(t, stream)
		var dep appsv1.Deployment
		if err := yaml.Unmarshal(all["Deployment"][0], &dep); err != nil {
			t.Fatal(err)
		}
		lease := ""
		for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
			if id, ok := strings.CutPrefix(a, "--leader-election-id="); ok {
				lease = id
			}
		}
		var role *rbacv1.Role
		for _, d := range all["Role"] {
			var r rbacv1.Role
			if err := yaml.Unmarshal(d, &r); err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(r.Name, "-leader-election") {
				role = &r
			}
		}
		if lease == "" || role == nil {
			t.Fatalf("%s: Lease %q, leader-election Role %v", name, lease, role)
		}
		granted := map[string]bool{}
		for _, r := range role.Rules {
			if !slices.Equal(r.APIGroups, []string{"coordination.k8s.io"}) || !slices.Equal(r.Resources, []string{"leases"}) {
				t.Errorf("%s: the leader-election Role grants %v %v", name, r.APIGroups, r.Resources)
			}
			switch {
			case len(r.ResourceNames) == 0 && slices.Equal(r.Verbs, []string{"create"}):
			case slices.Equal(r.ResourceNames, []string{lease}):
			default:
				t.Errorf("%s: rule %+v reaches Leases other than %q", name, r, lease)
			}
			for _, v := range r.Verbs {
				granted[v] = true
			}
		}
		if len(granted) != 3 || !granted["get"] || !granted["create"] || !granted["update"] {
			t.Errorf("%s: the Role grants %v on Leases; the leader election needs get, create and update", name, granted)
		}
	}
}

// TestTwoReleasesNeverShareAnIdentity: the installation's identity derives from the Lease's
// name, so the chart passes its Lease with leader election off too, and two releases in one
// namespace pass two Leases: they never write as one installation (twins).
func TestTwoReleasesNeverShareAnIdentity(t *testing.T) {
	leases := map[string]string{}
	for _, release := range []string{"router-hosts-operator", "lab"} {
		for _, elect := range []string{"true", "false"} {
			stream := helm(t, "template", release, chartDir(), "--namespace", operatorNS, "--set", "leaderElection.enabled="+elect)
			var dep appsv1.Deployment
			if err := yaml.Unmarshal(docs(t, stream)["Deployment"][0], &dep); err != nil {
				t.Fatal(err)
			}
			lease, elects := "", false
			for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
				if id, ok := strings.CutPrefix(a, "--leader-election-id="); ok {
					lease = id
				}
				elects = elects || a == "--leader-elect"
			}
			if lease == "" || elects != (elect == "true") {
				t.Fatalf("release %s, leader election %s: --leader-election-id=%q, --leader-elect %v", release, elect, lease, elects)
			}
			if prev, ok := leases[release]; ok && prev != lease {
				t.Errorf("release %s: the Lease is %q with leader election and %q without; its identity would change", release, prev, lease)
			}
			leases[release] = lease
		}
	}
	if leases["router-hosts-operator"] == leases["lab"] {
		t.Fatalf("two releases in one namespace share the Lease %q", leases["lab"])
	}
}
