package registry

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// The "Adding a rule" recipe of docs/ownership.md, carried out as written for a made-up rule:
// names under .test are never written. TestTheRecipeMakesARule shows the steps make a working
// stage; TestTheDocsShowTheRuleAsBuilt keeps the page's code the code built here.

// Step 1: the stage, in a file of its own.

// testNames turns down the claims on names under .test, which RFC 2606 keeps for tests.
func (r *Registry) testNames(_ *claimsIn, eps []*endpoint.Endpoint) verdicts {
	v := verdicts{endpoints: make([]*endpoint.Endpoint, 0, len(eps))}
	for _, ep := range eps {
		if !strings.HasSuffix(ep.Hostname, ".test") {
			v.endpoints = append(v.endpoints, ep)
			continue
		}
		v.problems = append(v.problems, Problem{Source: ep.Sources[0], Kind: ProblemNotPermitted,
			Message: "hostname " + ep.Hostname + " is under .test, which is kept for tests"})
	}
	return v
}

// keepTestNames holds the deletions of entries under .test: a person removes them.
func (r *Registry) keepTestNames(_ *changesIn, changes []plan.Change) changed {
	v := changed{changes: make([]plan.Change, 0, len(changes))}
	for _, c := range changes {
		if c.Action == plan.Delete && strings.HasSuffix(c.Old.Hostname, ".test") {
			v.held = append(v.held, Held{Change: c, Reason: "TestNameKept"})
			continue
		}
		v.changes = append(v.changes, c)
	}
	return v
}

// Step 2: its line in claimStages, after "tenancy"; the change stage's in changeStages,
// after "policy".
var recipeLines = []claimStage{
	{"test-names", (*Registry).testNames},
}

var recipeChangeLines = []changeStage{
	{"keep-test-names", (*Registry).keepTestNames},
}

func recipeChangeTable() []changeStage {
	i := slices.IndexFunc(changeStages[:], func(s changeStage) bool { return s.name == "policy" })
	return slices.Insert(slices.Clone(changeStages[:]), i+1, recipeChangeLines...)
}

func recipeTable() []claimStage {
	i := slices.IndexFunc(claimStages[:], func(s claimStage) bool { return s.name == "tenancy" })
	return slices.Insert(slices.Clone(claimStages[:]), i+1, recipeLines...)
}

func TestTheRecipeMakesARule(t *testing.T) {
	r := newReg(t, "")
	eps := []*endpoint.Endpoint{
		claim("web.lan", "a", "web", "u1", time.Hour, "10.0.0.1"),
		claim("web.test", "a", "trial", "u2", time.Hour, "10.0.0.2"),
	}
	st := r.classify(nil, eps, nil, nil)
	w := r.runClaimStages(recipeTable(), t0, eps, st, nil)
	if len(w.Endpoints) != 1 || w.Endpoints[0].Hostname != "web.lan" {
		t.Fatalf("merged %v, want web.lan alone", w.Endpoints)
	}
	if len(w.Problems) != 1 || w.Problems[0].Stage != "test-names" || w.Problems[0].Source.Name != "trial" || w.Problems[0].Kind != ProblemNotPermitted {
		t.Fatalf("problems %+v, want the trial's, by test-names", w.Problems)
	}
	// Without the line, the rule does not run.
	if w := r.desired(t0, eps, st, nil); len(w.Endpoints) != 2 {
		t.Fatalf("the table without the recipe's line merged %d hostnames", len(w.Endpoints))
	}
}

// TestTheRecipeMakesAChangeRule: the recipe's change stage holds the deletion of an entry
// under .test, with its stage and reason, and sends the deletion of any other.
func TestTheRecipeMakesAChangeRule(t *testing.T) {
	r := newReg(t, "")
	records := []endpoint.Record{
		owned("e1", "old.test", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"gone-1"),
		owned("e2", "old.lan", "10.0.0.2", PrefixNamespace+"a", PrefixSource+"gone-2"),
	}
	in := changesAt(r, records, nil, nil)
	changes := []plan.Change{{Action: plan.Delete, Old: &records[0]}, {Action: plan.Delete, Old: &records[1]}}
	v, _ := r.runChangeStages(recipeChangeTable(), in, changes)
	if len(v.Held) != 1 || v.Held[0].Stage != "keep-test-names" || v.Held[0].Reason != "TestNameKept" || v.Held[0].Change.Old.ID != "e1" {
		t.Fatalf("held %+v, want the deletion of old.test, by keep-test-names", v.Held)
	}
	// The grace stage after it marks the other entry: it goes at its grace period.
	if len(v.Changes) != 1 || v.Changes[0].Old.ID != "e2" || v.Changes[0].Action != plan.Mark {
		t.Fatalf("sent %v, want old.lan marked", v.Changes)
	}
	if v, _ := r.runChangeStages(changeStages[:], in, changes); len(v.Changes) != 2 {
		t.Fatalf("the table without the recipe's line sent %v", v.Changes)
	}
}

// TestTheDocsShowTheRuleAsBuilt: every line of the recipe's Go blocks in docs/ownership.md is
// a line of the code its tests build: this file (the stage, its line) or the operator's
// recipe_test.go (its setting's field and flag).
func TestTheDocsShowTheRuleAsBuilt(t *testing.T) {
	section := ownershipSection(t, "Adding a rule")
	var self []byte
	for _, f := range []string{"recipe_test.go", "../internal/operator/recipe_test.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		self = append(self, b...)
	}
	blocks := strings.Split(section, "```go\n")[1:]
	if len(blocks) < 4 {
		t.Fatalf("the recipe shows %d Go blocks, want the stages and their lines", len(blocks))
	}
	for _, b := range blocks {
		code, _, _ := strings.Cut(b, "```")
		for _, line := range strings.Split(code, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.Contains(string(self), line) {
				t.Errorf("the recipe's line %q is not the code built here", line)
			}
		}
	}
}
