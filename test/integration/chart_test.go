package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
)

// grant is one right a rendered chart gives the operator's ServiceAccount: a verb on a
// resource of an API group, in a namespace ("" for every namespace, by a ClusterRole), on one
// object ("" for any).
type grant struct{ ns, group, resource, verb, name string }

func (g grant) String() string {
	where := "cluster-wide"
	if g.ns != "" {
		where = "in " + g.ns
	}
	name := ""
	if g.name != "" {
		name = " " + g.name
	}
	return fmt.Sprintf("%s %s/%s%s %s", g.verb, g.group, g.resource, name, where)
}

// renderedGrants are the rights a rendered stream binds to its Deployment's ServiceAccount.
// Every Role and ClusterRole must be bound to it (none left over), by a binding of its own name.
func renderedGrants(t *testing.T, stream []byte) map[grant]bool {
	t.Helper()
	all := docs(t, stream)
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(all["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: dep.Spec.Template.Spec.ServiceAccountName, Namespace: dep.Namespace}
	bound := map[string]bool{} // kind/namespace/name of the roles bound to the ServiceAccount
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, d := range all[kind] {
			var b rbacv1.RoleBinding // ClusterRoleBinding has the same fields
			if err := yaml.Unmarshal(d, &b); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(b.Subjects, sa) || b.RoleRef.Name != b.Name {
				t.Errorf("%s %s/%s binds %+v to %v; want the role of its name to %+v", kind, b.Namespace, b.Name, b.RoleRef, b.Subjects, sa)
			}
			bound[b.RoleRef.Kind+"/"+b.Namespace+"/"+b.RoleRef.Name] = true
		}
	}
	out := map[grant]bool{}
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, d := range all[kind] {
			var r rbacv1.Role
			if err := yaml.Unmarshal(d, &r); err != nil {
				t.Fatal(err)
			}
			if !bound[kind+"/"+r.Namespace+"/"+r.Name] {
				t.Errorf("%s %s/%s is bound to nothing", kind, r.Namespace, r.Name)
			}
			for _, rule := range r.Rules {
				names := rule.ResourceNames
				if len(names) == 0 {
					names = []string{""}
				}
				for _, g := range rule.APIGroups {
					for _, res := range rule.Resources {
						for _, v := range rule.Verbs {
							for _, n := range names {
								out[grant{r.Namespace, g, res, v, n}] = true
							}
						}
					}
				}
			}
		}
	}
	return out
}

// rbacCase is a combination of values and the rights it must grant, no more and no fewer.
type rbacCase struct {
	name, values string
	// kinds are the source kinds the values run (gateway expanded to its three route kinds).
	kinds []string
	// watch is watchNamespace.
	watch string
	// services are the Services an ip-resolution step names that a Role grants by name, by
	// namespace.
	services map[string][]string
}

// want is the model the chart must follow: the rules each source declares (source.Rules, which
// source's tests hold to what its kind lists), on its own objects in the watched namespace or
// everywhere, and on what it reads everywhere whatever is watched; what every installation
// needs, kube-system unless a source reads every namespace; the Services the chain names.
func (c rbacCase) want(release string) map[grant]bool {
	out := map[grant]bool{}
	read := []string{"get", "list", "watch"}
	add := func(ns, group, resource string, names []string, verbs ...string) {
		if len(names) == 0 {
			names = []string{""}
		}
		for _, v := range verbs {
			for _, n := range names {
				out[grant{ns, group, resource, v, n}] = true
			}
		}
	}
	everyNamespace := false
	for _, k := range c.kinds {
		rules := source.Rules(k)
		if rules == nil {
			panic("unknown source kind " + k)
		}
		for _, r := range rules {
			ns := c.watch
			if r.Everywhere {
				ns = ""
			}
			for _, g := range r.Groups {
				for _, res := range r.Resources {
					add(ns, g, res, nil, r.Verbs...)
					everyNamespace = everyNamespace || (g == "" && res == "namespaces" && ns == "" && slices.Contains(r.Verbs, "get"))
				}
			}
		}
	}
	if !everyNamespace {
		add("", "", "namespaces", []string{"kube-system"}, "get")
	}
	add("", "router-hosts.fzymgc.house", "routerhostsconfigs", nil, read...)
	add("", "router-hosts.fzymgc.house", "routerhostsconfigs/status", nil, "patch")
	for _, g := range []string{"", "events.k8s.io"} {
		add("", g, "events", nil, "create", "patch")
	}
	add(operatorNS, "coordination.k8s.io", "leases", nil, "create")
	add(operatorNS, "coordination.k8s.io", "leases", []string{release + "-router-hosts-operator"}, "get", "update")
	add(operatorNS, "", "secrets", []string{"router-hosts-mtls"}, read...)
	for ns, names := range c.services {
		add(ns, "", "services", names, read...)
	}
	return out
}

// everyKind is every source kind, a name that stands for others (gateway) replaced by those.
var everyKind = source.Expand(source.Names())

// TestChartRBACFollowsSources: for each combination of sources, watched namespace and
// resolution chain, the chart (real helm) grants exactly what the operator reads: each enabled
// source's objects (the rules source/kinds.go declares), cluster-wide or in the one watched
// namespace; Gateways and namespaces
// everywhere for the Gateway API sources, else kube-system alone; the Services the chain
// names, by name, unless the service source reads every Service; and what every installation
// needs. The apiserver accepts every render.
func TestChartRBACFollowsSources(t *testing.T) {
	for _, ns := range []string{operatorNS, "apps", "traefik", "traefik-system", "lb", "other"} {
		ensureNamespace(t, ns)
	}
	for _, c := range []rbacCase{
		{name: "the default sources", kinds: []string{"ingress", "traefik", "hostmapping"}},
		{name: "ingress", values: "sources: [ingress]", kinds: []string{"ingress"}},
		{name: "service", values: "sources: [service]", kinds: []string{"service"}},
		{name: "traefik", values: "sources: [traefik]", kinds: []string{"traefik"}},
		{name: "hostmapping", values: "sources: [hostmapping]", kinds: []string{"hostmapping"}},
		{name: "one route kind", values: "sources: [gateway-grpcroute]", kinds: []string{"gateway-grpcroute"}},
		{name: "gateway and a route kind again", values: "sources: [gateway, gateway-httproute]", kinds: []string{"gateway-httproute", "gateway-grpcroute", "gateway-tlsroute"}},
		{name: "every source", values: allSources, kinds: everyKind},
		{name: "one namespace", values: "watchNamespace: apps\nsources: [ingress, hostmapping, gateway-tlsroute]",
			kinds: []string{"ingress", "hostmapping", "gateway-tlsroute"}, watch: "apps"},
		{name: "one namespace with every source", values: "watchNamespace: apps\n" + allSources, kinds: everyKind, watch: "apps"},
		{name: "services the chain names", values: `
ipResolution: [ingress-status, "service:traefik/traefik", "service:traefik/traefik-lan", "static:192.168.1.100"]
config:
  create: true
  name: rbac-test
  spec:
    ipResolution:
      - {type: IngressController, serviceName: traefik, serviceNamespace: traefik-system}
      - {type: Service, serviceName: edge, serviceNamespace: lb}
      - {type: Static, address: 192.168.1.100}
rbac: {ipResolutionServices: [other/svc, traefik/traefik]}
`, kinds: []string{"ingress", "traefik", "hostmapping"},
			services: map[string][]string{"traefik": {"traefik", "traefik-lan"}, "traefik-system": {"traefik"}, "lb": {"edge"}, "other": {"svc"}}},
		{name: "the service source reads them all", values: "sources: [service]\nipResolution: [\"service:traefik/traefik\"]", kinds: []string{"service"}},
		{name: "the service source in one namespace does not", values: "sources: [service]\nwatchNamespace: apps\nipResolution: [\"service:traefik/traefik\"]",
			kinds: []string{"service"}, watch: "apps", services: map[string][]string{"traefik": {"traefik"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(c.values), 0o600); err != nil {
				t.Fatal(err)
			}
			helm(t, "lint", "--strict", chartDir(), "-f", f)
			out := helm(t, "template", "rbac", chartDir(), "--namespace", operatorNS, "-f", f)
			kubectl(t, out, "apply", "--dry-run=server", "-f", "-")
			got, want := renderedGrants(t, out), c.want("rbac")
			for g := range want {
				if !got[g] {
					t.Errorf("missing: %s", g)
				}
			}
			for g := range got {
				if !want[g] {
					t.Errorf("granted beyond what the operator reads: %s", g)
				}
			}
		})
	}
}

// impersonating writes a kubeconfig that acts as user (a ServiceAccount of operatorNS) and
// returns it with a client of that identity.
func impersonating(t *testing.T, user string) (string, *rest.Config) {
	t.Helper()
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range raw.AuthInfos {
		ai.Impersonate = user
		ai.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNS, "system:authenticated"}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return path, rc
}

// installChartRBAC renders the release with values, applies its ServiceAccount and RBAC for
// real, and returns the Deployment's operator arguments and a kubeconfig of its ServiceAccount.
func installChartRBAC(t *testing.T, release, values string) ([]string, string, *rest.Config) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	out := helm(t, "template", release, chartDir(), "--namespace", operatorNS, "-f", f)
	all := docs(t, out)
	var rbac [][]byte
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		rbac = append(rbac, all[kind]...)
	}
	kubectl(t, []byte(string(joinDocs(rbac))), "apply", "--server-side", "-f", "-")
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(all["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	// The harness passes the metrics address and the log level.
	var args []string
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		if !strings.HasPrefix(a, "--metrics-address=") && !strings.HasPrefix(a, "--log-") {
			args = append(args, a)
		}
	}
	path, rc := impersonating(t, "system:serviceaccount:"+operatorNS+":"+dep.Spec.Template.Spec.ServiceAccountName)
	return args, path, rc
}

func joinDocs(d [][]byte) []byte {
	var parts []string
	for _, b := range d {
		parts = append(parts, string(b))
	}
	return []byte(strings.Join(parts, "\n---\n"))
}

// forbidden fails the test unless err is the apiserver's Forbidden.
func forbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s as the operator: %v, want Forbidden", what, err)
	}
}

// TestChartRBACIsSufficient runs the operator binary as the chart's ServiceAccount, bound by
// exactly the RBAC the chart renders, with the Deployment's own arguments: with the default
// sources in every namespace, and with one watched namespace, a Gateway API source and a
// Service the resolution chain names outside it. Each syncs its objects and writes their status
// and events without one permission error, and cannot read what its sources do not.
func TestChartRBACIsSufficient(t *testing.T) {
	ensureNamespace(t, operatorNS)
	installGatewayAPI(t, cp)
	ctx := context.Background()

	t.Run("the default sources in every namespace", func(t *testing.T) {
		h := newHarness(t, options{})
		label := "rbac-" + h.ns
		args, saConfig, rc := installChartRBAC(t, "rbac-default", fmt.Sprintf(`
labelFilter: "rbac-test=%s"
config: {name: %s-absent}
routerHosts: {tls: {mount: false}}
`, label, h.ns))
		asSA := kubernetes.NewForConfigOrDie(rc)
		forbidden(t, "listing Services", func() error { _, err := asSA.CoreV1().Services("").List(ctx, metav1.ListOptions{}); return err }())
		forbidden(t, "listing namespaces", func() error { _, err := asSA.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); return err }())
		forbidden(t, "listing Gateways", func() error {
			_, err := dynamic.NewForConfigOrDie(rc).Resource(gwGVR).List(ctx, metav1.ListOptions{})
			return err
		}())
		if _, err := asSA.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
			t.Errorf("reading kube-system, whose UID is the identity: %v", err)
		}

		op := startOperatorEnv(t, h, map[string]string{"KUBECONFIG": saConfig, "POD_NAMESPACE": operatorNS, "ROUTER_HOSTS_OPERATOR_NAMESPACE": ""},
			append(args, "--interval=2s", "--min-event-sync-interval=100ms")...)
		mine := map[string]string{"rbac-test": label}
		ing := ingress(h.ns, "web", enabled("ip-address", "10.44.0.1"), "web.lan")
		ing.Labels = mine
		h.create(ing)
		ir := h.route(irNew, "route", enabled("ip-address", "10.44.0.2"), "Host(`route.lan`)")
		ir.SetLabels(mine)
		dyn := dynamic.NewForConfigOrDie(cp.Config)
		if _, err := dyn.Resource(irNew).Namespace(h.ns).Update(ctx, ir, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		hm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
			"metadata": map[string]any{"name": "hm", "namespace": h.ns, "labels": map[string]any{"rbac-test": label}},
			"spec":     map[string]any{"hostname": "hm.lan", "ipAddress": "10.44.0.3"}}}
		if _, err := h.hmClient().Create(ctx, hm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, func() bool {
			return len(h.entries("web.lan")) == 1 && len(h.entries("route.lan")) == 1 && len(h.entries("hm.lan")) == 1
		})
		waitFor(t, 10*time.Second, func() bool {
			synced, _, _ := unstructured.NestedBool(h.getHM("hm").Object, "status", "synced")
			return synced
		})
		waitFor(t, 10*time.Second, func() bool {
			evs, err := cp.Client.CoreV1().Events(h.ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(evs.Items) > 0
		})
		if strings.Contains(strings.ToLower(op.logText()), "forbidden") {
			t.Fatalf("the operator hit a permission error:\n%s", op.logText())
		}
	})

	t.Run("one namespace with a Gateway API source and a Service the chain names", func(t *testing.T) {
		h := newHarness(t, options{})
		lbNS := createNamespace(t, cp)
		args, saConfig, rc := installChartRBAC(t, "rbac-ns", fmt.Sprintf(`
watchNamespace: %s
sources: [ingress, hostmapping, gateway-httproute]
ipResolution: ["service:%s/edge"]
config: {name: %s-absent}
routerHosts: {tls: {mount: false}}
`, h.ns, lbNS, h.ns))
		if !slices.Contains(args, "--namespace="+h.ns) {
			t.Fatalf("the Deployment does not pass --namespace=%s: %v", h.ns, args)
		}
		// The Service of the chain, in a namespace the operator does not watch, with its
		// load balancer's address; and one beside it the Role does not name.
		for _, name := range []string{"edge", "other"} {
			svc, err := cp.Client.CoreV1().Services(lbNS).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.45.0.9"}}
			if _, err := cp.Client.CoreV1().Services(lbNS).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		asSA := kubernetes.NewForConfigOrDie(rc)
		dynSA := dynamic.NewForConfigOrDie(rc)
		forbidden(t, "listing Ingresses in another namespace", func() error {
			_, err := asSA.NetworkingV1().Ingresses("default").List(ctx, metav1.ListOptions{})
			return err
		}())
		forbidden(t, "listing HostMappings in another namespace", func() error {
			_, err := dynSA.Resource(source.HostMappingGVR).Namespace("default").List(ctx, metav1.ListOptions{})
			return err
		}())
		forbidden(t, "listing the Services of the watched namespace", func() error {
			_, err := asSA.CoreV1().Services(h.ns).List(ctx, metav1.ListOptions{})
			return err
		}())
		forbidden(t, "reading a Service the chain does not name", func() error {
			_, err := asSA.CoreV1().Services(lbNS).Get(ctx, "other", metav1.GetOptions{})
			return err
		}())
		if _, err := asSA.CoreV1().Services(lbNS).Get(ctx, "edge", metav1.GetOptions{}); err != nil {
			t.Errorf("reading the Service the chain names: %v", err)
		}

		op := startOperatorEnv(t, h, map[string]string{"KUBECONFIG": saConfig, "POD_NAMESPACE": operatorNS},
			append(args, "--interval=2s", "--min-event-sync-interval=100ms")...)
		// An Ingress without an address of its own: the chain gives it the Service's.
		h.create(ingress(h.ns, "web", enabled(), "web.lan"))
		h.hostMapping("hm", map[string]any{"hostname": "hm.lan", "ipAddress": "10.45.0.3"})
		gw := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}
		h.gwObj(gwGVR, "Gateway", "gw", nil, map[string]any{"gatewayClassName": "example", "listeners": []any{
			map[string]any{"name": "web", "protocol": "HTTP", "port": int64(80)}}}, addresses("10.45.0.5"))
		h.gwObj(httpGVR, "HTTPRoute", "rt", enabled(), map[string]any{"hostnames": strs("gw.lan"), "parentRefs": []any{gw}}, parents(true, gw))
		waitFor(t, 30*time.Second, func() bool {
			web, hmEntries, gwEntries := h.entries("web.lan"), h.entries("hm.lan"), h.entries("gw.lan")
			return len(web) == 1 && web[0].IP == "10.45.0.9" && len(hmEntries) == 1 && len(gwEntries) == 1 && gwEntries[0].IP == "10.45.0.5"
		})
		waitFor(t, 10*time.Second, func() bool {
			synced, _, _ := unstructured.NestedBool(h.getHM("hm").Object, "status", "synced")
			return synced
		})
		if strings.Contains(strings.ToLower(op.logText()), "forbidden") {
			t.Fatalf("the operator hit a permission error:\n%s", op.logText())
		}
	})
}

// TestChartImage: image.digest pins the image as repository@digest whatever the tag; without
// it the tag, by default v<appVersion>, is used; the schema refuses a digest that is not one.
func TestChartImage(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	chart := chartMeta(t)
	for _, c := range []struct{ name, set, want string }{
		{"default", "", "ghcr.io/router-hosts-operator/router-hosts-operator:v" + chart.AppVersion},
		{"tag", "image.tag=v9.9.9", "ghcr.io/router-hosts-operator/router-hosts-operator:v9.9.9"},
		{"digest", "image.digest=" + digest, "ghcr.io/router-hosts-operator/router-hosts-operator@" + digest},
		{"digest over tag", "image.tag=v9.9.9,image.digest=" + digest + ",image.repository=registry.lan/rho", "registry.lan/rho@" + digest},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"template", "x", chartDir(), "--namespace", operatorNS}
			if c.set != "" {
				args = append(args, "--set", c.set)
			}
			var dep appsv1.Deployment
			if err := yaml.Unmarshal(docs(t, helm(t, args...))["Deployment"][0], &dep); err != nil {
				t.Fatal(err)
			}
			if got := dep.Spec.Template.Spec.Containers[0].Image; got != c.want {
				t.Errorf("image %q, want %q", got, c.want)
			}
		})
	}
	for _, bad := range []string{"image.digest=abc123", "image.digest=sha256:ABC"} {
		if _, err := helmRun(t, "template", "x", chartDir(), "--set", bad); err == nil || !strings.Contains(err.Error(), "digest") {
			t.Errorf("--set %s: %v; want the schema's error naming digest", bad, err)
		}
	}
}

// TestChartUnderAnUmbrella: an umbrella chart that carries this one as a dependency and sets
// global values, as umbrella charts do, renders (the schema accepts global), and the umbrella's
// global.imagePullSecrets, names or objects, reach the pod beside the chart's own, once each.
func TestChartUnderAnUmbrella(t *testing.T) {
	ensureNamespace(t, operatorNS)
	umbrella := t.TempDir()
	if err := os.CopyFS(filepath.Join(umbrella, "charts", "router-hosts-operator"), os.DirFS(chartDir())); err != nil {
		t.Fatalf("copying the chart into the umbrella's charts/: %v", err)
	}
	chart := chartMeta(t)
	files := map[string]string{
		"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: homelab\nversion: 1.0.0\ndependencies:\n  - {name: router-hosts-operator, version: %q}\n", chart.Version),
		"values.yaml": `global:
  imagePullSecrets: [regcred, {name: mirror}]
  imageRegistry: registry.lan
  storageClass: fast
router-hosts-operator:
  imagePullSecrets: [{name: regcred}, {name: own}]
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(umbrella, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	helm(t, "lint", "--strict", umbrella)
	out := helm(t, "template", "home", umbrella, "--namespace", operatorNS)
	kubectl(t, out, "apply", "--dry-run=server", "-f", "-")
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(docs(t, out)["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range dep.Spec.Template.Spec.ImagePullSecrets {
		names = append(names, s.Name)
	}
	if want := []string{"regcred", "own", "mirror"}; !slices.Equal(names, want) {
		t.Errorf("imagePullSecrets %v, want %v", names, want)
	}
	// Alone, global is accepted too; a mistyped key beside it is still refused.
	helm(t, "lint", "--strict", chartDir(), "--set", "global.anything=1")
	if _, err := helmRun(t, "template", "x", chartDir(), "--set", "globals.anything=1"); err == nil || !strings.Contains(err.Error(), "globals") {
		t.Errorf("a misspelt global: %v; want the schema's error", err)
	}
}

// chartYAML is the part of Chart.yaml the tests read.
type chartYAML struct {
	Name        string            `json:"name"`
	Version     string            `json:"version"`
	AppVersion  string            `json:"appVersion"`
	KubeVersion string            `json:"kubeVersion"`
	Annotations map[string]string `json:"annotations"`
}

func chartMeta(t *testing.T) chartYAML {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c chartYAML
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChartKubeVersion: the chart states the oldest Kubernetes the project supports (the README's
// 1.31, the Makefile's K8S_FLOOR that make test runs against): helm renders it for that release
// and refuses the one before, naming the constraint.
func TestChartKubeVersion(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(repoRoot(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^K8S_FLOOR\s*\?=\s*v(\d+)\.(\d+)\.\d+`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile names no K8S_FLOOR")
	}
	floor := string(m[1]) + "." + string(m[2])
	if got, want := chartMeta(t).KubeVersion, ">="+floor+".0-0"; got != want {
		t.Errorf("kubeVersion %q, want %q (K8S_FLOOR)", got, want)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`Kubernetes\s+` + regexp.QuoteMeta(floor) + `\b`).Match(readme) {
		t.Errorf("the README does not name Kubernetes %s, the oldest supported", floor)
	}
	minor := 0
	if _, err := fmt.Sscanf(string(m[2]), "%d", &minor); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v" + floor + ".0", "v" + floor + ".4-eks-1234abc"} {
		helm(t, "template", "x", chartDir(), "--kube-version", v)
	}
	before := fmt.Sprintf("v%s.%d.9", m[1], minor-1)
	if _, err := helmRun(t, "template", "x", chartDir(), "--kube-version", before); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
		t.Errorf("Kubernetes %s: %v; want helm to refuse it by the chart's kubeVersion", before, err)
	}
}

// TestChartServiceMonitor: the ServiceMonitor carries scrapeTimeout, relabelings and
// metricRelabelings as given; in another namespace (the monitoring one) it still selects the
// metrics Service of the release's namespace; the real CRD's schema accepts it.
func TestChartServiceMonitor(t *testing.T) {
	for _, ns := range []string{operatorNS, "monitoring"} {
		ensureNamespace(t, ns)
	}
	if err := cp.InstallServiceMonitorCRD(); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(`metrics:
  serviceMonitor:
    enabled: true
    namespace: monitoring
    interval: 15s
    scrapeTimeout: 10s
    labels: {release: kube-prometheus-stack}
    relabelings:
      - {sourceLabels: [__meta_kubernetes_pod_node_name], targetLabel: node}
    metricRelabelings:
      - {sourceLabels: [__name__], regex: go_gc_.*, action: drop}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	helm(t, "lint", "--strict", chartDir(), "-f", f)
	out := helm(t, "template", "mon", chartDir(), "--namespace", operatorNS, "-f", f)
	kubectl(t, out, "apply", "--dry-run=server", "-f", "-")
	all := docs(t, out)
	var sm struct {
		Metadata struct {
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			NamespaceSelector struct {
				MatchNames []string `json:"matchNames"`
			} `json:"namespaceSelector"`
			Selector  metav1.LabelSelector `json:"selector"`
			Endpoints []struct {
				Port, Path, Interval, ScrapeTimeout string
				Relabelings                         []map[string]any `json:"relabelings"`
				MetricRelabelings                   []map[string]any `json:"metricRelabelings"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	if len(all["ServiceMonitor"]) != 1 {
		t.Fatalf("%d ServiceMonitors rendered", len(all["ServiceMonitor"]))
	}
	if err := yaml.Unmarshal(all["ServiceMonitor"][0], &sm); err != nil {
		t.Fatal(err)
	}
	var svc corev1.Service
	if err := yaml.Unmarshal(all["Service"][0], &svc); err != nil {
		t.Fatal(err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	ep := sm.Spec.Endpoints
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"in the monitoring namespace", sm.Metadata.Namespace == "monitoring"},
		{"selecting the release's namespace", slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{operatorNS}) && svc.Namespace == operatorNS},
		{"selecting the metrics Service", !sel.Empty() && sel.Matches(labels.Set(svc.Labels))},
		{"the label Prometheus selects by", sm.Metadata.Labels["release"] == "kube-prometheus-stack"},
		{"one endpoint, the metrics port", len(ep) == 1 && ep[0].Port == svc.Spec.Ports[0].Name && ep[0].Path == "/metrics"},
		{"interval and scrapeTimeout", len(ep) == 1 && ep[0].Interval == "15s" && ep[0].ScrapeTimeout == "10s"},
		{"relabelings", len(ep) == 1 && len(ep[0].Relabelings) == 1 && ep[0].Relabelings[0]["targetLabel"] == "node"},
		{"metricRelabelings", len(ep) == 1 && len(ep[0].MetricRelabelings) == 1 && ep[0].MetricRelabelings[0]["action"] == "drop"},
	} {
		if !c.ok {
			t.Errorf("ServiceMonitor: %s: %s", c.what, all["ServiceMonitor"][0])
		}
	}
	// Left out, the namespace is the release's and no timeout or relabeling is set.
	out = helm(t, "template", "mon", chartDir(), "--namespace", operatorNS, "--set", "metrics.serviceMonitor.enabled=true")
	kubectl(t, out, "apply", "--dry-run=server", "-f", "-")
	plain := string(docs(t, out)["ServiceMonitor"][0])
	for _, absent := range []string{"scrapeTimeout", "relabelings", "metricRelabelings"} {
		if strings.Contains(plain, absent) {
			t.Errorf("the default ServiceMonitor sets %s:\n%s", absent, plain)
		}
	}
	if !strings.Contains(plain, "namespace: "+operatorNS) {
		t.Errorf("the default ServiceMonitor is not in the release's namespace:\n%s", plain)
	}
	// The schema refuses a timeout the Prometheus Operator would.
	if _, err := helmRun(t, "template", "mon", chartDir(), "--set", "metrics.serviceMonitor.scrapeTimeout=10 seconds"); err == nil || !strings.Contains(err.Error(), "scrapeTimeout") {
		t.Errorf("a malformed scrapeTimeout: %v; want the schema's error", err)
	}
}

// TestChartArtifactHubAnnotations: Chart.yaml's Artifact Hub annotations parse as Artifact Hub
// reads them and agree with the chart: the licence is the LICENSE file's, the image is the one
// the default values deploy, the CRDs are those in crds/, each example is accepted by the real
// apiserver with those CRDs, prerelease says whether the version is a pre-release, and every
// change has a kind Artifact Hub knows.
func TestChartArtifactHubAnnotations(t *testing.T) {
	chart := chartMeta(t)
	ann := chart.Annotations
	lic, err := os.ReadFile(filepath.Join(repoRoot(), "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if ann["artifacthub.io/license"] != "Apache-2.0" || !strings.Contains(string(lic), "Apache License") || !strings.Contains(string(lic), "Version 2.0") {
		t.Errorf("licence %q; LICENSE is the Apache License 2.0", ann["artifacthub.io/license"])
	}
	if want := fmt.Sprint(strings.Contains(chart.Version, "-")); ann["artifacthub.io/prerelease"] != want {
		t.Errorf("prerelease %q for version %s, want %q", ann["artifacthub.io/prerelease"], chart.Version, want)
	}
	parse := func(key string, into any) {
		t.Helper()
		if err := yaml.UnmarshalStrict([]byte(ann[key]), into); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}

	var links []struct{ Name, URL string }
	parse("artifacthub.io/links", &links)
	if len(links) < 2 {
		t.Errorf("links %v", links)
	}
	for _, l := range links {
		if l.Name == "" || !strings.HasPrefix(l.URL, "https://") {
			t.Errorf("link %+v", l)
		}
	}

	var images []struct {
		Name, Image string
		Whitelisted bool
		Platforms   []string
	}
	parse("artifacthub.io/images", &images)
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(docs(t, helm(t, "template", "x", chartDir()))["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	if len(images) != 1 || images[0].Image != dep.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("images %+v; the chart deploys %s", images, dep.Spec.Template.Spec.Containers[0].Image)
	}
	// The platforms are the ones the release builds the image for.
	wf, err := os.ReadFile(filepath.Join(repoRoot(), ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(images) == 1 && !strings.Contains(string(wf), "platforms: "+strings.Join(images[0].Platforms, ",")) {
		t.Errorf("image platforms %v are not the release workflow's", images[0].Platforms)
	}

	var crds []struct{ Kind, Version, Name, DisplayName, Description string }
	parse("artifacthub.io/crds", &crds)
	shipped := map[string]string{}
	entries, err := os.ReadDir(filepath.Join(chartDir(), "crds"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(chartDir(), "crds", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Metadata struct{ Name string }
			Spec     struct {
				Names    struct{ Kind string }
				Versions []struct{ Name string }
			}
		}
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			shipped[crd.Spec.Names.Kind+" "+v.Name+" "+crd.Metadata.Name] = "shipped"
		}
	}
	listed := map[string]string{}
	for _, c := range crds {
		if c.DisplayName == "" || c.Description == "" {
			t.Errorf("CRD %+v lacks a display name or description", c)
		}
		listed[c.Kind+" "+c.Version+" "+c.Name] = "shipped"
	}
	if !maps.Equal(listed, shipped) {
		t.Errorf("the annotations list the CRDs %v; crds/ holds %v", slices.Sorted(maps.Keys(listed)), slices.Sorted(maps.Keys(shipped)))
	}

	var examples []map[string]any
	parse("artifacthub.io/crdsExamples", &examples)
	kinds := map[string]bool{}
	for _, ex := range examples {
		kinds[fmt.Sprint(ex["kind"])] = true
		if ns, _, _ := unstructured.NestedString(ex, "metadata", "namespace"); ns != "" {
			ensureNamespace(t, ns)
		}
		raw, err := json.Marshal(ex)
		if err != nil {
			t.Fatal(err)
		}
		kubectl(t, raw, "apply", "--dry-run=server", "-f", "-")
	}
	for _, c := range crds {
		if !kinds[c.Kind] {
			t.Errorf("no example of %s", c.Kind)
		}
	}

	var changes []struct {
		Kind, Description string
		Links             []struct{ Name, URL string }
	}
	parse("artifacthub.io/changes", &changes)
	for _, c := range changes {
		if !slices.Contains([]string{"added", "changed", "deprecated", "removed", "fixed", "security"}, c.Kind) || c.Description == "" {
			t.Errorf("change %+v", c)
		}
	}
	if len(changes) == 0 {
		t.Error("no changes listed")
	}
	for _, key := range []string{"artifacthub.io/operator", "artifacthub.io/containsSecurityUpdates"} {
		if v := ann[key]; v != "true" && v != "false" {
			t.Errorf("%s is %q, want a quoted boolean", key, v)
		}
	}
}

// prometheusRules renders the chart's PrometheusRule with values and returns its rules by
// alert, each with its annotations.
func prometheusRules(t *testing.T, set ...string) map[string][]map[string]any {
	t.Helper()
	args := []string{"template", "x", chartDir(), "--namespace", operatorNS, "--set", "metrics.prometheusRule.enabled=true"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out := helm(t, args...)
	all := docs(t, out)
	rules := map[string][]map[string]any{}
	if len(all["PrometheusRule"]) == 0 {
		return rules
	}
	kubectl(t, out, "apply", "--dry-run=server", "-f", "-")
	var pr struct {
		Spec struct {
			Groups []struct {
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(all["PrometheusRule"][0], &pr); err != nil {
		t.Fatal(err)
	}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			name := fmt.Sprint(r["alert"])
			rules[name] = append(rules[name], r)
		}
	}
	return rules
}

// TestChartSwitchesAlertsOffOneByOne: with every alert on, the PrometheusRule holds every rule
// of files/alerts.yaml; switching one alert off by name removes exactly its rules and leaves the
// others as they were; values.yaml and the schema name every alert, so a misspelt name fails;
// runbookBaseURL re-bases every runbook_url and keeps each alert's anchor.
func TestChartSwitchesAlertsOffOneByOne(t *testing.T) {
	ensureNamespace(t, operatorNS)
	if err := installPrometheusRuleCRD(); err != nil {
		t.Fatal(err)
	}
	file := alertRules(t)
	all := prometheusRules(t)
	if len(all) != len(file) {
		t.Fatalf("the chart renders %d alerts, files/alerts.yaml has %d", len(all), len(file))
	}
	for name, rules := range file {
		if len(all[name]) != len(rules) {
			t.Errorf("%s: %d rules rendered, %d in files/alerts.yaml", name, len(all[name]), len(rules))
		}
	}
	// values.yaml lists every alert, on, and nothing else.
	raw, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Metrics struct {
			PrometheusRule struct {
				Alerts map[string]struct{ Enabled bool } `json:"alerts"`
			} `json:"prometheusRule"`
		} `json:"metrics"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(values.Metrics.PrometheusRule.Alerts)), slices.Sorted(maps.Keys(file)); !slices.Equal(got, want) {
		t.Errorf("values.yaml's alerts %v; files/alerts.yaml's %v", got, want)
	}
	for name, a := range values.Metrics.PrometheusRule.Alerts {
		if !a.Enabled {
			t.Errorf("%s is off by default", name)
		}
	}
	for name := range file {
		t.Run(name, func(t *testing.T) {
			left := prometheusRules(t, "metrics.prometheusRule.alerts."+name+".enabled=false")
			if _, ok := left[name]; ok {
				t.Errorf("%s still rendered", name)
			}
			want := maps.Clone(all)
			delete(want, name)
			if !jsonEqual(t, left, want) {
				t.Errorf("switching %s off changed other alerts", name)
			}
		})
	}
	// Every alert off: no PrometheusRule at all rather than an empty one.
	var off []string
	for name := range file {
		off = append(off, "metrics.prometheusRule.alerts."+name+".enabled=false")
	}
	if n := len(prometheusRules(t, off...)); n != 0 {
		t.Errorf("every alert off renders %d alerts", n)
	}
	if _, err := helmRun(t, "template", "x", chartDir(), "--set", "metrics.prometheusRule.alerts.RouterHostsOperatorSlowChange.enabled=false"); err == nil ||
		!strings.Contains(err.Error(), "RouterHostsOperatorSlowChange") {
		t.Errorf("a misspelt alert name: %v; want the schema's error naming it", err)
	}
	// The runbooks' base is a value; each anchor stays the alert's.
	rebased := prometheusRules(t, "metrics.prometheusRule.runbookBaseURL=https://wiki.lan/rho/ops/")
	for name, rules := range rebased {
		for _, r := range rules {
			ann, _ := r["annotations"].(map[string]any)
			if got, want := ann["runbook_url"], "https://wiki.lan/rho/ops#"+strings.ToLower(name); got != want {
				t.Errorf("%s: runbook_url %v, want %s", name, got, want)
			}
		}
	}
	for name, rules := range all {
		for _, r := range rules {
			ann, _ := r["annotations"].(map[string]any)
			if got, want := ann["runbook_url"], runbookBase+"#"+strings.ToLower(name); got != want {
				t.Errorf("%s: default runbook_url %v, want %s", name, got, want)
			}
		}
	}
}

// jsonEqual compares two values as JSON documents.
func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(x) == string(y)
}

// installPrometheusRuleCRD installs the Prometheus Operator's PrometheusRule CRD, of the
// release whose ServiceMonitor CRD the tests install, from its module.
func installPrometheusRuleCRD() error {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/prometheus-operator/prometheus-operator@"+kubetest.PrometheusOperatorVersion).Output()
	if err != nil {
		return fmt.Errorf("downloading the Prometheus Operator's module: %w", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("go mod download printed %s: %v", out, err)
	}
	return cp.InstallCRDs(filepath.Join(mod.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_prometheusrules.yaml"))
}
