package integration

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// TestARunningOperatorsConfigurationFromAKubeconfig: an admin's laptop with nothing but a
// kubeconfig gets the running operator's configuration. The operator's Pod is the chart's,
// rendered by helm and created as an object (nothing runs it), beside the Lease its leader
// holds and the mTLS Secret it mounts; ReadOnlyConfig finds the Pod by the Lease, parses its
// arguments and reads the Secret's material into memory; the operator wired from that
// configuration reaches the router over mTLS and has the running operator's identity.
func TestARunningOperatorsConfigurationFromAKubeconfig(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, cp)
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)

	const release, lease = "rho", "rho-router-hosts-operator"
	out := helm(t, "template", release, chartDir(), "--namespace", ns, "--set", "routerHosts.endpoint="+srv.Addr(),
		"--set", "routerHosts.tls.secretName=rho-mtls", "--set", "clusterName=lab", "--set", "config.name="+ns)
	var d appsv1.Deployment
	if err := yaml.Unmarshal(docs(t, out)["Deployment"][0], &d); err != nil {
		t.Fatal(err)
	}
	// Made by the Deployment's ReplicaSet, as the Pod names; no controller runs here to check.
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lease + "-7c9d8-x2x4q", Labels: d.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: lease + "-7c9d8", UID: "0d7a3c1e-rs", Controller: &yes}}},
		Spec: d.Spec.Template.Spec}
	var sa corev1.ServiceAccount
	if err := yaml.Unmarshal(docs(t, out)["ServiceAccount"][0], &sa); err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{}
	for k, f := range map[string]string{"ca.crt": srv.CAFile(), "tls.crt": srv.CertFile(), "tls.key": srv.KeyFile()} {
		if data[k], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	holder := pod.Name + "_1700000000000000000"
	core := cp.Client.CoreV1()
	for _, create := range []func() error{
		func() error {
			_, err := core.ServiceAccounts(ns).Create(ctx, &sa, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "rho-mtls"}, Data: data}, metav1.CreateOptions{})
			return err
		},
		func() error { _, err := core.Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); return err },
		func() error {
			_, err := cp.Client.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lease},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil {
			t.Fatal(err)
		}
	}

	// The laptop: a kubeconfig and the operator's namespace (the shared control plane may hold
	// other tests' installations), no router, no certificate.
	given, err := operator.ParseFlags([]string{"--kubeconfig=" + kubeconfig, "--leader-election-namespace=" + ns}, operator.Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var told bytes.Buffer
	cfg, rc, err := operator.ReadOnlyConfig(ctx, given, &told)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case strings.TrimSuffix(rc.Host, "/") != strings.TrimSuffix(cp.Config.Host, "/"):
		t.Errorf("the apiserver %s is not the kubeconfig's %s", rc.Host, cp.Config.Host)
	case cfg.Endpoint != srv.Addr() || cfg.ClusterName != "lab" || cfg.ConfigName != ns:
		t.Errorf("endpoint %q, cluster %q, RouterHostsConfig %q: not the Pod's", cfg.Endpoint, cfg.ClusterName, cfg.ConfigName)
	case cfg.LeaderElectionNS != ns || cfg.LeaderElectionID != lease:
		t.Errorf("Lease %s/%s, want %s/%s, the identity's inputs", cfg.LeaderElectionNS, cfg.LeaderElectionID, ns, lease)
	case cfg.Keys == nil || cfg.TLSCA != "" || cfg.TLSCert != "" || cfg.TLSKey != "":
		t.Errorf("the mTLS material is not the Secret's, in memory: files %q %q %q", cfg.TLSCA, cfg.TLSCert, cfg.TLSKey)
	case cfg.Kubeconfig != kubeconfig:
		t.Errorf("kubeconfig %q: not the laptop's", cfg.Kubeconfig)
	case !strings.Contains(told.String(), "using the configuration of pod "+ns+"/"+pod.Name+" (leader"):
		t.Errorf("told %q: not which Pod was used", told.String())
	}

	// The operator as a read-only command would wire it: the router answers, and the identity
	// is the one the running operator derives.
	log := logrus.New()
	log.SetOutput(testWriter{t})
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	op, err := operator.New(octx, cfg, log, io.Discard, operator.Hooks{DiscoveryInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if _, err := op.Provider.ServerVersion(ctx); err != nil {
		t.Fatalf("the router does not answer with the Secret's material: %v", err)
	}
	if _, err := op.Provider.Records(ctx); err != nil {
		t.Fatalf("listing the router's entries: %v", err)
	}
	ks, err := core.Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := op.Controller.Inspect(ctx)
	if err != nil {
		t.Fatalf("deciding as explain does: %v", err)
	}
	if got, want := rep.ClusterID, registry.Identity(string(ks.UID), ns, lease); got != want {
		t.Errorf("identity %s, want the running operator's %s", got, want)
	}

	// The admin's own view: the binary as the kubectl plugin, with nothing but the kubeconfig
	// (and the namespace to look in), lists the router and explains a name from the running
	// operator's configuration.
	if _, err := srv.Store().Add(&pb.AddHostRequest{Hostname: "printer.laptop.lan", IpAddress: "192.168.1.9"}); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(t.TempDir(), operator.PluginBinary)
	if err := os.Symlink(operatorBin, plugin); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (string, int) {
		cmd := exec.Command(plugin, append([]string{"--leader-election-namespace=" + ns}, args...)...)
		cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir()}
		return exitOf(t, cmd)
	}
	if got, code := kubectl("list"); code != 0 || !strings.Contains(got, "printer.laptop.lan") || !strings.Contains(got, "hand-made") {
		t.Errorf("kubectl router-hosts list: exit %d\n%s", code, got)
	}
	if got, code := kubectl("explain", "printer.laptop.lan"); code != 1 || !strings.Contains(got, "Unclaimed") {
		t.Errorf("kubectl router-hosts explain printer.laptop.lan: exit %d\n%s", code, got)
	}
}
