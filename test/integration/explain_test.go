package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/explain"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube/clientset"
	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// harnessInstance is the reporting instance of the events a harness's operator posts: the
// identity every harness has (the default Lease, in the default namespace), as the running
// operator's replica reports it, so that explain shows them.
func harnessInstance(t *testing.T) string {
	t.Helper()
	ks, err := cp.Client.CoreV1().Namespaces().Get(context.Background(), metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return events.Instance(registry.Identity(string(ks.UID), metav1.NamespaceDefault, "router-hosts-operator"), "harness")
}

// explainRun runs the explain (or list) command as main does, with the harness's flags and
// o's, and returns its JSON document and exit status.
func (h *harness) explainRun(o options, args ...string) (*explain.NamesJSON, int) {
	h.t.Helper()
	var doc explain.NamesJSON
	out, code := h.readOnly(o, append(args, "-o", "json")...)
	if err := json.Unmarshal(out, &doc); err != nil {
		h.t.Fatalf("explain -o json: %v\n%s", err, out)
	}
	return &doc, code
}

func (h *harness) readOnly(o options, args ...string) ([]byte, int) {
	h.t.Helper()
	cfg, err := operator.ParseFlags(append(h.args(o), args...), operator.Build{Version: "test"})
	if err != nil {
		h.t.Fatalf("flags: %v", err)
	}
	log := logrus.New()
	log.SetOutput(testWriter{h.t})
	var out bytes.Buffer
	err = operator.Run(context.Background(), cfg, log, &out)
	code := operator.ExitCode(cfg, err)
	if code == 2 {
		h.t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return out.Bytes(), code
}

// codes are every reason code in a document: claims', entries', notes', near misses' and
// the object's problems.
func reasonCodes(doc *explain.NamesJSON) []string {
	var out []string
	for _, p := range doc.Problems {
		out = append(out, p.Code)
	}
	for _, u := range doc.Unread {
		out = append(out, u.Code)
	}
	for _, n := range doc.Names {
		for _, o := range n.Notes {
			out = append(out, o.Code)
		}
		for _, c := range n.Claims {
			for _, o := range c.Outcomes {
				out = append(out, o.Code)
			}
		}
		for _, e := range n.Entries {
			if e.Outcome != nil {
				out = append(out, e.Outcome.Code)
			}
		}
		for _, u := range n.Unread {
			out = append(out, u.Code)
		}
	}
	return out
}

// TestExplainGivesEveryReasonCode builds each situation a reason code stands for against the
// apiserver and the test server, then asks explain, as a person would, and checks the code,
// the facts (the holder, the token, when a held change goes) and the exit status.
func TestExplainGivesEveryReasonCode(t *testing.T) {
	type row struct {
		code string
		opts options
		// setup builds the situation and returns what explain is asked about.
		setup func(h *harness) string
		// check looks at the facts beside the code.
		check func(t *testing.T, h *harness, doc *explain.NamesJSON)
		exit  int
		// dns runs the row with the router's DNS: dnsmasq on the test server's hosts file,
		// checked with --verify-dns.
		dns bool
	}
	static := []string{"static:10.80.0.1"}
	rows := []row{
		{code: explain.Synced, opts: options{ipResolution: static}, exit: 0,
			setup: func(h *harness) string {
				h.create(ingress(h.ns, "web", enabled(), "web.explain.lan"))
				h.waitHost("web.explain.lan", "10.80.0.1")
				h.sync()
				return "web.explain.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				e := doc.Names[0].Entries
				if len(e) != 1 || e[0].Owner.Class != "this" || len(e[0].Owner.Objects) != 1 || e[0].Owner.Objects[0].Name != "web" || e[0].State != explain.StateSynced {
					t.Errorf("entries %+v: want one synced entry owned by Ingress web", e)
				}
			}},
		{code: explain.Pending, opts: options{ipResolution: static}, exit: 1,
			setup: func(h *harness) string {
				h.create(ingress(h.ns, "web", enabled(), "new.explain.lan"))
				h.waitHost("new.explain.lan", "10.80.0.1")
				return "new.explain.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				if c := doc.Names[0].Claims[0].Outcomes[0].Change; !strings.HasPrefix(c, "create") {
					t.Errorf("change %q: want the create the next sync sends", c)
				}
				if h.writes() != 0 {
					t.Errorf("explain wrote %d times", h.writes())
				}
			}},
		{code: explain.OutsideDomainFilter, opts: options{ipResolution: static, domains: []string{"inside.lan"}}, exit: 1,
			setup: func(h *harness) string {
				h.create(ingress(h.ns, "web", enabled(), "web.outside.lan"))
				h.waitHost("web.outside.lan", "10.80.0.1")
				return "web.outside.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				if o := doc.Names[0].Claims[0].Outcomes[0]; !strings.Contains(o.Message, "(--domain-filter=inside.lan)") || !strings.Contains(o.Fix, "--domain-filter=inside.lan") {
					t.Errorf("%q, fix %q: want the filter's value named", o.Message, o.Fix)
				}
			}},
		{code: explain.Unclaimed, opts: options{ipResolution: static}, exit: 1,
			setup: func(h *harness) string {
				h.handMade("printer.explain.lan", "192.168.1.9", nil, nil, "")
				return "printer.explain.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				if e := doc.Names[0].Entries; len(e) != 1 || e[0].Owner.Class != "hand-made" || e[0].State != "hand-made" {
					t.Errorf("entries %+v: want the hand-made entry", e)
				}
			}},
		{code: registry.ReasonHostnameConflict, opts: options{ipResolution: static}, exit: 1,
			setup: func(h *harness) string {
				h.handMade("shared.explain.lan", "10.9.9.9", nil, []string{"k8s-operator", "cluster:other", "namespace:x"}, "")
				h.create(ingress(h.ns, "web", enabled(), "shared.explain.lan"))
				h.waitHost("shared.explain.lan", "10.80.0.1")
				return "shared.explain.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				if got := doc.Names[0].Claims[0].Outcomes[0].Holder; got != "cluster other" {
					t.Errorf("holder %q, want cluster other", got)
				}
				if e := doc.Names[0].Entries; len(e) != 1 || e[0].Owner.Class != "other-cluster" || e[0].Owner.Cluster != "other" {
					t.Errorf("entries %+v: want another cluster's entry", e)
				}
			}},
		{code: registry.ReasonNameNotPermitted, opts: options{ipResolution: static, extraArgs: []string{"--namespace-domains={ns}=mine.lan"}}, exit: 1,
			setup: func(h *harness) string {
				h.create(ingress(h.ns, "web", enabled(), "web.theirs.lan"))
				h.waitHost("web.theirs.lan", "10.80.0.1")
				return "web.theirs.lan"
			}},
		{code: registry.ReasonInvalidAnnotation, opts: options{ipResolution: static}, exit: 1,
			setup: func(h *harness) string {
				h.create(ingress(h.ns, "web", enabled("tags", "k8s-operator,team:web"), "tags.explain.lan"))
				h.waitHost("tags.explain.lan", "10.80.0.1")
				h.sync()
				return "ingress/" + h.ns + "/web"
			}},
		{code: source.ReasonInvalidHostname, opts: options{ipResolution: static, sources: []string{"service"}}, exit: 1,
			setup: func(h *harness) string {
				// The apiserver refuses such an Ingress host; an annotation takes any text.
				h.service("bad", corev1.ServiceTypeClusterIP, enabled("hostname", "bad_name.explain.lan"))
				// The informer delivers in order: once the next object shows, the bad one has.
				h.service("marker", corev1.ServiceTypeClusterIP, enabled("hostname", "marker.explain.lan", "ip-address", "10.80.0.2"))
				h.waitHost("marker.explain.lan", "10.80.0.2")
				return "services/" + h.ns + "/bad"
			}},
		{code: source.ReasonNoAddress, exit: 1,
			setup: func(h *harness) string {
				h.create(ingress(h.ns, "web", enabled(), "noaddr.explain.lan"))
				h.waitHost("noaddr.explain.lan")
				return "noaddr.explain.lan"
			}},
		{code: registry.ReasonOverBudget, opts: options{ipResolution: static, extraArgs: []string{"--max-entries-per-namespace=1"}}, exit: 1,
			setup: func(h *harness) string {
				h.create(ingress(h.ns, "one", enabled(), "one.explain.lan"))
				h.waitHost("one.explain.lan", "10.80.0.1")
				h.sync()
				h.create(ingress(h.ns, "two", enabled(), "two.explain.lan"))
				h.waitHost("two.explain.lan", "10.80.0.1")
				return "two.explain.lan"
			}},
		{code: registry.ReasonTakeUpPaced, opts: options{ipResolution: static}, exit: 1,
			setup: func(h *harness) string {
				var hosts []string
				for i := range 51 {
					hosts = append(hosts, fmt.Sprintf("h%02d.takeup.lan", i))
				}
				h.create(ingress(h.ns, "many", enabled(), hosts...))
				h.waitHost(hosts[50], "10.80.0.1")
				h.sync()
				// As an earlier version wrote them: without the identity's tag.
				for _, e := range h.srv.Store().List() {
					tags := slices.DeleteFunc(slices.Clone(e.GetTags()), func(t string) bool { return strings.HasPrefix(t, registry.PrefixClusterID) })
					v := e.GetVersion()
					if _, err := h.srv.Store().Update(&pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: &v, Tags: &pb.TagsUpdate{Values: tags}}); err != nil {
						h.t.Fatal(err)
					}
				}
				return "ingress/" + h.ns + "/many"
			}},
		{code: registry.ReasonPolicy, opts: options{ipResolution: static, policy: plan.CreateOnly}, exit: 1,
			setup: func(h *harness) string {
				h.handMade("nas.explain.lan", "192.168.1.20", nil, []string{"mine"}, "")
				h.create(ingress(h.ns, "nas", enabled(), "nas.explain.lan"))
				h.waitHost("nas.explain.lan", "10.80.0.1")
				return "nas.explain.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				if e := doc.Names[0].Entries; len(e) != 1 || e[0].Owner.Class != "hand-made" || e[0].State != explain.StateHeld {
					t.Errorf("entries %+v: want the hand-made entry whose adoption --policy holds", e)
				}
			}},
		{code: registry.ReasonGracePeriod, opts: options{ipResolution: static}, exit: 1,
			setup: func(h *harness) string {
				web := h.create(ingress(h.ns, "web", enabled(), "going.explain.lan"))
				h.waitHost("going.explain.lan", "10.80.0.1")
				h.sync()
				h.delete(web)
				h.waitGone("going.explain.lan")
				h.sync() // the mark
				return "going.explain.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				e := doc.Names[0].Entries
				if len(e) != 1 || e[0].State != explain.StatePendingDeletion || e[0].Outcome.Due == nil {
					t.Fatalf("entries %+v: want one entry pending deletion with when it goes", e)
				}
				if d := time.Until(*e[0].Outcome.Due); d < 4*time.Minute || d > 6*time.Minute {
					t.Errorf("goes in %s, want about the 5m grace period", d)
				}
			}},
		{code: registry.ReasonMassDeletionHeld, opts: options{ipResolution: static, extraArgs: []string{"--mass-deletion-minimum=2", "--mass-deletion-namespace-minimum=2"}}, exit: 1,
			setup: func(h *harness) string {
				var all []string
				for _, n := range []string{"a", "b", "c"} {
					all = append(all, n)
					h.create(ingress(h.ns, n, enabled(), n+".brake.lan"))
				}
				h.waitHost("c.brake.lan", "10.80.0.1")
				h.sync()
				for _, n := range all {
					if err := h.cp.Client.NetworkingV1().Ingresses(h.ns).Delete(context.Background(), n, metav1.DeleteOptions{}); err != nil {
						h.t.Fatal(err)
					}
				}
				h.waitGone("a.brake.lan")
				h.waitGone("c.brake.lan")
				return "a.brake.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				e := doc.Names[0].Entries
				if len(e) != 1 || e[0].Outcome == nil || e[0].Outcome.Token == "" {
					t.Errorf("entries %+v: want the held entry with the brake's token", e)
				}
			}},
		{code: explain.NotAnswering, opts: options{ipResolution: static}, exit: 1, dns: true,
			setup: func(h *harness) string {
				h.srv.OnSuccess(nil) // the router writes its hosts file but never reloads its DNS
				h.create(ingress(h.ns, "web", enabled(), "quiet.explain.lan"))
				h.waitHost("quiet.explain.lan", "10.80.0.1")
				h.sync()
				return "quiet.explain.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				a := doc.Names[0].Answer
				if a == nil || a.Answering || len(a.Got) != 0 || !slices.Equal(a.Want, []string{"10.80.0.1"}) || doc.Names[0].Claims[0].Outcomes[0].Code != explain.Synced {
					t.Errorf("answer %+v: want the written entry (Synced) and no answer for it", a)
				}
				if out, _ := h.readOnly(h.explainOpts, "list"); !strings.Contains(string(out), "NOT answering") {
					t.Errorf("list does not say the name is not answering:\n%s", out)
				}
			}},
		{code: explain.StillAnswering, opts: options{ipResolution: static, grace: time.Second}, exit: 1, dns: true,
			setup: func(h *harness) string {
				web := h.create(ingress(h.ns, "web", enabled(), "stale.explain.lan"))
				h.waitHost("stale.explain.lan", "10.80.0.1")
				h.sync()
				waitFor(h.t, 10*time.Second, func() bool { // the reload runs after the write's reply
					_, code := h.explainRun(h.explainOpts, "explain", "stale.explain.lan")
					return code == 0
				})
				h.srv.OnSuccess(nil) // from now on the router never reloads its DNS
				h.delete(web)
				h.waitGone("stale.explain.lan")
				// The mark, then the deletion once the one-second grace period is over.
				waitFor(h.t, 10*time.Second, func() bool { h.sync(); return len(h.entries("stale.explain.lan")) == 0 })
				return "stale.explain.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				if a := doc.Names[0].Answer; a == nil || a.Answering || !slices.Equal(a.Got, []string{"10.80.0.1"}) || len(a.Want) != 0 {
					t.Errorf("answer %+v: want the deleted address still served", a)
				}
			}},
		{code: explain.Synced + " and answering", opts: options{ipResolution: static}, exit: 0, dns: true,
			setup: func(h *harness) string {
				h.create(ingress(h.ns, "web", enabled(), "loud.explain.lan"))
				h.waitHost("loud.explain.lan", "10.80.0.1")
				h.sync()
				waitFor(h.t, 10*time.Second, func() bool { // the reload runs after the write's reply
					_, code := h.explainRun(h.explainOpts, "explain", "loud.explain.lan")
					return code == 0
				})
				return "loud.explain.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				if a := doc.Names[0].Answer; a == nil || !a.Answering || !slices.Equal(a.Got, []string{"10.80.0.1"}) {
					t.Errorf("answer %+v: want 10.80.0.1 as written", a)
				}
				if out, _ := h.readOnly(h.explainOpts, "list"); !strings.Contains(string(out), "answers") || strings.Contains(string(out), "NOT answering") {
					t.Errorf("list does not say the name answers:\n%s", out)
				}
			}},
		{code: source.ReasonNotOptedIn, opts: options{ipResolution: static}, exit: 1,
			setup: func(h *harness) string {
				h.create(ingress(h.ns, "web", nil, "plain.explain.lan"))
				return "plain.explain.lan"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				u := doc.Names[0].Unread
				if len(u) != 1 || u[0].Object.Name != "web" || !strings.Contains(u[0].Fix, "kubectl annotate ingress -n "+h.ns+" web "+source.AnnotationEnabled+"=true") {
					t.Errorf("unread %+v: want Ingress web with the annotate line", u)
				}
			}},
		{code: source.ReasonExcludedByLabelFilter, opts: options{ipResolution: static, labelFilter: "dns=internal"}, exit: 1,
			setup: func(h *harness) string {
				h.create(ingress(h.ns, "web", enabled(), "nolabel.explain.lan"))
				return "nolabel.explain.lan"
			}},
		{code: source.ReasonOutsideNamespace, opts: options{ipResolution: static}, exit: 1,
			setup: func(h *harness) string {
				other := createNamespace(h.t, h.cp)
				h.create(ingress(other, "web", enabled(), "elsewhere.explain.lan"))
				return "elsewhere.explain.lan"
			}},
		{code: source.ReasonSourceNotEnabled, opts: options{ipResolution: static}, exit: 1,
			setup: func(h *harness) string {
				h.hostMapping("mapped", map[string]any{"hostname": "mapped.explain.lan", "ipAddress": "10.80.0.7"})
				return "hostmapping/" + h.ns + "/mapped"
			},
			check: func(t *testing.T, h *harness, doc *explain.NamesJSON) {
				if len(doc.Unread) != 1 || doc.Unread[0].Source != "hostmapping" || !strings.Contains(doc.Unread[0].Fix, "--source=hostmapping") {
					t.Errorf("unread %+v: want the hostmapping source named", doc.Unread)
				}
			}},
	}
	tested := map[string]bool{}
	for _, r := range rows {
		tested[strings.TrimSuffix(r.code, " and answering")] = true
		t.Run(r.code, func(t *testing.T) {
			opts := r.opts
			var h *harness
			if r.dns {
				rd := newRouterDNS(t, opts)
				h = rd.h
				opts.extraArgs = append(slices.Clone(opts.extraArgs), "--verify-dns="+rd.dns.Addr)
				// explain decides as the operator does, with its interval (which its heartbeat
				// carries), as the plugin takes it from the operator's Pod.
				opts.interval = dnsInterval
			} else {
				h = newHarness(t, opts)
			}
			h.explainOpts = opts
			target := r.setup(h)
			before := h.writes()
			doc, code := h.explainRun(opts, "explain", target)
			if got := reasonCodes(doc); !slices.Contains(got, strings.TrimSuffix(r.code, " and answering")) {
				t.Errorf("codes %v, want %s", got, r.code)
			}
			if code != r.exit {
				t.Errorf("exit %d, want %d", code, r.exit)
			}
			if h.writes() != before {
				t.Errorf("explain wrote to the router (%d writes)", h.writes()-before)
			}
			if r.check != nil {
				r.check(t, h, doc)
			}
		})
	}
	// Every code explain documents has a row here, but for those only a running operator's
	// memory gives (docs/explain.md says why).
	for _, c := range explain.Codes() {
		if !tested[c.Code] && !slices.Contains(explain.CodesOfTheLoop(), c.Code) {
			t.Errorf("reason code %s has no row", c.Code)
		}
	}
}

// TestExplainAndListAsProcesses runs the binary as a person does: explain's exit status for a
// name on the router (0), one that is not (1) and a bad target (2), the kubectl plugin's name,
// and list's table.
func TestExplainAndListAsProcesses(t *testing.T) {
	h := newHarness(t, options{ipResolution: []string{"static:10.81.0.1"}})
	h.create(ingress(h.ns, "web", enabled(), "web.proc.lan"))
	h.create(ingress(h.ns, "plain", nil, "plain.proc.lan"))
	h.waitHost("web.proc.lan", "10.81.0.1")
	h.sync()
	h.handMade("printer.proc.lan", "192.168.1.9", nil, nil, "")
	run := func(args ...string) (string, int) {
		return exitOf(t, exec.Command(operatorBin, append(h.args(options{ipResolution: []string{"static:10.81.0.1"}, allNS: true}), args...)...))
	}
	out, code := run("explain", "web.proc.lan")
	if code != 0 || !strings.Contains(out, "web.proc.lan: on the router as wanted") || !strings.Contains(out, "Ingress "+h.ns+"/web") {
		t.Errorf("explain web.proc.lan: exit %d\n%s", code, out)
	}
	out, code = run("explain", "plain.proc.lan")
	if code != 1 || !strings.Contains(out, "NotOptedIn") || !strings.Contains(out, "kubectl annotate ingress -n "+h.ns+" plain") {
		t.Errorf("explain plain.proc.lan: exit %d\n%s", code, out)
	}
	out, code = run("explain", "a/b")
	if code != 2 {
		t.Errorf("explain a/b: exit %d, want 2\n%s", code, out)
	}
	// A router that does not answer is an error, never an answer: no name is said to be
	// missing, and nothing is printed as if the router were empty.
	before := h.writes()
	out, code = exitOf(t, exec.Command(operatorBin, append(h.args(options{ipResolution: []string{"static:10.81.0.1"}, allNS: true, endpoint: "127.0.0.1:1"}),
		"explain", "web.proc.lan")...))
	if code != 2 || out != "" {
		t.Errorf("explain with the router away: exit %d, want 2 and nothing on stdout\n%s", code, out)
	}
	if h.writes() != before {
		t.Errorf("%d writes", h.writes()-before)
	}
	out, code = run("list")
	if code != 0 {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	for _, want := range []string{"HOSTNAME", "web.proc.lan", "ingress/" + h.ns + "/web", "synced", "printer.proc.lan", "hand-made"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	out, code = run("list", "--owner=hand-made", "-o", "json")
	var doc explain.ListJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("list -o json: exit %d %v\n%s", code, err, out)
	}
	if len(doc.Entries) != 1 || doc.Entries[0].Hostname != "printer.proc.lan" {
		t.Errorf("list --owner=hand-made: %+v", doc.Entries)
	}
	if !doc.Filtered {
		t.Error("list --owner=hand-made -o json does not say it is filtered")
	}
	// Unfiltered, the list is a router snapshot: the router's entries exactly.
	out, code = run("list", "-o", "json")
	snap, err := explain.ReadSnapshot(strings.NewReader(out))
	if err != nil || code != 0 {
		t.Fatalf("list -o json as a router snapshot: exit %d %v\n%s", code, err, out)
	}
	live, err := h.prov.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byID := func(a, b endpoint.Record) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(snap, byID)
	slices.SortFunc(live, byID)
	if !reflect.DeepEqual(snap, live) {
		t.Errorf("the snapshot\n%+v\nis not the router's entries\n%+v", snap, live)
	}
}

// TestExplainShowsWhatTheRunningOperatorSaid: what only the running operator's loop sees
// reaches explain through its Warning events: on the objects that claim the name (here a
// conflict), and the cluster-wide ones on the RouterHostsConfig (here the brake; a twin's
// TwinInstallation goes the same way).
func TestExplainShowsWhatTheRunningOperatorSaid(t *testing.T) {
	name := "it-explain-said"
	if _, err := createConfig(t, "apiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: RouterHostsConfig\nmetadata: {name: "+name+"}\nspec: {}\n", false); err != nil {
		t.Fatal(err)
	}
	rec, stop := events.New(clientset.EventSink(cp.Client), harnessInstance(t), logrus.New())
	defer stop()
	rec.SetLeading(true)
	opts := options{ipResolution: []string{"static:10.82.0.1"}, configName: name, reporters: []controller.Reporter{rec}, warner: rec,
		extraArgs: []string{"--mass-deletion-minimum=2", "--mass-deletion-namespace-minimum=2"}}
	h := newHarness(t, opts)
	rec.SetClusterObject(h.op.Config.ObjectRef)
	h.handMade("held.said.lan", "10.9.9.9", nil, []string{"k8s-operator", "cluster:other"}, "")
	web := h.create(ingress(h.ns, "web", enabled(), "held.said.lan"))
	for _, n := range []string{"a", "b", "c"} {
		h.create(ingress(h.ns, n, enabled(), n+".said.lan"))
	}
	h.waitHost("c.said.lan", "10.82.0.1")
	h.sync()
	for _, n := range []string{"a", "b", "c"} {
		if err := h.cp.Client.NetworkingV1().Ingresses(h.ns).Delete(context.Background(), n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.waitGone("c.said.lan")
	h.sync() // the brake holds the three
	waitFor(t, 10*time.Second, func() bool { return eventsFor(t, h.ns, string(web.UID))[events.HostnameConflict] == 1 })
	waitFor(t, 10*time.Second, func() bool {
		return eventsFor(t, metav1.NamespaceDefault, string(h.op.Config.ObjectRef().UID))[events.MassDeletionHeld] == 1
	})

	doc, code := h.explainRun(opts, "explain", "held.said.lan")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	said := func(ss []explain.Said, code string) bool {
		return slices.ContainsFunc(ss, func(s explain.Said) bool { return s.Code == code && s.Count >= 1 && time.Since(s.Last) < time.Minute })
	}
	if !said(doc.Names[0].Said, events.HostnameConflict) || doc.Names[0].Said[0].Object.Name != "web" {
		t.Errorf("said on the name %+v: want Ingress web's HostnameConflict", doc.Names[0].Said)
	}
	if !said(doc.Said, events.MassDeletionHeld) {
		t.Errorf("said on the cluster %+v: want MassDeletionHeld", doc.Said)
	}
	out, _ := h.readOnly(opts, "explain", "held.said.lan")
	if !strings.Contains(string(out), "the running operator said") || !strings.Contains(string(out), "MassDeletionHeld") {
		t.Errorf("explain's text does not say what the operator said:\n%s", out)
	}
}

// exitOf runs cmd and returns what it printed on stdout and its exit status; its stderr goes to
// the test's log.
func exitOf(t *testing.T, cmd *exec.Cmd) (string, int) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("%s: %s", strings.Join(cmd.Args, " "), stderr.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}
