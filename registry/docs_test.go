package registry

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTheDocsListTheStagesInOrder: docs/ownership.md's tables of stages name every stage of
// claimStages and changeStages, in their order, and no other.
func TestTheDocsListTheStagesInOrder(t *testing.T) {
	section := ownershipSection(t, "The order of the rules")
	row := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	var code []string
	for _, s := range claimStages {
		code = append(code, s.name)
	}
	for _, s := range changeStages {
		code = append(code, s.name)
	}
	if !slices.Equal(documented, code) {
		t.Fatalf("docs/ownership.md lists the stages\n%v\nthe code runs\n%v", documented, code)
	}
}

// ownershipSection is the section of docs/ownership.md under the heading "## <heading>", up to
// the next heading of its level.
func ownershipSection(t *testing.T, heading string) string {
	t.Helper()
	raw, err := os.ReadFile("../docs/ownership.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "## "+heading+"\n")
	if start < 0 {
		t.Fatalf("docs/ownership.md has no section %q", heading)
	}
	section := doc[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	return section
}
