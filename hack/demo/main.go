// Command demo runs the operator's main job on one machine with no outside infrastructure: a
// real kube-apiserver and etcd, the example manifests, and the router-hosts test server standing
// in for a router (or a real router-hosts server when ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT
// and the TLS variables are set). It prints a dry run, syncs for real, prints the resulting
// entries, and stops every process it started. `make demo` runs it.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/internal/rhtestserver"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

const envPrefix = "ROUTER_HOSTS_OPERATOR_"

func main() {
	operator := flag.String("operator", "bin/router-hosts-operator", "operator binary")
	examples := flag.String("examples", "examples", "directory of example manifests")
	flag.Parse()
	if err := run(*operator, *examples); err != nil {
		fmt.Fprintf(os.Stderr, "demo failed: %v\n", err)
		os.Exit(1)
	}
}

func run(operator, examples string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "router-hosts-demo-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)

	step("Starting a local control plane (real kube-apiserver and etcd)")
	cp, err := kubetest.Start(filepath.Join("kustomize", "crds"))
	if err != nil {
		return err
	}
	defer func() { _ = cp.Stop(); step("Stopped the control plane and every process the demo started") }()
	step("Installing the Gateway API CRDs (sigs.k8s.io/gateway-api " + kubetest.GatewayAPIVersion + ", standard channel)")
	if err := cp.InstallGatewayAPI(); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	env := map[string]string{"KUBECONFIG": kubeconfig}
	var opts routerhosts.Options
	if ep := os.Getenv(envPrefix + "ROUTER_HOSTS_ENDPOINT"); ep != "" {
		step("Using the REAL router-hosts server at " + ep)
		opts = routerhosts.Options{Endpoint: ep, CAFile: os.Getenv(envPrefix + "TLS_CA"), CertFile: os.Getenv(envPrefix + "TLS_CERT"),
			KeyFile: os.Getenv(envPrefix + "TLS_KEY"), ServerName: os.Getenv(envPrefix + "TLS_SERVER_NAME")}
	} else {
		srv, err := rhtestserver.Start(filepath.Join(dir, "rh"), "")
		if err != nil {
			return fmt.Errorf("starting the test server: %w", err)
		}
		defer srv.Stop()
		step("Started the router-hosts TEST SERVER at " + srv.Addr() + " (in-memory, standing in for a router; mTLS with a throwaway CA)")
		opts = routerhosts.Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: srv.CertFile(), KeyFile: srv.KeyFile()}
		env[envPrefix+"ROUTER_HOSTS_ENDPOINT"], env[envPrefix+"TLS_CA"] = srv.Addr(), srv.CAFile()
		env[envPrefix+"TLS_CERT"], env[envPrefix+"TLS_KEY"] = srv.CertFile(), srv.KeyFile()
	}
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	opts.Log = quiet
	client, err := routerhosts.New(opts)
	if err != nil {
		return err
	}
	defer client.Close()

	if os.Getenv(envPrefix+"ROUTER_HOSTS_ENDPOINT") == "" {
		step("Seeding the router with a hand-made entry, nas.home.lan (no operator tags)")
		manual := &endpoint.Record{Hostname: "nas.home.lan", IP: "192.168.1.10", Tags: []string{"manual"}, Comment: "added by hand"}
		if err := client.ApplyChanges(ctx, []plan.Change{{Action: plan.Create, New: manual}}); err != nil {
			return fmt.Errorf("seeding: %w", err)
		}
	}

	step("Applying the manifests in " + examples + "/")
	if err := applyDir(ctx, cp.Client, dynamic.NewForConfigOrDie(cp.Config), examples); err != nil {
		return err
	}

	args := []string{"--once", "--source=ingress", "--source=hostmapping", "--source=service", "--source=gateway", "--cluster-name=demo", "--default-tag=homelab", "--log-level=warn",
		"--ip-resolution=ingress-status", "--ip-resolution=service:traefik/traefik", "--ip-resolution=static:192.168.1.250"}
	step("Preflight: " + operator + " " + strings.Join(append(args, "--dry-run"), " "))
	if err := runOperator(ctx, operator, env, append(args, "--dry-run")...); err != nil {
		return err
	}
	step("Sync for real: " + operator + " " + strings.Join(args, " "))
	if err := runOperator(ctx, operator, env, args...); err != nil {
		return err
	}
	step("Entries on the router now")
	if err := printTable(ctx, client); err != nil {
		return err
	}
	step("A second dry run: the cluster and the router agree")
	if err := runOperator(ctx, operator, env, append(args, "--dry-run")...); err != nil {
		return err
	}
	step("Deleting Ingress default/whoami; the next sync marks its entry pending deletion (deleted after --grace-period)")
	if err := cp.Client.NetworkingV1().Ingresses("default").Delete(ctx, "whoami", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting whoami: %w", err)
	}
	if err := runOperator(ctx, operator, env, args...); err != nil {
		return err
	}
	if err := printTable(ctx, client); err != nil {
		return err
	}
	return byResource(ctx, cp, operator, env, opts, kubeconfig)
}

// configExample is the design's RouterHostsConfig, pointed at the demo's server.
const configExample = `apiVersion: router-hosts.fzymgc.house/v1alpha1
kind: RouterHostsConfig
metadata:
  name: default
spec:
  server:
    endpoint: %q
    serverName: %q
    tlsSecretRef: {name: router-hosts-mtls, namespace: router-hosts-system}
  ipResolution:
    - type: IngressStatus
    - type: IngressController
      serviceName: traefik
      serviceNamespace: traefik
    - type: Static
      address: "192.168.1.250"
  deletion:
    gracePeriodSeconds: 300
  defaultTags: ["k8s-operator", "cluster:demo", "homelab"]
`

// byResource configures the same operator by a RouterHostsConfig and its Secret instead of
// flags, runs it, and shows what kubectl get says.
func byResource(ctx context.Context, cp *kubetest.ControlPlane, operator string, env map[string]string, opts routerhosts.Options, kubeconfig string) error {
	step("Configuring by resource instead of flags: the mTLS Secret router-hosts-system/router-hosts-mtls and the RouterHostsConfig \"default\"")
	data := map[string][]byte{}
	for k, f := range map[string]string{"ca.crt": opts.CAFile, "tls.crt": opts.CertFile, "tls.key": opts.KeyFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading %s: %w", f, err)
		}
		data[k] = b
	}
	if err := create(ctx, cp.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "router-hosts-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "router-hosts-system", Name: "router-hosts-mtls"}, Type: corev1.SecretTypeTLS, Data: data}
	if _, err := cp.Client.CoreV1().Secrets(secret.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Secret: %w", err)
	}
	doc := fmt.Sprintf(configExample, opts.Endpoint, opts.ServerName)
	fmt.Print(doc)
	var u unstructured.Unstructured
	if err := sigsyaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		return err
	}
	if _, err := dynamic.NewForConfigOrDie(cp.Config).Resource(v1alpha1.RouterHostsConfigResource).Create(ctx, &u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the RouterHostsConfig: %w", err)
	}
	byConfig := map[string]string{"KUBECONFIG": env["KUBECONFIG"]}
	args := []string{"--once", "--source=ingress", "--source=hostmapping", "--source=service", "--source=gateway", "--config-name=default", "--log-level=warn"}
	step("Sync with no server, TLS, cluster, tag or resolution flag: " + operator + " " + strings.Join(args, " "))
	if err := runOperator(ctx, operator, byConfig, args...); err != nil {
		return err
	}
	kubectl, err := kubetest.Kubectl()
	if err != nil {
		return err
	}
	step("kubectl get routerhostsconfig -o wide")
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "routerhostsconfig", "-o", "wide")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl get: %w", err)
	}
	return nil
}

func step(s string) { fmt.Printf("\n==> %s\n", s) }

// runOperator runs the operator binary with env added to the demo's environment.
func runOperator(ctx context.Context, bin string, env map[string]string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	return nil
}

// printTable lists every entry on the server, sorted, with its tags.
func printTable(ctx context.Context, client *routerhosts.Provider) error {
	recs, err := client.Records(ctx)
	if err != nil {
		return err
	}
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].Hostname != recs[j].Hostname {
			return recs[i].Hostname < recs[j].Hostname
		}
		return recs[i].IP < recs[j].IP
	})
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "HOSTNAME\tIP\tALIASES\tTAGS")
	for _, r := range recs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Hostname, r.IP, strings.Join(r.Aliases, ","), strings.Join(endpoint.SortedUnique(r.Tags), ","))
	}
	return w.Flush()
}

// applyDir creates every object in the directory's YAML files, then writes any status they
// carry (an ingress controller would set it in a real cluster).
func applyDir(ctx context.Context, c kubernetes.Interface, dyn dynamic.Interface, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no manifests in %s", dir)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading %s: %w", f, err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var raw runtime.RawExtension
			if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("decoding %s: %w", f, err)
			}
			if len(bytes.TrimSpace(raw.Raw)) == 0 {
				continue
			}
			// Custom resources are not in the typed scheme: create them as they are, then write
			// the status a controller would.
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(raw.Raw); err == nil {
				if gvr, ok := customResources[u.GetKind()]; ok {
					if err := createCustom(ctx, dyn.Resource(gvr).Namespace(u.GetNamespace()), u); err != nil {
						return fmt.Errorf("%s: %w", f, err)
					}
					continue
				}
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
			if err != nil {
				return fmt.Errorf("decoding %s: %w", f, err)
			}
			if err := create(ctx, c, obj); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	return nil
}

// customResources are the custom kinds the examples hold.
var customResources = map[string]schema.GroupVersionResource{
	source.HostMappingKind: source.HostMappingGVR,
	"Gateway":              {Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"},
	"HTTPRoute":            {Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"},
}

func createCustom(ctx context.Context, res dynamic.ResourceInterface, u *unstructured.Unstructured) error {
	status, hasStatus := u.Object["status"]
	got, err := res.Create(ctx, u, metav1.CreateOptions{})
	if err != nil || !hasStatus {
		return err
	}
	got.Object["status"] = status
	_, err = res.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	return err
}

func create(ctx context.Context, c kubernetes.Interface, obj runtime.Object) error {
	switch o := obj.(type) {
	case *corev1.Namespace:
		_, err := c.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		return err
	case *corev1.Service:
		status := o.Status
		got, err := c.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		if err != nil || len(status.LoadBalancer.Ingress) == 0 {
			return err
		}
		got.Status = status
		_, err = c.CoreV1().Services(o.Namespace).UpdateStatus(ctx, got, metav1.UpdateOptions{})
		return err
	case *networkingv1.Ingress:
		status := o.Status
		got, err := c.NetworkingV1().Ingresses(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		if err != nil || len(status.LoadBalancer.Ingress) == 0 {
			return err
		}
		got.Status = status
		_, err = c.NetworkingV1().Ingresses(o.Namespace).UpdateStatus(ctx, got, metav1.UpdateOptions{})
		return err
	}
	return fmt.Errorf("the demo does not apply %T", obj)
}
