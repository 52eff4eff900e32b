package externaldns

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/registry"
	"sigs.k8s.io/external-dns/registry/noop"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	rhplan "github.com/router-hosts-operator/router-hosts-operator/plan"
	rhregistry "github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// sidecarPod is external-dns's pod with the webhook beside it, run as the service account
// external-dns.
var sidecarPod = corev1.PodSpec{ServiceAccountName: "external-dns", Containers: []corev1.Container{
	{Name: "external-dns", Image: "external-dns"}, {Name: "router-hosts-webhook", Image: "router-hosts-operator"}}}

// podToken is the service-account token the kubelet mounts in a new pod of this spec in
// namespace ns (created with its service account when missing): issued by the apiserver's
// TokenRequest API and bound to the pod, written to a file as the kubelet writes it.
func podToken(t *testing.T, cp *kubetest.ControlPlane, ns string, spec corev1.PodSpec) string {
	t.Helper()
	ctx := context.Background()
	core := cp.Client.CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: spec.ServiceAccountName}}
	if _, err := core.ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod, err := core.Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "external-dns-"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What the kubelet asks for: an hour and 7 s, bound to the pod.
	expiry := int64(3607)
	tr, err := core.ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &expiry, BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for %s/%s: %v", ns, sa.Name, err)
	}
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// homelab is one household's external-dns with the webhook as its sidecar, as
// docs/external-dns.md deploys it: the default cluster name, no --cluster-id.
type homelab struct {
	name    string
	desired []*endpoint.Endpoint // what external-dns's sources find
	hosts   []string             // their names
	rig     *rig
	reg     registry.Registry // external-dns's noop registry over its webhook client
}

// start runs the homelab's webhook on srv with the token its pod has mounted, and the flags
// extra adds.
func (h *homelab) start(t *testing.T, srv *rhtestserver.Server, token string, extra ...string) {
	t.Helper()
	h.rig = startRig(t, srv, append([]string{"--service-account-token-file=" + token}, extra...)...)
	reg, err := noop.New(nil, h.rig.provider())
	if err != nil {
		t.Fatal(err)
	}
	h.reg = reg
}

// listed is what GET /records gives the homelab's external-dns: the names it takes for its own.
func (h *homelab) listed(t *testing.T) []string {
	t.Helper()
	recs, err := h.reg.Records(context.Background())
	if err != nil {
		t.Fatalf("%s: GET /records: %v", h.name, err)
	}
	var names []string
	for _, e := range recs {
		if !slices.Contains(names, e.DNSName) {
			names = append(names, e.DNSName)
		}
	}
	slices.Sort(names)
	return names
}

// identityOf is the identity of the entries the router holds of these names, failing unless
// there is one entry a name, each of this cluster name and with one identity.
func identityOf(t *testing.T, srv *rhtestserver.Server, cluster string, hosts []string) string {
	t.Helper()
	id := ""
	for _, host := range hosts {
		var of []*pb.HostEntry
		for _, e := range srv.Store().List() {
			if e.GetHostname() == host {
				of = append(of, e)
			}
		}
		if len(of) != 1 || !slices.Contains(of[0].GetTags(), rhregistry.ClusterTag(cluster)) {
			t.Fatalf("%s on the router: %v; want one entry of cluster %s", host, of, cluster)
		}
		var ids []string
		for _, tag := range of[0].GetTags() {
			if v, ok := rhregistry.TagIdentity(tag); ok {
				ids = append(ids, v)
			}
		}
		if len(ids) != 1 || (id != "" && ids[0] != id) {
			t.Fatalf("%s carries the identities %v; want the one its webhook's other entries carry (%q)", host, ids, id)
		}
		id = ids[0]
	}
	return id
}

// versions are the router's entries, ID → version: a write to any of them changes it.
func versions(srv *rhtestserver.Server) map[string]string {
	out := map[string]string{}
	for _, e := range srv.Store().List() {
		out[e.GetId()+" "+e.GetHostname()] = e.GetVersion()
	}
	return out
}

// interval is one interval of the homelabs that are up: a grace period passes on their
// clocks, each external-dns runs its loop, and each webhook the sync of its own interval. When
// quiet, each must be shown its own names only, before its loop as its loop's GET sees them,
// and plan nothing; and none ever deletes or updates, since each publishes only new names.
func interval(t *testing.T, what string, quiet bool, labs ...*homelab) {
	t.Helper()
	ctx := context.Background()
	for _, h := range labs {
		h.rig.clock.Step(61 * time.Second)
	}
	for _, h := range labs {
		if got := h.listed(t); quiet && !slices.Equal(got, h.hosts) {
			t.Errorf("%s: %s's external-dns is shown %v; want its own names %v only", what, h.name, got, h.hosts)
		}
		ch, err := loop(ctx, h.reg, h.desired)
		if err != nil {
			t.Fatalf("%s: %s's external-dns: %v", what, h.name, err)
		}
		if quiet && ch.HasChanges() {
			t.Errorf("%s: %s's external-dns planned create %v, delete %v, update %v", what, h.name, ch.Create, ch.Delete, ch.UpdateNew)
		}
		if len(ch.Delete) > 0 || len(ch.UpdateOld) > 0 {
			t.Errorf("%s: %s's external-dns deleted %v and updated %v: it has never published anything to delete or update", what, h.name, ch.Delete, ch.UpdateOld)
		}
	}
	for _, h := range labs {
		if err := h.rig.hook.Controller.SyncNow(ctx); err != nil {
			t.Fatalf("%s: %s's webhook: %v", what, h.name, err)
		}
	}
}

// TestTwoHomelabsOnTheDefaultName: two households share a router, each with external-dns and
// the webhook sidecar exactly as docs/external-dns.md shows it, on the default cluster name
// external-dns and no --cluster-id. Each webhook derives an identity of its own from its
// pod's service-account token (issued by a real apiserver). At every interval each
// external-dns's GET /records lists its own names only, so its plan (--registry=noop,
// --policy=sync) never deletes the other's; and once settled neither writes anything. With one
// household away for several grace periods, the other writes nothing, and the away one's
// entries stay as they were; back with a new pod and a new token of the same service account,
// it has its own entries again without a write. Reinstalled (its service account created
// again), it has another identity, and its earlier entries are left alone, each name a
// conflict, until it is pinned to its earlier identity.
func TestTwoHomelabsOnTheDefaultName(t *testing.T) {
	cp, err := kubetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	srv := startServer(t)

	a := &homelab{name: "homelab-a", hosts: []string{"photos.home.lan", "web.home.lan"},
		desired: slices.Concat(ingress("web", []string{"10.0.1.1"}, "web.home.lan"), ingress("photos", []string{"10.0.1.2"}, "photos.home.lan"))}
	b := &homelab{name: "homelab-b", hosts: []string{"git.home.lan", "media.home.lan"},
		desired: slices.Concat(ingress("media", []string{"10.0.2.1"}, "media.home.lan"), ingress("git", []string{"10.0.2.2"}, "git.home.lan"))}
	a.start(t, srv, podToken(t, cp, a.name, sidecarPod))
	b.start(t, srv, podToken(t, cp, b.name, sidecarPod))

	// Each publishes its names, under its own identity beside the shared name.
	interval(t, "the first interval", false, a, b)
	idA, idB := identityOf(t, srv, "external-dns", a.hosts), identityOf(t, srv, "external-dns", b.hosts)
	if idA == idB {
		t.Fatalf("both webhooks write the identity %s: they would take each other's entries for their own", idA)
	}
	if n := len(srv.Store().List()); n != 4 {
		t.Fatalf("%d entries on the router, want the four names", n)
	}
	if got := a.listed(t); !slices.Equal(got, a.hosts) {
		t.Fatalf("%s is shown %v, want %v", a.name, got, a.hosts)
	}
	if got := b.listed(t); !slices.Equal(got, b.hosts) {
		t.Fatalf("%s is shown %v, want %v", b.name, got, b.hosts)
	}

	// Both up, several intervals: nobody writes.
	settled, writes := versions(srv), a.rig.writes()
	for i := 1; i <= 3; i++ {
		interval(t, fmt.Sprintf("interval %d with both up", i), true, a, b)
	}
	if n := a.rig.writes() - writes; n != 0 {
		t.Errorf("the two wrote %d times in three quiet intervals; want none", n)
	}
	if now := versions(srv); !maps.Equal(now, settled) {
		t.Errorf("entries changed in quiet intervals: %v, were %v", now, settled)
	}

	// homelab-b goes away (its pod deleted, the router kept) for five grace periods.
	b.rig.stop()
	for i := 1; i <= 5; i++ {
		interval(t, fmt.Sprintf("interval %d with %s away", i, b.name), true, a)
	}
	if n := a.rig.writes() - writes; n != 0 {
		t.Errorf("%s wrote %d times while %s was away; want none", a.name, n, b.name)
	}
	if now := versions(srv); !maps.Equal(now, settled) {
		t.Errorf("entries changed while %s was away: %v, were %v", b.name, now, settled)
	}
	if id := identityOf(t, srv, "external-dns", b.hosts); id != idB {
		t.Errorf("%s's names carry the identity %s after its absence, want %s", b.name, id, idB)
	}

	// It comes back in a new pod with a new token of its service account: the same identity,
	// so its entries are its own at once, and nothing is written.
	b.start(t, srv, podToken(t, cp, b.name, sidecarPod))
	for i := 1; i <= 2; i++ {
		interval(t, fmt.Sprintf("interval %d after %s's return", i, b.name), true, a, b)
	}
	if n := a.rig.writes() - writes; n != 0 {
		t.Errorf("%d writes after %s came back; want none", n, b.name)
	}
	if now := versions(srv); !maps.Equal(now, settled) {
		t.Errorf("entries changed after %s came back: %v, were %v", b.name, now, settled)
	}

	// It is reinstalled: its service account deleted and created again, with another UID, so
	// its webhook has another identity. Its external-dns is no longer shown its names and
	// publishes them again; the earlier entries carry an identity the webhook cannot tell from
	// another webhook's (their source: tags are hashed from the names), so they stay as they
	// are, each name a conflict, and homelab-a's stay as they are too.
	b.rig.stop()
	if err := cp.Client.CoreV1().ServiceAccounts(b.name).Delete(context.Background(), sidecarPod.ServiceAccountName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	metrics, err := harness.Addr()
	if err != nil {
		t.Fatal(err)
	}
	b.start(t, srv, podToken(t, cp, b.name, sidecarPod), "--metrics-address="+metrics)
	for i := 1; i <= 2; i++ {
		interval(t, fmt.Sprintf("interval %d after %s's reinstall", i, b.name), false, a, b)
	}
	if now := versions(srv); !maps.Equal(now, settled) {
		t.Errorf("entries after %s's reinstall: %v, were %v; want every entry as it was", b.name, now, settled)
	}
	if got := b.listed(t); len(got) != 0 {
		t.Errorf("%s reinstalled is shown %v; want none of the earlier identity's names", b.name, got)
	}
	if n := conflicts(t, b, metrics); n != "2" {
		t.Errorf("%s reinstalled: %s conflicts, want its two names", b.name, n)
	}

	// Pinned to its earlier identity, as docs/external-dns.md advises, it has its entries
	// back without a write.
	b.rig.stop()
	b.start(t, srv, podToken(t, cp, b.name, sidecarPod), "--cluster-id="+idB)
	writes = a.rig.writes()
	for i := 1; i <= 2; i++ {
		interval(t, fmt.Sprintf("interval %d with %s pinned to %s", i, b.name, idB), true, a, b)
	}
	if n := a.rig.writes() - writes; n != 0 || !maps.Equal(versions(srv), settled) {
		t.Errorf("%d writes in two quiet intervals with %s pinned to its earlier identity; want none", n, b.name)
	}
}

// conflicts is the number of names h's webhook turned down at its external-dns's next loop, as
// its metrics at metrics say: the names are asked for at each loop, and turned down each time.
func conflicts(t *testing.T, h *homelab, metrics string) string {
	t.Helper()
	if _, err := loop(context.Background(), h.reg, h.desired); err != nil {
		t.Fatalf("%s's external-dns: %v", h.name, err)
	}
	_, exported := get(t, "http://"+metrics+"/metrics")
	for _, line := range strings.Split(exported, "\n") {
		if n, ok := strings.CutPrefix(line, "router_hosts_operator_hostname_conflicts "); ok {
			return n
		}
	}
	t.Fatalf("%s's /metrics has no hostname_conflicts:\n%s", h.name, exported)
	return ""
}

// entryIDs are the router's entries' IDs by hostname.
func entryIDs(srv *rhtestserver.Server) map[string]string {
	out := map[string]string{}
	for _, e := range srv.Store().List() {
		out[e.GetHostname()] = e.GetId()
	}
	return out
}

// TestUpgradingHomelabsThatSharedTheName: two households ran the webhook before it had an
// identity, both on the default cluster name, so their entries carry cluster:external-dns and
// nothing says whose each is. Each upgrades with a --cluster-name of its own, as
// docs/external-dns.md advises: its webhook takes up in place (the same entry, never deleted
// and written again) only the names its external-dns publishes, and leaves the other's alone
// for as long as the other takes to upgrade; then neither writes anything.
func TestUpgradingHomelabsThatSharedTheName(t *testing.T) {
	cp, err := kubetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	srv := startServer(t)
	ctx := context.Background()
	a := &homelab{name: "homelab-a", hosts: []string{"photos.home.lan", "web.home.lan"},
		desired: slices.Concat(ingress("web", []string{"10.0.1.1"}, "web.home.lan"), ingress("photos", []string{"10.0.1.2"}, "photos.home.lan"))}
	b := &homelab{name: "homelab-b", hosts: []string{"git.home.lan", "media.home.lan"},
		desired: slices.Concat(ingress("media", []string{"10.0.2.1"}, "media.home.lan"), ingress("git", []string{"10.0.2.2"}, "git.home.lan"))}

	// The entries as the earlier webhook wrote them: this one's tags without the identity.
	earlier := startRig(t, srv, "--cluster-id=0e1d2c3b")
	reg, err := noop.New(nil, earlier.provider())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loop(ctx, reg, slices.Concat(a.desired, b.desired)); err != nil {
		t.Fatal(err)
	}
	earlier.stop()
	recs, err := earlier.client.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var strip []rhplan.Change
	for i := range recs {
		old := &recs[i]
		was := *old
		was.Tags = slices.DeleteFunc(slices.Clone(old.Tags), func(tag string) bool { return strings.HasPrefix(tag, rhregistry.PrefixClusterID) })
		strip = append(strip, rhplan.Change{Action: rhplan.Update, Old: old, New: &was})
	}
	if err := rhplan.ErrorOf(earlier.client.ApplyChanges(ctx, strip)); err != nil {
		t.Fatal(err)
	}
	for _, e := range srv.Store().List() {
		if !slices.Contains(e.GetTags(), rhregistry.ClusterTag("external-dns")) || slices.ContainsFunc(e.GetTags(), func(tag string) bool {
			_, ok := rhregistry.TagIdentity(tag)
			return ok
		}) {
			t.Fatalf("%s: tags %v; want cluster:external-dns and no identity, as the earlier webhook wrote", e.GetHostname(), e.GetTags())
		}
	}
	ids := entryIDs(srv)
	if len(ids) != 4 {
		t.Fatalf("the earlier webhook's entries: %v, want the four names", ids)
	}

	// homelab-a upgrades under a name of its own; homelab-b still runs (or is away): its
	// entries are left as they are.
	settledB := versions(srv)
	a.start(t, srv, podToken(t, cp, a.name, sidecarPod), "--cluster-name="+a.name)
	interval(t, "homelab-a's first interval", false, a)
	for i := 1; i <= 3; i++ {
		interval(t, fmt.Sprintf("homelab-a's interval %d", i), true, a)
	}
	for k, v := range versions(srv) {
		if slices.ContainsFunc(b.hosts, func(h string) bool { return strings.HasSuffix(k, " "+h) }) && settledB[k] != v {
			t.Errorf("homelab-b's %s was written by homelab-a's webhook (version %s, was %s)", k, v, settledB[k])
		}
	}
	if !maps.Equal(entryIDs(srv), ids) {
		t.Fatalf("entries %v after homelab-a's upgrade, were %v: want each taken up in place", entryIDs(srv), ids)
	}
	idA := identityOf(t, srv, a.name, a.hosts)

	// homelab-b upgrades the same way; then both are quiet.
	b.start(t, srv, podToken(t, cp, b.name, sidecarPod), "--cluster-name="+b.name)
	interval(t, "homelab-b's first interval", false, a, b)
	settled, writes := versions(srv), a.rig.writes()
	for i := 1; i <= 3; i++ {
		interval(t, fmt.Sprintf("interval %d with both upgraded", i), true, a, b)
	}
	if idB := identityOf(t, srv, b.name, b.hosts); idB == idA {
		t.Errorf("both webhooks write the identity %s", idA)
	}
	if !maps.Equal(entryIDs(srv), ids) {
		t.Errorf("entries %v after both upgrades, were %v: want each taken up in place", entryIDs(srv), ids)
	}
	if n := a.rig.writes() - writes; n != 0 || !maps.Equal(versions(srv), settled) {
		t.Errorf("%d writes in three quiet intervals after both upgrades; want none", n)
	}
}

// TestANameBothHomelabsPublish: two households on the default name both publish one name. The
// router holds one entry of it, one of the two's, and the webhooks do not take it from each
// other at every interval: once settled nothing is written, and each keeps its other names.
func TestANameBothHomelabsPublish(t *testing.T) {
	cp, err := kubetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	srv := startServer(t)
	a := &homelab{name: "homelab-a", desired: slices.Concat(ingress("web", []string{"10.0.1.1"}, "web.home.lan"), ingress("wiki", []string{"10.0.1.9"}, "wiki.home.lan"))}
	b := &homelab{name: "homelab-b", desired: slices.Concat(ingress("media", []string{"10.0.2.1"}, "media.home.lan"), ingress("wiki", []string{"10.0.2.9"}, "wiki.home.lan"))}
	a.start(t, srv, podToken(t, cp, a.name, sidecarPod))
	b.start(t, srv, podToken(t, cp, b.name, sidecarPod))

	interval(t, "the first interval", false, a, b)
	interval(t, "the second interval", false, a, b)
	var wiki []string
	for _, e := range srv.Store().List() {
		if e.GetHostname() == "wiki.home.lan" {
			wiki = append(wiki, e.GetIpAddress())
		}
	}
	if len(wiki) != 1 || (wiki[0] != "10.0.1.9" && wiki[0] != "10.0.2.9") {
		t.Fatalf("wiki.home.lan on the router: %v; want one entry, at one of the two's addresses", wiki)
	}
	idA, idB := identityOf(t, srv, "external-dns", []string{"web.home.lan"}), identityOf(t, srv, "external-dns", []string{"media.home.lan"})
	holder := identityOf(t, srv, "external-dns", []string{"wiki.home.lan"})
	if holder != idA && holder != idB || idA == idB {
		t.Fatalf("wiki.home.lan is held by %s; homelab-a is %s, homelab-b %s", holder, idA, idB)
	}
	settled, writes := versions(srv), a.rig.writes()
	for i := 1; i <= 3; i++ {
		interval(t, fmt.Sprintf("interval %d", i), false, a, b)
	}
	if n := a.rig.writes() - writes; n != 0 || !maps.Equal(versions(srv), settled) {
		t.Errorf("%d writes in three intervals once settled; want none (entries %v, were %v)", n, versions(srv), settled)
	}
}

// TestARestartedHomelabPublishesTheOthersName: two households on the default name, each with
// its own service account. homelab-b's webhook restarts, and its external-dns now publishes
// homelab-a's name at an address of its own. The entry's source: tag is hashed from the name,
// the same in both webhooks, so it proves nothing: homelab-b's webhook, having seen nobody
// write since it started, still leaves homelab-a's entry alone. The entry is untouched,
// homelab-a's external-dns is still shown it, and homelab-b gets a conflict.
func TestARestartedHomelabPublishesTheOthersName(t *testing.T) {
	cp, err := kubetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	srv := startServer(t)
	a := &homelab{name: "homelab-a", hosts: []string{"photos.home.lan", "web.home.lan"},
		desired: slices.Concat(ingress("web", []string{"10.0.1.1"}, "web.home.lan"), ingress("photos", []string{"10.0.1.2"}, "photos.home.lan"))}
	b := &homelab{name: "homelab-b", hosts: []string{"git.home.lan", "media.home.lan"},
		desired: slices.Concat(ingress("media", []string{"10.0.2.1"}, "media.home.lan"), ingress("git", []string{"10.0.2.2"}, "git.home.lan"))}
	a.start(t, srv, podToken(t, cp, a.name, sidecarPod))
	b.start(t, srv, podToken(t, cp, b.name, sidecarPod))
	interval(t, "the first interval", false, a, b)
	interval(t, "the second interval", true, a, b)
	idA := identityOf(t, srv, "external-dns", a.hosts)
	settled, ids := versions(srv), entryIDs(srv)

	// homelab-b's pod restarts (the same service account, so the same identity), and its
	// external-dns now finds an Ingress of homelab-a's name too.
	b.rig.stop()
	b.desired = slices.Concat(b.desired, ingress("web", []string{"10.0.2.9"}, "web.home.lan"))
	metrics, err := harness.Addr()
	if err != nil {
		t.Fatal(err)
	}
	b.start(t, srv, podToken(t, cp, b.name, sidecarPod), "--metrics-address="+metrics)
	for i := 1; i <= 3; i++ {
		interval(t, fmt.Sprintf("interval %d after %s's restart", i, b.name), false, a, b)
	}
	if now := versions(srv); !maps.Equal(now, settled) || !maps.Equal(entryIDs(srv), ids) {
		t.Errorf("entries after %s's restart: %v, were %v; want %s's web.home.lan untouched", b.name, now, settled, a.name)
	}
	var web []string
	for _, e := range srv.Store().List() {
		if e.GetHostname() == "web.home.lan" {
			web = append(web, e.GetIpAddress())
		}
	}
	if !slices.Equal(web, []string{"10.0.1.1"}) {
		t.Errorf("web.home.lan on the router: %v; want %s's 10.0.1.1 alone", web, a.name)
	}
	if id := identityOf(t, srv, "external-dns", []string{"web.home.lan"}); id != idA {
		t.Errorf("web.home.lan carries the identity %s; want %s's %s", id, a.name, idA)
	}
	if got := a.listed(t); !slices.Equal(got, a.hosts) {
		t.Errorf("%s is shown %v; want its own names %v", a.name, got, a.hosts)
	}
	if got := b.listed(t); !slices.Equal(got, b.hosts) {
		t.Errorf("%s is shown %v; want its own names %v", b.name, got, b.hosts)
	}
	if n := conflicts(t, b, metrics); n != "1" {
		t.Errorf("%s: %s conflicts; want one, web.home.lan, which %s holds", b.name, n, a.name)
	}
}
