package registry

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
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
		v.changed = append(v.changed, ep.Hostname)
	}
	return v
}

// Step 2: its line in claimStages, after "tenancy".
var recipeLines = []claimStage{
	{"test-names", (*Registry).testNames},
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
	if len(blocks) < 2 {
		t.Fatalf("the recipe shows %d Go blocks, want the stage and its line", len(blocks))
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
