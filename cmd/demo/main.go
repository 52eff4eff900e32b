// Command demo runs the operator's main job on one machine with no outside infrastructure: a
// real kube-apiserver and etcd, the example manifests, and the router-hosts test server standing
// in for a router. It prints a dry run, syncs for real, prints the resulting entries, configures
// the same operator by a RouterHostsConfig, and stops every process it started. `make demo`
// runs it.
//
// It cannot hurt a router. A real router-hosts server (the ROUTER_HOSTS_OPERATOR_* variables)
// is used only when asked for by name (-real-router, DEMO_REAL_ROUTER=yes); without that, the
// variables make it refuse rather than be ignored, so that nobody believes a test server's
// entries are on their router. The operator runs held to names under home.arpa (RFC 8375's
// domain for home networks) by --domain-filter, and at the end `release` gives back every entry
// the demo adopted and deletes the ones it created; the demo then checks the router against
// what it read first.
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
	"slices"
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
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

const (
	envPrefix = "ROUTER_HOSTS_OPERATOR_"
	// demoDomain is the only domain the demo writes under.
	demoDomain = "home.arpa"
	// consentEnv names the variable that lets the demo use the router of the variables.
	consentEnv = "DEMO_REAL_ROUTER"
)

func main() {
	operator := flag.String("operator", "bin/router-hosts-operator", "operator binary")
	examples := flag.String("examples", "examples", "directory of example manifests")
	real := flag.Bool("real-router", os.Getenv(consentEnv) == "yes", "use the router-hosts server the "+envPrefix+"* variables name (also "+consentEnv+"=yes); without it the demo refuses them")
	flag.Parse()
	r := routerFromEnv(os.Getenv)
	if err := consent(r, *real); err != nil {
		fmt.Fprintf(os.Stderr, "demo refused: %v\n", err)
		os.Exit(2)
	}
	d := demo{operator: *operator, examples: *examples, root: ".", out: os.Stdout}
	if *real {
		d.router = r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := d.run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "demo failed: %v\n", err)
		os.Exit(1)
	}
}

// router is a router-hosts server to sync to and its client's mTLS files.
type router struct {
	Endpoint, CA, Cert, Key, ServerName string
}

// routerFromEnv reads the router the operator's own variables name; nil when none is named.
func routerFromEnv(getenv func(string) string) *router {
	r := &router{Endpoint: getenv(envPrefix + "ROUTER_HOSTS_ENDPOINT"), CA: getenv(envPrefix + "TLS_CA"), Cert: getenv(envPrefix + "TLS_CERT"),
		Key: getenv(envPrefix + "TLS_KEY"), ServerName: getenv(envPrefix + "TLS_SERVER_NAME")}
	if r.Endpoint == "" {
		return nil
	}
	return r
}

// consent refuses a router named by the variables unless the demo was told to use it, and a
// request to use one when none is named.
func consent(r *router, real bool) error {
	switch {
	case r != nil && !real:
		return fmt.Errorf("%sROUTER_HOSTS_ENDPOINT names a router (%s); the demo syncs to its own test server and will not touch a real router "+
			"unless told so: unset the variables, or run `make demo %s=yes` (it writes names under %s only and gives the router back as it found it)",
			envPrefix, r.Endpoint, consentEnv, demoDomain)
	case r == nil && real:
		return fmt.Errorf("-real-router (%s=yes) needs %sROUTER_HOSTS_ENDPOINT, _TLS_CA, _TLS_CERT and _TLS_KEY", consentEnv, envPrefix)
	}
	return nil
}

// demo is one run: the operator binary, the example manifests, the repository root the CRDs
// are read from, where to print, and the real router to use (nil: a test server of its own).
type demo struct {
	operator, examples, root string
	out                      io.Writer
	router                   *router
}

func (d *demo) run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "router-hosts-demo-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)

	d.step("Starting a local control plane (real kube-apiserver and etcd)")
	cp, err := kubetest.Start(filepath.Join(d.root, "kustomize", "crds"))
	if err != nil {
		return err
	}
	defer func() { _ = cp.Stop(); d.step("Stopped the control plane and every process the demo started") }()
	d.step("Installing the Gateway API CRDs (sigs.k8s.io/gateway-api " + kubetest.GatewayAPIVersion + ", standard channel)")
	if err := cp.InstallGatewayAPI(); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	r := d.router
	if r != nil {
		d.step("Using the REAL router-hosts server at " + r.Endpoint + " (" + consentEnv + "=yes): only names under " + demoDomain + " are written, and the router is given back as the demo finds it")
	} else {
		srv, err := rhtestserver.Start(filepath.Join(dir, "rh"), "")
		if err != nil {
			return fmt.Errorf("starting the test server: %w", err)
		}
		defer srv.Stop()
		d.step("Started the router-hosts TEST SERVER at " + srv.Addr() + " (in-memory, standing in for a router; mTLS with a throwaway CA)")
		r = &router{Endpoint: srv.Addr(), CA: srv.CAFile(), Cert: srv.CertFile(), Key: srv.KeyFile()}
	}
	env := map[string]string{"KUBECONFIG": kubeconfig, envPrefix + "ROUTER_HOSTS_ENDPOINT": r.Endpoint, envPrefix + "TLS_CA": r.CA,
		envPrefix + "TLS_CERT": r.Cert, envPrefix + "TLS_KEY": r.Key, envPrefix + "TLS_SERVER_NAME": r.ServerName}
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	client, err := routerhosts.New(routerhosts.Options{Endpoint: r.Endpoint, CAFile: r.CA, CertFile: r.Cert, KeyFile: r.Key, ServerName: r.ServerName, Log: quiet})
	if err != nil {
		return err
	}
	defer client.Close()

	if d.router == nil {
		d.step("Seeding the router with a hand-made entry, nas." + demoDomain + " (no operator tags)")
		manual := &endpoint.Record{Hostname: "nas." + demoDomain, IP: "192.168.1.10", Tags: []string{"manual"}, Comment: "added by hand"}
		if err := plan.ErrorOf(client.ApplyChanges(ctx, []plan.Change{{Action: plan.Create, New: manual}})); err != nil {
			return fmt.Errorf("seeding: %w", err)
		}
	}
	found, err := client.Records(ctx)
	if err != nil {
		return fmt.Errorf("reading the router before the demo: %w", err)
	}
	d.step(fmt.Sprintf("The router as the demo found it: %s; it will be left so", entries(len(found))))

	d.step("Applying the manifests in " + d.examples + "/")
	if err := applyDir(ctx, cp.Client, dynamic.NewForConfigOrDie(cp.Config), d.examples); err != nil {
		return err
	}

	args := []string{"--once", "--source=ingress", "--source=hostmapping", "--source=service", "--source=gateway", "--cluster-name=demo", "--default-tag=homelab", "--log-level=warn",
		"--domain-filter=" + demoDomain, "--ip-resolution=ingress-status", "--ip-resolution=service:traefik/traefik", "--ip-resolution=static:192.168.1.250"}
	d.step("Preflight: " + d.operator + " " + strings.Join(append(args, "--dry-run"), " "))
	if err := d.runOperator(ctx, env, append(args, "--dry-run")...); err != nil {
		return err
	}
	d.step("Sync for real: " + d.operator + " " + strings.Join(args, " "))
	if err := d.runOperator(ctx, env, args...); err != nil {
		return err
	}
	d.step("Entries on the router now")
	if err := d.printTable(ctx, client); err != nil {
		return err
	}
	d.step("A second dry run: the cluster and the router agree")
	if err := d.runOperator(ctx, env, append(args, "--dry-run")...); err != nil {
		return err
	}
	d.step("Deleting Ingress default/whoami; the next sync marks its entry pending deletion (deleted after --grace-period)")
	if err := cp.Client.NetworkingV1().Ingresses("default").Delete(ctx, "whoami", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting whoami: %w", err)
	}
	if err := d.runOperator(ctx, env, args...); err != nil {
		return err
	}
	if err := d.printTable(ctx, client); err != nil {
		return err
	}
	explainArgs := append(slices.Clone(args), "explain", "whoami."+demoDomain)
	d.step("Why is whoami." + demoDomain + " leaving? " + d.operator + " " + strings.Join(explainArgs, " ") + " (exit 1: not on the router as wanted)")
	if err := d.runOperator(ctx, env, explainArgs...); !isExit(err, 1) {
		return fmt.Errorf("explain: want exit status 1 for a name on its way out, got %v", err)
	}
	d.step("Every entry on the router, its owner and its state: " + d.operator + " ... list")
	if err := d.runOperator(ctx, env, append(slices.Clone(args), "list")...); err != nil {
		return err
	}
	if err := d.byResource(ctx, cp, env, r, kubeconfig); err != nil {
		return err
	}
	return d.giveBack(ctx, env, client, found)
}

// giveBack lets the demo's cluster go (release: adopted entries back as they were, created ones
// deleted) and checks that the router holds exactly what the demo found.
func (d *demo) giveBack(ctx context.Context, env map[string]string, client *routerhosts.Provider, found []endpoint.Record) error {
	// No operator of the demo's runs any more (each was --once), so the probe needs no wait.
	args := []string{"release", "--cluster-name=demo", "--probe-wait=1s", "--log-level=warn"}
	d.step("Giving the router back as the demo found it: " + d.operator + " " + strings.Join(args, " "))
	if err := d.runOperator(ctx, env, args...); err != nil {
		return err
	}
	now, err := client.Records(ctx)
	if err != nil {
		return fmt.Errorf("reading the router after the demo: %w", err)
	}
	if diff := compare(found, now); diff != "" {
		return fmt.Errorf("the router is not as the demo found it:\n%s", diff)
	}
	d.step(fmt.Sprintf("The router is as the demo found it: the same %s, each as it was", entries(len(found))))
	return nil
}

// entries counts entries in words.
func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// compare describes how after differs from before, entry by entry (ID, hostname, address,
// aliases, tags in order, comment); "" when they are the same.
func compare(before, after []endpoint.Record) string {
	key := func(r endpoint.Record) string {
		a := slices.Clone(r.Aliases)
		sort.Strings(a)
		return fmt.Sprintf("%s %s %s aliases=%v tags=%v comment=%q", r.ID, r.Hostname, r.IP, a, r.Tags, r.Comment)
	}
	var b, a []string
	for _, r := range before {
		b = append(b, key(r))
	}
	for _, r := range after {
		a = append(a, key(r))
	}
	sort.Strings(b)
	sort.Strings(a)
	var out []string
	for _, k := range b {
		if !slices.Contains(a, k) {
			out = append(out, "  was: "+k)
		}
	}
	for _, k := range a {
		if !slices.Contains(b, k) {
			out = append(out, "  now: "+k)
		}
	}
	return strings.Join(out, "\n")
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
  domainFilter: [%s]
  defaultTags: ["k8s-operator", "cluster:demo", "homelab"]
`

// byResource configures the same operator by a RouterHostsConfig and its Secret instead of
// flags, runs it, and shows what kubectl get says.
func (d *demo) byResource(ctx context.Context, cp *kubetest.ControlPlane, env map[string]string, r *router, kubeconfig string) error {
	d.step("Configuring by resource instead of flags: the mTLS Secret router-hosts-system/router-hosts-mtls and the RouterHostsConfig \"default\"")
	data := map[string][]byte{}
	for k, f := range map[string]string{"ca.crt": r.CA, "tls.crt": r.Cert, "tls.key": r.Key} {
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
	doc := fmt.Sprintf(configExample, r.Endpoint, r.ServerName, demoDomain)
	fmt.Fprint(d.out, doc)
	var u unstructured.Unstructured
	if err := sigsyaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		return err
	}
	if _, err := dynamic.NewForConfigOrDie(cp.Config).Resource(v1alpha1.RouterHostsConfigResource).Create(ctx, &u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the RouterHostsConfig: %w", err)
	}
	byConfig := map[string]string{"KUBECONFIG": env["KUBECONFIG"]}
	args := []string{"--once", "--source=ingress", "--source=hostmapping", "--source=service", "--source=gateway", "--config-name=default", "--log-level=warn"}
	d.step("Sync with no server, TLS, cluster, tag, domain or resolution flag: " + d.operator + " " + strings.Join(args, " "))
	if err := d.runOperator(ctx, byConfig, args...); err != nil {
		return err
	}
	kubectl, err := kubetest.Kubectl()
	if err != nil {
		return err
	}
	d.step("kubectl get routerhostsconfig -o wide")
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "routerhostsconfig", "-o", "wide")
	cmd.Stdout, cmd.Stderr = d.out, d.out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl get: %w", err)
	}
	return nil
}

func (d *demo) step(s string) { fmt.Fprintf(d.out, "\n==> %s\n", s) }

// runOperator runs the operator binary with exactly the demo's environment: the caller's,
// less every ROUTER_HOSTS_OPERATOR_* variable and KUBECONFIG, plus env. A variable of the
// caller's own (a domain filter, a cluster name) never steers the demo's operator.
func (d *demo) runOperator(ctx context.Context, env map[string]string, args ...string) error {
	cmd := exec.CommandContext(ctx, d.operator, args...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, envPrefix) && k != "KUBECONFIG" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		if v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stdout, cmd.Stderr = d.out, d.out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", d.operator, strings.Join(args, " "), err)
	}
	return nil
}

// isExit reports whether err is the operator's exit with status code.
func isExit(err error, code int) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) && exit.ExitCode() == code
}

// printTable lists every entry on the server, sorted, with its tags.
func (d *demo) printTable(ctx context.Context, client *routerhosts.Provider) error {
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
	w := tabwriter.NewWriter(d.out, 0, 4, 2, ' ', 0)
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
