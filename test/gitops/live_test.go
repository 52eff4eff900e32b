package gitops

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// lockedBuffer is a process's output, read while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestHealthOfTheOperatorsOwnStatuses runs the operator binary against a real apiserver and the
// router-hosts test server, configured by a RouterHostsConfig, and runs the Argo CD checks on
// the objects as the apiserver serves them: a HostMapping is Progressing before the operator
// writes its status and Healthy once its entry is written; the younger of two claiming one
// hostname is Degraded; one without an address is Progressing; the RouterHostsConfig is
// Healthy. With the router down the RouterHostsConfig turns Degraded and the HostMappings
// Progressing; back up, everything is Healthy again. Flux's kstatus agrees where it can say:
// Current for what is Healthy, InProgress for the conflict and the config without a router.
func TestHealthOfTheOperatorsOwnStatuses(t *testing.T) {
	all := scripts(t)
	cp, err := kubetest.Start(filepath.Join(repoRoot(), "kustomize", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	for _, ns := range []string{"rho", "apps", "other"} {
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	data := map[string][]byte{}
	for k, f := range map[string]string{"ca.crt": srv.CAFile(), "tls.crt": srv.CertFile(), "tls.key": srv.KeyFile()} {
		if data[k], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cp.Client.CoreV1().Secrets("rho").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "router-hosts-mtls"}, Data: data}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	hms := dyn.Resource(v1alpha1.HostMappingResource)
	configs := dyn.Resource(v1alpha1.RouterHostsConfigResource)
	hostMapping := func(ns, name string, spec map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.HostMappingKind,
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
		if _, err := hms.Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// served is the object as the apiserver serves it now, with its Argo CD check.
	served := func(ns, name string) (map[string]any, string) {
		t.Helper()
		res, key := dynamic.ResourceInterface(configs), configKey
		if ns != "" {
			res, key = hms.Namespace(ns), hostMappingKey
		}
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u.Object, all[key]
	}
	outcome := func(ns, name string) (string, string) {
		t.Helper()
		obj, script := served(ns, name)
		return health(t, script, obj)
	}
	flux := func(ns, name string, want status.Status) {
		t.Helper()
		obj, _ := served(ns, name)
		if got, msg := kstatus(t, obj); got != want {
			t.Errorf("kstatus of %s/%s is %s (%s), want %s", ns, name, got, msg, want)
		}
	}
	var op *exec.Cmd
	var log lockedBuffer
	// becomes waits until each object's outcome is the one wanted ("rhc" is the config).
	becomes := func(what string, want map[string]string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var off []string
			for obj, w := range want {
				ns, name, _ := strings.Cut(obj, "/")
				if obj == "rhc" {
					ns, name = "", "default"
				}
				if got, msg := outcome(ns, name); got != w {
					off = append(off, fmt.Sprintf("%s is %s (%s), want %s", obj, got, msg, w))
				}
			}
			if len(off) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s\nthe operator logged:\n%s", what, strings.Join(off, "; "), log.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Before the operator runs: nothing written yet.
	hostMapping("apps", "nas", map[string]any{"hostname": "nas.home.arpa", "ipAddress": "192.0.2.10"})
	cfg := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.RouterHostsConfigKind,
		"metadata": map[string]any{"name": "default"},
		"spec": map[string]any{"server": map[string]any{"endpoint": srv.Addr(), "tlsSecretRef": map[string]any{"name": "router-hosts-mtls", "namespace": "rho"}},
			"clusterName": "argocd", "ipResolution": []any{map[string]any{"type": v1alpha1.StepIngressStatus}}}}}
	if _, err := configs.Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	becomes("before the operator runs", map[string]string{"apps/nas": "Progressing", "rhc": "Progressing"})
	// kstatus calls an object without conditions Current.
	flux("apps", "nas", status.CurrentStatus)

	bin := filepath.Join(dir, "router-hosts-operator")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}
	op = exec.Command(bin, "--kubeconfig="+kubeconfig, "--config-name=default", "--source=hostmapping", "--interval=2s",
		"--min-event-sync-interval=100ms", "--grace-period=1s", "--metrics-address=", "--log-level=debug")
	op.Stdout, op.Stderr = &log, &log
	if err := op.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Process.Kill(); _ = op.Wait() })
	becomes("synced", map[string]string{"apps/nas": "Healthy", "rhc": "Healthy"})
	flux("apps", "nas", status.CurrentStatus)
	flux("", "default", status.CurrentStatus)

	// The older claim keeps the name; the younger is in conflict. No address: waiting for one.
	hostMapping("apps", "first", map[string]any{"hostname": "shared.home.arpa", "ipAddress": "192.0.2.11"})
	time.Sleep(1100 * time.Millisecond) // creation times have one-second resolution
	hostMapping("other", "second", map[string]any{"hostname": "shared.home.arpa", "ipAddress": "192.0.2.12"})
	hostMapping("apps", "unresolved", map[string]any{"hostname": "unresolved.home.arpa"})
	becomes("a conflict and a missing address", map[string]string{"apps/first": "Healthy", "other/second": "Degraded", "apps/unresolved": "Progressing", "rhc": "Healthy"})
	if _, msg := outcome("other", "second"); !strings.Contains(msg, "Conflict") {
		t.Errorf("the conflict's message %q does not say Conflict", msg)
	}
	flux("other", "second", status.InProgressStatus)

	// The router goes away, and comes back.
	srv.Stop()
	becomes("the router down", map[string]string{"rhc": "Degraded", "apps/nas": "Progressing", "apps/first": "Progressing"})
	flux("", "default", status.InProgressStatus)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	becomes("the router back", map[string]string{"rhc": "Healthy", "apps/nas": "Healthy", "apps/first": "Healthy", "other/second": "Degraded"})
}

// TestTheArgoCDPatchMergesIntoArgocdCM: the documented kubectl patch merges both checks into an
// existing argocd-cm on a real apiserver and keeps the keys it already had.
func TestTheArgoCDPatchMergesIntoArgocdCM(t *testing.T) {
	all := scripts(t)
	cp, err := kubetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().ConfigMaps("argocd").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm"},
		Data: map[string]string{"url": "https://argocd.home.arpa"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectl, err := kubetest.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	// As examples/argocd/argocd-cm-patch.yaml says to run it, from that directory.
	cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", "argocd", "patch", "configmap", "argocd-cm", "--type", "merge", "--patch-file", "argocd-cm-patch.yaml")
	cmd.Dir = filepath.Join(repoRoot(), "examples", "argocd")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl patch: %v\n%s", err, out)
	}
	cm, err := cp.Client.CoreV1().ConfigMaps("argocd").Get(ctx, "argocd-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["url"] != "https://argocd.home.arpa" {
		t.Errorf("the patch lost argocd-cm's own keys: %v", cm.Data)
	}
	for k, script := range all {
		if cm.Data[k] != script {
			t.Errorf("argocd-cm's %s is not the example's script", k)
		}
	}
}
