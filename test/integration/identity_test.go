package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/internal/rhtestserver"
)

// impostor starts a server that h's router's CA vouches for, but for nas.lan only, on addr.
func impostor(t *testing.T, h *harness, addr string) *rhtestserver.Server {
	t.Helper()
	srv, err := rhtestserver.StartImpostor(t.TempDir(), h.srv.PKI,
		rhtestserver.Identity{DNSNames: []string{"nas.lan"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, addr)
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
