package registry

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// pacedWorld runs syncs of one registry with write-rate budgets, keeping the allowances as the
// planner keeps them, on a server that applies what is sent.
type pacedWorld struct {
	r     *Registry
	srv   *server
	rates Rates
}

func (w *pacedWorld) sync(now time.Time, eps ...*endpoint.Endpoint) pacing {
	d := w.r.Decide(now, w.srv.entries, eps, Given{})
	p := w.r.pace(now, d.Changes, d.Desired, w.rates)
	w.srv.apply(p.Send)
	// Kept as the planner keeps them: the keys touched replaced, those whole forgotten.
	w.rates = w.r.Record(&Decision{Verdict: Verdict{Rates: p.Rates, Changes: p.Send}}, make([]plan.Result, len(p.Send)), nil, nil, w.rates, false)
	return p
}

// pacing is what the rate stage made of a sync's changes at now, from the allowances rates
// left, with claims the objects that exist.
type pacing struct {
	Send, Held []plan.Change
	Rates      Rates
	Problems   []Problem
	Next       time.Time
}

func (r *Registry) pace(now time.Time, changes []plan.Change, claims []*endpoint.Endpoint, rates Rates) pacing {
	v := r.rate(&changesIn{now: now, claims: claims, rates: rates}, changes)
	p := pacing{Send: v.changes, Rates: v.rates, Problems: v.problems, Next: v.next}
	for _, h := range v.held {
		p.Held = append(p.Held, h.Change)
	}
	return p
}

func updates(p pacing) int {
	n := 0
	for _, c := range p.Send {
		if c.Action == plan.Update {
			n++
		}
	}
	return n
}

// TestAFlappingObjectIsCoalesced: an object whose hundred addresses flip every second is written
// whole once, then at its budget a minute, each time in its latest state; an object written
// whole at once (a cold start), another edited twice in a row, and the marks of a namespace
// deleted never wait.
func TestAFlappingObjectIsCoalesced(t *testing.T) {
	budgets := Budgets{ObjectWritesPerMinute: 30, NamespaceWritesPerMinute: 300}
	flap := func(ip string) []*endpoint.Endpoint {
		return hostsOf(100, "flap.lan", "apps", "flap", "u-flap", time.Hour, ip)
	}
	t.Run("a flapping object", func(t *testing.T) {
		w := &pacedWorld{r: newRegWith(t, func(c *Config) { c.Budgets = budgets }), srv: &server{}}
		if p := w.sync(t0, flap("10.0.0.1")...); len(p.Send) != 100 || len(p.Held) != 0 {
			t.Fatalf("the cold start: %d sent, %d held", len(p.Send), len(p.Held))
		}
		written, now := 0, t0
		var last pacing             // the last sync that held changes back
		for i := 1; i <= 120; i++ { // two minutes of a flip a second
			now = now.Add(time.Second)
			p := w.sync(now, flap(fmt.Sprintf("10.0.0.%d", 1+i%2))...)
			written += updates(p)
			if len(p.Held) > 0 {
				last = p
			}
		}
		// The cold start left a budget's worth (30), then 30 a minute, a flip a second.
		if written < 30+2*30-1 || written > 30+2*30+1 {
			t.Fatalf("two minutes of flapping wrote %d updates, want 30 and 30 a minute", written)
		}
		if len(last.Problems) != 1 || last.Problems[0].Kind != ProblemOverBudget || last.Problems[0].Source.UID != "u-flap" {
			t.Fatalf("problems %+v, want the object's OverBudget", last.Problems)
		}
		if last.Next.IsZero() || !last.Next.After(t0) {
			t.Fatalf("next %v: the sync that writes the latest state is not asked for", last.Next)
		}
		// It stops flapping: its latest state reaches the router by the budget's time.
		final := flap("10.0.0.9")
		for i := 0; i < 20; i++ {
			now = now.Add(30 * time.Second)
			w.sync(now, final...)
		}
		for _, e := range w.srv.entries {
			if e.IP != "10.0.0.9" {
				t.Fatalf("%s at %s, want the latest state 10.0.0.9", e.Hostname, e.IP)
			}
		}
		if p := w.sync(now.Add(time.Minute), final...); len(p.Send)+len(p.Held) != 0 || len(p.Problems) != 0 {
			t.Fatalf("settled: %d sent, %d held, problems %v", len(p.Send), len(p.Held), p.Problems)
		}
	})
	t.Run("everyday writes never wait", func(t *testing.T) {
		w := &pacedWorld{r: newRegWith(t, func(c *Config) { c.Budgets = budgets }), srv: &server{}}
		// A namespace of a thousand entries at once.
		var many []*endpoint.Endpoint
		for i := 0; i < 1000; i++ {
			many = append(many, claim(fmt.Sprintf("h%04d.lan", i), "apps", fmt.Sprintf("o%d", i), fmt.Sprintf("u%d", i), time.Hour, "10.0.1.1"))
		}
		if p := w.sync(t0, many...); len(p.Held) != 0 {
			t.Fatalf("a cold start of 1,000: %d held", len(p.Held))
		}
		// An object of ten hostnames edited twice in ten seconds.
		ten := func(ip string) []*endpoint.Endpoint {
			return hostsOf(10, "ten.lan", "web", "ten", "u-ten", time.Hour, ip)
		}
		w.sync(t0, append(ten("10.0.2.1"), many...)...)
		for i, ip := range []string{"10.0.2.2", "10.0.2.3"} {
			if p := w.sync(t0.Add(time.Duration(i+1)*5*time.Second), append(ten(ip), many...)...); len(p.Held) != 0 || len(p.Send) != 10 {
				t.Fatalf("edit %d: %d sent, %d held", i+1, len(p.Send), len(p.Held))
			}
		}
		// The namespace deleted: its thousand marks go at once.
		if p := w.sync(t0.Add(20*time.Second), ten("10.0.2.3")...); len(p.Held) != 0 || len(p.Send) != 1000 {
			t.Fatalf("the namespace's marks: %d sent, %d held", len(p.Send), len(p.Held))
		}
	})
}

// TestAWriteThatFailedSpendsNothing: the allowance is charged with the writes that went through
// only, so a router that stopped half-way through a namespace's cold start gets the rest at the
// next sync, not at the budget's pace.
func TestAWriteThatFailedSpendsNothing(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets = Budgets{ObjectWritesPerMinute: 30, NamespaceWritesPerMinute: 300} })
	var eps []*endpoint.Endpoint
	for i := 0; i < 600; i++ {
		eps = append(eps, claim(fmt.Sprintf("h%04d.lan", i), "apps", fmt.Sprintf("o%d", i), fmt.Sprintf("u%d", i), time.Hour, "10.0.1.1"))
	}
	d := r.Decide(t0, nil, eps, Given{})
	p := r.pace(t0, d.Changes, d.Desired, nil)
	if len(p.Send) != 600 {
		t.Fatalf("the cold start: %d of 600 sent", len(p.Send))
	}
	results := make([]plan.Result, len(p.Send))
	for i := 200; i < len(results); i++ {
		results[i].Err = &plan.ChangeError{Change: p.Send[i], Err: fmt.Errorf("unavailable")}
	}
	rates := r.Record(&Decision{Verdict: Verdict{Rates: p.Rates, Changes: p.Send}}, results, nil, nil, nil, false)
	if a := rates["namespace/apps"]; a.Cap != 900 || a.Tokens != 700 {
		t.Fatalf("the namespace's allowance after 200 of 600 went through: %+v, want 700 of 900 left (600 and the budget)", a)
	}
	again := r.pace(t0.Add(time.Second), d.Changes[200:], d.Desired, rates)
	if len(again.Held) != 0 {
		t.Fatalf("the 400 that failed wait for the budget: %d held", len(again.Held))
	}
}

// TestEveryWriteCounts: an object whose host flips between two names every two seconds writes,
// once its first allowance is spent, at most its budget a minute, whatever its grace period:
// its marks, unmarks and deletions count as its creates do, wait as they do (OverBudget, with
// the object's problem), and its latest state reaches the router once it stops.
func TestEveryWriteCounts(t *testing.T) {
	const budget = 30
	zero, five := time.Duration(0), 5*time.Minute
	for _, tc := range []struct {
		name  string
		grace *time.Duration
		held  plan.Action // among the changes held back
	}{
		{"a grace period of 0", &zero, plan.Delete},
		{"a grace period of 5 minutes", &five, plan.Unmark},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &pacedWorld{r: newRegWith(t, func(c *Config) {
				c.Budgets = Budgets{ObjectWritesPerMinute: budget, NamespaceWritesPerMinute: 300}
			}), srv: &server{}}
			at := func(host string) *endpoint.Endpoint {
				ep := claim(host, "apps", "flap", "u-flap", time.Hour, "10.0.0.1")
				ep.GracePeriod = tc.grace
				return ep
			}
			now := t0
			w.sync(now, at("a.flap.lan"))
			var (
				perMinute [3]int
				heldAway  bool // a change of tc.held's kind held back
				problem   bool // the object's OverBudget
			)
			for i := 1; i <= 90; i++ { // three minutes of a flip every two seconds
				now = now.Add(2 * time.Second)
				p := w.sync(now, at([]string{"a.flap.lan", "b.flap.lan"}[i%2]))
				perMinute[(i-1)/30] += len(p.Send)
				for _, c := range p.Held {
					heldAway = heldAway || c.Action == tc.held
				}
				for _, pr := range p.Problems {
					problem = problem || pr.Kind == ProblemOverBudget && pr.Source.UID == "u-flap"
				}
			}
			// The first minute spends the budget's worth the cold start left, and the budget.
			if perMinute[0] > 2*budget+1 || perMinute[1] > budget+1 || perMinute[2] > budget+1 {
				t.Fatalf("writes a minute %v, want at most %d, then %d a minute", perMinute, 2*budget, budget)
			}
			if !heldAway || !problem {
				t.Fatalf("a %s held: %v; the object's OverBudget: %v", tc.held, heldAway, problem)
			}
			// It stops on b.flap.lan: that is what the router serves once the grace period is over.
			for i := 0; i < 15; i++ {
				now = now.Add(30 * time.Second)
				w.sync(now, at("b.flap.lan"))
			}
			if got := w.srv.byName("a.flap.lan"); len(got) != 0 {
				t.Fatalf("a.flap.lan still on the router: %v", got)
			}
			if got := w.srv.byName("b.flap.lan"); len(got) != 1 || Marked(&w.srv.entries[0]) {
				t.Fatalf("b.flap.lan: %v, want one unmarked entry", got)
			}
		})
	}
}

// TestWhatAnObjectGoneWritesGoes: the marks and deletions of objects that are gone (a namespace
// deleted) are never held, however many, and are charged to their namespace, whose later writes
// wait until its allowance has refilled.
func TestWhatAnObjectGoneWritesGoes(t *testing.T) {
	w := &pacedWorld{r: newRegWith(t, func(c *Config) {
		c.Budgets = Budgets{ObjectWritesPerMinute: 30, NamespaceWritesPerMinute: 300}
		c.GracePeriod = time.Minute
	}), srv: &server{}}
	var many []*endpoint.Endpoint
	for i := 0; i < 1000; i++ {
		many = append(many, claim(fmt.Sprintf("h%04d.lan", i), "apps", fmt.Sprintf("o%d", i), fmt.Sprintf("u%d", i), time.Hour, "10.0.1.1"))
	}
	w.sync(t0, many...)
	for _, tc := range []struct {
		name   string
		at     time.Duration
		action plan.Action
	}{
		{"the namespace deleted: its marks", 10 * time.Second, plan.Mark},
		{"its grace period over: its deletions", 80 * time.Second, plan.Delete},
	} {
		p := w.sync(t0.Add(tc.at))
		if len(p.Held) != 0 || len(p.Send) != 1000 || p.Send[0].Action != tc.action {
			t.Fatalf("%s: %d sent, %d held", tc.name, len(p.Send), len(p.Held))
		}
		if a := w.rates["namespace/apps"]; a.Tokens >= 0 {
			t.Fatalf("%s: the namespace's allowance %+v, want them charged", tc.name, a)
		}
	}
	// The namespace made again at once: its writes wait for what its deletion spent.
	if p := w.sync(t0.Add(90*time.Second), claim("new.lan", "apps", "new", "u-new", 0, "10.0.1.2")); len(p.Send) != 0 || len(p.Held) != 1 {
		t.Fatalf("a new object in the namespace: %d sent, %d held", len(p.Send), len(p.Held))
	}
}

// TestAWriteIsChargedToTheObjectThatCausesIt: an object that joins or leaves an entry another
// object also wants pays for that write, not the object named first (which would let a flapping
// object spend another's budget and never its own).
func TestAWriteIsChargedToTheObjectThatCausesIt(t *testing.T) {
	rec := func(uids ...string) *endpoint.Record {
		r := &endpoint.Record{Hostname: "web.lan", IP: "10.0.0.1", Tags: []string{"namespace:ns"}}
		for _, u := range uids {
			r.Tags = append(r.Tags, PrefixSource+u)
		}
		return r
	}
	for _, tc := range []struct {
		desc string
		c    plan.Change
		want string
	}{
		{"a create is its object's", plan.Change{Action: plan.Create, New: rec("a")}, "a"},
		{"joining another's entry", plan.Change{Action: plan.Update, Old: rec("a"), New: rec("a", "b")}, "b"},
		{"leaving another's entry", plan.Change{Action: plan.Update, Old: rec("a", "b"), New: rec("a")}, "b"},
		{"a change of the entry itself", plan.Change{Action: plan.Update, Old: rec("a", "b"), New: rec("a", "b")}, "a"},
		{"a deletion", plan.Change{Action: plan.Delete, Old: rec("a", "b")}, "a"},
	} {
		if ns, obj := turnOf(&tc.c); ns != "ns" || obj != tc.want {
			t.Errorf("%s: charged to %s/%s, want ns/%s", tc.desc, ns, obj, tc.want)
		}
	}
}

// TestARefusedObjectIsNoObjectGone: an object whose claim a stage refuses still exists, so the
// removals of its former addresses wait for its allowance like its other writes; only an
// object no source asks for any more overdraws.
func TestARefusedObjectIsNoObjectGone(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets = DefaultBudgets() })
	old := []endpoint.Record{
		owned("01A", "a.lan", "10.0.0.1", "namespace:default", "source:u-x"),
		owned("01B", "a.lan", "10.0.0.2", "namespace:default", "source:u-x"),
		{ID: "01C", Hostname: "b.lan", IP: "10.0.0.9", Version: "1", Tags: []string{TagNoAdopt}},
	}
	spent := Rates{"object/u-x": {Tokens: 0, Cap: 10, At: t0}}
	for _, tc := range []struct {
		desc string
		eps  []*endpoint.Endpoint
		held bool
	}{
		{"its claim refused (a hand-made entry holds b.lan)", []*endpoint.Endpoint{claim("b.lan", "default", "x", "u-x", time.Hour, "10.0.0.1")}, true},
		{"gone", nil, false},
	} {
		d := r.Decide(t0, old, tc.eps, Given{Rates: spent})
		held := slices.ContainsFunc(d.Held, func(h Held) bool { return h.Reason == ReasonOverBudget && h.Change.Hostname() == "a.lan" })
		if held != tc.held {
			t.Errorf("%s: a.lan's removals held %v (held %v, changes %v), want %v", tc.desc, held, d.Held, actions(d.Verdict), tc.held)
		}
	}
}

// TestARenewalOfTheMarkOfLifeNeverWaits: an object whose allowance is spent (a flap) holds back
// its own writes, but not a write that renews the installation's heartbeat on its entry, alone
// or riding on another change, which the others would otherwise read as silence. It is still
// charged.
func TestARenewalOfTheMarkOfLifeNeverWaits(t *testing.T) {
	r := newRegWith(t, func(c *Config) { c.Budgets = DefaultBudgets() })
	old := owned("01A", "web.lan", "10.0.0.1", "namespace:default", "source:u-x", PrefixAlive+"2026-01-01T00:00:00Z")
	renewed := old
	renewed.Tags = append(slices.DeleteFunc(slices.Clone(old.Tags), isBeat), PrefixAlive+t0.UTC().Format(time.RFC3339))
	moved := old
	moved.IP = "10.0.0.2"
	movedRenewed := renewed
	movedRenewed.IP = "10.0.0.2"
	spent := Rates{"object/u-x": {Tokens: 0, Cap: 10, At: t0}}
	other := owned("01B", "web.lan", "10.0.0.3", "namespace:default", "source:u-x")
	marked := other
	marked.Tags = append(slices.Clone(other.Tags), PrefixPending+t0.UTC().Format(time.RFC3339))
	renewal := plan.Change{Action: plan.Update, Old: &old, New: &renewed}
	for _, tc := range []struct {
		desc       string
		cs         []plan.Change
		sent, held int
	}{
		{"a renewal alone", []plan.Change{renewal}, 1, 0},
		{"the object's own change", []plan.Change{{Action: plan.Update, Old: &old, New: &moved}}, 0, 1},
		{"a renewal beside a change of the hostname that waits", []plan.Change{{Action: plan.Mark, Old: &other, New: &marked}, renewal}, 1, 1},
		{"a renewal riding on the object's own change", []plan.Change{{Action: plan.Update, Old: &old, New: &movedRenewed}}, 1, 0},
	} {
		p := r.pace(t0, tc.cs, []*endpoint.Endpoint{claim("web.lan", "default", "x", "u-x", time.Hour, "10.0.0.1")}, spent)
		if len(p.Send) != tc.sent || len(p.Held) != tc.held || (tc.sent == 1 && !renews(&p.Send[0])) {
			t.Errorf("%s: sent %v, held %v; want %d renewal sent and %d held", tc.desc, p.Send, p.Held, tc.sent, tc.held)
		}
	}
}

// TestRecordForgetsWhatIsWhole: a sync's charged allowances replace the touched keys', a whole
// one is forgotten at once, and a sync that read the whole server forgets every key whole by
// then (an object gone leaves nothing), but not one still refilling, overdrawn or not; the
// allowances handed in are not written to.
func TestRecordForgetsWhatIsWhole(t *testing.T) {
	r := newRegWith(t, func(c *Config) {
		c.Budgets = Budgets{ObjectWritesPerMinute: 30, NamespaceWritesPerMinute: 300}
	})
	d := &Decision{Now: t0, Verdict: Verdict{Rates: Rates{
		"object/gone":    {Tokens: 29, Cap: 31, At: t0},
		"object/flap":    {Tokens: 0, Cap: 130, At: t0},
		"namespace/all":  {Tokens: 300, Cap: 300, At: t0},
		"namespace/gone": {Tokens: -700, Cap: 1300, At: t0},
	}}}
	kept := r.Record(d, nil, nil, nil, Rates{"namespace/all": {Tokens: 1, Cap: 300, At: t0}}, false)
	if _, ok := kept["namespace/all"]; len(kept) != 3 || ok {
		t.Fatalf("after a sync: %v", kept)
	}
	before := maps.Clone(kept)
	after := r.Record(&Decision{Now: t0.Add(10 * time.Second)}, nil, nil, nil, kept, true)
	if !maps.Equal(kept, before) {
		t.Fatalf("Record wrote to the allowances it was handed: %v, was %v", kept, before)
	}
	if _, ok := after["object/gone"]; ok {
		t.Fatalf("a key whole again is kept: %v", after)
	}
	for _, key := range []string{"object/flap", "namespace/gone"} {
		if _, ok := after[key]; !ok {
			t.Fatalf("a key still refilling is forgotten: %v", after)
		}
	}
}

// TestTheRateStage: the changes of an object beyond its write-rate allowance are held
// (OverBudget, until the allowance covers its hostname's changes), counted, and its object
// reported; the allowances are handed on as they were before the sync's writes. What an object
// gone takes away never waits, nor does another object's change.
func TestTheRateStage(t *testing.T) {
	create := func(host, ns, uid string) plan.Change {
		return plan.Change{Action: plan.Create, New: &endpoint.Record{Hostname: host, IP: "10.0.0.1",
			Tags: []string{TagOwner, PrefixCluster + "home", PrefixNamespace + ns, PrefixSource + uid}}}
	}
	gone := owned("g1", "gone.lan", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u9")
	markGone := plan.Change{Action: plan.Mark, Old: &gone, New: &gone}
	spent := func(uids ...string) Rates {
		out := Rates{}
		for _, u := range uids {
			out["object/"+u] = Allowance{Tokens: 0, Cap: 2, At: t0}
		}
		return out
	}
	fast := claim("fast.lan", "a", "fast", "u1", time.Hour, "10.0.0.1")
	calm := claim("calm.lan", "a", "calm", "u2", time.Hour, "10.0.0.1")
	for _, tc := range []struct {
		name       string
		budget     int
		rates      Rates
		changes    []plan.Change
		sent, held []string
		problems   []string
		next       time.Time
		allowances Rates
	}{
		{name: "no budget", rates: spent("u1"), changes: []plan.Change{create("fast.lan", "a", "u1")}, sent: []string{"create fast.lan"}},
		{name: "within the allowance", budget: 2, changes: []plan.Change{create("fast.lan", "a", "u1")}, sent: []string{"create fast.lan"},
			allowances: Rates{"object/u1": {Tokens: 3, Cap: 3, At: t0}}},
		{name: "over it", budget: 2, rates: spent("u1"), changes: []plan.Change{create("fast.lan", "a", "u1"), create("calm.lan", "a", "u2")},
			sent: []string{"create calm.lan"}, held: []string{"create fast.lan OverBudget until " + t0.Add(30*time.Second).Format(time.RFC3339)},
			problems: []string{"OverBudget a/fast"}, next: t0.Add(30 * time.Second),
			allowances: Rates{"object/u1": {Tokens: 0, Cap: 2, At: t0}, "object/u2": {Tokens: 3, Cap: 3, At: t0}}},
		{name: "what an object gone takes away", budget: 2, rates: spent("u9"), changes: []plan.Change{markGone}, sent: []string{"mark gone.lan g1"},
			allowances: Rates{"object/u9": {Tokens: 0, Cap: 2, At: t0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.Budgets.ObjectWritesPerMinute = tc.budget })
			in := changesAt(r, []endpoint.Record{gone}, []*endpoint.Endpoint{fast, calm}, nil)
			in.rates = tc.rates
			v := r.rate(in, tc.changes)
			if got := wordsOfChanged(v); !reflect.DeepEqual(got, changeWords{tc.sent, tc.held}) || v.paced != len(tc.held) || !v.next.Equal(tc.next) {
				t.Errorf("sent %q, held %q (%d paced), next %v; want %q, %q, %v", got.sent, got.held, v.paced, v.next, tc.sent, tc.held, tc.next)
			}
			if got := wordsOfVerdicts(nil, verdicts{problems: v.problems}).problems; !reflect.DeepEqual(got, tc.problems) {
				t.Errorf("problems %q, want %q", got, tc.problems)
			}
			if !reflect.DeepEqual(v.rates, tc.allowances) {
				t.Errorf("allowances %v, want %v", v.rates, tc.allowances)
			}
		})
	}
}
