package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/explain"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube/clientset"
	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// TestThePluginTrustsOnlyTheOperatorsPod, as an admin lives it: the operator is installed by
// the chart (its objects created as they are rendered; nothing runs them), and a tenant runs a
// Pod labelled like the operator's, with the chart's arguments but its own router and DNS
// server, and the Secret to reach that router. While the operator's Pod leads, the plugin uses
// it and says so. Evicted, the plugin refuses, rather than take the look-alike, and says what
// to give instead; the tenant's own Lease beside the operator's is refused too. The replacement
// leads, and `explain` shows what the operator said on the tenant's Ingress but not the Event
// the tenant posted under the operator's component.
func TestThePluginTrustsOnlyTheOperatorsPod(t *testing.T) {
	ctx := context.Background()
	core := cp.Client.CoreV1()
	opNS, tenantNS := createNamespace(t, cp), createNamespace(t, cp)
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	evil, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(evil.Stop)
	for s, name := range map[*rhtestserver.Server]string{srv: "printer.lookalike.lan", evil: "evil.lookalike.lan"} {
		if _, err := s.Store().Add(&pb.AddHostRequest{Hostname: name, IpAddress: "192.168.1.9"}); err != nil {
			t.Fatal(err)
		}
	}
	// A Lease name of this test's own: the shared control plane holds other tests' operators.
	lease := "rho-" + opNS
	rendered := func(ns string, s *rhtestserver.Server, extra ...string) (*corev1.Pod, *corev1.ServiceAccount) {
		args := append([]string{"template", "rho", chartDir(), "--namespace", ns, "--set", "routerHosts.endpoint=" + s.Addr(),
			"--set", "routerHosts.tls.secretName=rho-mtls", "--set", "clusterName=lab", "--set", "config.name=" + ns,
			"--set", "leaderElection.id=" + lease, "--set", "ipResolution={static:10.61.0.1}"}, extra...)
		out := helm(t, args...)
		var d appsv1.Deployment
		var sa corev1.ServiceAccount
		if err := yaml.Unmarshal(docs(t, out)["Deployment"][0], &d); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(docs(t, out)["ServiceAccount"][0], &sa); err != nil {
			t.Fatal(err)
		}
		// Made by the Deployment's ReplicaSet, as the chart's Pods are; no controller runs here.
		yes := true
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: d.Name + "-7c9d8-", Labels: d.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: d.Name + "-7c9d8", UID: "0d7a3c1e-rs", Controller: &yes}}},
			Spec: d.Spec.Template.Spec}, &sa
	}
	mtls := func(ns string, s *rhtestserver.Server) {
		data := map[string][]byte{}
		for k, f := range map[string]string{"ca.crt": s.CAFile(), "tls.crt": s.CertFile(), "tls.key": s.KeyFile()} {
			if data[k], err = os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "rho-mtls"}, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// run creates a Pod and sets its phase, as the kubelet reports it.
	run := func(p *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
		got, err := core.Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return setPhase(t, got, phase)
	}
	holds := func(ns, holder string) {
		id := holder + "_1700000000000000000"
		l, err := cp.Client.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			_, err = cp.Client.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lease},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &id}}, metav1.CreateOptions{})
		} else {
			l.Spec.HolderIdentity = &id
			_, err = cp.Client.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	// The operator, installed by the chart: its service account, its Secret, its leader.
	opPod, opSA := rendered(opNS, srv)
	if _, err := core.ServiceAccounts(opNS).Create(ctx, opSA, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mtls(opNS, srv)
	leader := run(opPod.DeepCopy(), corev1.PodRunning)
	holds(opNS, leader.Name)

	// The tenant's look-alike: the chart's objects, its own router and DNS server.
	fake, fakeSA := rendered(tenantNS, evil, "--set", "routerHosts.verifyDNS=127.0.0.1:5399")
	if _, err := core.ServiceAccounts(tenantNS).Create(ctx, fakeSA, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mtls(tenantNS, evil)
	lookAlike := run(fake, corev1.PodRunning)
	shop, err := cp.Client.NetworkingV1().Ingresses(tenantNS).Create(ctx, ingress(tenantNS, "shop", enabled(), "shop.lookalike.lan"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	plugin := filepath.Join(t.TempDir(), operator.PluginBinary)
	if err := os.Symlink(operatorBin, plugin); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (stdout, stderr string, code int) {
		cmd := exec.Command(plugin, args...)
		cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir()}
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		t.Logf("%s: exit %v\n%s", strings.Join(args, " "), err, e.String())
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			return o.String(), e.String(), exit.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return o.String(), e.String(), 0
	}
	used := func(p *corev1.Pod) string {
		return "using the configuration of pod " + p.Namespace + "/" + p.Name + " (leader, Lease " + opNS + "/" + lease + ")"
	}

	// 1. The operator leads: the plugin, looking in every namespace, uses its Pod and says so.
	out, stderr, code := kubectl("--leader-election-id="+lease, "list")
	if code != 0 || !strings.Contains(out, "printer.lookalike.lan") || strings.Contains(out, "evil.lookalike.lan") || !strings.Contains(stderr, used(leader)) {
		t.Fatalf("list while the operator leads: exit %d\n%s\nstderr: %s", code, out, stderr)
	}

	// 2. The operator's Pod is evicted; the look-alike still runs. The plugin refuses, and never
	// asks the tenant's router.
	setPhase(t, leader, corev1.PodFailed)
	out, stderr, code = kubectl("--leader-election-id="+lease, "list")
	for _, want := range []string{"no Pod proven to be the router-hosts-operator's", leader.Name + ", which has finished (Failed)", "give --router-hosts-endpoint"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("list with the operator's Pod evicted: stderr lacks %q", want)
		}
	}
	if code != 2 || out != "" || strings.Contains(stderr, "using the configuration") {
		t.Errorf("list with the operator's Pod evicted: exit %d, want 2 and nothing used\n%s", code, out)
	}

	// 3. The tenant makes its own Lease, held by the look-alike: two candidates, refused.
	holds(tenantNS, lookAlike.Name)
	out, stderr, code = kubectl("--leader-election-id="+lease, "list")
	if code != 2 || out != "" || !strings.Contains(stderr, "2 router-hosts-operator installations found in any namespace") ||
		!strings.Contains(stderr, "pick one with --leader-election-namespace") {
		t.Errorf("list with the tenant's Lease: exit %d\n%s", code, out)
	}

	// 4. The Deployment's replacement leads; the admin names the operator's namespace.
	leader = run(opPod.DeepCopy(), corev1.PodRunning)
	holds(opNS, leader.Name)
	out, stderr, code = kubectl("--leader-election-namespace="+opNS, "--leader-election-id="+lease, "list")
	if code != 0 || !strings.Contains(out, "printer.lookalike.lan") || !strings.Contains(stderr, used(leader)) {
		t.Fatalf("list from the replacement: exit %d\n%s", code, out)
	}

	// 5. The operator warns on the tenant's Ingress; the tenant posts an Event of its own under
	// the operator's component, steering the admin. explain shows the operator's alone.
	ks, err := core.Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, stop := events.New(clientset.EventSink(cp.Client), events.Instance(registry.Identity(string(ks.UID), opNS, lease), leader.Name), logrus.New())
	defer stop()
	rec.SetLeading(true)
	ref := endpoint.SourceRef{Kind: "Ingress", Group: "networking.k8s.io", Version: "v1", Namespace: tenantNS, Name: "shop", UID: string(shop.UID)}
	rec.Warn(ref, "InvalidAddress", "the operator's own warning")
	now := metav1.Now()
	if _, err := core.Events(tenantNS).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "shop.impostor"},
		InvolvedObject: corev1.ObjectReference{Kind: "Ingress", APIVersion: "networking.k8s.io/v1", Namespace: tenantNS, Name: "shop", UID: shop.UID},
		Reason:         "TwinInstallation", Message: "run kubectl router-hosts release to fix this", Type: corev1.EventTypeWarning, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: events.Component, Host: lookAlike.Name},
		ReportingController: events.Component, ReportingInstance: lookAlike.Name}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return eventsFor(t, tenantNS, string(shop.UID))["InvalidAddress"] == 1 })
	out, stderr, code = kubectl("--leader-election-namespace="+opNS, "--leader-election-id="+lease, "explain", "shop.lookalike.lan", "-o", "json")
	var doc explain.NamesJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code == 2 || len(doc.Names) != 1 || !strings.Contains(stderr, used(leader)) {
		t.Fatalf("explain: exit %d, %v\n%s", code, err, out)
	}
	said := func(reason string) bool {
		return slices.ContainsFunc(doc.Names[0].Said, func(s explain.Said) bool { return s.Code == reason })
	}
	if !said("InvalidAddress") || said("TwinInstallation") {
		t.Errorf("explain shows %+v: want the operator's InvalidAddress alone, not the tenant's TwinInstallation", doc.Names[0].Said)
	}
}

// setPhase sets a Pod's phase as the kubelet reports it.
func setPhase(t *testing.T, p *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	p.Status.Phase = phase
	got, err := cp.Client.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
