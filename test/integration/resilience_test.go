package integration

// Resilience as a user lives it: one hostname the server will not take never holds up the
// others; entries that leave are reported on the objects that let them go; a client
// certificate the router refuses is named for what it is and waits for a new certificate
// instead of hammering the router.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube/clientset"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// rsEvents lists the events recorded about one object.
func rsEvents(t *testing.T, ns, uid string) []corev1.Event {
	t.Helper()
	list, err := cp.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + uid})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// rsEvent returns the first event of reason about the object, nil when there is none.
func rsEvent(t *testing.T, ns, uid, reason string) *corev1.Event {
	t.Helper()
	for _, e := range rsEvents(t, ns, uid) {
		if e.Reason == reason {
			return &e
		}
	}
	return nil
}

// rsCondition returns the reason and message of a HostMapping's Synced condition.
func rsCondition(u *unstructured.Unstructured) (reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Synced" {
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
		}
	}
	return reason, message
}

// rsLookup reads the server's entries for hostname from its store, without an RPC, so that
// watching the server adds nothing to the call counts under test.
func rsLookup(h *harness, hostname string) []*pb.HostEntry { return h.srv.Store().Lookup(hostname) }

// rsSettle waits until the operator has made no ListHosts call (no sync) for a second and a
// half: the sync a status write triggers has run, and what follows is the operator at rest.
func rsSettle(t *testing.T, h *harness) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	last, since := h.srv.Service().Calls(inmemory.MethodList), time.Now()
	for time.Since(since) < 1500*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("the operator never came to rest: calls %v", h.srv.Service().CallCounts())
		}
		time.Sleep(50 * time.Millisecond)
		if n := h.srv.Service().Calls(inmemory.MethodList); n != last {
			last, since = n, time.Now()
		}
	}
}

// rsCreateAndTime creates an Ingress for hostname and returns how long its entry took to
// appear on the server.
func rsCreateAndTime(t *testing.T, h *harness, name, hostname, ip string) (*networkingv1.Ingress, time.Duration) {
	t.Helper()
	start := time.Now()
	ing := h.create(ingress(h.ns, name, enabled("ip-address", ip), hostname))
	waitFor(t, 10*time.Second, func() bool { e := rsLookup(h, hostname); return len(e) == 1 && e[0].GetIpAddress() == ip })
	return ing, time.Since(start)
}

func TestOneRefusedHostnameNeverSlowsTheOthers(t *testing.T) {
	for _, tc := range []struct {
		name string
		// tags of the user's hand-made entry for bad.lan, which the HostMapping adopts.
		tags []string
		// fault makes the server refuse every UpdateHost (the adoption is one).
		fault error
		// updates is how many UpdateHost calls the adoption may cost in all: once, when it is
		// first tried; never again per event.
		updates int64
		// refusal is a part of the SyncFailed message.
		refusal string
	}{
		{name: "refused by the server", tags: []string{"manual"}, updates: 1, refusal: "locked by the router's administrator",
			fault: status.Error(codes.FailedPrecondition, "entry bad.lan is locked by the router's administrator")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, options{})
			found, err := h.srv.Store().Add(&pb.AddHostRequest{IpAddress: "192.168.50.7", Hostname: "bad.lan", Tags: tc.tags, Comment: proto.String("by hand")})
			if err != nil {
				t.Fatal(err)
			}
			if tc.fault != nil {
				h.srv.Service().SetFault(inmemory.MethodUpdate, tc.fault, 0)
			}
			p := startOperatorEnv(t, h, nil, "--interval=1h", "--source=ingress", "--source=hostmapping", "--namespace="+h.ns)
			waitFor(t, 10*time.Second, func() bool { return p.metric(t, "router_hosts_operator_sync_duration_seconds_count") >= 1 })

			// The user asks for bad.lan; its write is refused and reported on the HostMapping:
			// the metric, a SyncFailed Warning, the WriteFailed condition.
			hm := h.hostMapping("bad", map[string]any{"hostname": "bad.lan", "ipAddress": "10.60.0.1"})
			uid := string(hm.GetUID())
			waitFor(t, 10*time.Second, func() bool {
				reason, _ := rsCondition(h.getHM("bad"))
				return p.metric(t, "router_hosts_operator_failed_hostnames") == 1 && rsEvent(t, h.ns, uid, events.SyncFailed) != nil &&
					reason == "WriteFailed"
			})
			ev := rsEvent(t, h.ns, uid, events.SyncFailed)
			if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, "adopt bad.lan") || !strings.Contains(ev.Message, tc.refusal) {
				t.Fatalf("SyncFailed event = %s %q; want a Warning naming the adoption of bad.lan and %q", ev.Type, ev.Message, tc.refusal)
			}
			if _, msg := rsCondition(h.getHM("bad")); !strings.Contains(msg, tc.refusal) {
				t.Fatalf("WriteFailed condition message %q does not say why (%q)", msg, tc.refusal)
			}

			// At rest, nothing retries it: no sync at all for three seconds (a failure backoff
			// would retry after 1 s and 2 s).
			rsSettle(t, h)
			calls := h.srv.Service().CallCounts()
			time.Sleep(3 * time.Second)
			if now := h.srv.Service().CallCounts(); now[inmemory.MethodList] != calls[inmemory.MethodList] || now[inmemory.MethodUpdate] != calls[inmemory.MethodUpdate] {
				t.Fatalf("the operator retried on its own while nothing changed: calls %v → %v", calls, now)
			}

			// The user's next objects arrive at event speed: good.lan, then three unrelated ones.
			_, d := rsCreateAndTime(t, h, "good", "good.lan", "10.60.0.2")
			t.Logf("good.lan reached the server %v after its Ingress was created", d.Round(time.Millisecond))
			if d > 3*time.Second {
				t.Fatalf("good.lan took %v to reach the server while bad.lan was refused; want under 3 s", d)
			}
			for i := 1; i <= 3; i++ {
				_, d := rsCreateAndTime(t, h, fmt.Sprintf("other%d", i), fmt.Sprintf("other%d.lan", i), fmt.Sprintf("10.60.1.%d", i))
				t.Logf("other%d.lan reached the server after %v", i, d.Round(time.Millisecond))
				if d > 3*time.Second {
					t.Fatalf("other%d.lan took %v; want under 3 s", i, d)
				}
			}

			// The user's entry is exactly as they made it.
			now, err := h.srv.Store().Get(found.GetId())
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(now, found) {
				t.Fatalf("the hand-made entry changed:\n  %s\nwant it untouched\n  %s", inmemory.String(now), inmemory.String(found))
			}
			if n := len(rsLookup(h, "bad.lan")); n != 1 {
				t.Fatalf("%d entries for bad.lan, want the user's one", n)
			}
			// bad.lan was tried once, not per event.
			if n := h.srv.Service().Calls(inmemory.MethodUpdate); n != tc.updates {
				t.Fatalf("server saw %d UpdateHost calls after four events; want %d (bad.lan is retried only at the interval)", n, tc.updates)
			}
			if n := p.metric(t, "router_hosts_operator_router_hosts_requests_total", `method="UpdateHost"`); n != float64(tc.updates) {
				t.Fatalf("router_hosts_requests_total{method=UpdateHost} = %v, want %d", n, tc.updates)
			}
			// Still reported: the metric and the condition hold, the warning was sent once.
			if v := p.metric(t, "router_hosts_operator_failed_hostnames"); v != 1 {
				t.Fatalf("failed_hostnames = %v after the other syncs, want 1", v)
			}
			if reason, _ := rsCondition(h.getHM("bad")); reason != "WriteFailed" {
				t.Fatalf("bad's condition is %s after the other syncs, want WriteFailed", reason)
			}
			if n := eventsFor(t, h.ns, uid)[events.SyncFailed]; n != 1 {
				t.Fatalf("%d SyncFailed events on bad, want one (a standing warning is sent once)", n)
			}
			good, err := cp.Client.NetworkingV1().Ingresses(h.ns).Get(context.Background(), "good", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n := eventsFor(t, h.ns, string(good.UID))[events.SyncFailed]; n != 0 {
				t.Fatalf("good got %d SyncFailed events", n)
			}
		})
	}
}

func TestEntryDeletedEvent(t *testing.T) {
	var logBuf lockedLog
	log := logrus.New()
	log.SetOutput(&logBuf)
	rec, stop := events.New(clientset.EventSink(cp.Client), harnessInstance(t), log)
	defer stop()
	rec.SetLeading(true)
	h := newHarness(t, options{grace: time.Minute, reporters: []controller.Reporter{rec}, warner: rec})

	// web keeps web.lan and drops old.lan; nas keeps keep.lan and drops nas.lan, an entry it
	// adopted; gone is deleted.
	found := h.handMade("nas.lan", "192.168.50.9", nil, []string{"manual"}, "by hand")
	web := h.create(ingress(h.ns, "web", enabled("ip-address", "10.61.0.1"), "web.lan", "old.lan"))
	nas := h.create(ingress(h.ns, "nas", enabled("ip-address", "10.61.0.2"), "keep.lan", "nas.lan"))
	gone := h.create(ingress(h.ns, "gone", enabled("ip-address", "10.61.0.3"), "gone.lan"))
	for host, ip := range map[string]string{"web.lan": "10.61.0.1", "old.lan": "10.61.0.1", "keep.lan": "10.61.0.2", "nas.lan": "10.61.0.2", "gone.lan": "10.61.0.3"} {
		h.waitHost(host, ip)
	}
	h.sync()
	oldEntry, goneEntry := h.one("old.lan"), h.one("gone.lan")
	if h.one("nas.lan").ID != found.ID {
		t.Fatal("nas.lan was not adopted")
	}
	waitFor(t, 10*time.Second, func() bool { return eventsFor(t, h.ns, string(nas.UID))[events.EntryAdopted] == 1 })

	h.update(web, func(i *networkingv1.Ingress) { i.Spec.Rules = i.Spec.Rules[:1] })
	h.update(nas, func(i *networkingv1.Ingress) { i.Spec.Rules = i.Spec.Rules[:1] })
	h.delete(gone)
	for _, host := range []string{"old.lan", "nas.lan", "gone.lan"} {
		h.waitGone(host)
	}
	if out := h.sync(); len(out.Changes) != 3 {
		t.Fatalf("changes = %v, want three marks", out.Changes)
	}
	for _, o := range []*networkingv1.Ingress{web, nas} {
		waitFor(t, 10*time.Second, func() bool { return eventsFor(t, h.ns, string(o.UID))[events.EntryScheduledForDeletion] == 1 })
	}

	// The grace period passes: old.lan is deleted, nas.lan given back, gone.lan deleted.
	h.clock.Step(2 * time.Minute)
	out := h.sync()
	acts := map[string]plan.Action{}
	for _, c := range out.Changes {
		acts[c.Hostname()] = c.Action
	}
	if len(out.Changes) != 3 || acts["old.lan"] != plan.Delete || acts["nas.lan"] != plan.Release || acts["gone.lan"] != plan.Delete {
		t.Fatalf("changes = %v, want old.lan and gone.lan deleted, nas.lan released", out.Changes)
	}
	if len(h.entries("old.lan")) != 0 || len(h.entries("gone.lan")) != 0 {
		t.Fatal("old.lan or gone.lan outlived the grace period")
	}
	sameAsFound(t, h.byID(found.ID), found)

	var webDeleted, nasDeleted *corev1.Event
	waitFor(t, 10*time.Second, func() bool {
		webDeleted, nasDeleted = rsEvent(t, h.ns, string(web.UID), events.EntryDeleted), rsEvent(t, h.ns, string(nas.UID), events.EntryDeleted)
		return webDeleted != nil && nasDeleted != nil
	})
	if webDeleted.Type != corev1.EventTypeNormal || !strings.Contains(webDeleted.Message, "old.lan") ||
		!strings.Contains(webDeleted.Message, oldEntry.ID) || !strings.Contains(webDeleted.Message, "deleted") {
		t.Errorf("web's EntryDeleted = %s %q; want Normal, naming old.lan and its id, deleted", webDeleted.Type, webDeleted.Message)
	}
	if nasDeleted.Type != corev1.EventTypeNormal || !strings.Contains(nasDeleted.Message, "nas.lan") || !strings.Contains(nasDeleted.Message, "released") {
		t.Errorf("nas's EntryDeleted = %s %q; want Normal, saying nas.lan was released", nasDeleted.Type, nasDeleted.Message)
	}

	// A deleted object gets no event (nobody can read it); the log says what became of its entry.
	time.Sleep(time.Second) // the broadcaster writes asynchronously
	got := eventsFor(t, h.ns, string(gone.UID))
	if got[events.EntryScheduledForDeletion]+got[events.EntryDeleted] != 0 {
		t.Errorf("the deleted Ingress got events about its entry: %v", got)
	}
	for _, o := range []*networkingv1.Ingress{web, nas} {
		if n := eventsFor(t, h.ns, string(o.UID))[events.EntryDeleted]; n != 1 {
			t.Errorf("%s: %d EntryDeleted events, want 1", o.Name, n)
		}
	}
	logged := logBuf.logText()
	var told bool
	for _, line := range strings.Split(logged, "\n") {
		told = told || strings.Contains(line, "entry of a deleted object") && strings.Contains(line, "action=delete") &&
			strings.Contains(line, "hostname=gone.lan") && strings.Contains(line, goneEntry.ID)
	}
	if !told {
		t.Errorf("the deletion of gone.lan was not logged:\n%s", logged)
	}
	h.quiet("after the deletions")
}

// rsWriteSecret writes files into dir as the kubelet updates a mounted Secret: a fresh
// timestamped directory, then one atomic rename of the ..data symlink; each file is a
// symlink through ..data.
func rsWriteSecret(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	version := filepath.Join(dir, fmt.Sprintf("..%d", time.Now().UnixNano()))
	if err := os.Mkdir(version, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(version, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(version), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func rsRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAuthenticationFailedIsReportedAndNotRetriedInATightLoop(t *testing.T) {
	h := newHarness(t, options{sources: []string{"hostmapping"}})
	other, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Stop)
	// The mounted Secret holds the router's CA but a client certificate of another CA, which
	// the router refuses.
	secret := t.TempDir()
	rsWriteSecret(t, secret, map[string][]byte{
		"ca.crt": rsRead(t, h.srv.CAFile()), "tls.crt": rsRead(t, other.CertFile()), "tls.key": rsRead(t, other.KeyFile()),
	})
	hm := h.hostMapping("printer", map[string]any{"hostname": "printer.lan", "ipAddress": "10.62.0.1"})
	uid := string(hm.GetUID())
	p := startOperatorEnv(t, h, map[string]string{
		"ROUTER_HOSTS_OPERATOR_TLS_CA":   filepath.Join(secret, "ca.crt"),
		"ROUTER_HOSTS_OPERATOR_TLS_CERT": filepath.Join(secret, "tls.crt"),
		"ROUTER_HOSTS_OPERATOR_TLS_KEY":  filepath.Join(secret, "tls.key"),
	}, "--interval=1h", "--source=hostmapping", "--namespace="+h.ns)

	// Reported as AuthenticationFailed everywhere the user looks.
	var body string
	waitFor(t, 15*time.Second, func() bool {
		var err error
		body, err = p.get("/routerz")
		return err != nil && strings.Contains(err.Error(), "503") && strings.HasPrefix(body, "AuthenticationFailed")
	})
	t.Logf("/routerz: %s", strings.TrimSpace(body))
	if body, err := p.get("/readyz"); err != nil {
		t.Fatalf("/readyz with a refused certificate: %q %v; the pod stays Ready, the router's state is reported elsewhere", body, err)
	}
	waitFor(t, 10*time.Second, func() bool { reason, _ := rsCondition(h.getHM("printer")); return reason == "AuthenticationFailed" })
	var ev *corev1.Event
	waitFor(t, 10*time.Second, func() bool { ev = rsEvent(t, h.ns, uid, events.SyncFailed); return ev != nil })
	if ev.Type != corev1.EventTypeWarning || !strings.HasPrefix(ev.Message, "AuthenticationFailed") {
		t.Fatalf("SyncFailed event = %s %q; want a Warning starting AuthenticationFailed", ev.Type, ev.Message)
	}
	if !strings.Contains(p.logText(), "AuthenticationFailed") {
		t.Fatal("the log does not say AuthenticationFailed")
	}

	// Not retried in a tight loop: one ListHosts, and no other for four seconds (a backoff
	// would retry after 1 s and 2 s). Nothing ever reached the router's service.
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n := p.metric(t, "router_hosts_operator_router_hosts_requests_total", `method="ListHosts"`); n != 1 {
			t.Fatalf("router_hosts_requests_total{method=ListHosts} = %v, want 1: the refused certificate was retried", n)
		}
	}
	if n := p.metric(t, "router_hosts_operator_sync_errors_total", `reason="authentication"`); n != 1 {
		t.Fatalf("sync_errors_total{reason=authentication} = %v, want 1", n)
	}
	if n := h.srv.Service().Calls(inmemory.MethodList); n != 0 {
		t.Fatalf("the router served %d ListHosts calls to a refused certificate", n)
	}

	// The Secret is updated with a certificate the router accepts: synced within the watch
	// period (5 s) and one sync, with no restart and no interval.
	rotated := time.Now()
	rsWriteSecret(t, secret, map[string][]byte{
		"ca.crt": rsRead(t, h.srv.CAFile()), "tls.crt": rsRead(t, h.srv.CertFile()), "tls.key": rsRead(t, h.srv.KeyFile()),
	})
	waitFor(t, 10*time.Second, func() bool { return len(rsLookup(h, "printer.lan")) == 1 })
	t.Logf("printer.lan reached the router %v after the certificate was rotated", time.Since(rotated).Round(time.Millisecond))
	waitFor(t, 10*time.Second, func() bool { _, err := p.get("/routerz"); return err == nil })
	waitFor(t, 10*time.Second, func() bool {
		u := h.getHM("printer")
		reason, _ := rsCondition(u)
		synced, _, _ := unstructured.NestedBool(u.Object, "status", "synced")
		return reason == "Success" && synced
	})
	if n := strings.Count(p.logText(), `msg="AuthenticationFailed:`); n != 1 {
		t.Fatalf("the controller logged AuthenticationFailed %d times, want once (one failed sync)", n)
	}
}
