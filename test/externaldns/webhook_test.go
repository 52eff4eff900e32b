// Package externaldns drives the operator's external-dns webhook with external-dns's own
// packages (its webhook client, planner and noop registry, v0.22.0), against the router-hosts
// test server. It is a Go module of its own, so that external-dns stays out of the operator's
// go.mod.
package externaldns

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns"
	"sigs.k8s.io/external-dns/plan"
	"sigs.k8s.io/external-dns/provider"
	"sigs.k8s.io/external-dns/provider/webhook"
	"sigs.k8s.io/external-dns/registry"
	"sigs.k8s.io/external-dns/registry/noop"

	rhendpoint "github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
	rhplan "github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// rig is the webhook as the binary runs it (operator.NewWebhook from its flags), serving on a
// loopback port, with the test server behind it and a clock the test moves.
type rig struct {
	t      *testing.T
	srv    *rhtestserver.Server
	hook   *operator.Webhook
	url    string
	client *routerhosts.Provider
	clock  *testingclock.FakeClock
	// stop ends the webhook, as its pod going away does.
	stop func()
	// requests counts what external-dns's client sent, by method and path.
	mu       sync.Mutex
	requests []string
}

// newRig is a webhook on a test server of its own, with an identity pinned unless extra gives
// one or a token to derive it from.
func newRig(t *testing.T, extra ...string) *rig {
	t.Helper()
	if !slices.ContainsFunc(extra, func(a string) bool {
		return strings.HasPrefix(a, "--cluster-id=") || strings.HasPrefix(a, "--service-account-token-file=")
	}) {
		extra = append(extra, "--cluster-id=0e1d2c3b")
	}
	return startRig(t, startServer(t), extra...)
}

// startServer is a router-hosts test server for the test's webhooks.
func startServer(t *testing.T) *rhtestserver.Server {
	t.Helper()
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// startRig is a webhook on srv, with the flags extra adds to the rig's; stop ends it before
// the test does.
func startRig(t *testing.T, srv *rhtestserver.Server, extra ...string) *rig {
	t.Helper()
	r := &rig{t: t, srv: srv, clock: testingclock.NewFakeClock(time.Now())}
	args := append([]string{"webhook", "--router-hosts-endpoint=" + srv.Addr(), "--tls-ca=" + srv.CAFile(), "--tls-cert=" + srv.CertFile(),
		"--tls-key=" + srv.KeyFile(), "--grace-period=1m", "--interval=1h", "--domain-filter=home.lan"}, extra...)
	if !slices.ContainsFunc(extra, func(a string) bool { return strings.HasPrefix(a, "--metrics-address=") }) {
		args = append(args, "--metrics-address=")
	}
	cfg, err := operator.ParseFlags(args, operator.Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	r.hook, err = operator.NewWebhook(cfg, log, r.clock)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.hook.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.hook.Serve(ctx, lis) }()
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); <-done; r.hook.Close() }) }
	t.Cleanup(r.stop)
	// The loop syncs once as it starts; a test begins after that, so that what it counts of the
	// server's calls is its own requests' doing and not the start's, however late that runs.
	sctx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if err := r.hook.Controller.SyncNow(sctx); err != nil {
		t.Fatalf("the webhook's first sync: %v", err)
	}
	// external-dns's client talks to the webhook through a proxy that notes every request.
	target, _ := url.Parse("http://" + lis.Addr().String())
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	r.url = front.URL
	r.client, err = routerhosts.New(routerhosts.Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: srv.CertFile(), KeyFile: srv.KeyFile(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.client.Close() })
	return r
}

func (r *rig) took() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.requests
	r.requests = nil
	return out
}

// provider is external-dns's webhook client, as external-dns builds it.
func (r *rig) provider() provider.Provider {
	r.t.Helper()
	p, err := webhook.New(context.Background(), &externaldns.Config{WebhookProviderURL: r.url,
		WebhookProviderReadTimeout: 5 * time.Second, WebhookProviderWriteTimeout: 10 * time.Second}, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

func (r *rig) entries(host string) []rhendpoint.Record {
	r.t.Helper()
	recs, err := r.client.Records(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	var out []rhendpoint.Record
	for _, rec := range recs {
		if rec.Hostname == host {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IP < out[j].IP })
	return out
}

func (r *rig) seed(rec rhendpoint.Record) {
	r.t.Helper()
	if err := rhplan.ErrorOf(r.client.ApplyChanges(context.Background(), []rhplan.Change{{Action: rhplan.Create, New: &rec}})); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) writes() int64 { return r.srv.Service().WriteCalls() }

// loop is one run of external-dns's controller (RunOnce) with the noop registry: records,
// adjust, plan, apply when there are changes.
func loop(ctx context.Context, reg registry.Registry, desired []*endpoint.Endpoint) (*plan.Changes, error) {
	current, err := reg.Records(ctx)
	if err != nil {
		return nil, err
	}
	adjusted, err := reg.AdjustEndpoints(desired)
	if err != nil {
		return nil, fmt.Errorf("adjusting endpoints: %w", err)
	}
	p := (&plan.Plan{Policies: []plan.Policy{&plan.SyncPolicy{}}, Current: current, Desired: adjusted,
		DomainFilter:   endpoint.MatchAllDomainFilters{reg.GetDomainFilter()},
		ManagedRecords: []string{endpoint.RecordTypeA, endpoint.RecordTypeAAAA, endpoint.RecordTypeCNAME},
		OwnerID:        reg.OwnerID()}).Calculate()
	if p.Changes.HasChanges() {
		return p.Changes, reg.ApplyChanges(ctx, p.Changes)
	}
	return p.Changes, nil
}

// ingress is what external-dns's Ingress source makes of an Ingress with these hosts on a
// load balancer with these addresses.
func ingress(name string, ips []string, hosts ...string) []*endpoint.Endpoint {
	var out []*endpoint.Endpoint
	for _, h := range hosts {
		var v4, v6 []string
		for _, ip := range ips {
			if strings.Contains(ip, ":") {
				v6 = append(v6, ip)
			} else {
				v4 = append(v4, ip)
			}
		}
		for _, r := range []struct {
			typ string
			ips []string
		}{{endpoint.RecordTypeA, v4}, {endpoint.RecordTypeAAAA, v6}} {
			if len(r.ips) > 0 {
				e := endpoint.NewEndpoint(h, r.typ, r.ips...)
				e.Labels[endpoint.ResourceLabelKey] = "ingress/default/" + name
				out = append(out, e)
			}
		}
	}
	return out
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestProtocol(t *testing.T) {
	metrics, err := harness.Addr()
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, "--exclude-domains=iot.home.lan", "--metrics-address="+metrics)
	p := r.provider()
	ctx := context.Background()

	// Negotiation: the domain filter as external-dns reads it.
	df := p.GetDomainFilter()
	if !df.Match("nas.home.lan") || df.Match("nas.example.com") || df.Match("cam.iot.home.lan") {
		t.Errorf("negotiated filter %v: want home.lan less iot.home.lan", df)
	}
	if recs, err := p.Records(ctx); err != nil || len(recs) != 0 {
		t.Fatalf("records of an empty server: %v %v", recs, err)
	}

	// Apply and read back.
	ch := &plan.Changes{Create: []*endpoint.Endpoint{endpoint.NewEndpoint("web.home.lan", "A", "10.0.0.1"), endpoint.NewEndpoint("web.home.lan", "AAAA", "fd00::1")}}
	if err := p.ApplyChanges(ctx, ch); err != nil {
		t.Fatal(err)
	}
	recs, err := p.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range recs {
		got = append(got, e.DNSName+" "+e.RecordType+" "+strings.Join(e.Targets, ","))
	}
	if !slices.Equal(got, []string{"web.home.lan A 10.0.0.1", "web.home.lan AAAA fd00::1"}) {
		t.Fatalf("records %v", got)
	}
	e := r.entries("web.home.lan")
	if len(e) != 2 || !e[0].HasTag("cluster:external-dns") || !e[0].HasTag("kind:external-dns") || !e[0].HasTag("k8s-operator") {
		t.Fatalf("entries %v: want the webhook's ownership tags", e)
	}

	// The operator's usual health and metrics endpoints, on their own address.
	if code, body := get(t, "http://"+metrics+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if code, _ := get(t, "http://"+metrics+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	_, exported := get(t, "http://"+metrics+"/metrics")
	if !strings.Contains(exported, `router_hosts_operator_synced_entries{cluster="external-dns",kind="external-dns",namespace="external-dns"} 2`) {
		t.Errorf("/metrics lacks the webhook's two entries:\n%s", exported)
	}
	// The client certificate's expiry, for the alert before it comes.
	pair, err := tls.LoadX509KeyPair(r.srv.CertFile(), r.srv.KeyFile())
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("router_hosts_operator_client_certificate_expiry_timestamp_seconds %g", float64(pair.Leaf.NotAfter.Unix())); !strings.Contains(exported, want) {
		t.Errorf("/metrics lacks %q:\n%s", want, exported)
	}

	// Adjust: what router-hosts cannot hold is dropped, names and addresses as it writes them.
	adj, err := p.AdjustEndpoints([]*endpoint.Endpoint{endpoint.NewEndpoint("Web.Home.LAN", "A", "10.0.0.1"), endpoint.NewEndpoint("alias.home.lan", "CNAME", "web.home.lan"),
		endpoint.NewEndpoint("txt.home.lan", "TXT", "\"x\""), endpoint.NewEndpoint("lb.home.lan", "A", "lb.example.com"),
		endpoint.NewEndpointWithTTL("v6.home.lan", "AAAA", 300, "FD00:0::2")})
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, e := range adj {
		got = append(got, fmt.Sprintf("%s %s %s ttl=%d", e.DNSName, e.RecordType, strings.Join(e.Targets, ","), e.RecordTTL))
	}
	if !slices.Equal(got, []string{"web.home.lan A 10.0.0.1 ttl=0", "v6.home.lan AAAA fd00::2 ttl=0"}) {
		t.Fatalf("adjusted %v", got)
	}

	// Invalid input: a 4xx with the reason, nothing written.
	writes := r.writes()
	err = p.ApplyChanges(ctx, &plan.Changes{Create: []*endpoint.Endpoint{endpoint.NewEndpoint("alias.home.lan", "CNAME", "web.home.lan")}})
	if err == nil || errors.Is(err, provider.SoftError) || !strings.Contains(err.Error(), "400") {
		t.Fatalf("a CNAME to apply: %v, want a hard error with code 400", err)
	}
	resp, err := http.Post(r.url+"/records", "application/external.dns.webhook+json;version=1", strings.NewReader(`{"create":[{"dnsName":"x.home.lan","recordType":"A","targets":["not-an-ip"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "not-an-ip") {
		t.Fatalf("an address that is none: %d %s", resp.StatusCode, body)
	}
	if r.writes() != writes {
		t.Fatal("invalid input wrote")
	}

	// The server down: a 503, which external-dns takes as a soft error and retries next loop.
	r.srv.Stop()
	if _, err := p.Records(ctx); !errors.Is(err, provider.SoftError) {
		t.Fatalf("records with the server down: %v, want a soft error", err)
	}
	if err := p.ApplyChanges(ctx, &plan.Changes{Create: []*endpoint.Endpoint{endpoint.NewEndpoint("new.home.lan", "A", "10.0.0.5")}}); !errors.Is(err, provider.SoftError) {
		t.Fatalf("apply with the server down: %v, want a soft error", err)
	}
}

// TestExternalDNSLoop runs external-dns's controller loop as it does, with the noop registry,
// against the webhook: a new name, a target change, a removed name through its grace period, a
// hand-made entry adopted and given back, another cluster's entry left alone, quiet loops.
func TestExternalDNSLoop(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	reg, err := noop.New(nil, r.provider())
	if err != nil {
		t.Fatal(err)
	}
	r.seed(rhendpoint.Record{Hostname: "nas.home.lan", IP: "192.168.1.10", Tags: []string{"manual"}, Comment: "added by hand"})
	r.seed(rhendpoint.Record{Hostname: "shared.home.lan", IP: "10.9.9.9", Tags: []string{"k8s-operator", "cluster:other"}, Comment: "router-hosts-operator: Ingress x/y"})
	nasBefore := r.entries("nas.home.lan")[0]
	other := r.entries("shared.home.lan")[0]
	r.took()

	step := func(what string, desired []*endpoint.Endpoint) *plan.Changes {
		t.Helper()
		w, lists := r.writes(), r.srv.Service().Calls("ListHosts")
		ch, err := loop(ctx, reg, desired)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		// GET /records reads the server once, and a POST once more: its sync's read, the
		// webhook's own records coming from the sync before.
		want := int64(1)
		if ch.HasChanges() {
			want = 2
		}
		if n := r.srv.Service().Calls("ListHosts") - lists; n != want {
			t.Fatalf("%s: %d ListHosts, want %d", what, n, want)
		}
		t.Logf("%s: requests %v; changes create=%d updateOld=%d updateNew=%d delete=%d; router-hosts writes %d",
			what, r.took(), len(ch.Create), len(ch.UpdateOld), len(ch.UpdateNew), len(ch.Delete), r.writes()-w)
		return ch
	}
	web := ingress("web", []string{"10.0.0.1"}, "web.home.lan")
	nas := ingress("nas", []string{"192.168.1.10"}, "nas.home.lan")
	shared := ingress("shared", []string{"10.0.0.7"}, "shared.home.lan")
	all := func(eps ...[]*endpoint.Endpoint) []*endpoint.Endpoint { return slices.Concat(eps...) }

	step("a new name and a hand-made one", all(web, nas, shared))
	if e := r.entries("web.home.lan"); len(e) != 1 || e[0].IP != "10.0.0.1" {
		t.Fatalf("web.home.lan: %v", e)
	}
	nasNow := r.entries("nas.home.lan")
	if len(nasNow) != 1 || nasNow[0].ID != nasBefore.ID || !nasNow[0].HasTag("pre-existing:true") || !nasNow[0].HasTag("manual") {
		t.Fatalf("nas.home.lan not adopted in place: %v", nasNow)
	}
	if e := r.entries("shared.home.lan"); len(e) != 1 || e[0].ID != other.ID || e[0].Version != other.Version {
		t.Fatalf("another cluster's entry was touched: %v", e)
	}

	id := r.entries("web.home.lan")[0].ID
	step("a target change", all(ingress("web", []string{"10.0.0.2"}, "web.home.lan"), nas, shared))
	if e := r.entries("web.home.lan"); len(e) != 1 || e[0].IP != "10.0.0.2" || e[0].ID != id {
		t.Fatalf("web.home.lan not updated in place: %v (was %s)", e, id)
	}
	web = ingress("web", []string{"10.0.0.2"}, "web.home.lan")
	if e := r.entries("shared.home.lan"); len(e) != 1 || e[0].ID != other.ID || e[0].Version != other.Version {
		t.Fatalf("another cluster's entry was touched: %v", e)
	}

	// external-dns stops asking for the other cluster's name (it could never get it).
	for i := 1; i <= 3; i++ {
		if ch := step(fmt.Sprintf("quiet loop %d", i), all(web, nas)); ch.HasChanges() {
			t.Fatalf("quiet loop %d planned %+v", i, ch)
		}
	}

	// The names go: marked, hidden from external-dns, gone after the grace period (nas.home.lan
	// given back as it was found).
	writes := r.writes()
	step("two names removed", nil)
	if r.writes() == writes {
		t.Fatal("removing names wrote nothing")
	}
	for _, h := range []string{"web.home.lan", "nas.home.lan"} {
		if e := r.entries(h); len(e) != 1 || !strings.Contains(strings.Join(e[0].Tags, ","), "pending-deletion:") {
			t.Fatalf("%s after removal: %v, want one entry marked", h, e)
		}
	}
	if ch := step("the loop after", nil); ch.HasChanges() {
		t.Fatalf("marked entries shown to external-dns: it planned %+v", ch)
	}
	// The grace deadline the POST set wakes the webhook's loop (its interval is an hour).
	r.clock.Step(61 * time.Second)
	for deadline := time.Now().Add(10 * time.Second); len(r.entries("web.home.lan")) != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("web.home.lan 10 s after the grace period: %v", r.entries("web.home.lan"))
		}
	}
	for deadline := time.Now().Add(10 * time.Second); slices.Contains(r.entries("nas.home.lan")[0].Tags, "k8s-operator"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nas.home.lan 10 s after the grace period: %v", r.entries("nas.home.lan"))
		}
	}
	back := r.entries("nas.home.lan")
	if len(back) != 1 || back[0].ID != nasBefore.ID || !slices.Equal(back[0].Tags, nasBefore.Tags) || back[0].Comment != nasBefore.Comment || back[0].IP != nasBefore.IP {
		t.Fatalf("nas.home.lan not given back intact: %+v, was %+v", back, nasBefore)
	}
	if e := r.entries("shared.home.lan"); len(e) != 1 || e[0].Version != other.Version {
		t.Fatalf("another cluster's entry was touched: %v", e)
	}
	for i := 1; i <= 3; i++ {
		w := r.writes()
		if ch := step(fmt.Sprintf("quiet loop %d after", i), nil); ch.HasChanges() || r.writes() != w {
			t.Fatalf("quiet loop planned %+v and wrote %d", ch, r.writes()-w)
		}
	}
}
