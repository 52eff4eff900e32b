package registry

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestEveryRefusalNamesItsStage: each claim stage that turns a claim down, or a part of one,
// says so in the verdict's Stage, with the word of its Event as the Reason, whatever it is;
// what no stage refuses is merged.
func TestEveryRefusalNamesItsStage(t *testing.T) {
	r := newRegWith(t, func(c *Config) {
		c.Tenancy = Tenancy{Domains: []NamespaceDomains{{Namespace: "*", Domains: []string{"lan"}}}}
		c.Budgets = Budgets{EntriesPerObject: 3, EntriesPerNamespace: 4}
	})
	foreign := endpoint.Record{ID: "f1", Hostname: "theirs.lan", IP: "10.9.9.9", Version: "1", Tags: []string{TagOwner, ClusterTag("other")}}
	hand := endpoint.Record{ID: "h1", Hostname: "nas.lan", IP: "192.168.1.5", Version: "1", Tags: []string{TagNoAdopt}}
	held := owned("o1", "held.lan", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u-held")
	tagged := claim("tagged.lan", "a", "tagged", "u1", time.Hour, "10.0.1.1")
	tagged.Tags = []string{"k8s-operator"}
	wide := claim("wide.lan", "a", "wide", "u2", time.Hour, "10.0.2.1", "10.0.2.2", "10.0.2.3", "10.0.2.4")
	aliased := claim("aliased.lan", "b", "aliased", "u9", 3*time.Hour, "10.0.9.1")
	aliased.Aliases = []string{"held.lan"}
	eps := []*endpoint.Endpoint{
		tagged, wide, aliased,
		claim("tv.example.net", "b", "tv", "u3", time.Hour, "10.0.3.1"),
		claim("theirs.lan", "a", "theirs", "u4", time.Hour, "10.0.4.1"),
		claim("nas.lan", "a", "nas", "u5", time.Hour, "192.168.1.5"),
		claim("held.lan", "a", "held", "u-held", 2*time.Hour, "10.0.0.1"),
		claim("held.lan", "b", "steal", "u6", 3*time.Hour, "10.0.6.1"),
		claim("one.lan", "c", "one", "u7", time.Hour, "10.0.7.1", "10.0.7.2", "10.0.7.3"),
		claim("two.lan", "c", "two", "u8", 30*time.Minute, "10.0.8.1", "10.0.8.2"),
	}
	records := []endpoint.Record{foreign, hand, held}
	st := r.classify(records, eps, nil, nil)
	w := r.desired(t0, eps, st, nil)
	stages := map[string]string{}
	for _, c := range w.Conflicts {
		stages[c.Loser.Name+" "+c.Hostname] = c.Stage + " " + c.Reason
	}
	for _, p := range w.Problems {
		stages[p.Source.Name+" "+string(p.Kind)] = p.Stage + " " + p.Reason
	}
	for what, stage := range map[string]string{
		"tagged ReservedTag": "reserved-tags InvalidAnnotation",
		"wide OverBudget":    "object-budget OverBudget",
		"tv NotPermitted":    "tenancy NameNotPermitted",
		"nas nas.lan":        "hostnames HostnameConflict",
		"theirs theirs.lan":  "foreign HostnameConflict",
		"steal held.lan":     "merge HostnameConflict",
		"aliased held.lan":   "aliases HostnameConflict",
		"two OverBudget":     "namespace-budget OverBudget",
	} {
		if got, ok := stages[what]; !ok || got != stage {
			t.Errorf("%s: stage %q (reported: %v), want %q", what, got, ok, stage)
		}
	}
	if len(stages) != 8 {
		t.Errorf("refusals: %v", stages)
	}
	var hosts []string
	for _, ep := range w.Endpoints {
		hosts = append(hosts, ep.Hostname)
	}
	if got, want := strings.Join(hosts, " "), "aliased.lan held.lan one.lan tagged.lan"; got != want {
		t.Errorf("merged %s, want %s", got, want)
	}
}

// TestEveryHeldChangeNamesItsStageAndFacts: what a change stage does not send is in the
// verdict's Held, with the stage, the reason and the fact behind it: the policy, the time a
// marked entry goes, the brake's token.
func TestEveryHeldChangeNamesItsStageAndFacts(t *testing.T) {
	entry := func(id string, extra ...string) endpoint.Record {
		return owned(id, id+".lan", "10.0.0.1", append([]string{PrefixNamespace + "a", PrefixSource + "gone-" + id}, extra...)...)
	}
	marked := PrefixPending + t0.Format(time.RFC3339)
	for _, tc := range []struct {
		name    string
		set     func(*Config)
		records []endpoint.Record
		claims  []*endpoint.Endpoint
		now     time.Time
		given   Given
		want    Held
	}{
		{name: "create-only adopts nothing", set: func(c *Config) { c.Policy = plan.CreateOnly },
			records: []endpoint.Record{{ID: "h1", Hostname: "nas.lan", IP: "10.0.0.9", Version: "1"}}, now: t0,
			claims: []*endpoint.Endpoint{claim("nas.lan", "a", "nas", "u1", time.Hour, "10.0.0.9")},
			want:   Held{Stage: "policy", Reason: ReasonPolicy, Policy: plan.CreateOnly}},
		{name: "a marked entry waits out its grace period", set: func(c *Config) {},
			records: []endpoint.Record{entry("e1", marked)}, now: t0.Add(time.Minute),
			want: Held{Stage: "grace", Reason: ReasonGracePeriod, Due: t0.Add(5 * time.Minute)}},
		{name: "the brake holds a mass deletion", set: func(c *Config) { c.Brake = DefaultBrake() },
			records: func() []endpoint.Record {
				var out []endpoint.Record
				for i := range 12 {
					out = append(out, entry(fmt.Sprintf("e%d", i)))
				}
				return out
			}(), now: t0,
			want: Held{Stage: "brake", Reason: ReasonMassDeletionHeld}},
		{name: "a plan from the known state creates no hostname not searched", set: func(c *Config) {},
			claims: []*endpoint.Endpoint{claim("new.lan", "a", "new", "u1", time.Hour, "10.0.0.7")}, now: t0,
			given: Given{Read: Read{Partial: true, Searched: "other.lan"}},
			want:  Held{Stage: "whole-read", Reason: ReasonWholeReadNeeded}},
		{name: "a plan from the known state deletes nothing", set: func(c *Config) {},
			records: []endpoint.Record{entry("e1", PrefixPending+t0.Add(-time.Hour).Format(time.RFC3339))}, now: t0,
			given: Given{Read: Read{Partial: true, SearchesLone: true}},
			want:  Held{Stage: "whole-read", Reason: ReasonWholeReadNeeded}},
		{name: "an object over its write-rate budget waits", set: func(c *Config) { c.Budgets.ObjectWritesPerMinute = 2 },
			claims: []*endpoint.Endpoint{claim("fast.lan", "a", "fast", "u1", time.Hour, "10.0.0.7")}, now: t0,
			given: Given{Rates: Rates{"object/u1": {Tokens: 0, Cap: 2, At: t0}}},
			want:  Held{Stage: "rate", Reason: ReasonOverBudget, Due: t0.Add(30 * time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, tc.set)
			v := r.Decide(tc.now, tc.records, tc.claims, tc.given).Verdict
			if len(v.Held) == 0 || len(v.Changes) != 0 {
				t.Fatalf("sent %v, held %d", actions(v), len(v.Held))
			}
			want := tc.want
			if v.Braked != nil {
				want.Token = v.Braked.Token
			}
			for _, h := range v.Held {
				h.Change = plan.Change{}
				if h != want {
					t.Errorf("held %+v, want %+v", h, want)
				}
			}
		})
	}
}

// TestEveryStageIsItsFile: a stage named N (reserved-tags) runs the method N in lowerCamelCase
// (reservedTags), declared in N.go with dashes as underscores (reserved_tags.go), and its test
// TestThe<N in UpperCamelCase>Stage is in N_test.go beside it, so that a stage's name in a
// verdict, the docs or a log line leads to its code and its test.
func TestEveryStageIsItsFile(t *testing.T) {
	fset := token.NewFileSet()
	dir, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]string{}    // file of each method of *Registry
	tests := map[string]string{}    // file of each TestXxx
	files := map[string]*ast.File{} // by name
	for _, e := range dir {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = f
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			switch {
			case !ok:
			case fn.Recv != nil && len(fn.Recv.List) == 1 && exprText(fn.Recv.List[0].Type) == "*Registry":
				funcs[fn.Name.Name] = e.Name()
			case fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test"):
				tests[fn.Name.Name] = e.Name()
			}
		}
	}
	lines := stageLines(t, files["stages.go"])
	var names []string
	for _, s := range claimStages {
		names = append(names, s.name)
	}
	for _, s := range changeStages {
		names = append(names, s.name)
	}
	var read []string
	for _, l := range lines {
		read = append(read, l.name)
	}
	if !slices.Equal(read, names) {
		t.Fatalf("stages.go's tables read as %v, the code runs %v", read, names)
	}
	for _, l := range lines {
		words := strings.Split(l.name, "-")
		upper := ""
		for _, w := range words {
			upper += strings.ToUpper(w[:1]) + w[1:]
		}
		method := strings.ToLower(upper[:1]) + upper[1:]
		file := strings.Join(words, "_") + ".go"
		test := "TestThe" + upper + "Stage"
		testFile := strings.TrimSuffix(file, ".go") + "_test.go"
		if l.method != method {
			t.Errorf("stage %q runs (*Registry).%s: want (*Registry).%s, named after it", l.name, l.method, method)
		}
		switch at, ok := funcs[method]; {
		case !ok:
			t.Errorf("stage %q: no method (*Registry).%s is declared; want it in %s", l.name, method, file)
		case at != file:
			t.Errorf("stage %q: (*Registry).%s is declared in %s; want it in %s", l.name, method, at, file)
		}
		switch at, ok := tests[test]; {
		case !ok:
			t.Errorf("stage %q: no %s is declared; want it in %s", l.name, test, testFile)
		case at != testFile:
			t.Errorf("stage %q: %s is declared in %s; want it in %s", l.name, test, at, testFile)
		}
	}
}

// stageLine is one line of a table of stages as stages.go writes it: the stage's name and the
// method of *Registry it runs.
type stageLine struct{ name, method string }

// stageLines are the lines of claimStages and changeStages in f, in order.
func stageLines(t *testing.T, f *ast.File) []stageLine {
	t.Helper()
	if f == nil {
		t.Fatal("no stages.go")
	}
	var out []stageLine
	for _, table := range []string{"claimStages", "changeStages"} {
		var lit *ast.CompositeLit
		ast.Inspect(f, func(n ast.Node) bool {
			if v, ok := n.(*ast.ValueSpec); ok && len(v.Names) == 1 && v.Names[0].Name == table && len(v.Values) == 1 {
				lit, _ = v.Values[0].(*ast.CompositeLit)
			}
			return lit == nil
		})
		if lit == nil {
			t.Fatalf("stages.go declares no table %s", table)
		}
		for _, e := range lit.Elts {
			line, ok := e.(*ast.CompositeLit)
			if !ok || len(line.Elts) != 2 {
				t.Fatalf("%s: a line %s is not {name, method}", table, exprText(e))
			}
			quoted, ok := line.Elts[0].(*ast.BasicLit)
			sel, ok2 := line.Elts[1].(*ast.SelectorExpr)
			if !ok || !ok2 || quoted.Kind != token.STRING || exprText(sel.X) != "(*Registry)" {
				t.Fatalf("%s: a line is not {\"name\", (*Registry).method}", table)
			}
			name, err := strconv.Unquote(quoted.Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, stageLine{name, sel.Sel.Name})
		}
	}
	return out
}

// exprText is the source text of a type or receiver expression, as far as the stage tables need.
func exprText(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return "*" + exprText(x.X)
	case *ast.ParenExpr:
		return "(" + exprText(x.X) + ")"
	}
	return fmt.Sprintf("%T", e)
}

// claimsAt is what every claim stage of a desired call at t0 over records and eps reads, as
// runClaimStages makes it before the first stage runs.
func claimsAt(r *Registry, records []endpoint.Record, eps []*endpoint.Endpoint) *claimsIn {
	st := r.classify(records, eps, nil, nil)
	return &claimsIn{now: t0, st: st, owned: ownedByHost(st), car: carriersOf(st)}
}

// mergedAt is what the merge stage makes of eps, for a stage after it: one endpoint per
// hostname, with the claims each was merged from in in.byHost, as runClaimStages keeps them.
func mergedAt(r *Registry, in *claimsIn, eps []*endpoint.Endpoint) []*endpoint.Endpoint {
	v := r.merge(in, eps)
	in.byHost = v.grouped
	return v.endpoints
}

// changesAt is what every change stage of a sync at t0 over records and claims reads: the
// claims merged as desired merges them, what w (nil: nothing) saw other writers do, and a read
// of the whole server.
func changesAt(r *Registry, records []endpoint.Record, claims []*endpoint.Endpoint, w writers) *changesIn {
	st := r.classify(records, claims, nil, w)
	return &changesIn{now: t0, st: st, desired: r.desired(t0, claims, st, nil).Endpoints, claims: claims}
}

// claimWords is what a claim stage made of its endpoints, in words: the endpoints it left
// ("hostname [addresses] [aliases]", with the tags and grace period when there are any), the
// hostnames it changed, its conflicts ("hostname h of namespace: winner", "alias a of ...") and
// its problems ("Kind namespace/name", with the tag dropped), and the hand-made entries it
// found adoptable ("hostname id"). The hostnames changed are those the loop sees it changed
// (changedBy) of eps, the endpoints it was handed.
type claimWords struct{ endpoints, changed, conflicts, problems, adopt []string }

func wordsOfVerdicts(eps []*endpoint.Endpoint, v verdicts) claimWords {
	var w claimWords
	for _, ep := range v.endpoints {
		s := fmt.Sprintf("%s %v %v", ep.Hostname, ep.Targets, ep.Aliases)
		if len(ep.Tags) > 0 {
			s += fmt.Sprintf(" tags %v", ep.Tags)
		}
		if ep.GracePeriod != nil {
			s += " grace " + ep.GracePeriod.String()
		}
		w.endpoints = append(w.endpoints, s)
	}
	w.changed = changedBy(eps, &v)
	for _, h := range slices.Sorted(maps.Keys(v.adopt)) {
		for _, rec := range v.adopt[h] {
			w.adopt = append(w.adopt, h+" "+rec.ID)
		}
	}
	for _, c := range v.conflicts {
		kind := "hostname"
		if c.Alias {
			kind = "alias"
		}
		w.conflicts = append(w.conflicts, fmt.Sprintf("%s %s of %s: %s", kind, c.Hostname, c.Loser.Namespace, c.Winner))
	}
	for _, p := range v.problems {
		s := string(p.Kind) + " " + p.Source.Namespace + "/" + p.Source.Name
		if p.Tag != "" {
			s += " " + p.Tag
		}
		w.problems = append(w.problems, s)
	}
	return w
}

// changeWords is what a change stage made of the changes, in words: those it sends ("action
// hostname id") and those it holds ("action hostname id Reason", with until when).
type changeWords struct{ sent, held []string }

func wordsOfChanged(v changed) changeWords {
	var w changeWords
	for i := range v.changes {
		w.sent = append(w.sent, changeText(&v.changes[i]))
	}
	for _, h := range v.held {
		s := changeText(&h.Change) + " " + h.Reason
		if !h.Due.IsZero() {
			s += " until " + h.Due.Format(time.RFC3339)
		}
		w.held = append(w.held, s)
	}
	return w
}

func changeText(c *plan.Change) string {
	s := string(c.Action) + " " + c.Hostname()
	if c.Old != nil {
		s += " " + c.Old.ID
	}
	return s
}
