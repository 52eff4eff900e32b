package model

import (
	"os"
	"strings"
	"testing"
)

// TestTheContractIsThePage: docs/ownership.md's contract lists every invariant the simulation
// checks, with its ID, name and promise word for word, and nothing else.
func TestTheContractIsThePage(t *testing.T) {
	page, err := os.ReadFile("../../docs/ownership.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## The contract\n")
	if !ok {
		t.Fatal("docs/ownership.md has no section \"The contract\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "- **O") {
			listed = append(listed, line)
		}
	}
	var want []string
	for _, inv := range Contract {
		want = append(want, "- **"+inv.ID+" "+inv.Name+".** "+inv.Promise)
	}
	if strings.Join(listed, "\n") != strings.Join(want, "\n") {
		t.Fatalf("docs/ownership.md's contract says:\n%s\n\nthe simulation checks:\n%s", strings.Join(listed, "\n"), strings.Join(want, "\n"))
	}
}
