package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// An admin keeps nas.lan on the router by hand, and lets only the infra namespace adopt
// hand-made entries (the RouterHostsConfig's tenancy); a tenant's Ingress claims nas.lan. The
// flags name the same router, with no tenancy and another cluster name: what the operator would
// do on them is adopt nas.lan and re-point it at the tenant. These tests live through what
// happens to the object, with the operator running its loop in-process, and assert what
// reached the router.

// lastGoodInstall is an operator run as namesakeInstall runs it (cluster "default" by the
// flags, which name the test server with its TLS files), with a RouterHostsConfig that names
// the same router through the Secret router-mtls, the cluster homelab and adoption for infra
// alone; the hand-made nas.lan; the tenant's claim on it and an Ingress of its own, web.lan.
func lastGoodInstall(t *testing.T) (in *namesakeInstall, srv *rhtestserver.Server, nas *pb.HostEntry) {
	t.Helper()
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatalf("test server: %v", err)
	}
	t.Cleanup(srv.Stop)
	in = newNamesakeInstall(t, "home", cp, kubeconfig, srv)
	in.h.mtlsSecret("router-mtls", srv.CertFile(), srv.KeyFile())
	patchConfig(t, in.h.ns, map[string]any{"clusterName": "homelab", "tenancy": map[string]any{"adoptionNamespaces": []any{"infra"}},
		"server": map[string]any{"endpoint": srv.Addr(), "tlsSecretRef": map[string]any{"name": "router-mtls", "namespace": in.h.ns}}})
	nas, err = srv.Store().Add(&pb.AddHostRequest{IpAddress: "192.168.1.10", Hostname: "nas.lan", Tags: []string{"manual"}, Comment: proto.String("the NAS, by hand")})
	if err != nil {
		t.Fatal(err)
	}
	claim := in.ingress("nas", "nas.lan", "10.90.0.9", nil)
	in.ingress("web", "web.lan", "10.90.0.1", nil)

	// On the object: web.lan is written under homelab; the claim on nas.lan is a conflict.
	in.start(t)
	waitFor(t, 30*time.Second, func() bool { return len(srv.Store().Lookup("web.lan")) == 1 })
	in.wantTags(t, onlyEntry(t, srv, "web.lan"), "homelab")
	in.waitObjectEvent(t, string(claim.UID), events.HostnameConflict)
	waitFor(t, 15*time.Second, func() bool { return in.metric(t, "router_hosts_operator_hostname_conflicts") == 1 })
	sameOnRouter(t, "on the object", map[string]*pb.HostEntry{nas.GetId(): nas}, srv)
	return in, srv, nas
}

// TestARestartOnAnUnusableConfigWaits: the object's Secret is deleted and the operator
// restarts. It waits, as it waits for a router not named yet: nothing written, the hand-made
// entry exactly as it was, and the log, /routerz, router_configured and the object's status
// saying why. The Secret restored, it syncs under the object's rules, without a restart.
func TestARestartOnAnUnusableConfigWaits(t *testing.T) {
	in, srv, nas := lastGoodInstall(t)
	name := in.h.ns

	// The Secret goes (a rotation gone wrong), and the pod restarts; an Ingress is added
	// meanwhile, so that a sync would have something to write.
	in.stop()
	if err := in.h.cp.Client.CoreV1().Secrets(name).Delete(context.Background(), "router-mtls", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	in.ingress("new", "new.lan", "10.90.0.2", nil)
	before, writes, syncs := snapshotRouter(srv), srv.Service().WriteCalls(), in.syncs.Load()
	in.hook.Reset()
	in.start(t)

	// Several intervals: a sync, had one started, would have written new.lan, adopted nas.lan
	// and renamed web.lan to the flags' cluster.
	for start := time.Now(); time.Since(start) < 4*nsInterval; time.Sleep(100 * time.Millisecond) {
		if n := srv.Service().WriteCalls() - writes; n != 0 {
			t.Fatalf("waiting on an unusable RouterHostsConfig, %d writes reached the router: %v", n, srv.Service().CallCounts())
		}
	}
	sameOnRouter(t, "while waiting", before, srv)

	// Its status says why, and that nothing of it is in use.
	waitFor(t, 20*time.Second, func() bool {
		st, _ := configStatus(t, name)
		c := condition(st, v1alpha1.ConditionReady)
		return c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonInvalidConfig && strings.Contains(c.Message, "router-mtls") &&
			strings.Contains(c.Message, "does not fall back to the flags") && st.Endpoint == ""
	})
	if n := in.syncs.Load() - syncs; n != 0 {
		t.Errorf("%d syncs ran while waiting, want none", n)
	}
	if v := in.metric(t, "router_hosts_operator_router_configured"); v != 0 {
		t.Errorf("router_configured = %v while waiting, want 0", v)
	}
	p := &process{addr: in.addr}
	if body, err := p.get("/routerz"); err == nil || !strings.Contains(body, "router-mtls") {
		t.Errorf("/routerz = %q, %v; want a 503 naming the Secret", body, err)
	}
	if body, err := p.get("/readyz"); err != nil || !strings.Contains(body, "leader") {
		t.Errorf("/readyz = %q, %v; want ready, leading", body, err)
	}
	if w := warnedAbout(in, name, "router-mtls"); len(w) != 1 || !strings.Contains(w[0], "not usable") {
		t.Errorf("the log says %q, want one warning that the RouterHostsConfig is not usable", w)
	}
	for _, e := range in.hook.AllEntries() {
		if _, named := e.Data["cluster"]; e.Message == "router-hosts-operator starting" && (named || e.Data["waiting"] != true) {
			t.Errorf("the start is logged with %v, want it waiting and naming no cluster (the flags' is not in use)", e.Data)
		}
	}

	// The Secret is back: the object applies, its rules with it. new.lan is written under
	// homelab, and that is all: nas.lan stays the admin's.
	in.h.mtlsSecret("router-mtls", srv.CertFile(), srv.KeyFile())
	waitFor(t, 30*time.Second, func() bool { return len(srv.Store().Lookup("new.lan")) == 1 })
	s0 := in.syncs.Load()
	waitFor(t, 15*time.Second, func() bool { return in.syncs.Load() >= s0+3 })
	in.wantTags(t, onlyEntry(t, srv, "new.lan"), "homelab")
	if n := srv.Service().WriteCalls() - writes; n != 1 {
		t.Errorf("%d writes since the restart, want one (the create of new.lan): %v", n, srv.Service().CallCounts())
	}
	sameOnRouter(t, "once the Secret is back", before, srv)
	if got := onlyEntry(t, srv, "nas.lan"); !proto.Equal(got, nas) {
		t.Errorf("nas.lan is %s, want it as the admin wrote it: %s", entryText(got), entryText(nas))
	}
	if v := in.metric(t, "router_hosts_operator_hostname_conflicts"); v != 1 {
		t.Errorf("hostname_conflicts = %v, want 1 (the tenant's claim on nas.lan)", v)
	}
	if v := in.metric(t, "router_hosts_operator_router_configured"); v != 1 {
		t.Errorf("router_configured = %v once the Secret is back, want 1", v)
	}
	waitFor(t, 20*time.Second, func() bool {
		st, _ := configStatus(t, name)
		return condition(st, v1alpha1.ConditionReady).Status == metav1.ConditionTrue && st.Endpoint == srv.Addr()
	})
	waitFor(t, 10*time.Second, func() bool { _, err := p.get("/routerz"); return err == nil })
}

// TestTheConfigDeletedWhileRunningKeepsTheLastGood: the RouterHostsConfig and its Secret are
// deleted (a GitOps tool pruning them) while the operator runs. It keeps the object's
// configuration, says so, and keeps syncing under it: the tenant's claim is still refused, a
// new entry carries the object's cluster name. A restart without the object is what applies
// the flags.
func TestTheConfigDeletedWhileRunningKeepsTheLastGood(t *testing.T) {
	in, srv, nas := lastGoodInstall(t)
	name := in.h.ns
	before, writes := snapshotRouter(srv), srv.Service().WriteCalls()

	if err := configs().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := in.h.cp.Client.CoreV1().Secrets(name).Delete(context.Background(), "router-mtls", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Syncs go on under the object's settings: after.lan is written under homelab, and that
	// is all; nas.lan stays the admin's.
	in.ingress("after", "after.lan", "10.90.0.3", nil)
	waitFor(t, 30*time.Second, func() bool { return len(srv.Store().Lookup("after.lan")) == 1 })
	s0 := in.syncs.Load()
	waitFor(t, 15*time.Second, func() bool { return in.syncs.Load() >= s0+3 })
	in.wantTags(t, onlyEntry(t, srv, "after.lan"), "homelab")
	if n := srv.Service().WriteCalls() - writes; n != 1 {
		t.Errorf("%d writes since the deletion, want one (the create of after.lan): %v", n, srv.Service().CallCounts())
	}
	sameOnRouter(t, "after the deletion", before, srv)
	if v := in.metric(t, "router_hosts_operator_hostname_conflicts"); v != 1 {
		t.Errorf("hostname_conflicts = %v, want 1 (the tenant's claim on nas.lan)", v)
	}
	// And it says so, once.
	var gone []string
	for _, e := range in.hook.AllEntries() {
		if strings.Contains(e.Message, "RouterHostsConfig is gone") && e.Level == logrus.WarnLevel && e.Data["config"] == name && e.Data["cluster"] == "homelab" {
			gone = append(gone, e.Message)
		}
	}
	if len(gone) != 1 || !strings.Contains(gone[0], "the last good configuration stays in use") {
		t.Errorf("the log says %q; want one warning that the RouterHostsConfig is gone and the last good configuration (homelab) stays", gone)
	}

	// A restart without the object: the flags, on purpose, and with them what they allow,
	// which the steps above prove the operator did not do: their cluster name is written, and
	// the tenant adopts nas.lan.
	in.stop()
	in.start(t)
	waitFor(t, 30*time.Second, func() bool {
		web, adopted := srv.Store().Lookup("web.lan"), srv.Store().Lookup("nas.lan")
		return len(web) == 1 && clusterOf(web[0]) == "default" && len(adopted) == 1 && adopted[0].GetIpAddress() == "10.90.0.9"
	})
	if got := onlyEntry(t, srv, "nas.lan"); got.GetId() != nas.GetId() || !slices.Contains(got.GetTags(), registry.TagPreExisting) {
		t.Errorf("nas.lan on the flags is %s, want the admin's entry adopted", entryText(got))
	}
}

// snapshotRouter is every entry on the router, by ID.
func snapshotRouter(srv *rhtestserver.Server) map[string]*pb.HostEntry {
	out := map[string]*pb.HostEntry{}
	for _, e := range srv.Store().List() {
		out[e.GetId()] = proto.Clone(e).(*pb.HostEntry)
	}
	return out
}

// sameOnRouter fails unless every entry of want is on the router exactly as it was.
func sameOnRouter(t *testing.T, when string, want map[string]*pb.HostEntry, srv *rhtestserver.Server) {
	t.Helper()
	now := snapshotRouter(srv)
	for id, w := range want {
		if g := now[id]; g == nil {
			t.Errorf("%s: %s (%s) is gone", when, id, w.GetHostname())
		} else if !proto.Equal(g, w) {
			t.Errorf("%s: %s changed:\n was %s\n now %s", when, w.GetHostname(), entryText(w), entryText(g))
		}
	}
}

// warnedAbout is what the installation logged at warning level about the RouterHostsConfig
// name, with an error naming what.
func warnedAbout(in *namesakeInstall, name, what string) []string {
	var out []string
	for _, e := range in.hook.AllEntries() {
		if e.Level == logrus.WarnLevel && e.Data["config"] == name && strings.Contains(fmt.Sprint(e.Data[logrus.ErrorKey]), what) {
			out = append(out, e.Message)
		}
	}
	return out
}

// clusterOf is the name in e's cluster: tag.
func clusterOf(e *pb.HostEntry) string {
	for _, t := range e.GetTags() {
		if name, _, ok := registry.ParseClusterTag(t); ok {
			return name
		}
	}
	return ""
}
