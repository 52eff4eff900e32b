package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
)

// readme is README.md's text.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// codeBlocks are the fenced code blocks of a Markdown text, each with its lines joined where
// a line ends in a backslash.
func codeBlocks(md string) []string {
	var out []string
	for i, part := range strings.Split(md, "```") {
		if i%2 == 1 {
			_, body, _ := strings.Cut(part, "\n")
			out = append(out, strings.ReplaceAll(body, "\\\n", " "))
		}
	}
	return out
}

// TestTheREADMEStartsWithTheTwoCommands: the first screen is make demo and make test, both
// targets the Makefile has, then what the project is in one sentence.
func TestTheREADMEStartsWithTheTwoCommands(t *testing.T) {
	md := readme(t)
	first := codeBlocks(md)[0]
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(first), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if !slices.Equal(cmds, []string{"make demo", "make test"}) {
		t.Fatalf("the README's first block is %q, want make demo and make test", cmds)
	}
	if !strings.HasPrefix(md, "# router-hosts-operator\n\n```sh\nmake demo") {
		t.Error("the README does not open with its title and the two commands")
	}
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"demo", "test"} {
		if !regexp.MustCompile(`(?m)^` + target + `:`).Match(makefile) {
			t.Errorf("the Makefile has no %s target", target)
		}
	}
	after := md[strings.Index(md, "```\n\n")+5:]
	if !strings.HasPrefix(after, "**router-hosts-operator ") {
		t.Errorf("what the project is does not follow the two commands: %.80q", after)
	}
}

// TestTheREADMEsCommandsAreTrue: every flag the READMEs' commands (the project's and the
// chart's) give the operator is one it has; every value they --set is one the chart has; every
// path they and the text name exists; the versions and platforms they name are the chart's and
// the Makefile's; and "no release is published yet" is said exactly while CHANGELOG.md calls
// the newest version unreleased.
func TestTheREADMEsCommandsAreTrue(t *testing.T) {
	for _, tc := range []struct {
		file               string
		minPaths           int
		kinds              []string
		namesComingRelease bool
	}{
		{"README.md", 10, []string{"operator", "helm", "docker", "port-forward"}, true},
		{"charts/router-hosts-operator/README.md", 2, []string{"helm"}, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			checkCommands(t, string(b), tc.minPaths, tc.kinds, tc.namesComingRelease)
		})
	}
}

func checkCommands(t *testing.T, md string, minPaths int, kinds []string, namesComingRelease bool) {
	model, err := operator.FlagModel()
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]bool{}
	for _, f := range model.Flags {
		flags[f.Name] = true
	}
	commands := map[string]bool{}
	for _, c := range model.Commands {
		commands[c.Name] = true
	}
	rawValues, err := os.ReadFile("charts/router-hosts-operator/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(rawValues, &values); err != nil {
		t.Fatal(err)
	}
	chart := chartVersion(t)

	operatorFlag := regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	set := regexp.MustCompile(`--set ([A-Za-z0-9_.]+)=`)
	seen := map[string]int{}
	for _, block := range codeBlocks(md) {
		for _, line := range strings.Split(block, "\n") {
			line, _, _ = strings.Cut(line, "#")
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			switch prog := fields[0]; {
			case strings.HasSuffix(prog, "router-hosts-operator") && !strings.HasPrefix(prog, "--"):
				seen["operator"]++
				if len(fields) > 1 && !strings.HasPrefix(fields[1], "-") && !commands[fields[1]] {
					t.Errorf("the README runs the operator's command %q, which it does not have", fields[1])
				}
				for _, m := range operatorFlag.FindAllStringSubmatch(line, -1) {
					if !flags[m[1]] {
						t.Errorf("the README gives the operator --%s, which it does not have: %s", m[1], strings.TrimSpace(line))
					}
				}
			case prog == "helm":
				seen["helm"]++
				for _, m := range set.FindAllStringSubmatch(line, -1) {
					if !hasValue(values, strings.Split(m[1], ".")) {
						t.Errorf("the README sets %s, which the chart's values.yaml does not have", m[1])
					}
				}
				if v := regexp.MustCompile(`--version (\S+)`).FindStringSubmatch(line); v != nil && v[1] != chart {
					t.Errorf("the README installs chart version %s, the chart is %s", v[1], chart)
				}
			case prog == "kubectl" && strings.Contains(line, "port-forward"):
				seen["port-forward"]++
				port := fmt.Sprint(values["metrics"].(map[string]any)["port"])
				if !strings.HasSuffix(strings.TrimSuffix(strings.TrimSpace(line), " &"), " "+port) {
					t.Errorf("the README forwards another port than the chart's metrics.port %s: %s", port, strings.TrimSpace(line))
				}
			case prog == "curl":
				port := fmt.Sprint(values["metrics"].(map[string]any)["port"])
				if !strings.Contains(line, "localhost:"+port+"/") {
					t.Errorf("the README asks another port than the chart's metrics.port %s: %s", port, strings.TrimSpace(line))
				}
			case prog == "docker":
				seen["docker"]++
				if !strings.Contains(line, "--platform "+strings.Join(imagePlatforms(t), ",")) {
					t.Errorf("the README builds other platforms than the Makefile's PLATFORMS (%v): %s", imagePlatforms(t), strings.TrimSpace(line))
				}
			}
		}
	}
	for _, kind := range kinds {
		if seen[kind] == 0 {
			t.Errorf("no %s command found in the README's code blocks; the check reads nothing", kind)
		}
	}

	// Paths the README names, in text or code.
	path := regexp.MustCompile("(?:^|[\\s`(\\[])((?:examples|charts|kustomize|docs|cmd|hack|test|internal)/[A-Za-z0-9_./-]*[A-Za-z0-9_/-])")
	n := 0
	for _, m := range path.FindAllStringSubmatch(md, -1) {
		n++
		if _, err := os.Stat(strings.TrimSuffix(m[1], "/")); err != nil {
			t.Errorf("the README names %s, which does not exist", m[1])
		}
	}
	if n < minPaths {
		t.Errorf("only %d paths found in the README; the check reads too little", n)
	}

	changelog, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	unreleased := regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(chart) + `\] - Unreleased`).Match(changelog)
	if says := strings.Contains(md, "No release is published yet"); says != unreleased {
		t.Errorf("the README says no release is published: %v; CHANGELOG.md calls %s unreleased: %v", says, chart, unreleased)
	}
	if namesComingRelease && !strings.Contains(md, "`v"+chart+"` will be the first") && unreleased {
		t.Errorf("the README does not name v%s as the coming release", chart)
	}
}

// hasValue reports whether values has the nested key path.
func hasValue(values map[string]any, path []string) bool {
	var cur any = values
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[k]; !ok {
			return false
		}
	}
	return true
}

// chartVersion is the chart's version.
func chartVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("charts/router-hosts-operator/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Version string `json:"version"`
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c.Version
}

// imagePlatforms are the image's platforms, the Makefile's PLATFORMS.
func imagePlatforms(t *testing.T) []string {
	t.Helper()
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PLATFORMS\s*:=\s*(.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no PLATFORMS")
	}
	return strings.Fields(string(m[1]))
}
