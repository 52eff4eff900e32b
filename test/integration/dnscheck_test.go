package integration

import (
	"context"
	"maps"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/dnscheck"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube/clientset"
	"github.com/router-hosts-operator/router-hosts-operator/test/dnsmasq"
)

// The check of the router's DNS against a real one: dnsmasq (Debian's dnsmasq-base, which make
// test installs) serves the hosts file the test server writes at every write, as a router's
// dnsmasq serves router-hosts' file, and re-reads it when the test server's on-success hook
// reloads it, as router-hosts' hooks do, after the write's reply. The operator runs in process
// with the real clock, a one-second grace and a two-second interval, so that a name's fate
// shows in seconds.

// dnsGrace and dnsInterval are the check's grace and interval in these tests.
const dnsGrace, dnsInterval = time.Second, 2 * time.Second

// routerDNS is the router's DNS of one test: dnsmasq on the test server's hosts file, reloaded
// by the server's hook; the operator checks it, and warns of what it finds through rec.
type routerDNS struct {
	h   *harness
	dns *dnsmasq.Server
	rec *events.Recorder
}

func newRouterDNS(t *testing.T, o options) *routerDNS {
	t.Helper()
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	dns, err := dnsmasq.Start(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dns.Stop)
	rec, stop := events.New(clientset.EventSink(cp.Client), harnessInstance(t), logrus.New())
	t.Cleanup(stop)
	rec.SetLeading(true)
	o.realClock, o.warner, o.interval, o.dnsGrace = true, rec, dnsInterval, dnsGrace
	o.extraArgs = append(o.extraArgs, "--verify-dns="+dns.Addr)
	h := newHarness(t, o)
	h.srv.WriteHostsFile(hosts)
	h.srv.OnSuccess(dns.Reload)
	return &routerDNS{h: h, dns: dns, rec: rec}
}

// notAnswering is the names_not_answering gauge of reason.
func (r *routerDNS) notAnswering(reason string) float64 {
	return r.metric("router_hosts_operator_names_not_answering", "reason", reason)
}

// questions is the number of questions the check has put to the router's DNS.
func (r *routerDNS) questions() float64 {
	n := 0.0
	for _, res := range dnscheck.QueryResults {
		n += r.metric("router_hosts_operator_verify_dns_queries_total", "result", res)
	}
	return n
}

// metric is the value of the operator's metric name whose label has value.
func (r *routerDNS) metric(name, label, value string) float64 {
	r.h.t.Helper()
	families, err := r.h.op.MetricsRegistry().Gather()
	if err != nil {
		r.h.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
	}
	r.h.t.Fatalf("no %s{%s=%q}", name, label, value)
	return 0
}

// answering is the Answering condition of a HostMapping: its status and reason, "" without one.
func (r *routerDNS) answering(name string) (string, string) {
	conds, _, _ := unstructured.NestedSlice(r.h.getHM(name).Object, "status", "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == v1alpha1.ConditionAnswering {
			return m["status"].(string), m["reason"].(string)
		}
	}
	return "", ""
}

// asks is what the router's DNS answers for a name's A records, as a user's resolver asks.
func (r *routerDNS) asks(name string, want ...string) dnscheck.Result {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var addrs []netip.Addr
	for _, w := range want {
		addrs = append(addrs, netip.MustParseAddr(w))
	}
	return dnscheck.Check(ctx, r.dns.Addr, name, addrs)
}

// wait waits for cond, long enough for a few rounds of the check.
func (r *routerDNS) wait(what string, cond func() bool) {
	r.h.t.Helper()
	start := time.Now()
	if !eventually(20*time.Second, cond) {
		r.h.t.Fatalf("%s: not within 20 s", what)
	}
	r.h.t.Logf("%s: after %s", what, time.Since(start).Round(10*time.Millisecond))
}

// TestTheRouterAnswersWhatWasWritten: a HostMapping's name and alias and an Ingress's name are
// written, the router's hook reloads its DNS, and the check finds each answering as written:
// the HostMapping's Answering condition is True, nothing is counted or warned of.
func TestTheRouterAnswersWhatWasWritten(t *testing.T) {
	r := newRouterDNS(t, options{sources: []string{"ingress", "hostmapping"}})
	h := r.h
	nas := h.hostMapping("nas", map[string]any{"hostname": "nas.home.arpa", "ipAddress": "10.44.0.10", "aliases": []any{"files.home.arpa"}})
	web := h.create(ingress(h.ns, "web", enabled("ip-address", "10.44.0.11"), "web.home.arpa"))
	h.waitHost("nas.home.arpa", "10.44.0.10")
	h.waitHost("web.home.arpa", "10.44.0.11")
	h.sync()
	names := map[string]string{"nas.home.arpa": "10.44.0.10", "files.home.arpa": "10.44.0.10", "web.home.arpa": "10.44.0.11"}
	r.wait("every name answers as written", func() bool {
		for name := range names {
			if h.op.DNSCheck.State(name).Finding != dnscheck.Answering {
				return false
			}
		}
		return true
	})
	r.wait("the HostMapping's Answering condition is True", func() bool {
		s, reason := r.answering("nas")
		return s == "True" && reason == "Answering"
	})
	for name, ip := range names {
		if a := h.op.DNSCheck.State(name); a.Reported {
			t.Errorf("%s: the checker says %+v", name, a)
		}
		if res := r.asks(name, ip); res.Finding != dnscheck.Answering {
			t.Errorf("%s: %s", name, res)
		}
	}
	if n := r.notAnswering("missing") + r.notAnswering("wrong") + r.notAnswering("still_answering"); n != 0 {
		t.Errorf("names_not_answering %v", n)
	}
	flushed(t, r.rec, h.ns)
	for _, uid := range []string{string(nas.GetUID()), string(web.UID)} {
		if got := eventsFor(t, h.ns, uid); got[dnscheck.ReasonNotAnswering] != 0 {
			t.Errorf("events %v", got)
		}
	}
}

// TestAReloadThatNeverHappens: the router's hook does not run (not configured, or failing), so
// its DNS never serves a name written: the name is reported a grace after the write (the gauge,
// one NotAnswering Warning however often it is asked, Answering False); once the hook works and
// reloads, the name answers and the report ends.
func TestAReloadThatNeverHappens(t *testing.T) {
	r := newRouterDNS(t, options{sources: []string{"hostmapping"}})
	h := r.h
	h.srv.OnSuccess(nil)
	nas := h.hostMapping("nas", map[string]any{"hostname": "nas.home.arpa", "ipAddress": "10.45.0.10"})
	h.waitHost("nas.home.arpa", "10.45.0.10")
	h.sync()
	if res := r.asks("nas.home.arpa", "10.45.0.10"); res.Finding != dnscheck.Missing {
		t.Fatalf("without a reload: %s", res)
	}
	r.wait("reported missing", func() bool { return r.notAnswering("missing") == 1 })
	r.wait("Answering False", func() bool { s, reason := r.answering("nas"); return s == "False" && reason == "NotAnswering" })
	uid := string(nas.GetUID())
	r.wait("one NotAnswering event", func() bool { return eventsFor(t, h.ns, uid)[dnscheck.ReasonNotAnswering] == 1 })
	// Asked again and again: still the one event, and not one call to router-hosts.
	asked, calls := r.questions(), h.srv.Service().CallCounts()
	r.wait("asked three times more", func() bool { return r.questions() >= asked+3 })
	if now := h.srv.Service().CallCounts(); !maps.Equal(now, calls) {
		t.Errorf("router-hosts was called while the DNS was checked: %v, then %v", calls, now)
	}
	flushed(t, r.rec, h.ns)
	if n := eventsFor(t, h.ns, uid)[dnscheck.ReasonNotAnswering]; n != 1 {
		t.Fatalf("%d NotAnswering events, want one an episode", n)
	}

	// The hook works again: the next write reloads the router's DNS, and both names answer.
	h.srv.OnSuccess(r.dns.Reload)
	h.hostMapping("printer", map[string]any{"hostname": "printer.home.arpa", "ipAddress": "10.45.0.11"})
	h.waitHost("printer.home.arpa", "10.45.0.11")
	h.sync()
	r.wait("the report ends", func() bool { return r.notAnswering("missing") == 0 })
	r.wait("Answering True", func() bool { s, _ := r.answering("nas"); return s == "True" })
	r.wait("the new name answers", func() bool { s, _ := r.answering("printer"); return s == "True" })
	if a := h.op.DNSCheck.State("nas.home.arpa"); a.Finding != dnscheck.Answering || a.Reported {
		t.Errorf("nas: %+v", a)
	}
	flushed(t, r.rec, h.ns)
	if n := eventsFor(t, h.ns, uid)[dnscheck.ReasonNotAnswering]; n != 1 {
		t.Errorf("%d NotAnswering events after the recovery, want the one", n)
	}
}

// TestADeletedNameThatKeepsAnswering: an object is deleted and its entry with it, but the
// router's DNS is not reloaded and still answers the name: reported as still answering (the
// gauge, a StillAnswering Warning on the object), until a reload makes it stop.
func TestADeletedNameThatKeepsAnswering(t *testing.T) {
	r := newRouterDNS(t, options{sources: []string{"ingress"}, grace: time.Second})
	h := r.h
	web := h.create(ingress(h.ns, "web", enabled("ip-address", "10.46.0.11"), "web.home.arpa"))
	h.waitHost("web.home.arpa", "10.46.0.11")
	h.sync()
	r.wait("web answers", func() bool { return h.op.DNSCheck.State("web.home.arpa").Finding == dnscheck.Answering })

	h.srv.OnSuccess(nil)
	h.delete(web)
	h.waitGone("web.home.arpa")
	h.sync() // marks the entry; a sync after its grace period deletes it
	r.wait("the entry is deleted", func() bool { h.sync(); return len(h.entries("web.home.arpa")) == 0 })
	r.wait("reported still answering", func() bool { return r.notAnswering("still_answering") == 1 })
	if a := h.op.DNSCheck.State("web.home.arpa"); a.Finding != dnscheck.StillAnswering || !a.Reported {
		t.Errorf("the checker says %+v", a)
	}
	r.wait("a StillAnswering event on the Ingress", func() bool { return eventsFor(t, h.ns, string(web.UID))[dnscheck.ReasonStillAnswering] == 1 })

	// The router reloads its DNS by hand: the name stops answering, and the report ends.
	if err := r.dns.Reload(); err != nil {
		t.Fatal(err)
	}
	r.wait("the report ends", func() bool { return r.notAnswering("still_answering") == 0 })
	if a := h.op.DNSCheck.State("web.home.arpa"); a.Finding != dnscheck.Unchecked {
		t.Errorf("a deleted name that stopped answering is still checked: %+v", a)
	}
	if res := r.asks("web.home.arpa"); res.Finding != dnscheck.Gone {
		t.Errorf("the router's DNS: %s", res)
	}
}

// TestTheRouterHostsConfigNamesTheRouterDNS: spec.server.verifyDNS turns the check on without a
// restart, and taking it out of the spec turns it off again (no flag names one): the gauge
// goes back to 0 and the HostMappings lose their Answering condition.
func TestTheRouterHostsConfigNamesTheRouterDNS(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	dns, err := dnsmasq.Start(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dns.Stop)
	name := "it-config-verify-dns"
	h := newHarness(t, options{configName: name, sources: []string{"hostmapping"}, realClock: true, interval: dnsInterval, dnsGrace: dnsGrace})
	h.srv.WriteHostsFile(hosts)
	h.srv.OnSuccess(dns.Reload)
	r := &routerDNS{h: h, dns: dns}
	if _, err := createConfig(t, "apiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: RouterHostsConfig\nmetadata: {name: "+name+"}\n"+
		"spec: {server: {endpoint: \""+h.srv.Addr()+"\", verifyDNS: \""+dns.Addr+"\"}}\n", false); err != nil {
		t.Fatal(err)
	}
	r.wait("the check asks the config's server", func() bool { return h.op.DNSCheck.Server() == dns.Addr })
	h.hostMapping("nas", map[string]any{"hostname": "nas.home.arpa", "ipAddress": "10.47.0.10"})
	h.waitHost("nas.home.arpa", "10.47.0.10")
	h.sync()
	r.wait("Answering True", func() bool { s, _ := r.answering("nas"); return s == "True" })

	patchConfig(t, name, map[string]any{"server": map[string]any{"endpoint": h.srv.Addr(), "verifyDNS": nil}})
	r.wait("the check is off", func() bool { return h.op.DNSCheck.Server() == "" })
	h.sync()
	r.wait("no Answering condition", func() bool { s, _ := r.answering("nas"); return s == "" })
	if a := h.op.DNSCheck.State("nas.home.arpa"); a.Finding != dnscheck.Unchecked {
		t.Errorf("checked while off: %+v", a)
	}
}
