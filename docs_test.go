package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// externalDNSVersions are the external-dns the tests run as a process (the Makefile's
// EXTERNAL_DNS_VERSION) and the one whose packages test/externaldns drives the webhook with.
func externalDNSVersions(t *testing.T) (process, packages string) {
	t.Helper()
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^EXTERNAL_DNS_VERSION\s*\?=\s*(\S+)`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no EXTERNAL_DNS_VERSION")
	}
	gomod, err := os.ReadFile("test/externaldns/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	p := regexp.MustCompile(`(?m)^\s*sigs\.k8s\.io/external-dns (v\S+)`).FindSubmatch(gomod)
	if p == nil {
		t.Fatal("test/externaldns/go.mod requires no sigs.k8s.io/external-dns")
	}
	return string(m[1]), string(p[1])
}

// externalDNSImage is an external-dns image reference with its tag.
var externalDNSImage = regexp.MustCompile(`registry\.k8s\.io/external-dns/external-dns:(\S+)`)

// TestTheExternalDNSDocNamesTheTestedRelease: docs/external-dns.md and the example it shows name
// the external-dns release the tests run (the Makefile's EXTERNAL_DNS_VERSION), and the other
// release it names is the one whose packages the tests use, said as such.
func TestTheExternalDNSDocNamesTheTestedRelease(t *testing.T) {
	process, packages := externalDNSVersions(t)
	doc, err := os.ReadFile("docs/external-dns.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("examples/external-dns/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string][]byte{"docs/external-dns.md": doc, "examples/external-dns/deployment.yaml": example} {
		images := externalDNSImage.FindAllSubmatch(text, -1)
		if len(images) == 0 {
			t.Errorf("%s deploys no external-dns image", what)
		}
		for _, m := range images {
			if string(m[1]) != process {
				t.Errorf("%s deploys external-dns %s; the tests run %s (EXTERNAL_DNS_VERSION)", what, m[1], process)
			}
		}
	}
	named := false
	for _, loc := range regexp.MustCompile(`v\d+\.\d+\.\d+`).FindAllIndex(doc, -1) {
		v := string(doc[loc[0]:loc[1]])
		if strings.HasSuffix(string(doc[:loc[0]]), "router-hosts-operator:") {
			continue // the operator's own release, which hack/check-versions.sh holds
		}
		around := string(doc[max(0, loc[0]-120):min(len(doc), loc[1]+120)])
		switch {
		case v == process:
			named = true
		case v == packages && strings.Contains(around, "packages"):
		case v == packages && strings.Contains(around, "proxy does not serve"):
			// why the process is not this release
		default:
			t.Errorf("docs/external-dns.md names external-dns %s (…%s…); the tests run %s and use the packages of %s",
				v, strings.ReplaceAll(around, "\n", " "), process, packages)
		}
	}
	if !named {
		t.Errorf("docs/external-dns.md does not name %s, the external-dns the tests run", process)
	}
}

// TestTheExternalDNSDocShowsTheExample: the containers docs/external-dns.md shows are the
// example's, with its images, and every argument shown is one the example passes.
func TestTheExternalDNSDocShowsTheExample(t *testing.T) {
	doc, err := os.ReadFile("docs/external-dns.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/external-dns.md shows no YAML")
	}
	var lines []string
	for _, l := range strings.Split(string(block[1]), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "        ")) // the containers' indentation in a Deployment
	}
	type container struct {
		Name  string   `json:"name"`
		Image string   `json:"image"`
		Args  []string `json:"args"`
	}
	var shown []container
	if err := yaml.Unmarshal([]byte(strings.Join(lines, "\n")), &shown); err != nil {
		t.Fatalf("docs/external-dns.md's containers: %v", err)
	}
	raw, err := os.ReadFile("examples/external-dns/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(raw, &dep); err != nil {
		t.Fatal(err)
	}
	if len(shown) != len(dep.Spec.Template.Spec.Containers) {
		t.Fatalf("the doc shows %d containers, the example has %d", len(shown), len(dep.Spec.Template.Spec.Containers))
	}
	for i, c := range dep.Spec.Template.Spec.Containers {
		s := shown[i]
		if s.Name != c.Name || s.Image != c.Image {
			t.Errorf("the doc shows container %s (%s), the example has %s (%s)", s.Name, s.Image, c.Name, c.Image)
		}
		for _, a := range s.Args {
			if !slices.Contains(c.Args, a) {
				t.Errorf("container %s: the doc shows %s, which the example does not pass", c.Name, a)
			}
		}
	}
}

// slug is the anchor GitHub gives a heading: lower case, punctuation dropped but for hyphens,
// spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the headings' anchors of a Markdown file, outside code blocks.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fence := false
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(l, "#") {
			out[slug(strings.TrimLeft(l, "#"))] = true
		}
	}
	return out
}

// TestTheDocsLinksResolve: every link of these docs to a file of the repository names one that
// exists, and every #anchor a heading of it, so a renamed heading or a moved file fails here.
func TestTheDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range []string{"docs/configuration.md", "docs/external-dns.md", "docs/migration.md", "docs/ownership.md",
		"docs/reliability.md", "docs/performance.md", "docs/performance-history.md"} {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, m := range link.FindAllStringSubmatch(string(raw), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", doc, target)
				continue
			}
			checked++
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[anchor] {
				t.Errorf("%s links to %s: %s has no heading #%s", doc, target, path, anchor)
			}
		}
		if checked == 0 && doc == "docs/configuration.md" {
			t.Errorf("no link read in %s", doc)
		}
	}
}
