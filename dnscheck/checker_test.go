package dnscheck

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"golang.org/x/net/dns/dnsmessage"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/dnsquery"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// fakeDNS is the router's DNS as the checker's unit tests see it: it serves what a test says,
// as a resolver serves its last-read hosts file, and notes every question with the fake
// clock's time.
type fakeDNS struct {
	clk *clocktesting.FakeClock

	mu sync.Mutex
	// serves is what each name answers; a name without addresses is NXDOMAIN.
	serves map[string][]netip.Addr
	// down answers every question with this error instead.
	down error
	// block, when set, holds every question until it is closed.
	block chan struct{}
	asked []question
}

type question struct {
	at   time.Time
	name string
	typ  dnsmessage.Type
}

func (f *fakeDNS) query(ctx context.Context, _ string, name string, t dnsmessage.Type) (dnsquery.Answer, error) {
	f.mu.Lock()
	block := f.block
	f.asked = append(f.asked, question{f.clk.Now(), name, t})
	f.mu.Unlock()
	if block != nil {
		<-block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return dnsquery.Answer{}, f.down
	}
	addrs, ok := f.serves[name]
	if !ok {
		return dnsquery.Answer{Status: dnsquery.NXDomain}, nil
	}
	a := dnsquery.Answer{Status: dnsquery.NoData}
	for _, addr := range addrs {
		if addr.Is4() == (t == dnsmessage.TypeA) {
			a.Addrs, a.Status = append(a.Addrs, addr), dnsquery.Answered
		}
	}
	return a, nil
}

// serve makes name answer addrs ("" of them: NXDOMAIN), as a reload that read it would.
func (f *fakeDNS) serve(name string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(addrs) == 0 {
		delete(f.serves, name)
		return
	}
	f.serves[name] = parseAddrs(addrs...)
}

func (f *fakeDNS) questions() []question {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

func parseAddrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

// fakeMetrics keeps what the checker sets.
type fakeMetrics struct {
	mu       sync.Mutex
	gauges   map[string]int
	up       string // "", "up" or "down"
	outcomes map[string]int
}

func (m *fakeMetrics) SetNamesNotAnswering(reason string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gauges[reason] = n
}
func (m *fakeMetrics) SetVerifyDNSUp(up bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.up = map[bool]string{true: "up", false: "down"}[up]
}
func (m *fakeMetrics) ClearVerifyDNSUp() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.up = ""
}
func (m *fakeMetrics) CountVerifyDNSQuery(result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes[result]++
}

// fakeWarner keeps the warnings, one line each: "reason kind/name: message".
type fakeWarner struct {
	mu   sync.Mutex
	sent []string
}

func (w *fakeWarner) Warn(ref endpoint.SourceRef, reason, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent = append(w.sent, reason+" "+ref.Kind+"/"+ref.Name+": "+msg)
}

func (w *fakeWarner) warnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.sent)
}

// tester drives a Checker by its steps on a fake clock, as Run would: the clock moves to each
// time the checker says it may next ask.
type tester struct {
	t       *testing.T
	clk     *clocktesting.FakeClock
	dns     *fakeDNS
	c       *Checker
	metrics *fakeMetrics
	warner  *fakeWarner
	logs    *logtest.Hook
	changed int
}

const testServer = "192.0.2.53:53"

func newTester(t *testing.T, interval time.Duration) *tester {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	h := &tester{t: t, clk: clk, dns: &fakeDNS{clk: clk, serves: map[string][]netip.Addr{}},
		metrics: &fakeMetrics{gauges: map[string]int{}, outcomes: map[string]int{}}, warner: &fakeWarner{}, logs: hook}
	h.c = New(Config{Server: testServer, Interval: interval, Clock: clk, Log: log, Metrics: h.metrics, Warner: h.warner,
		Changed: func() { h.changed++ }})
	h.c.query = h.dns.query
	return h
}

// report hands r over and lets the checker digest it at the clock's time.
func (h *tester) report(r *controller.Report) {
	h.c.Report(context.Background(), r)
	h.runFor(0)
}

// runFor lets d pass on the clock, the checker asking whatever falls due meanwhile.
func (h *tester) runFor(d time.Duration) {
	until := h.clk.Now().Add(d)
	for {
		at := h.c.step(context.Background())
		if at.IsZero() || at.After(until) {
			h.clk.SetTime(until)
			return
		}
		if at.After(h.clk.Now()) {
			h.clk.SetTime(at)
		}
	}
}

// gauge is the names_not_answering gauge of reason.
func (h *tester) gauge(reason string) int {
	h.metrics.mu.Lock()
	defer h.metrics.mu.Unlock()
	return h.metrics.gauges[reason]
}

// ingress is an object that claims names.
func ingress(name string) endpoint.SourceRef {
	return endpoint.SourceRef{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Namespace: "default", Name: name, UID: "uid-" + name}
}

// rec is an entry of this cluster's.
func rec(id, host, ip string, aliases ...string) endpoint.Record {
	return endpoint.Record{ID: id, Hostname: host, IP: ip, Aliases: aliases}
}

// after builds the report of a sync after which the cluster owns entries, each claimed by the
// Ingress named as its ID, and which made changes (all of them went through).
func after(entries []endpoint.Record, changes ...plan.Change) *controller.Report {
	r := &controller.Report{Entries: map[string][]endpoint.Record{}, Changes: changes, Results: make([]plan.Result, len(changes))}
	seen := map[string]*endpoint.Endpoint{}
	for _, e := range entries {
		r.Entries[e.Hostname] = append(r.Entries[e.Hostname], e)
		ep := seen[e.Hostname]
		if ep == nil {
			ep = &endpoint.Endpoint{Hostname: e.Hostname, Sources: []endpoint.SourceRef{ingress(e.ID)}}
			seen[e.Hostname] = ep
			r.Desired = append(r.Desired, ep)
		}
		ep.Targets = append(ep.Targets, e.IP)
		ep.Aliases = e.Aliases
	}
	for i := range changes {
		r.Results[i] = plan.Result{Stored: changes[i].New}
	}
	return r
}

func create(e endpoint.Record) plan.Change { return plan.Change{Action: plan.Create, New: &e} }
func update(from, to endpoint.Record) plan.Change {
	return plan.Change{Action: plan.Update, Old: &from, New: &to}
}
func remove(e endpoint.Record) plan.Change { return plan.Change{Action: plan.Delete, Old: &e} }

// TestAWrittenNameIsAskedAGraceAfterTheWriteThenEachInterval: a name that answers as written is
// asked a grace after its write, then once per interval, for the record type it was written
// with, and nothing is reported.
func TestAWrittenNameIsAskedAGraceAfterTheWriteThenEachInterval(t *testing.T) {
	h := newTester(t, time.Minute)
	start := h.clk.Now()
	web, six := rec("web", "web.home.arpa", "10.0.0.1", "www.home.arpa"), rec("six", "six.home.arpa", "fd00::1")
	h.dns.serve("web.home.arpa", "10.0.0.1")
	h.dns.serve("www.home.arpa", "10.0.0.1")
	h.dns.serve("six.home.arpa", "fd00::1")
	h.report(after([]endpoint.Record{web, six}, create(web), create(six)))
	h.runFor(3*time.Minute + 10*time.Second)
	got := map[string][]string{}
	for _, q := range h.dns.questions() {
		got[q.name] = append(got[q.name], fmt.Sprintf("%s %s", q.at.Sub(start), q.typ))
	}
	// The three names are due at once; the pacing puts them a second apart (three names in a
	// minute would be 20 s apart, more than the second the pacing waits at most).
	want := map[string][]string{
		"six.home.arpa": {"5s TypeAAAA", "1m5s TypeAAAA", "2m5s TypeAAAA", "3m5s TypeAAAA"},
		"web.home.arpa": {"6s TypeA", "1m6s TypeA", "2m6s TypeA", "3m6s TypeA"},
		"www.home.arpa": {"7s TypeA", "1m7s TypeA", "2m7s TypeA", "3m7s TypeA"},
	}
	for n := range want {
		if !slices.Equal(got[n], want[n]) {
			t.Errorf("%s asked at %v, want %v", n, got[n], want[n])
		}
	}
	for _, n := range []string{"web.home.arpa", "www.home.arpa", "six.home.arpa"} {
		if a := h.c.State(n); a.Finding != Answering || a.Reported {
			t.Errorf("%s: %+v", n, a)
		}
	}
	if w := h.warner.warnings(); len(w) != 0 || h.gauge("missing")+h.gauge("wrong") != 0 {
		t.Errorf("warnings %v, gauges %v", w, h.metrics.gauges)
	}
	if h.metrics.up != "up" {
		t.Errorf("server state %q, want up", h.metrics.up)
	}
}

// TestEpisodes: a name that does not answer as written for longer than the grace is reported
// once, however often it is asked, under its reason; the report ends when it answers as
// written. Each row is a story of writes and of what the router's DNS serves.
func TestEpisodes(t *testing.T) {
	web := rec("web", "web.home.arpa", "10.0.0.1")
	moved := rec("web", "web.home.arpa", "10.0.0.2")
	for _, tc := range []struct {
		name string
		// before is what the DNS serves and the cluster owns before the write (nothing when
		// the write creates the name), write the sync with the write, then serves what the DNS
		// serves after it, for ever unless fixed.
		before []endpoint.Record
		write  *controller.Report
		serves []string
		reason string // the gauge's label, and the warning's reason
		event  string
		// fixed is what the DNS serves once the router's reload is done.
		fixed []string
	}{
		{name: "a new name whose reload never happens", write: after([]endpoint.Record{web}, create(web)),
			reason: "missing", event: ReasonNotAnswering, fixed: []string{"10.0.0.1"}},
		{name: "a moved name that answers the old address", before: []endpoint.Record{web}, write: after([]endpoint.Record{moved}, update(web, moved)),
			serves: []string{"10.0.0.1"}, reason: "wrong", event: ReasonNotAnswering, fixed: []string{"10.0.0.2"}},
		{name: "a deleted name that still answers", before: []endpoint.Record{web}, write: after(nil, remove(web)),
			serves: []string{"10.0.0.1"}, reason: "still_answering", event: ReasonStillAnswering, fixed: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTester(t, time.Minute)
			if tc.before != nil {
				h.dns.serve("web.home.arpa", "10.0.0.1")
				h.report(after(tc.before))
				h.runFor(2 * time.Minute)
			}
			h.dns.serve("web.home.arpa", tc.serves...)
			written := h.clk.Now()
			h.report(tc.write)
			h.runFor(DefaultGrace - time.Millisecond)
			if n := h.gauge(tc.reason); n != 0 {
				t.Fatalf("reported within the grace: %d", n)
			}
			h.runFor(time.Millisecond)
			a := h.c.State("web.home.arpa")
			if !a.Reported || a.Finding.Label() != tc.reason || h.gauge(tc.reason) != 1 || !a.Since.Equal(written) {
				t.Fatalf("a grace after the write: %+v, gauge %d; want reported as %s since the write", a, h.gauge(tc.reason), tc.reason)
			}
			// Asked again and again, the name is warned of once.
			h.runFor(10 * time.Minute)
			warnings := h.warner.warnings()
			if len(warnings) != 1 || !strings.HasPrefix(warnings[0], tc.event+" Ingress/web: the router's DNS "+testServer) {
				t.Fatalf("warnings %q, want one %s on the Ingress", warnings, tc.event)
			}
			if !slices.ContainsFunc(h.logs.AllEntries(), func(e *logrus.Entry) bool {
				return e.Level == logrus.WarnLevel && e.Data["hostname"] == "web.home.arpa"
			}) {
				t.Error("the report is not logged")
			}
			// Fixed, it answers as written within a round, and the report ends.
			h.dns.serve("web.home.arpa", tc.fixed...)
			h.runFor(time.Minute)
			if h.gauge(tc.reason) != 0 {
				t.Fatalf("after the fix the gauge is %d", h.gauge(tc.reason))
			}
			a = h.c.State("web.home.arpa")
			want := Answering
			if tc.fixed == nil {
				want = Unchecked // deleted and silent: no longer checked
			}
			if a.Finding != want || a.Reported {
				t.Fatalf("after the fix: %+v", a)
			}
			if n := len(h.warner.warnings()); n != 1 {
				t.Errorf("%d warnings, want still 1", n)
			}
		})
	}
}

// TestABadAnswerOnARoundIsReportedOnlyIfItLasts: a name that answered as written and then
// does not is asked again a grace later, and reported only if it still does not answer.
func TestABadAnswerOnARoundIsReportedOnlyIfItLasts(t *testing.T) {
	h := newTester(t, time.Minute)
	t0 := h.clk.Now()
	runUntil := func(d time.Duration) { h.runFor(t0.Add(d).Sub(h.clk.Now())) }
	web := rec("web", "web.home.arpa", "10.0.0.1")
	h.dns.serve("web.home.arpa", "10.0.0.1")
	h.report(after([]endpoint.Record{web}, create(web)))
	// Asked at 5 s (as written), then at the rounds: 1m5s, 2m5s, ...
	runUntil(time.Minute)
	// A blink (a reload under way) as the round asks: asked again a grace later, not reported.
	h.dns.serve("web.home.arpa")
	runUntil(time.Minute + 6*time.Second)
	if a := h.c.State("web.home.arpa"); a.Finding != Missing || a.Reported {
		t.Fatalf("at the blink: %+v", a)
	}
	h.dns.serve("web.home.arpa", "10.0.0.1")
	runUntil(2 * time.Minute)
	if h.gauge("missing") != 0 || len(h.warner.warnings()) != 0 || h.c.State("web.home.arpa").Finding != Answering {
		t.Fatalf("a blink was reported: %v", h.warner.warnings())
	}
	// Gone for good: the next round (a minute after the last answer, at 2m10s) sees it, and
	// it is reported a grace later.
	h.dns.serve("web.home.arpa")
	runUntil(2*time.Minute + 10*time.Second)
	if a := h.c.State("web.home.arpa"); a.Finding != Missing || a.Reported {
		t.Fatalf("at the first bad answer: %+v", a)
	}
	runUntil(2*time.Minute + 15*time.Second)
	if a := h.c.State("web.home.arpa"); !a.Reported || !a.Since.Equal(t0.Add(2*time.Minute+10*time.Second)) {
		t.Fatalf("%+v, want reported since the first bad answer", a)
	}
}

// TestADeadServerIsNoFindingOnNames: when the DNS server does not answer, no name is reported
// for it; the server's state is its own gauge and log line, and once it answers again the
// names are judged by what it says.
func TestADeadServerIsNoFindingOnNames(t *testing.T) {
	h := newTester(t, time.Minute)
	var entries []endpoint.Record
	var changes []plan.Change
	for i := range 20 {
		e := rec(fmt.Sprint(i), fmt.Sprintf("n%d.home.arpa", i), "10.0.1.1")
		entries, changes = append(entries, e), append(changes, create(e))
	}
	h.dns.down = errors.New("no answer in 2s")
	h.report(after(entries, changes...))
	h.runFor(5 * time.Minute)
	if n := h.gauge("missing") + h.gauge("wrong"); n != 0 || len(h.warner.warnings()) != 0 {
		t.Fatalf("a dead server reported %d names", n)
	}
	if h.metrics.up != "down" || h.c.ServerDown() == nil {
		t.Fatalf("server state %q, ServerDown %v", h.metrics.up, h.c.ServerDown())
	}
	downs := 0
	for _, e := range h.logs.AllEntries() {
		if strings.Contains(e.Message, "does not answer") {
			downs++
		}
	}
	if downs != 1 {
		t.Errorf("the dead server was logged %d times, want once", downs)
	}
	if a := h.c.State("n0.home.arpa"); a.Finding != Unchecked {
		t.Errorf("a name asked of a dead server: %+v", a)
	}
	// Back, serving none of the names: each is reported.
	h.mu(func() { h.dns.down = nil })
	h.runFor(time.Minute)
	if h.metrics.up != "up" || h.c.ServerDown() != nil {
		t.Fatalf("server state %q after it answered", h.metrics.up)
	}
	if n := h.gauge("missing"); n != 20 {
		t.Fatalf("%d names reported missing, want 20", n)
	}
}

func (h *tester) mu(f func()) {
	h.dns.mu.Lock()
	defer h.dns.mu.Unlock()
	f()
}

// TestOnlyTheTypesWrittenAreAsked: an IPv4 name is asked for A records only, an IPv6 one for
// AAAA only, a dual one for both; a deleted name for the types it had.
func TestOnlyTheTypesWrittenAreAsked(t *testing.T) {
	h := newTester(t, time.Minute)
	v4, v6 := rec("a", "v4.home.arpa", "10.0.0.1"), rec("b", "v6.home.arpa", "fd00::1")
	dual4, dual6 := rec("c", "dual.home.arpa", "10.0.0.2"), rec("c", "dual.home.arpa", "fd00::2")
	h.dns.serve("v4.home.arpa", "10.0.0.1")
	h.dns.serve("v6.home.arpa", "fd00::1")
	h.dns.serve("dual.home.arpa", "10.0.0.2", "fd00::2")
	h.report(after([]endpoint.Record{v4, v6, dual4, dual6}, create(v4), create(v6), create(dual4), create(dual6)))
	h.runFor(30 * time.Second)
	h.dns.serve("v6.home.arpa") // the router's reload after the delete
	h.report(after([]endpoint.Record{v4, dual4, dual6}, remove(v6)))
	h.runFor(30 * time.Second)
	types := map[string][]string{}
	for _, q := range h.dns.questions() {
		types[q.name] = append(types[q.name], q.typ.String())
	}
	for n, want := range map[string][]string{"v4.home.arpa": {"TypeA"}, "v6.home.arpa": {"TypeAAAA", "TypeAAAA"}, "dual.home.arpa": {"TypeA", "TypeAAAA"}} {
		if !slices.Equal(types[n], want) {
			t.Errorf("%s asked %v, want %v", n, types[n], want)
		}
	}
}

// TestRoundsAreSpreadAndBounded: at 1,000 names over a one-minute interval the checker asks at
// most 1,000 questions in any minute, never two closer than 60 ms (the interval spread over
// one round's questions), whether the names answer or not and however many are written at
// once. The counts are logged: they are the budget's measurement.
func TestRoundsAreSpreadAndBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		// written: the first sync wrote every name (else the checker met them without a write,
		// as after a restart); churn rewrites that many names every 10 s; missing is how many
		// names the DNS never serves.
		written        bool
		churn, missing int
	}{
		{name: "a restart: 1,000 names met without a write"},
		{name: "a first sync that writes 1,000 names", written: true},
		{name: "writes every 10 s and 100 names not answering", written: true, churn: 50, missing: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const names, interval = 1000, time.Minute
			h := newTester(t, interval)
			start := h.clk.Now()
			entries := make([]endpoint.Record, names)
			var changes []plan.Change
			for i := range entries {
				entries[i] = rec(fmt.Sprint(i), fmt.Sprintf("n%04d.home.arpa", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250+1))
				if i >= tc.missing {
					h.dns.serve(entries[i].Hostname, entries[i].IP)
				}
				if tc.written {
					changes = append(changes, create(entries[i]))
				}
			}
			h.report(after(entries, changes...))
			for elapsed := time.Duration(0); elapsed < 10*time.Minute; elapsed += 10 * time.Second {
				h.runFor(10 * time.Second)
				if tc.churn > 0 {
					// Each name written moves between two addresses, and the DNS follows.
					var moves []plan.Change
					for j := range tc.churn {
						i := (int(elapsed/(10*time.Second))*tc.churn + j) % names
						old := entries[i]
						entries[i].IP = strings.Replace(old.IP, "10.1.", "10.9.", 1)
						if entries[i].IP == old.IP {
							entries[i].IP = strings.Replace(old.IP, "10.9.", "10.1.", 1)
						}
						if i >= tc.missing {
							h.dns.serve(entries[i].Hostname, entries[i].IP)
						}
						moves = append(moves, update(old, entries[i]))
					}
					h.report(after(entries, moves...))
				}
			}
			qs := h.dns.questions()
			sort.Slice(qs, func(i, j int) bool { return qs[i].at.Before(qs[j].at) })
			most, least := 0, names*10
			for i := range qs {
				// The questions in the minute from this one on.
				j := sort.Search(len(qs), func(k int) bool { return !qs[k].at.Before(qs[i].at.Add(interval)) })
				most = max(most, j-i)
				if qs[i].at.After(start.Add(2*interval)) && qs[i].at.Before(start.Add(8*interval)) {
					least = min(least, j-i)
				}
			}
			gap := time.Hour
			for i := 1; i < len(qs); i++ {
				gap = min(gap, qs[i].at.Sub(qs[i-1].at))
			}
			// The longest a name waited between two questions, after the first round.
			var wait time.Duration
			lastAsked := map[string]time.Time{}
			for _, q := range qs {
				if prev, ok := lastAsked[q.name]; ok && q.at.After(start.Add(interval+DefaultGrace)) {
					wait = max(wait, q.at.Sub(prev))
				}
				lastAsked[q.name] = q.at
			}
			t.Logf("%d names over %s: %d questions in 10 minutes; in any minute at most %d, in steady state at least %d; closest two %s apart; longest wait of a name %s; reported %d",
				names, interval, len(qs), most, least, gap, wait, h.gauge("missing"))
			if most > names {
				t.Errorf("%d questions in one minute, want at most %d", most, names)
			}
			if gap < interval/names {
				t.Errorf("two questions %s apart, want at least %s", gap, interval/names)
			}
			if tc.churn == 0 && least < names-2 {
				t.Errorf("a minute of steady state asked %d questions, want every name once (%d)", least, names)
			}
			// Each name's round: an interval, and up to two when writes and names not answering
			// take their turns from the budget.
			if longest := map[bool]time.Duration{false: interval + interval/names, true: 2 * interval}[tc.churn > 0]; wait > longest {
				t.Errorf("a name waited %s for its round, want at most %s", wait, longest)
			}
			if h.gauge("missing") != tc.missing {
				t.Errorf("%d names reported missing, want %d", h.gauge("missing"), tc.missing)
			}
		})
	}
}

// TestManyNamesWrittenAtOnceAreReportedWithinTheirSpread: when one sync writes many names
// that do not answer, the first is reported a grace after the write and the last within an
// interval more: their checks are spread, not a burst.
func TestManyNamesWrittenAtOnceAreReportedWithinTheirSpread(t *testing.T) {
	h := newTester(t, time.Minute)
	written := h.clk.Now()
	var entries []endpoint.Record
	var changes []plan.Change
	for i := range 200 {
		e := rec(fmt.Sprint(i), fmt.Sprintf("n%d.home.arpa", i), "10.0.2.1")
		entries, changes = append(entries, e), append(changes, create(e))
	}
	h.report(after(entries, changes...))
	h.runFor(DefaultGrace)
	if n := h.gauge("missing"); n != 1 {
		t.Fatalf("%d reported a grace after the write, want the first", n)
	}
	h.runFor(time.Minute)
	if n := h.gauge("missing"); n != 200 {
		t.Fatalf("%d reported within grace and an interval, want all 200", n)
	}
	qs := h.dns.questions()
	if len(qs) < 200 || qs[199].at.Sub(written) > DefaultGrace+time.Minute {
		t.Fatalf("the last of 200 names first asked %s after the write", qs[min(199, len(qs)-1)].at.Sub(written))
	}
}

// TestRunNeverHoldsUpReport: Run asks on a goroutine of its own, on the injected clock; a
// report handed over while a question hangs returns at once, and is digested after it.
func TestRunNeverHoldsUpReport(t *testing.T) {
	h := newTester(t, time.Minute)
	waits := make(chan time.Time)
	h.c.waiting = func(at time.Time) { waits <- at }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.c.Run(ctx); close(done) }()
	if at := <-waits; !at.IsZero() {
		t.Fatalf("waiting until %s with nothing to ask", at)
	}
	web := rec("web", "web.home.arpa", "10.0.0.1")
	h.dns.serve("web.home.arpa", "10.0.0.1")
	h.c.Report(ctx, after([]endpoint.Record{web}, create(web)))
	at := <-waits
	if want := h.clk.Now().Add(DefaultGrace); !at.Equal(want) {
		t.Fatalf("waiting until %s, want the grace, %s", at, want)
	}
	// The question hangs; a sync's report still returns at once.
	h.mu(func() { h.dns.block = make(chan struct{}) })
	h.clk.SetTime(at)
	for len(h.dns.questions()) == 0 {
		runtime.Gosched()
	}
	db := rec("db", "db.home.arpa", "10.0.0.2")
	returned := make(chan struct{})
	go func() {
		h.c.Report(ctx, after([]endpoint.Record{web, db}, create(db)))
		close(returned)
	}()
	<-returned
	h.mu(func() { close(h.dns.block); h.dns.block = nil })
	// web is answered (the loop then waits for web's next round), and the report that came
	// meanwhile wakes it: db is digested, and the loop waits for db's grace.
	if at = <-waits; !at.Equal(h.clk.Now().Add(time.Minute)) {
		t.Fatalf("after web's answer, waiting until %s, want its next round", at)
	}
	if a := h.c.State("web.home.arpa"); a.Finding != Answering {
		t.Fatalf("web: %+v", a)
	}
	if at, want := <-waits, h.clk.Now().Add(DefaultGrace); !at.Equal(want) {
		t.Fatalf("waiting until %s, want db's grace, %s", at, want)
	}
	cancel()
	<-done
	if a := h.c.State("web.home.arpa"); a.Finding != Unchecked {
		t.Errorf("after Run ended the checker still knows web: %+v", a)
	}
}

// TestTheServerSetting: turning the check off forgets every name and report; another server
// asks every name again, from a grace on, and a report before its sync is dropped.
func TestTheServerSetting(t *testing.T) {
	h := newTester(t, time.Minute)
	web := rec("web", "web.home.arpa", "10.0.0.1")
	h.report(after([]endpoint.Record{web}, create(web)))
	h.runFor(time.Minute)
	if h.gauge("missing") != 1 || h.metrics.up != "up" {
		t.Fatalf("gauge %d, server %q", h.gauge("missing"), h.metrics.up)
	}
	h.c.SetServer("")
	h.runFor(time.Minute)
	if h.gauge("missing") != 0 || h.metrics.up != "" || h.c.Server() != "" || h.c.State("web.home.arpa").Finding != Unchecked {
		t.Fatalf("off: gauge %d, server %q, state %+v", h.gauge("missing"), h.metrics.up, h.c.State("web.home.arpa"))
	}
	asked := len(h.dns.questions())
	h.report(after([]endpoint.Record{web}))
	h.runFor(time.Minute)
	if n := len(h.dns.questions()); n != asked {
		t.Fatalf("asked %d questions while off", n-asked)
	}
	// On again: the next sync's report names what to ask.
	h.c.SetServer("192.0.2.54:53")
	h.runFor(0)
	h.report(after([]endpoint.Record{web}))
	h.dns.serve("web.home.arpa", "10.0.0.1")
	h.runFor(time.Minute)
	if a := h.c.State("web.home.arpa"); a.Finding != Answering {
		t.Fatalf("on another server: %+v", a)
	}
	// Another server again: asked afresh, a grace later.
	h.c.SetServer("192.0.2.55:53")
	h.runFor(0)
	if a := h.c.State("web.home.arpa"); a.Finding != Unchecked {
		t.Fatalf("a finding of the other server stayed: %+v", a)
	}
	h.runFor(DefaultGrace)
	if a := h.c.State("web.home.arpa"); a.Finding != Answering {
		t.Fatalf("not asked a grace after the change: %+v", a)
	}
}

// TestNamesThatLeaveWithoutADeleteAreForgotten: a name released to its user, or owned by
// another cluster now, is no longer this cluster's to check: its report ends, unasked.
func TestNamesThatLeaveWithoutADeleteAreForgotten(t *testing.T) {
	h := newTester(t, time.Minute)
	web := rec("web", "web.home.arpa", "10.0.0.1")
	h.report(after([]endpoint.Record{web}, create(web)))
	h.runFor(DefaultGrace)
	if h.gauge("missing") != 1 {
		t.Fatal("not reported")
	}
	asked := len(h.dns.questions())
	h.report(after(nil, plan.Change{Action: plan.Release, Old: &web, New: &web}))
	h.runFor(5 * time.Minute)
	if h.gauge("missing") != 0 || len(h.dns.questions()) != asked || h.c.State("web.home.arpa").Finding != Unchecked {
		t.Fatalf("a released name: gauge %d, %d more questions", h.gauge("missing"), len(h.dns.questions())-asked)
	}
}

// TestASharedNameAnswersWithTheOthersAddressesToo: another cluster's line of a shared name
// carries an address beside this cluster's; the name answers as written while every address of
// this cluster's answers, whatever the other's lines come to, and is reported when one of this
// cluster's is missing.
func TestASharedNameAnswersWithTheOthersAddressesToo(t *testing.T) {
	web := rec("web", "web.home.arpa", "10.0.0.1")
	r := after([]endpoint.Record{web}, create(web))
	r.State = &registry.State{Foreign: map[string][]endpoint.Record{"web.home.arpa": {rec("theirs", "web.home.arpa", "10.0.9.9")}}}
	h := newTester(t, time.Minute)
	h.dns.serve("web.home.arpa", "10.0.0.1", "10.0.9.9")
	h.report(r)
	h.runFor(DefaultGrace + time.Minute)
	if a := h.c.State("web.home.arpa"); a.Finding != Answering || a.Reported {
		t.Fatalf("with the other cluster's address beside: %+v", a)
	}
	h.dns.serve("web.home.arpa", "10.0.0.1") // the other cluster's address leaves before this cluster reads again
	h.runFor(time.Minute)
	if a := h.c.State("web.home.arpa"); a.Finding != Answering {
		t.Fatalf("the other's address gone: %+v", a)
	}
	h.dns.serve("web.home.arpa", "10.0.9.9") // this cluster's address lost
	h.runFor(DefaultGrace + 2*time.Minute)
	if a := h.c.State("web.home.arpa"); a.Finding != Wrong || !a.Reported {
		t.Fatalf("this cluster's address missing: %+v, want reported wrong", a)
	}
}
