package integration

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/internal/clusterconfig"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// designExample is the RouterHostsConfig of the design, exactly as written there.
const designExample = `apiVersion: router-hosts.fzymgc.house/v1alpha1
kind: RouterHostsConfig
metadata:
  name: default
spec:
  server:
    endpoint: "router.lan:50051"
    tlsSecretRef: {name: router-hosts-mtls, namespace: router-hosts-system}
  ipResolution:
    - type: IngressController
      serviceName: traefik
      serviceNamespace: traefik-system
    - type: Static
      address: "192.168.1.100"
  deletion:
    gracePeriodSeconds: 300
  defaultTags: ["k8s-operator", "cluster:homelab"]
`

func configs() dynamic.NamespaceableResourceInterface {
	return dynamic.NewForConfigOrDie(cp.Config).Resource(v1alpha1.RouterHostsConfigResource)
}

// createConfig creates a RouterHostsConfig from YAML, with dryRun only validated.
func createConfig(t *testing.T, doc string, dryRun bool) (*unstructured.Unstructured, error) {
	t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	} else {
		t.Cleanup(func() { _ = configs().Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}
	return configs().Create(context.Background(), &u, opts)
}

// patchConfig merges patch (JSON) into the named RouterHostsConfig's spec.
func patchConfig(t *testing.T, name string, spec map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"spec": spec})
	if _, err := configs().Patch(context.Background(), name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching RouterHostsConfig %s: %v", name, err)
	}
}

// configStatus reads the named RouterHostsConfig's status.
func configStatus(t *testing.T, name string) (v1alpha1.RouterHostsConfigStatus, int64) {
	t.Helper()
	u, err := configs().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var obj v1alpha1.RouterHostsConfig
	raw, _ := json.Marshal(u.Object)
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	return obj.Status, obj.Generation
}

func condition(st v1alpha1.RouterHostsConfigStatus, typ string) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// mtlsSecret writes the client's mTLS material to a Secret as cert-manager does.
func (h *harness) mtlsSecret(name, certFile, keyFile string) {
	h.t.Helper()
	data := map[string][]byte{}
	for k, f := range map[string]string{"ca.crt": h.srv.CAFile(), "tls.crt": certFile, "tls.key": keyFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			h.t.Fatal(err)
		}
		data[k] = b
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}, Type: corev1.SecretTypeTLS, Data: data}
	api := h.cp.Client.CoreV1().Secrets(h.ns)
	if _, err := api.Create(context.Background(), s, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = api.Update(context.Background(), s, metav1.UpdateOptions{})
		if err != nil {
			h.t.Fatal(err)
		}
	} else if err != nil {
		h.t.Fatal(err)
	}
}

// applied waits until the operator runs with settings that cond accepts.
func (h *harness) applied(cond func(s clusterconfig.Settings, problem error) bool) {
	h.t.Helper()
	waitFor(h.t, 15*time.Second, func() bool { s, p := h.op.Config.Settings(); return cond(s, p) })
}

// TestTheDesignsRouterHostsConfigIsAcceptedAsWritten, and the schema refuses what it can
// tell is wrong.
func TestTheDesignsRouterHostsConfigIsAcceptedAsWritten(t *testing.T) {
	if _, err := createConfig(t, designExample, true); err != nil {
		t.Fatalf("the design's example was refused: %v", err)
	}
	for _, tc := range []struct{ name, step, want string }{
		{"static without an address", "{type: Static}", "address"},
		{"an address that is no IP", "{type: Static, address: router.lan}", "IPv4 or IPv6"},
		{"an unknown type", "{type: NodeIP}", "Unsupported value"},
		{"a Service step without its Service", "{type: IngressController, serviceName: traefik}", "serviceNamespace"},
		{"a status step with a Service", "{type: IngressStatus, serviceName: a, serviceNamespace: b}", "only IngressController and Service"},
	} {
		doc := "apiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: RouterHostsConfig\nmetadata: {name: bad}\nspec:\n  ipResolution: [" + tc.step + "]\n"
		if _, err := createConfig(t, doc, true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a refusal naming %q", tc.name, err, tc.want)
		}
	}
}

// TestRouterHostsConfigIsAppliedLive follows a user through the resource: an operator started
// on flags takes the design's config when it appears (the endpoint, the Secret, the
// resolution chain, the grace period and the cluster from defaultTags all win over the flags);
// a change applies without a restart; a config it cannot use keeps the last good one running;
// a rotated Secret is used without a restart; status and printer columns tell it all.
func TestRouterHostsConfigIsAppliedLive(t *testing.T) {
	name := "it-config-live"
	seen := &clusterSeen{}
	h := newHarness(t, options{configName: name, endpoint: "127.0.0.1:1", cluster: "flags", ipResolution: []string{"static:10.9.9.9"},
		reporters: []controller.Reporter{seen}})
	traefik := h.service("traefik", corev1.ServiceTypeLoadBalancer, nil)
	h.setLoadBalancer(traefik, corev1.LoadBalancerIngress{IP: "10.0.0.7"})
	h.mtlsSecret("router-hosts-mtls", h.srv.CertFile(), h.srv.KeyFile())
	doc := strings.NewReplacer("name: default", "name: "+name, `"router.lan:50051"`, `"`+h.srv.Addr()+`"`,
		"namespace: router-hosts-system", "namespace: "+h.ns, "traefik-system", h.ns).Replace(designExample)
	if _, err := createConfig(t, doc, false); err != nil {
		t.Fatal(err)
	}
	h.applied(func(s clusterconfig.Settings, _ error) bool {
		return s.Endpoint == h.srv.Addr() && s.ClusterName == "homelab"
	})

	web := h.create(ingress(h.ns, "web", enabled(), "web.lan"))
	h.waitHost("web.lan", "10.0.0.7")
	h.sync()
	e := h.one("web.lan")
	if e.IP != "10.0.0.7" || !onCluster(e, "homelab") || onCluster(e, "flags") || slices.ContainsFunc(e.Tags, func(t string) bool { return strings.HasPrefix(t, "grace-period:") }) {
		t.Fatalf("entry %v: want 10.0.0.7 from the IngressController step, cluster:homelab, the default grace", e)
	}
	// The metrics' cluster label comes from the report: the configuration in use, not the flag.
	if c := seen.get(); c != "homelab" {
		t.Fatalf("the sync reported cluster %q, want the config's homelab", c)
	}
	waitFor(t, 15*time.Second, func() bool {
		st, gen := configStatus(t, name)
		return condition(st, v1alpha1.ConditionReady).Status == metav1.ConditionTrue && st.Entries == 1 && st.Endpoint == h.srv.Addr() &&
			st.ObservedGeneration == gen && st.LastSyncTime != nil && st.ServerVersion == inmemory.Version
	})
	table := printerColumns(t, name)
	for col, want := range map[string]string{"Endpoint": h.srv.Addr(), "Ready": "True", "Entries": "1", "Pending": "0", "Server": inmemory.Version} {
		if table[col] != want {
			t.Errorf("kubectl get column %s = %q, want %q (all: %v)", col, table[col], want, table)
		}
	}
	if table["Last Sync"] == "" {
		t.Errorf("kubectl get shows no Last Sync: %v", table)
	}
	// Steady state: quiet syncs write no status, though each ends at another second (the
	// last sync's time is refreshed once per interval only).
	before := resourceVersion(t, name)
	for range 3 {
		h.clock.Step(2 * time.Second)
		h.sync()
	}
	time.Sleep(500 * time.Millisecond)
	if after := resourceVersion(t, name); after != before {
		t.Errorf("quiet syncs wrote the status (resourceVersion %s → %s)", before, after)
	}

	// A change to the grace period, the chain and the default tags applies without a restart.
	patchConfig(t, name, map[string]any{"deletion": map[string]any{"gracePeriodSeconds": 60},
		"ipResolution": []any{map[string]any{"type": "Static", "address": "10.0.0.8"}}, "defaultTags": []any{"k8s-operator", "cluster:homelab", "team-x"}})
	h.applied(func(s clusterconfig.Settings, _ error) bool { return s.GracePeriod == time.Minute })
	h.waitHost("web.lan", "10.0.0.8")
	h.sync()
	if e := h.one("web.lan"); e.IP != "10.0.0.8" || !e.HasTag("team-x") {
		t.Fatalf("after the change: %v, want 10.0.0.8 with team-x", e)
	}
	h.delete(web)
	h.waitGone("web.lan")
	h.sync()
	h.clock.Step(61 * time.Second)
	h.sync()
	if n := len(h.entries("web.lan")); n != 0 {
		t.Fatalf("the new 60 s grace period did not apply: %d entries left", n)
	}

	// A config that cannot be used: reported, and the last good one keeps running.
	patchConfig(t, name, map[string]any{"clusterName": "homelab", "defaultTags": []any{"cluster:other"}})
	waitFor(t, 15*time.Second, func() bool {
		st, gen := configStatus(t, name)
		c := condition(st, v1alpha1.ConditionReady)
		return c.Reason == v1alpha1.ReasonInvalidConfig && strings.Contains(c.Message, "cluster") && st.ObservedGeneration == gen
	})
	h.create(ingress(h.ns, "api", enabled("ip-address", "10.0.0.9"), "api.lan"))
	h.waitHost("api.lan", "10.0.0.9")
	h.sync()
	if e := h.one("api.lan"); !onCluster(e, "homelab") || !e.HasTag("team-x") {
		t.Fatalf("with an invalid config: %v, want the last good one (cluster:homelab, team-x)", e)
	}
	patchConfig(t, name, map[string]any{"clusterName": nil, "defaultTags": []any{"k8s-operator", "cluster:homelab", "team-x"}})
	h.applied(func(_ clusterconfig.Settings, problem error) bool { return problem == nil })

	// A certificate the server refuses, then the rotated good one: no restart.
	foreignCert, foreignKey, err := rhtestserver.WriteForeignClientCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good, _ := h.op.Config.Settings()
	h.mtlsSecret("router-hosts-mtls", foreignCert, foreignKey)
	h.applied(func(s clusterconfig.Settings, _ error) bool { return !s.Keys.Equal(good.Keys) })
	if _, err := h.ctrl.SyncOnce(context.Background()); err == nil {
		t.Fatal("a sync with a refused certificate succeeded")
	}
	waitFor(t, 15*time.Second, func() bool {
		st, _ := configStatus(t, name)
		return condition(st, v1alpha1.ConditionServerReachable).Reason == v1alpha1.ReasonAuthenticationFailed
	})
	h.mtlsSecret("router-hosts-mtls", h.srv.CertFile(), h.srv.KeyFile())
	h.applied(func(s clusterconfig.Settings, _ error) bool { return s.Keys.Equal(good.Keys) })
	h.sync()
	waitFor(t, 15*time.Second, func() bool {
		st, _ := configStatus(t, name)
		return condition(st, v1alpha1.ConditionReady).Status == metav1.ConditionTrue
	})

	// A restart reads the config before its first sync: nothing to change.
	h.build(options{configName: name, endpoint: "127.0.0.1:1", cluster: "flags", ipResolution: []string{"static:10.9.9.9"}})
	writes := h.writes()
	h.sync()
	if h.writes() != writes {
		t.Fatalf("the first sync after a restart wrote %d times; the config was not read at start", h.writes()-writes)
	}
}

// TestAnUnusableConfigFailsOnceAtStart: --once exits non-zero when the config it was told to
// read names a Secret that does not exist, rather than run on half of it.
func TestAnUnusableConfigFailsOnceAtStart(t *testing.T) {
	name := "it-config-once"
	h := newHarness(t, options{configName: name})
	doc := strings.NewReplacer("name: default", "name: "+name, `"router.lan:50051"`, `"`+h.srv.Addr()+`"`,
		"namespace: router-hosts-system", "namespace: "+h.ns).Replace(designExample)
	if _, err := createConfig(t, doc, false); err != nil {
		t.Fatal(err)
	}
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.0.0.1"), "web.lan"))
	cmd := exec.Command(operatorBin, "--once", "--config-name="+name, "--metrics-address=")
	cmd.Env = operatorEnv(h)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("--once with an unusable config: %v, want exit status 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "router-hosts-mtls") {
		t.Errorf("the error does not name the Secret:\n%s", out)
	}
	if n := len(h.entries("web.lan")); n != 0 {
		t.Fatalf("%d entries written by a run that should not have started", n)
	}
}

// printerColumns returns the columns kubectl get shows for the named RouterHostsConfig.
func printerColumns(t *testing.T, name string) map[string]string {
	t.Helper()
	return tableRow(t, "/apis/router-hosts.fzymgc.house/v1alpha1/routerhostsconfigs/"+name)
}

// tableRow returns the columns kubectl get shows for the one object at path, as the apiserver
// serves them (its Table form, the CRD's printer columns).
func tableRow(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := cp.Client.Discovery().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	if len(table.Rows) != 1 {
		t.Fatalf("table rows: %d", len(table.Rows))
	}
	for i, c := range table.ColumnDefinitions {
		if i < len(table.Rows[0].Cells) && table.Rows[0].Cells[i] != nil {
			out[c.Name] = strings.TrimSpace(jsonText(table.Rows[0].Cells[i]))
		}
	}
	return out
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// resourceVersion is the named RouterHostsConfig's resourceVersion: it moves with every write,
// status included.
func resourceVersion(t *testing.T, name string) string {
	t.Helper()
	u, err := configs().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u.GetResourceVersion()
}

// clusterSeen is a reporter that keeps the cluster the last sync reported.
type clusterSeen struct {
	mu      sync.Mutex
	cluster string
}

func (c *clusterSeen) Report(_ context.Context, r *controller.Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Cluster != "" {
		c.cluster = r.Cluster
	}
}

func (c *clusterSeen) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cluster
}
