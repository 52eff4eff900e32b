package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/internal/clusterconfig"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// The hostile suite plays, against the real apiserver and the test server, the three who test
// a shared router's boundaries: a tenant of the cluster (TestAHostileTenant), an object far too
// big (TestAnOversizedObject, TestABurstWaitsItsTurn), and a peer on the network posing as the
// router (TestARouterImpostorIsRefused). Each step is what one of them would try next, and each
// asserts what reached the router.

// tenantWorld is one operator reading every namespace of its test (by label), with an admin's
// namespace (h.ns) and a tenant's, and a router that has the admin's hand-made entries.
type tenantWorld struct {
	*harness
	tenant, label string
	w             *warnings
}

func (tw *tenantWorld) ingress(ns, name string, ann map[string]string, hosts ...string) *networkingv1.Ingress {
	tw.t.Helper()
	ing := ingress(ns, name, ann, hosts...)
	ing.Labels = map[string]string{"test": tw.label}
	return tw.create(ing)
}

func (tw *tenantWorld) hostMapping(ns, name string, ann map[string]string, spec map[string]any) {
	tw.t.Helper()
	meta := map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"test": tw.label}}
	if ann != nil {
		a := map[string]any{}
		for k, v := range ann {
			a[k] = v
		}
		meta["annotations"] = a
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
		"metadata": meta, "spec": spec}}
	if _, err := dynamic.NewForConfigOrDie(tw.cp.Config).Resource(source.HostMappingGVR).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		tw.t.Fatalf("create HostMapping %s/%s: %v", ns, name, err)
	}
}

// lines is what the router has for a name: "hostname ip [aliases]" of every entry carrying it.
func (tw *tenantWorld) lines(name string) []string {
	tw.t.Helper()
	recs, err := tw.prov.Records(context.Background())
	if err != nil {
		tw.t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		if r.Hostname == name || slices.Contains(r.Aliases, name) {
			out = append(out, fmt.Sprintf("%s %s %v", r.Hostname, r.IP, r.Aliases))
		}
	}
	slices.Sort(out)
	return out
}

func (tw *tenantWorld) wantLines(name string, want ...string) {
	tw.t.Helper()
	if got := tw.lines(name); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		tw.t.Fatalf("the router's lines for %s = %q, want %q", name, got, want)
	}
}

func (tw *tenantWorld) warned(name, reason string) {
	tw.t.Helper()
	if got := tw.w.reasons(name); !slices.Contains(got, reason) {
		tw.t.Fatalf("%s: Warning events %v, want %s", name, got, reason)
	}
}

// TestAHostileTenant: a tenant of a cluster whose admin keeps names on the router by hand and
// in a namespace of their own. First the cluster as a homelab runs it (a domain filter, no
// tenancy rules): the name rule alone holds. Then the admin sets the tenancy a shared cluster
// should (a domain of its own for the tenant, adoption for the admin only, a short grace
// period), live through the RouterHostsConfig.
func TestAHostileTenant(t *testing.T) {
	tenant := createNamespace(t, cp)
	label := "hostile-" + tenant
	w := &warnings{by: map[string][]string{}}
	rec := w.recorder()
	h := newHarness(t, options{sources: []string{"ingress", "hostmapping"}, allNS: true, labelFilter: "test=" + label,
		domains: []string{"home.lan"}, reporters: []controller.Reporter{rec}, warner: rec})
	tw := &tenantWorld{harness: h, tenant: tenant, label: label, w: w}
	admin := h.ns
	router := h.handMade("router.home.lan", "192.168.1.1", nil, []string{"infra"}, "the router itself")
	nas := h.handMade("nas.home.lan", "192.168.1.10", []string{"files.home.lan"}, []string{"infra", registry.TagNoAdopt}, "the NAS")
	tw.ingress(admin, "grafana", ip("10.0.0.3"), "grafana.home.lan")
	h.waitHost("grafana.home.lan", "10.0.0.3")
	h.sync()
	grafana := h.one("grafana.home.lan")

	// 1. An alias outside the domain filter, and one naming the admin's grafana: the tenant's
	//    own name is written, neither alias is.
	tw.ingress(tenant, "app", enabled("ip-address", "10.66.0.1", "aliases", "bank.example.com,grafana.home.lan"), "app.home.lan")
	h.waitHost("app.home.lan", "10.66.0.1")
	h.sync()
	tw.wantLines("app.home.lan", "app.home.lan 10.66.0.1 []")
	tw.wantLines("bank.example.com")
	tw.wantLines("grafana.home.lan", "grafana.home.lan 10.0.0.3 []")
	tw.warned("app", "InvalidAnnotation")
	tw.warned("app", "HostnameConflict")

	// 2. grafana.home.lan as a hostname of its own: the namespace holding it keeps it.
	tw.ingress(tenant, "steal", ip("10.66.0.2"), "grafana.home.lan")
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return countHost(eps, "grafana.home.lan") == 2 })
	h.sync()
	tw.wantLines("grafana.home.lan", "grafana.home.lan 10.0.0.3 []")
	tw.warned("steal", "HostnameConflict")

	// 3. The NAS's alias as a hostname, and the NAS itself, which says no-adopt: refused, the
	//    entry exactly as the admin wrote it.
	tw.ingress(tenant, "files", ip("10.66.0.3"), "files.home.lan")
	tw.hostMapping(tenant, "nas", nil, map[string]any{"hostname": "nas.home.lan", "ipAddress": "10.66.0.4"})
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		return countHost(eps, "files.home.lan") == 1 && countHost(eps, "nas.home.lan") == 1
	})
	h.sync()
	sameAsFound(t, h.byID(nas.ID), nas)
	tw.wantLines("files.home.lan", "nas.home.lan 192.168.1.10 [files.home.lan]")
	tw.warned("files", "HostnameConflict")
	tw.warned("nas", "HostnameConflict")
	h.quiet("after the tenant's first attempts")

	// The admin sets the tenancy a shared cluster should, in two steps: adoption for the admin
	// alone and a short grace period first.
	if _, err := createConfig(t, fmt.Sprintf(`apiVersion: router-hosts.fzymgc.house/v1alpha1
kind: RouterHostsConfig
metadata: {name: %s}
spec:
  tenancy:
    adoptionNamespaces: [%s]
    maxGracePeriodSeconds: 3600
`, admin, admin), false); err != nil {
		t.Fatal(err)
	}
	h.applied(func(s clusterconfig.Settings, _ error) bool { return s.Tenancy.MaxGracePeriod == time.Hour })

	// 4. The router's own name, at the tenant's address, kept for a year: the tenant may not
	//    adopt; the entry is not touched.
	tw.hostMapping(tenant, "router", map[string]string{source.AnnotationGracePeriod: "31536000"},
		map[string]any{"hostname": "router.home.lan", "ipAddress": "10.66.0.5"})
	h.waitHost("router.home.lan", "10.66.0.5")
	h.sync()
	sameAsFound(t, h.byID(router.ID), router)
	tw.warned("router", "HostnameConflict")

	// 5. A year's grace on its own name: an hour is what the entry carries.
	tw.ingress(tenant, "keep", enabled("ip-address", "10.66.0.8", "grace-period", "31536000"), "keep.tenant.home.lan")
	h.waitHost("keep.tenant.home.lan", "10.66.0.8")
	h.sync()
	if keep := h.one("keep.tenant.home.lan"); !keep.HasTag(registry.PrefixGracePeriod + "3600") {
		t.Fatalf("keep.tenant.home.lan carries %v, want grace-period:3600", keep.Tags)
	}
	tw.warned("keep", "InvalidAnnotation")

	// Then a domain of its own for the tenant.
	patchConfig(t, admin, map[string]any{"tenancy": map[string]any{"namespaceDomains": []any{
		map[string]any{"namespace": admin, "domains": []any{"home.lan"}},
		map[string]any{"namespace": tenant, "domains": []any{"tenant.home.lan"}}}}})
	h.applied(func(s clusterconfig.Settings, _ error) bool { return len(s.Tenancy.Domains) == 2 })

	// 6. A name outside the tenant's domain, and one inside with an alias outside: nothing
	//    outside is written, the name inside is. Its app.home.lan of step 1 is now outside too.
	tw.ingress(tenant, "wiki", ip("10.66.0.6"), "wiki.home.lan")
	tw.ingress(tenant, "shop", enabled("ip-address", "10.66.0.7", "aliases", "pay.home.lan"), "shop.tenant.home.lan")
	h.waitHost("wiki.home.lan", "10.66.0.6")
	h.waitHost("shop.tenant.home.lan", "10.66.0.7")
	h.sync()
	tw.wantLines("wiki.home.lan")
	tw.wantLines("pay.home.lan")
	tw.wantLines("shop.tenant.home.lan", "shop.tenant.home.lan 10.66.0.7 []")
	tw.warned("wiki", "NameNotPermitted")
	tw.warned("shop", "NameNotPermitted")
	if marked := h.one("app.home.lan"); !slices.ContainsFunc(marked.Tags, func(t string) bool { return strings.HasPrefix(t, registry.PrefixPending) }) {
		t.Fatalf("app.home.lan, now outside the tenant's domain, is not marked: %v", marked.Tags)
	}

	// Through all of it the admin's entries are as they were, and the admin may still adopt.
	sameAsFound(t, h.byID(grafana.ID), grafana)
	sameAsFound(t, h.byID(nas.ID), nas)
	tw.hostMapping(admin, "router", nil, map[string]any{"hostname": "router.home.lan", "ipAddress": "192.168.1.1"})
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return countHost(eps, "router.home.lan") == 2 })
	h.sync()
	if got := h.byID(router.ID); !got.HasTag(registry.TagPreExisting) || got.HasTag(registry.PrefixNamespace+tenant) {
		t.Fatalf("the admin's claim on the router's name: %+v", got)
	}
}

func countHost(eps []*endpoint.Endpoint, host string) int {
	n := 0
	for _, e := range eps {
		if e.Hostname == host {
			n++
		}
	}
	return n
}

// TestAnOversizedObject: an object grows to thousands of names and hundreds of tags, a
// namespace fills up, and a burst of changes from one namespace meets a quiet one. What it had
// stays; nothing new of it reaches the router; the rest of the cluster syncs first.
func TestAnOversizedObject(t *testing.T) {
	w := &warnings{by: map[string][]string{}}
	rec := w.recorder()
	h := newHarness(t, options{sources: []string{"ingress"}, reporters: []controller.Reporter{rec}, warner: rec,
		extraArgs: []string{"--max-entries-per-namespace=40", "--max-writes-per-sync=10"}})
	tw := &tenantWorld{harness: h, w: w}

	// 1. An Ingress with three hosts, and a small one beside it.
	hosts := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("h%04d.big.lan", i)
		}
		return out
	}
	big := h.create(ingress(h.ns, "big", ip("10.70.0.1"), hosts(3)...))
	small := h.create(ingress(h.ns, "small", ip("10.70.0.2"), "small.lan"))
	h.waitHost("h0002.big.lan", "10.70.0.1")
	h.waitHost("small.lan", "10.70.0.2")
	h.sync()
	before := map[string]endpoint.Record{}
	for _, host := range hosts(3) {
		before[host] = h.one(host)
	}

	// 2. It grows to 3,000 hosts at a new address, while the small one moves: the small one's
	//    move is written; of the big one, nothing.
	h.update(big, func(i *networkingv1.Ingress) {
		i.Spec.Rules = nil
		for _, host := range hosts(3000) {
			i.Spec.Rules = append(i.Spec.Rules, networkingv1.IngressRule{Host: host})
		}
		i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.70.6.6"
	})
	h.update(small, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.70.0.3" })
	h.waitHost("h2999.big.lan", "10.70.6.6")
	h.waitHost("small.lan", "10.70.0.3")
	h.srv.Service().ResetCalls()
	for again := true; again; {
		again = h.sync().Again
	}
	if n := h.writes(); n != 1 {
		t.Fatalf("%d writes, want the small one's update alone", n)
	}
	if got := h.one("small.lan").IP; got != "10.70.0.3" {
		t.Fatalf("small.lan at %s", got)
	}
	for host, was := range before {
		sameAsFound(t, h.one(host), was)
	}
	if n := len(h.entries("h0003.big.lan")); n != 0 {
		t.Fatalf("a new name of the big object was written")
	}
	tw.warned("big", "OverBudget")
	h.quiet("with the object over its budget")

	// 3. 800 tags in 239 KB of annotations, on a new object: nothing of it is written.
	var tags []string
	for i := range 800 {
		tags = append(tags, fmt.Sprintf("tag-%03d-%s", i, strings.Repeat("x", 290)))
	}
	h.create(ingress(h.ns, "tagged", enabled("ip-address", "10.70.0.4", "tags", strings.Join(tags, ",")), "tagged.lan"))
	h.waitHost("tagged.lan", "10.70.0.4")
	h.sync()
	if n := len(h.entries("tagged.lan")); n != 0 {
		t.Fatal("the object with 800 tags was written")
	}
	tw.warned("tagged", "OverBudget")

	// 4. Back within its budget, with a fourth host: that one is written.
	h.update(big, func(i *networkingv1.Ingress) {
		i.Spec.Rules = nil
		for _, host := range hosts(4) {
			i.Spec.Rules = append(i.Spec.Rules, networkingv1.IngressRule{Host: host})
		}
		i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.70.0.1"
	})
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		return countHost(eps, "h2999.big.lan") == 0 && countHost(eps, "h0003.big.lan") == 1
	})
	h.sync()
	if n := len(h.entries("h0003.big.lan")); n != 1 {
		t.Fatalf("back within budget, the fourth host has %d entries", n)
	}

	// 5. The namespace fills up: 50 more objects, a budget of 40 entries. It gets 40 in all,
	//    the oldest claims first, and the rest wait with a warning; nothing it had goes.
	for i := range 50 {
		h.create(ingress(h.ns, fmt.Sprintf("fill-%02d", i), ip("10.70.1.1"), fmt.Sprintf("fill-%02d.lan", i)))
	}
	h.waitHost("fill-49.lan", "10.70.1.1")
	for again := true; again; {
		again = h.sync().Again
	}
	recs, err := h.prov.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 40 {
		t.Fatalf("%d entries in a namespace whose budget is 40", len(recs))
	}
	// Created within a second, the fill objects are ordered by UID: which wait is random, how
	// many is not, and every one that waits is told.
	waiting := 0
	for i := range 50 {
		name := fmt.Sprintf("fill-%02d", i)
		if slices.Contains(w.reasons(name), "OverBudget") {
			waiting++
			if n := len(h.entries(name + ".lan")); n != 0 {
				t.Fatalf("%s is told it waits, and has %d entries", name, n)
			}
		}
	}
	if waiting != 15 {
		t.Fatalf("%d objects told they wait, want 15 (5 entries before, 35 admitted)", waiting)
	}
	for host := range before {
		if len(h.entries(host)) != 1 {
			t.Fatalf("%s went when the namespace filled", host)
		}
	}
}

// TestABurstWaitsItsTurn: a namespace's burst of new names meets one change elsewhere; within
// the budget of writes per sync, the change elsewhere is in the first sync's writes, and the
// burst follows in the syncs after it.
func TestABurstWaitsItsTurn(t *testing.T) {
	flood := createNamespace(t, cp)
	label := "burst-" + flood
	h := newHarness(t, options{sources: []string{"ingress"}, allNS: true, labelFilter: "test=" + label,
		extraArgs: []string{"--max-writes-per-sync=10"}})
	tw := &tenantWorld{harness: h, label: label}
	for i := range 60 {
		tw.ingress(flood, fmt.Sprintf("burst-%02d", i), ip("10.80.0.1"), fmt.Sprintf("burst-%02d.lan", i))
	}
	tw.ingress(h.ns, "quiet", ip("10.80.0.2"), "quiet.lan")
	h.waitHost("burst-59.lan", "10.80.0.1")
	h.waitHost("quiet.lan", "10.80.0.2")
	h.srv.Service().ResetCalls()
	out := h.sync()
	if n := h.writes(); n != 10 || !out.Again {
		t.Fatalf("the first sync wrote %d (again %v), want the budget of 10 and another sync at once", n, out.Again)
	}
	if n := len(h.entries("quiet.lan")); n != 1 {
		t.Fatal("the quiet namespace's change waited behind the burst")
	}
	syncs := 1
	for again := out.Again; again; syncs++ {
		again = h.sync().Again
	}
	recs, err := h.prov.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 61 || syncs != 7 {
		t.Fatalf("%d entries after %d syncs, want 61 after 7", len(recs), syncs)
	}
}

// impostor starts a server that h's router's CA vouches for, but for nas.lan only, on addr.
func impostor(t *testing.T, h *harness, addr string) *rhtestserver.Server {
	t.Helper()
	srv, err := rhtestserver.StartImpostor(t.TempDir(), h.srv.PKI,
		rhtestserver.LeafProfile{DNSNames: []string{"nas.lan"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// untouched fails unless no call at all reached srv and its store is empty.
func untouched(t *testing.T, srv *rhtestserver.Server) {
	t.Helper()
	for method, n := range srv.Service().CallCounts() {
		if n != 0 {
			t.Fatalf("the impostor at %s served %d %s calls: %v", srv.Addr(), n, method, srv.Service().CallCounts())
		}
	}
	if n := srv.Store().Len(); n != 0 {
		t.Fatalf("the impostor at %s holds %d entries", srv.Addr(), n)
	}
}

// reachable waits until the named RouterHostsConfig's ServerReachable condition has reason and
// a message containing want, and returns it.
func reachable(t *testing.T, name, reason, want string) metav1.Condition {
	t.Helper()
	var c metav1.Condition
	waitFor(t, 20*time.Second, func() bool {
		st, _ := configStatus(t, name)
		c = condition(st, v1alpha1.ConditionServerReachable)
		return c.Reason == reason && strings.Contains(c.Message, want)
	})
	return c
}

// TestARouterImpostorIsRefused runs the operator binary, configured by a RouterHostsConfig and
// its Secret, against servers whose certificates the router's CA signed for nas.lan only: one
// on 127.0.0.1 (the finding: an IP endpoint checked no name at all), then, after the real
// router has been synced through a DNS name, one on [::1]. Each is refused as an
// authentication failure everywhere the user looks (the condition, the metric, the objects'
// events), with the mismatch named, and nothing reaches it. A Secret that turns to bad PEM on
// the way is reported and the last good material keeps syncing.
func TestARouterImpostorIsRefused(t *testing.T) {
	const name = "it-impostor"
	h := newHarness(t, options{})
	imp4 := impostor(t, h, "127.0.0.1:0")
	h.mtlsSecret("router-hosts-mtls", h.srv.CertFile(), h.srv.KeyFile())
	doc := strings.NewReplacer("name: default", "name: "+name, `"router.lan:50051"`, `"`+imp4.Addr()+`"`,
		"namespace: router-hosts-system", "namespace: "+h.ns, "traefik-system", h.ns).Replace(designExample)
	if _, err := createConfig(t, doc, false); err != nil {
		t.Fatal(err)
	}
	web := h.create(ingress(h.ns, "web", enabled("ip-address", "10.70.0.1"), "web.lan"))
	p := startOperatorEnv(t, h, nil, "--config-name="+name, "--interval=1h")

	// The impostor on an IPv4 endpoint.
	c := reachable(t, name, v1alpha1.ReasonAuthenticationFailed, "it is valid for nas.lan, not 127.0.0.1")
	t.Logf("ServerReachable: %s", c.Message)
	waitFor(t, 10*time.Second, func() bool {
		return p.metric(t, "router_hosts_operator_sync_errors_total", `reason="authentication"`) == 1
	})
	var ev *corev1.Event
	waitFor(t, 10*time.Second, func() bool { ev = rsEvent(t, h.ns, string(web.UID), events.SyncFailed); return ev != nil })
	if ev.Type != corev1.EventTypeWarning || !strings.HasPrefix(ev.Message, events.AuthenticationFailed+": ") ||
		!strings.Contains(ev.Message, "it is valid for nas.lan, not 127.0.0.1") {
		t.Fatalf("SyncFailed event %s %q; want a Warning, AuthenticationFailed, naming the mismatch", ev.Type, ev.Message)
	}
	untouched(t, imp4)
	// The client certificate in use is the Secret's, and its expiry is exported.
	pair, err := tls.LoadX509KeyPair(h.srv.CertFile(), h.srv.KeyFile())
	if err != nil {
		t.Fatal(err)
	}
	if got := p.metric(t, "router_hosts_operator_client_certificate_expiry_timestamp_seconds"); got != float64(pair.Leaf.NotAfter.Unix()) {
		t.Fatalf("client_certificate_expiry_timestamp_seconds = %v, want the Secret's certificate's %d", got, pair.Leaf.NotAfter.Unix())
	}

	// The real router, by a DNS name: its certificate carries localhost, and the check follows
	// the endpoint as it changes.
	_, port, err := net.SplitHostPort(h.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	patchConfig(t, name, map[string]any{"server": map[string]any{"endpoint": "localhost:" + port}})
	waitFor(t, 20*time.Second, func() bool { return len(rsLookup(h, "web.lan")) == 1 })
	reachable(t, name, v1alpha1.ReasonConnected, "localhost:"+port)

	// The Secret turns to PEM that does not parse: reported on the config, counted, and the
	// last good material keeps syncing.
	if n := p.metric(t, "router_hosts_operator_tls_reload_errors_total", `source="secret"`); n != 0 {
		t.Fatalf("tls_reload_errors_total{source=secret} = %v before any bad Secret", n)
	}
	badSecret(t, h, "router-hosts-mtls")
	waitFor(t, 20*time.Second, func() bool {
		st, gen := configStatus(t, name)
		ready := condition(st, v1alpha1.ConditionReady)
		return ready.Reason == v1alpha1.ReasonInvalidConfig && strings.Contains(ready.Message, "router-hosts-mtls") &&
			strings.Contains(ready.Message, "the last good configuration stays in use") && st.ObservedGeneration == gen
	})
	waitFor(t, 10*time.Second, func() bool {
		return p.metric(t, "router_hosts_operator_tls_reload_errors_total", `source="secret"`) == 1
	})
	h.create(ingress(h.ns, "api", enabled("ip-address", "10.70.0.2"), "api.lan"))
	waitFor(t, 20*time.Second, func() bool { return len(rsLookup(h, "api.lan")) == 1 })
	if n := p.metric(t, "router_hosts_operator_tls_reload_errors_total", `source="secret"`); n != 1 {
		t.Fatalf("tls_reload_errors_total{source=secret} = %v after syncs on one bad Secret; want 1", n)
	}
	h.mtlsSecret("router-hosts-mtls", h.srv.CertFile(), h.srv.KeyFile())
	waitFor(t, 20*time.Second, func() bool {
		st, _ := configStatus(t, name)
		return condition(st, v1alpha1.ConditionReady).Status == metav1.ConditionTrue
	})

	// An impostor on an IPv6 endpoint, live.
	imp6 := impostor(t, h, "[::1]:0")
	patchConfig(t, name, map[string]any{"server": map[string]any{"endpoint": imp6.Addr()}})
	reachable(t, name, v1alpha1.ReasonAuthenticationFailed, "it is valid for nas.lan, not ::1")
	waitFor(t, 10*time.Second, func() bool {
		return p.metric(t, "router_hosts_operator_sync_errors_total", `reason="authentication"`) == 2
	})
	untouched(t, imp6)
	untouched(t, imp4)
}

// badSecret overwrites the named Secret's client certificate with text that is no PEM.
func badSecret(t *testing.T, h *harness, name string) {
	t.Helper()
	api := h.cp.Client.CoreV1().Secrets(h.ns)
	s, err := api.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data["tls.crt"] = []byte("-----BEGIN CERTIFICATE-----\ncut short")
	if _, err := api.Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating Secret %s: %v", name, err)
	}
}
