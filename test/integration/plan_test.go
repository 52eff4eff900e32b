package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/internal/manifests"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/preview"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// The plan's tests follow a person reviewing a change in a pull request: the manifests of the
// change are planned against the cluster and the router as they are, then applied to the
// apiserver, and a sync of a freshly started operator (the plan decides as one does) must write
// exactly what the plan said, change for change.

// writeManifests writes docs as one multi-document file and returns its path.
func writeManifests(t *testing.T, docs ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(p, []byte(strings.Join(docs, "\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// planRun runs the plan command as main does with the harness's flags and o's, and returns its
// JSON and exit status.
func (h *harness) planRun(o options, args ...string) (*preview.Plan, int) {
	h.t.Helper()
	out, code := h.readOnly(o, append([]string{"plan", "-o", "json"}, args...)...)
	var p preview.Plan
	if err := json.Unmarshal(out, &p); err != nil {
		h.t.Fatalf("plan -o json: %v\n%s", err, out)
	}
	if p.Version != preview.Version {
		h.t.Fatalf("plan version %q, want %q", p.Version, preview.Version)
	}
	h.t.Logf("plan (exit %d): %s", code, out)
	return &p, code
}

// apply applies the manifests of path to the apiserver as kubectl apply would (server-side).
func (h *harness) apply(path string) {
	h.t.Helper()
	objs, err := manifests.Load([]string{path}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(h.cp.Config)
	for _, o := range objs {
		k := manifests.KeyOf(o.Unstructured)
		gvk := o.GroupVersionKind()
		gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
		if gvk.Kind == "Ingress" {
			gvr.Resource = "ingresses"
		}
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if k.Namespace != "" && gvk.Kind != "RouterHostsConfig" && gvk.Kind != "Namespace" {
			ri = dyn.Resource(gvr).Namespace(k.Namespace)
		}
		if _, err := ri.Apply(context.Background(), k.Name, o.Unstructured, metav1.ApplyOptions{FieldManager: "plan-test", Force: true}); err != nil {
			h.t.Fatalf("applying %s: %v", k, err)
		}
		if gvk.Kind == "RouterHostsConfig" {
			h.t.Cleanup(func() { _ = ri.Delete(context.Background(), k.Name, metav1.DeleteOptions{}) })
		}
	}
}

// restartAndSync starts the operator afresh, as the plan decides, waits for its caches to show
// want, and syncs once.
func (h *harness) restartAndSync(o options, want func([]string) bool) *controller.Report {
	h.t.Helper()
	h.build(o)
	deadline := time.Now().Add(15 * time.Second)
	for {
		rep, err := h.ctrl.Inspect(context.Background())
		if err != nil {
			h.t.Fatal(err)
		}
		var hosts []string
		for _, ep := range rep.Endpoints {
			hosts = append(hosts, ep.Hostname)
		}
		for _, ep := range rep.Unmanaged {
			hosts = append(hosts, ep.Hostname)
		}
		if want(hosts) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return h.sync()
}

// written are the writes of a plan and of a sync's report, as comparable words: the action,
// the hostname and the address written.
func plannedWrites(p *preview.Plan) []string {
	var out []string
	for _, g := range p.Groups {
		for _, l := range g.Lines {
			if l.Sign == preview.SignRefused || l.Sign == preview.SignUnknown {
				continue
			}
			out = append(out, l.Action+" "+l.Hostname+" "+l.Address)
		}
	}
	sort.Strings(out)
	return out
}

func syncedWrites(rep *controller.Report) []string {
	var out []string
	for i := range rep.Changes {
		c := &rep.Changes[i]
		if c.Action == plan.Update && registry.HeartbeatOnly(c.Old, c.New) {
			continue // the plan counts the heartbeat's renewals apart
		}
		addr := ""
		if c.New != nil && c.Action != plan.Mark && c.Action != plan.Delete {
			addr = c.New.IP
		}
		out = append(out, string(c.Action)+" "+c.Hostname()+" "+addr)
	}
	sort.Strings(out)
	return out
}

// plannedHolds and syncedHolds are the holds, by reason and hostname.
func plannedHolds(p *preview.Plan) []string {
	var out []string
	for _, g := range p.Groups {
		for _, l := range g.Lines {
			if l.Action == "held" {
				out = append(out, l.Code+" "+l.Hostname)
			}
		}
	}
	sort.Strings(out)
	return out
}

func syncedHolds(rep *controller.Report) []string {
	var out []string
	for _, h := range rep.Held {
		if h.Reason != registry.ReasonGracePeriod {
			out = append(out, h.Reason+" "+h.Change.Hostname())
		}
	}
	sort.Strings(out)
	return out
}

// predicts fails the test unless the sync wrote and held exactly what the plan said.
func predicts(t *testing.T, p *preview.Plan, rep *controller.Report) {
	t.Helper()
	if got, want := syncedWrites(rep), plannedWrites(p); !slices.Equal(got, want) {
		t.Errorf("the sync wrote %q; the plan said %q", got, want)
	}
	if got, want := syncedHolds(rep), plannedHolds(p); !slices.Equal(got, want) {
		t.Errorf("the sync held %q; the plan said %q", got, want)
	}
}

// lines are the plan's lines of one sign, as "sign hostname".
func lines(p *preview.Plan, sign string) []preview.Line {
	var out []preview.Line
	for _, g := range p.Groups {
		for _, l := range g.Lines {
			if l.Sign == sign {
				out = append(out, l)
			}
		}
	}
	return out
}

func ingressYAML(ns, name, host string, annotations map[string]string, labels map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)
	if len(annotations) > 0 {
		b.WriteString("  annotations:\n")
		for _, k := range sortedKeys(annotations) {
			fmt.Fprintf(&b, "    %s: %q\n", k, annotations[k])
		}
	}
	if len(labels) > 0 {
		b.WriteString("  labels:\n")
		for _, k := range sortedKeys(labels) {
			fmt.Fprintf(&b, "    %s: %q\n", k, labels[k])
		}
	}
	fmt.Fprintf(&b, "spec:\n  rules:\n  - host: %s\n", host)
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestPlanANewIngressAndAChangedAddress: a pull request adds an Ingress and moves another's
// address, in a file that also carries kinds the operator does not read.
func TestPlanANewIngressAndAChangedAddress(t *testing.T) {
	o := options{ipResolution: []string{"static:10.81.0.1"}}
	h := newHarness(t, o)
	moved := h.create(ingress(h.ns, "moved", enabled("ip-address", "10.81.0.5"), "moved.plan.lan"))
	_ = moved
	h.waitHost("moved.plan.lan", "10.81.0.5")
	h.sync()

	path := writeManifests(t,
		ingressYAML(h.ns, "fresh", "fresh.plan.lan", enabled(), nil),
		ingressYAML(h.ns, "moved", "moved.plan.lan", enabled("ip-address", "10.81.0.6"), nil),
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: "+h.ns+"\ndata: {a: b}",
		"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n  namespace: "+h.ns,
	)
	writes := h.writes()
	countEvents := func() int {
		evs, err := h.cp.Client.CoreV1().Events(h.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs.Items)
	}
	events := countEvents()
	p, code := h.planRun(o, "-f", path)
	if code != 1 {
		t.Errorf("exit %d, want 1 (changes, all allowed)", code)
	}
	if w := h.writes() - writes; w != 0 {
		t.Errorf("the plan sent %d writes to the router; it writes nothing", w)
	}
	if n := countEvents() - events; n != 0 {
		t.Errorf("the plan posted %d events; it posts none", n)
	}
	if c := lines(p, preview.SignCreate); len(c) != 1 || c[0].Hostname != "fresh.plan.lan" || c[0].Address != "10.81.0.1" {
		t.Errorf("creates %+v: want + fresh.plan.lan → 10.81.0.1", c)
	}
	if u := lines(p, preview.SignUpdate); len(u) != 1 || u[0].Hostname != "moved.plan.lan" || u[0].OldAddress != "10.81.0.5" || u[0].Address != "10.81.0.6" {
		t.Errorf("updates %+v: want ~ moved.plan.lan 10.81.0.5 → 10.81.0.6", u)
	}
	if p.Summary.Unread != 2 || len(p.Unread) != 2 {
		t.Errorf("unread %+v: want the ConfigMap and the ServiceAccount named as not read", p.Unread)
	}
	for _, g := range p.Groups {
		if g.Object != nil && g.Object.Name == "fresh" && g.Change != "added" {
			t.Errorf("group %+v: want the new Ingress marked added", g)
		}
	}

	h.apply(path)
	rep := h.restartAndSync(o, func(hosts []string) bool { return slices.Contains(hosts, "fresh.plan.lan") })
	predicts(t, p, rep)
	h.waitHost("fresh.plan.lan", "10.81.0.1")
}

// TestPlanADeletionWithItsGracePeriod: a file removed from the repository shows up with
// --prune -l as the mark its entry gets now and when it goes.
func TestPlanADeletionWithItsGracePeriod(t *testing.T) {
	o := options{ipResolution: []string{"static:10.82.0.1"}, grace: time.Hour}
	h := newHarness(t, o)
	kept := ingress(h.ns, "kept", enabled(), "kept.plan.lan")
	kept.Labels = map[string]string{"app.kubernetes.io/part-of": "plan"}
	h.create(kept)
	gone := ingress(h.ns, "gone", enabled(), "gone.plan.lan")
	gone.Labels = map[string]string{"app.kubernetes.io/part-of": "plan"}
	gone = h.create(gone)
	h.waitHost("gone.plan.lan", "10.82.0.1")
	h.sync()

	path := writeManifests(t, ingressYAML(h.ns, "kept", "kept.plan.lan", enabled(), map[string]string{"app.kubernetes.io/part-of": "plan"}))
	p, code := h.planRun(o, "-f", path, "--prune", "-l", "app.kubernetes.io/part-of=plan")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	d := lines(p, preview.SignDelete)
	if len(d) != 1 || d[0].Hostname != "gone.plan.lan" || d[0].Action != string(plan.Mark) || d[0].Due == nil {
		t.Fatalf("deletions %+v: want gone.plan.lan marked, with when it goes", d)
	}
	if wait := time.Until(*d[0].Due); wait < 55*time.Minute || wait > 61*time.Minute {
		t.Errorf("due in %s, want the hour's grace period", wait)
	}
	var pruned bool
	for _, g := range p.Groups {
		pruned = pruned || (g.Object != nil && g.Object.Name == "gone" && g.Change == "pruned")
	}
	if !pruned {
		t.Errorf("groups %+v: want Ingress gone shown as pruned", p.Groups)
	}

	h.delete(gone)
	rep := h.restartAndSync(o, func(hosts []string) bool { return !slices.Contains(hosts, "gone.plan.lan") })
	predicts(t, p, rep)
}

// TestPlanANameAnotherNamespaceHolds and one outside the domain filter: both are refusals, with
// the holder, the filter's value and the fix, and exit 3; the sync writes neither.
func TestPlanANameAnotherNamespaceHoldsAndOneOutsideTheFilter(t *testing.T) {
	o := options{ipResolution: []string{"static:10.83.0.1"}, allNS: true, domains: []string{"plan.lan"}, labelFilter: "plan-test=holds"}
	h := newHarness(t, o)
	other := createNamespace(t, h.cp)
	holder := ingress(other, "holder", enabled(), "held.plan.lan")
	holder.Labels = map[string]string{"plan-test": "holds"}
	h.create(holder)
	h.waitHost("held.plan.lan", "10.83.0.1")
	h.sync()

	lbl := map[string]string{"plan-test": "holds"}
	path := writeManifests(t,
		ingressYAML(h.ns, "taker", "held.plan.lan", enabled(), lbl),
		ingressYAML(h.ns, "outside", "web.elsewhere.lan", enabled(), lbl),
	)
	p, code := h.planRun(o, "-f", path)
	if code != 3 {
		t.Errorf("exit %d, want 3 (refusals)", code)
	}
	var conflict, outside bool
	for _, l := range lines(p, preview.SignRefused) {
		switch {
		case l.Hostname == "held.plan.lan" && l.Code == registry.ReasonHostnameConflict:
			conflict = strings.Contains(l.Holder, other) && l.Fix != ""
		case l.Hostname == "web.elsewhere.lan" && l.Code == "OutsideDomainFilter":
			outside = strings.Contains(l.Message, "plan.lan") && strings.Contains(l.Message, "domain-filter")
		}
	}
	if !conflict || !outside {
		t.Errorf("refusals %+v: want held.plan.lan held by namespace %s with a fix, and web.elsewhere.lan outside --domain-filter=plan.lan", lines(p, preview.SignRefused), other)
	}

	h.apply(path)
	rep := h.restartAndSync(o, func(hosts []string) bool { return slices.Contains(hosts, "web.elsewhere.lan") })
	predicts(t, p, rep)
}

// TestPlanARouterHostsConfigThatNarrowsTheFilter: a RouterHostsConfig edit that drops a domain
// is planned as what it does: the field, each name it would delete, and the brake's verdict.
func TestPlanARouterHostsConfigThatNarrowsTheFilter(t *testing.T) {
	o := options{ipResolution: []string{"static:10.84.0.1"}, domains: []string{"a.lan", "b.lan"},
		extraArgs: []string{"--mass-deletion-percent=40", "--mass-deletion-minimum=2"}}
	h := newHarness(t, o)
	for i, host := range []string{"one.a.lan", "two.a.lan", "one.b.lan", "two.b.lan", "three.b.lan"} {
		h.create(ingress(h.ns, fmt.Sprintf("web%d", i), enabled(), host))
	}
	h.waitHost("three.b.lan", "10.84.0.1")
	h.sync()

	cfgDoc := fmt.Sprintf("apiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: RouterHostsConfig\nmetadata:\n  name: %s\nspec:\n  domainFilter: [a.lan]\n", h.ns)
	path := writeManifests(t, cfgDoc)
	p, code := h.planRun(o, "-f", path)
	if code != 3 {
		t.Errorf("exit %d, want 3 (the brake holds)", code)
	}
	if len(p.Config) != 1 || p.Config[0].Field != "spec.domainFilter" {
		t.Errorf("config %+v: want spec.domainFilter's change", p.Config)
	}
	if p.Brake == nil || p.Brake.Token == "" || p.Brake.Held != 3 {
		t.Fatalf("brake %+v: want its verdict on the three names of b.lan, with the token", p.Brake)
	}
	var held []string
	for _, l := range lines(p, preview.SignRefused) {
		if l.Code == registry.ReasonMassDeletionHeld {
			held = append(held, l.Hostname)
		}
	}
	sort.Strings(held)
	if !slices.Equal(held, []string{"one.b.lan", "three.b.lan", "two.b.lan"}) {
		t.Errorf("held %q: want each name the narrowed filter deletes", held)
	}

	h.apply(path)
	rep := h.restartAndSync(o, func([]string) bool { return true })
	predicts(t, p, rep)
	if rep.Braked == nil || rep.Braked.Token != p.Brake.Token {
		t.Errorf("the sync's brake %+v: want the plan's", rep.Braked)
	}

	// Confirmed, the plan shows the marks.
	confirmed := writeManifests(t, cfgDoc+"  deletion:\n    brake:\n      confirm: \""+p.Brake.Token+"\"\n")
	p2, code := h.planRun(o, "-f", confirmed)
	if code != 1 || p2.Brake != nil || len(lines(p2, preview.SignDelete)) != 3 {
		t.Errorf("confirmed: exit %d, brake %+v, deletions %+v: want the three marks and exit 1", code, p2.Brake, lines(p2, preview.SignDelete))
	}
}

// TestPlanAHostMappingOfflineAndFromASnapshot: a HostMapping planned three ways (with the
// cluster, with the cluster and a snapshot of the router, offline with the snapshot) gives the
// same lines, and the sync writes them; a new LoadBalancer Service's address is unknown.
func TestPlanAHostMappingOfflineAndFromASnapshot(t *testing.T) {
	o := options{sources: []string{"hostmapping", "service"}}
	h := newHarness(t, o)
	existing := fmt.Sprintf("apiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: HostMapping\nmetadata:\n  name: nas\n  namespace: %s\nspec:\n  hostname: nas.plan.lan\n  ipAddress: 10.85.0.2\n", h.ns)
	h.apply(writeManifests(t, existing))
	h.waitHost("nas.plan.lan", "10.85.0.2")
	h.sync()

	snapshot := filepath.Join(t.TempDir(), "snapshot.json")
	// A snapshot is the whole router: list without --namespace, which would pick entries.
	whole := o
	whole.allNS = true
	out, code := h.readOnly(whole, "list", "-o", "json")
	if code != 0 {
		t.Fatalf("list exit %d", code)
	}
	if err := os.WriteFile(snapshot, out, 0o600); err != nil {
		t.Fatal(err)
	}
	added := fmt.Sprintf("apiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: HostMapping\nmetadata:\n  name: printer\n  namespace: %s\nspec:\n  hostname: printer.plan.lan\n  ipAddress: 10.85.0.3\n", h.ns)
	lb := fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: media\n  namespace: %s\n  annotations:\n    router-hosts.fzymgc.house/enabled: \"true\"\n    router-hosts.fzymgc.house/hostname: media.plan.lan\nspec:\n  type: LoadBalancer\n  ports: [{port: 80}]\n", h.ns)
	path := writeManifests(t, existing, added, lb)

	withCluster, c1 := h.planRun(o, "-f", path)
	withSnapshot, c2 := h.planRun(o, "-f", path, "--router-snapshot", snapshot)
	offline, c3 := h.planRun(o, "-f", path, "--router-snapshot", snapshot, "--offline")
	for i, p := range []*preview.Plan{withCluster, withSnapshot, offline} {
		if c := []int{c1, c2, c3}[i]; c != 1 {
			t.Errorf("plan %d: exit %d, want 1", i, c)
		}
		if got := plannedWrites(p); !slices.Equal(got, []string{"create printer.plan.lan 10.85.0.3"}) {
			t.Errorf("plan %d: writes %q, want the printer's create", i, got)
		}
		if u := lines(p, preview.SignUnknown); len(u) != 1 || u[0].Hostname != "media.plan.lan" {
			t.Errorf("plan %d: unknowns %+v: want media.plan.lan's address unknown (a load balancer's, from the status)", i, u)
		}
	}

	h.apply(writeManifests(t, existing, added))
	rep := h.restartAndSync(o, func(hosts []string) bool { return slices.Contains(hosts, "printer.plan.lan") })
	predicts(t, withCluster, rep)
}
