package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/test/dnstest"
)

// TestExternalDNSAnnotationsMode: with --external-dns-annotations, external-dns's hostname
// annotation opts an object in beside its own hostnames, and its target gives the address: an
// IP as it is, a hostname through DNS, resolved beside the loop. Until DNS answers, and while
// it fails, the entries are held exactly; a new answer after the TTL moves them. The
// operator's ip-address annotation wins over the target, and enabled: "false" opts out.
func TestExternalDNSAnnotationsMode(t *testing.T) {
	dns := dnstest.Start(t)
	dns.Set("lb.edns.example", dnstest.Answer{RCode: dnsmessage.RCodeServerFailure})
	h := newHarness(t, options{sources: []string{"ingress", "service"}, externalDNS: true, dnsServer: dns.Addr})
	const hostname, target = source.AnnotationExternalDNSHostname, source.AnnotationExternalDNSTarget

	h.create(ingress(h.ns, "web", map[string]string{hostname: "www.edns.lan", target: "10.81.0.1"}, "web.edns.lan"))
	h.create(ingress(h.ns, "pinned", map[string]string{hostname: "pinned.edns.lan", target: "10.81.0.8", source.AnnotationIPAddress: "10.81.0.9"}, "pinned-rule.edns.lan"))
	h.create(ingress(h.ns, "out", map[string]string{hostname: "out.edns.lan", target: "10.81.0.1", source.AnnotationEnabled: "false"}, "out-rule.edns.lan"))
	h.service("api", corev1.ServiceTypeClusterIP, map[string]string{hostname: "api.edns.lan", target: "lb.edns.example"})

	h.waitHost("web.edns.lan", "10.81.0.1")
	h.waitHost("www.edns.lan", "10.81.0.1")
	h.waitHost("pinned.edns.lan", "10.81.0.9")
	h.waitHost("api.edns.lan") // held: DNS failed
	h.sync()
	for host, ip := range map[string]string{"web.edns.lan": "10.81.0.1", "www.edns.lan": "10.81.0.1", "pinned.edns.lan": "10.81.0.9"} {
		if got := h.one(host); got.IP != ip {
			t.Errorf("%s: %s, want %s", host, got.IP, ip)
		}
	}
	for _, host := range []string{"out.edns.lan", "out-rule.edns.lan", "api.edns.lan"} {
		if n := len(h.entries(host)); n != 0 {
			t.Errorf("%s: %d entries, want none", host, n)
		}
	}

	// DNS answers at its retry: the entry is written.
	dns.Set("lb.edns.example", dnstest.Answer{IPs: []string{"10.81.0.5"}, TTL: 60})
	h.clock.Step(30 * time.Second)
	h.waitHost("api.edns.lan", "10.81.0.5")
	h.sync()
	if got := h.one("api.edns.lan"); got.IP != "10.81.0.5" {
		t.Fatalf("api.edns.lan: %s, want 10.81.0.5", got.IP)
	}

	// A new answer after the TTL moves the entry.
	dns.Set("lb.edns.example", dnstest.Answer{IPs: []string{"10.81.0.6"}, TTL: 60})
	h.clock.Step(time.Minute)
	h.waitHost("api.edns.lan", "10.81.0.6")
	h.sync()
	moved := h.one("api.edns.lan")
	if moved.IP != "10.81.0.6" {
		t.Fatalf("api.edns.lan after the TTL: %s, want 10.81.0.6", moved.IP)
	}

	// The same answer at the next refresh changes nothing, and the name stays in use while
	// the syncs reuse what the Service gave; DNS failing at the refresh after holds the entry
	// exactly as it is.
	asked := dns.Queries("lb.edns.example")
	h.clock.Step(time.Minute)
	for deadline := time.Now().Add(10 * time.Second); dns.Queries("lb.edns.example") < asked+2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the name was not asked again at its TTL")
		}
	}
	h.sync()
	dns.Set("lb.edns.example", dnstest.Answer{RCode: dnsmessage.RCodeServerFailure})
	h.clock.Step(time.Minute)
	h.waitHost("api.edns.lan")
	h.sync()
	if held := h.one("api.edns.lan"); held.IP != moved.IP || held.Version != moved.Version {
		t.Fatalf("held entry changed: %+v, was %+v", held, moved)
	}
}

// TestLoadBalancerHostnameResolved: a load balancer that reports only a hostname (a cloud's)
// is resolved through DNS, for a Service and for an Ingress, without any external-dns mode;
// and without the mode, external-dns's annotations alone opt nothing in.
func TestLoadBalancerHostnameResolved(t *testing.T) {
	dns := dnstest.Start(t)
	dns.Set("svc-lb.edns.example", dnstest.Answer{IPs: []string{"10.82.0.1", "fd00::82:1"}, TTL: 60})
	dns.Set("ing-lb.edns.example", dnstest.Answer{IPs: []string{"10.82.0.2"}, TTL: 60})
	h := newHarness(t, options{sources: []string{"ingress", "service"}, dnsServer: dns.Addr})

	svc := h.service("lb", corev1.ServiceTypeLoadBalancer, enabled("hostname", "svc.lbname.lan"))
	h.setLoadBalancer(svc, corev1.LoadBalancerIngress{Hostname: "svc-lb.edns.example"})
	h.create(ingress(h.ns, "edns", map[string]string{source.AnnotationExternalDNSHostname: "edns.lbname.lan", source.AnnotationExternalDNSTarget: "10.82.0.9"}, "edns-rule.lbname.lan"))
	ing := h.create(ingress(h.ns, "app", enabled(), "ing.lbname.lan"))
	cur, err := h.cp.Client.NetworkingV1().Ingresses(h.ns).Get(context.Background(), ing.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "ing-lb.edns.example"}}
	if _, err := h.cp.Client.NetworkingV1().Ingresses(h.ns).UpdateStatus(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	h.waitHost("svc.lbname.lan", "10.82.0.1", "fd00::82:1")
	h.waitHost("ing.lbname.lan", "10.82.0.2")
	h.sync()
	if n := len(h.entries("svc.lbname.lan")); n != 2 {
		t.Errorf("svc.lbname.lan: %d entries, want one per address", n)
	}
	if got := h.one("ing.lbname.lan"); got.IP != "10.82.0.2" {
		t.Errorf("ing.lbname.lan: %s", got.IP)
	}
	for _, host := range []string{"edns.lbname.lan", "edns-rule.lbname.lan"} {
		if n := len(h.entries(host)); n != 0 {
			t.Errorf("%s: %d entries without --external-dns-annotations, want none", host, n)
		}
	}
}

// TestAnObjectNamingTooManyTargetsAsksDNSNothing: a hostile object names more target hostnames
// than one object may have resolved (source.MaxNamesPerObject). None of its names reaches the
// DNS server, nothing of it reaches the router, and it is told why (NoAddress); an object
// beside it that names as many as the bound is resolved and written as ever.
func TestAnObjectNamingTooManyTargetsAsksDNSNothing(t *testing.T) {
	dns := dnstest.Start(t)
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%02d.edns.example", prefix, i)
			dns.Set(out[i], dnstest.Answer{IPs: []string{fmt.Sprintf("10.83.%d.%d", len(prefix), i+1)}, TTL: 60})
		}
		return out
	}
	many, bound := names("many", source.MaxNamesPerObject+1), names("ok", source.MaxNamesPerObject)
	w := &warnings{by: map[string][]string{}}
	rec := w.recorder()
	h := newHarness(t, options{sources: []string{"ingress"}, externalDNS: true, dnsServer: dns.Addr, warner: rec, reporters: []controller.Reporter{rec}})
	const hostname, target = source.AnnotationExternalDNSHostname, source.AnnotationExternalDNSTarget
	h.create(ingress(h.ns, "many", map[string]string{hostname: "many.edns.lan", target: strings.Join(many, ",")}, "many-rule.edns.lan"))
	h.create(ingress(h.ns, "bound", map[string]string{hostname: "bound.edns.lan", target: strings.Join(bound, ",")}, "bound-rule.edns.lan"))

	var want []string
	for i := range bound {
		want = append(want, fmt.Sprintf("10.83.2.%d", i+1))
	}
	h.waitHost("bound.edns.lan", want...)
	waitFor(t, 10*time.Second, func() bool { return slices.Contains(w.reasons("many"), source.ReasonNoAddress) })
	h.sync()
	for _, host := range []string{"many.edns.lan", "many-rule.edns.lan"} {
		if n := len(h.entries(host)); n != 0 {
			t.Errorf("%s: %d entries, want none", host, n)
		}
	}
	for _, n := range many {
		if q := dns.Queries(n); q != 0 {
			t.Errorf("%s was asked %d times; an object over the bound has none of its names looked up", n, q)
		}
	}
	if n := len(h.entries("bound-rule.edns.lan")); n != len(bound) {
		t.Errorf("bound-rule.edns.lan: %d entries, want %d", n, len(bound))
	}
}
