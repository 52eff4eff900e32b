package externaldns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns"
	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
	rhregistry "github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// repoRoot is the operator's checkout, two levels up.
func repoRoot() string { return filepath.Join("..", "..") }

// tool is a binary make test builds from the module proxy and passes in env.
func tool(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set: make test builds it (hack/go-tool.sh) and passes its path", env)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return p
}

// exampleDeployment is examples/external-dns's Deployment as a user applies it.
func exampleDeployment(t *testing.T) appsv1.Deployment {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "external-dns", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(raw, &dep); err != nil {
		t.Fatal(err)
	}
	return dep
}

// listening is every port a container's process binds: its declared container ports, and the
// addresses its own flag parser derives from its args (the operator's and external-dns's), so
// that a default nobody wrote down counts too.
func listening(t *testing.T, c corev1.Container) map[int]string {
	t.Helper()
	out := map[int]string{}
	add := func(addr, what string) {
		if addr == "" {
			return
		}
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("container %s: %s %q: %v", c.Name, what, addr, err)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("container %s: %s %q: %v", c.Name, what, addr, err)
		}
		out[n] = what
	}
	for _, p := range c.Ports {
		out[int(p.ContainerPort)] = "containerPort " + p.Name
	}
	switch {
	case strings.Contains(c.Image, "router-hosts-operator"):
		cfg, err := operator.ParseFlags(c.Args, operator.Build{Version: "test"})
		if err != nil {
			t.Fatalf("container %s: the operator refuses its args %v: %v", c.Name, c.Args, err)
		}
		add(cfg.MetricsAddress, "--metrics-address")
		if cfg.Command == operator.CommandWebhook {
			add(cfg.WebhookAddress, "--webhook-address")
		}
	case strings.Contains(c.Image, "external-dns"):
		cfg := externaldns.NewConfig()
		if err := cfg.ParseFlags(c.Args); err != nil {
			t.Fatalf("container %s: external-dns refuses its args %v: %v", c.Name, c.Args, err)
		}
		add(cfg.MetricsAddress, "--metrics-address")
		if cfg.WebhookServer {
			add("127.0.0.1:8888", "--webhook-server")
		}
	}
	return out
}

// checkPod fails when two containers of a pod bind one port (they share its network), or a
// probe of the operator's or external-dns's container names a port its process does not bind.
func checkPod(t *testing.T, what string, pod corev1.PodSpec) {
	t.Helper()
	owner := map[int]string{}
	for _, c := range pod.Containers {
		for p := range listening(t, c) {
			if other, ok := owner[p]; ok {
				t.Errorf("%s: containers %s and %s both bind port %d", what, other, c.Name, p)
			}
			owner[p] = c.Name
		}
		bare := c
		bare.Ports = nil // what the process itself binds, by its own flags
		binds := listening(t, bare)
		if len(binds) == 0 {
			continue // a program whose flags this test does not know
		}
		for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if pr == nil || pr.HTTPGet == nil {
				continue
			}
			port := pr.HTTPGet.Port.IntValue()
			if name := pr.HTTPGet.Port.StrVal; name != "" {
				i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == name })
				if i < 0 {
					t.Errorf("%s: container %s probes the undeclared port %q", what, c.Name, name)
					continue
				}
				port = int(c.Ports[i].ContainerPort)
			}
			if _, ok := binds[port]; !ok {
				t.Errorf("%s: container %s probes port %d, which its process does not bind (it binds %v)", what, c.Name, port, binds)
			}
		}
	}
}

// TestNoTwoContainersOfAPodShareAPort: in every pod the examples, kustomize and the charts (this
// one, and external-dns's with the webhook values of docs/external-dns.md) run, no two
// containers bind one port, each process's own defaults counted, and every probe reaches a port
// its container serves.
func TestNoTwoContainersOfAPodShareAPort(t *testing.T) {
	helm := tool(t, "HELM")
	var pods []struct {
		what string
		spec corev1.PodSpec
	}
	addStream := func(what string, stream []byte) {
		for _, d := range strings.Split("\n"+string(stream), "\n---") {
			var dep appsv1.Deployment
			if err := yaml.Unmarshal([]byte(d), &dep); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if dep.Kind == "Deployment" {
				pods = append(pods, struct {
					what string
					spec corev1.PodSpec
				}{what + " " + dep.Name, dep.Spec.Template.Spec})
			}
		}
	}
	for _, dir := range []string{"examples", "kustomize"} {
		err := filepath.WalkDir(filepath.Join(repoRoot(), dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
				return err
			}
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(raw, []byte("kind: Deployment")) {
				addStream(p, raw)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	render := func(what string, args ...string) {
		cmd := exec.Command(helm, args...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("helm %v: %v\n%s", args, err, ee.Stderr)
			}
			t.Fatal(err)
		}
		addStream(what, out)
	}
	chart := filepath.Join(repoRoot(), "charts", "router-hosts-operator")
	// A helm built from the module proxy renders for Kubernetes 1.20 unless told; the chart
	// needs 1.31.
	render("the chart", "template", "rho", chart, "--kube-version", "v1.31.0")
	render("external-dns's chart with the webhook", "template", "external-dns", externalDNSChart(t), "-f", filepath.Join(repoRoot(), "examples", "external-dns", "helm-values.yaml"))
	if len(pods) < 4 { // examples/external-dns, kustomize, this chart, external-dns's chart
		t.Fatalf("found %d pods; the walk missed the examples", len(pods))
	}
	for _, p := range pods {
		checkPod(t, p.what, p.spec)
	}
}

// TestTheREADMEShowsTheTestedValues: the values for external-dns's chart that the README shows
// are the file the port test renders, line for line.
func TestTheREADMEShowsTheTestedValues(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	vals, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "external-dns", "helm-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var body []string
	for _, l := range strings.Split(string(vals), "\n") {
		if !strings.HasPrefix(l, "#") {
			body = append(body, l)
		}
	}
	if want := strings.TrimSpace(strings.Join(body, "\n")); !strings.Contains(string(readme), "```yaml\n"+want+"\n```") {
		t.Errorf("the README's values for external-dns's chart are not examples/external-dns/helm-values.yaml (less its comments):\n%s", want)
	}
}

// externalDNSChart is the chart external-dns v0.22.0 ships in its module.
func externalDNSChart(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/external-dns").Output()
	if err != nil {
		t.Fatalf("locating external-dns's module: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "charts", "external-dns")
}

// TestTheExampleRunsSideBySide: examples/external-dns's two containers run as processes with
// the example's own args on one loopback, as in a pod: external-dns (EXTERNAL_DNS, the Makefile's EXTERNAL_DNS_VERSION built from the
// module proxy) with its default metrics address, and the operator's webhook (this tree) with
// its defaults. Both bind and answer their probes, external-dns negotiates with the webhook and
// stays up, and an Ingress reaches the router through the two of them, under the identity the
// webhook derives from the pod's service-account token. Only what points outside the pod
// changes: the router's address and certificate files, external-dns's kubeconfig, and the
// token, which the apiserver issues for the example's pod and the test cannot mount where the
// kubelet does. Without the token the webhook does not start, and says why.
func TestTheExampleRunsSideBySide(t *testing.T) {
	edns := tool(t, "EXTERNAL_DNS")
	for _, addr := range []string{":7979", ":8080", "127.0.0.1:8888"} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("port %s, which the example's pod uses, is taken on this machine: %v", addr, err)
		}
		l.Close()
	}
	cp, err := kubetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rho := filepath.Join(t.TempDir(), "router-hosts-operator")
	if out, err := exec.Command("go", "build", "-o", rho, "github.com/router-hosts-operator/router-hosts-operator").CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}

	dep := exampleDeployment(t)
	var hookArgs, ednsArgs []string
	for _, c := range dep.Spec.Template.Spec.Containers {
		switch c.Name {
		case "router-hosts-webhook":
			for _, a := range c.Args {
				switch {
				case strings.HasPrefix(a, "--router-hosts-endpoint="):
					a = "--router-hosts-endpoint=" + srv.Addr()
				case strings.HasPrefix(a, "--tls-ca="):
					a = "--tls-ca=" + srv.CAFile()
				case strings.HasPrefix(a, "--tls-cert="):
					a = "--tls-cert=" + srv.CertFile()
				case strings.HasPrefix(a, "--tls-key="):
					a = "--tls-key=" + srv.KeyFile()
				}
				hookArgs = append(hookArgs, a)
			}
		case "external-dns":
			ednsArgs = append(slices.Clone(c.Args), "--kubeconfig="+kubeconfig)
		}
	}
	if hookArgs == nil || ednsArgs == nil {
		t.Fatalf("the example lacks a container: webhook %v, external-dns %v", hookArgs, ednsArgs)
	}
	env := []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")} // nothing from the test's environment

	// Outside a pod, with no token to derive an identity from, the webhook refuses to start.
	if _, err := os.Stat(operator.DefaultServiceAccountTokenFile); err == nil {
		t.Logf("this machine has %s (a pod?): the refusal without it is not tried", operator.DefaultServiceAccountTokenFile)
	} else {
		refused := exec.Command(rho, hookArgs...)
		refused.Env = env
		out, err := refused.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "run it in a pod, whose service-account token gives it an identity, or set --cluster-id") {
			t.Fatalf("the webhook without a service-account token: %v\n%s", err, out)
		}
		for method, n := range srv.Service().CallCounts() {
			if n != 0 {
				t.Fatalf("the refused webhook called the router: %d %s", n, method)
			}
		}
	}
	// In the example's pod it reads the token the kubelet mounts there.
	hookArgs = append(hookArgs, "--service-account-token-file="+podToken(t, cp, "external-dns", dep.Spec.Template.Spec))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	start := func(name, bin string, args []string) *process {
		p := &process{name: name, cmd: exec.CommandContext(ctx, bin, args...), done: make(chan struct{})}
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		p.cmd.Env = env
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.err = p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			cancel()
			<-p.done
			if t.Failed() {
				t.Logf("%s's output:\n%s", name, p.out.String())
			}
		})
		return p
	}
	// The webhook first, as the kubelet may start either: external-dns waits for it.
	hook := start("the webhook", rho, hookArgs)
	ext := start("external-dns", edns, ednsArgs)

	answers := func(url string, header ...string) error {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}
	checks := []struct {
		what string
		ok   func() error
	}{
		{"external-dns's /healthz on :7979", func() error { return answers("http://127.0.0.1:7979/healthz") }},
		{"the webhook's /healthz on :8080", func() error { return answers("http://127.0.0.1:8080/healthz") }},
		{"the webhook's /readyz on :8080", func() error { return answers("http://127.0.0.1:8080/readyz") }},
		{"the webhook's API on 127.0.0.1:8888", func() error {
			return answers("http://127.0.0.1:8888/", "Accept", "application/external.dns.webhook+json;version=1")
		}},
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, c := range checks {
		for err := c.ok(); err != nil; err = c.ok() {
			if exited(hook) || exited(ext) || time.Now().After(deadline) {
				t.Fatalf("%s: %v (webhook exited: %v %v; external-dns exited: %v %v)", c.what, err, exited(hook), hook.err, exited(ext), ext.err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// An Ingress in the domain external-dns manages reaches the router through the pair.
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "web.home.lan"}}}}
	created, err := cp.Client.NetworkingV1().Ingresses("default").Create(ctx, ing, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.168.1.50"}}
	if _, err := cp.Client.NetworkingV1().Ingresses("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// external-dns syncs at start and every --interval (1m in the example); its informers see
	// the Ingress before the first one, or the next picks it up.
	deadline = time.Now().Add(100 * time.Second)
	for {
		var found []string
		for _, e := range srv.Store().List() {
			if e.GetHostname() == "web.home.lan" {
				found = append(found, e.GetIpAddress()+" "+strings.Join(e.GetTags(), ","))
			}
		}
		if len(found) == 1 && strings.HasPrefix(found[0], "192.168.1.50 ") && strings.Contains(found[0], "cluster:homelab-external-dns") &&
			strings.Contains(found[0], rhregistry.PrefixClusterID) {
			break
		}
		if exited(hook) || exited(ext) || time.Now().After(deadline) {
			t.Fatalf("web.home.lan on the router: %v (webhook exited: %v; external-dns exited: %v)", found, exited(hook), exited(ext))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if exited(hook) || exited(ext) {
		t.Fatalf("a process exited: webhook %v %v, external-dns %v %v", exited(hook), hook.err, exited(ext), ext.err)
	}
}

type process struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer
	err  error
	done chan struct{}
}

func exited(p *process) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
