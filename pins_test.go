package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var (
	// usesLine is a step's or a job's `uses:`, with its trailing comment.
	usesLine = regexp.MustCompile(`^\s*(?:-\s+)?uses:\s*(\S+)\s*(?:#\s*(.*?))?\s*$`)
	// pinnedAction is owner/repo[/path]@<full commit SHA>; a tag or branch can be moved.
	pinnedAction = regexp.MustCompile(`^[\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40}$`)
	// pinnedImage is an image by tag and by the digest that decides it.
	pinnedImage = regexp.MustCompile(`^[^\s@:]+(?::\d+)?(?:/[^\s@:]+)*:[\w][\w.-]*@sha256:[0-9a-f]{64}$`)
	// versionTag is what the comment beside a SHA says: the release it is.
	versionTag = regexp.MustCompile(`^v\d+(?:\.\d+){0,2}$`)
)

// checkUses says what is wrong with one `uses:` of a workflow, "" when nothing is: an action
// by full commit SHA with its release tag in a comment (how Dependabot keeps both current), a
// local action, or a Docker image by digest.
func checkUses(ref, comment string) string {
	switch {
	case strings.HasPrefix(ref, "./"):
		return ""
	case strings.HasPrefix(ref, "docker://"):
		if !strings.Contains(ref, "@sha256:") {
			return "a Docker action not pinned by digest"
		}
		return ""
	case !pinnedAction.MatchString(ref):
		return "not pinned by a full commit SHA"
	case !versionTag.MatchString(comment):
		return "pinned without its release tag in a comment (# vX.Y.Z)"
	}
	return ""
}

// checkFrom says what is wrong with one FROM of the Dockerfile, "" when nothing is; stages
// are the names of the stages before it.
func checkFrom(line string, stages []string) (problem, stage string) {
	fields := strings.Fields(line)
	if len(fields) == 0 || !strings.EqualFold(fields[0], "FROM") {
		return "", ""
	}
	fields = slices.DeleteFunc(fields[1:], func(f string) bool { return strings.HasPrefix(f, "--") })
	if len(fields) == 0 {
		return "a FROM without an image", ""
	}
	if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
		stage = fields[2]
	}
	image := fields[0]
	if image == "scratch" || slices.Contains(stages, image) {
		return "", stage
	}
	if !pinnedImage.MatchString(image) {
		return "not pinned by tag@sha256 digest", stage
	}
	return "", stage
}

// TestTheRulesOfPinning: the checks refuse what can move under a build, and take what cannot.
func TestTheRulesOfPinning(t *testing.T) {
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{"      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.4.0", true},
		{"        uses: docker/metadata-action@c299e40c65443455700f0fdfc63efafe5b349051 # v5.10.0", true},
		{"    uses: org/repo/.github/workflows/build.yml@11d5960a326750d5838078e36cf38b85af677262 # v1", true},
		{"      - uses: ./.github/actions/local", true},
		{"      - uses: docker://alpine:3.20@sha256:" + strings.Repeat("ab", 32), true},
		{"      - uses: actions/checkout@v4", false},
		{"      - uses: actions/checkout@v4.4.0 # v4.4.0", false},
		{"      - uses: actions/checkout@main", false},
		{"      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262", false},
		{"      - uses: actions/checkout@11d5960 # v4.4.0", false},
		{"      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # latest", false},
		{"      - uses: docker://alpine:3.20", false},
	} {
		m := usesLine.FindStringSubmatch(c.line)
		if m == nil {
			t.Errorf("%q is not read as a uses:", c.line)
			continue
		}
		if problem := checkUses(m[1], m[2]); (problem == "") != c.ok {
			t.Errorf("%q: %q, want ok=%v", c.line, problem, c.ok)
		}
	}
	digest := "@sha256:" + strings.Repeat("0f", 32)
	for _, c := range []struct {
		line   string
		stages []string
		ok     bool
	}{
		{"FROM --platform=$BUILDPLATFORM golang:1.26" + digest + " AS build", nil, true},
		{"FROM gcr.io/distroless/static-debian12:nonroot" + digest, nil, true},
		{"FROM registry.local:5000/team/base:1.0" + digest, nil, true},
		{"FROM build", []string{"build"}, true},
		{"FROM scratch", nil, true},
		{"FROM golang:1.26 AS build", nil, false},
		{"FROM gcr.io/distroless/static-debian12:nonroot", nil, false},
		{"FROM gcr.io/distroless/static-debian12" + digest, nil, false}, // no tag to say what it is
		{"FROM golang:1.26@sha256:abc", nil, false},
		{"FROM $BASE", nil, false},
		{"FROM build", nil, false},
	} {
		if problem, _ := checkFrom(c.line, c.stages); (problem == "") != c.ok {
			t.Errorf("%q: %q, want ok=%v", c.line, problem, c.ok)
		}
	}
}

// TestEverythingFetchedIsPinned: every action the workflows run is pinned by a full commit SHA
// with its release in a comment, and every base image of the Dockerfile by digest, so that a
// moved tag cannot change what CI runs or what a release ships; Dependabot keeps the pins and
// the Go modules current, weekly.
func TestEverythingFetchedIsPinned(t *testing.T) {
	workflows, err := filepath.Glob(".github/workflows/*.y*ml")
	if err != nil || len(workflows) == 0 {
		t.Fatalf("no workflows: %v", err)
	}
	uses := 0
	for _, f := range workflows {
		forEachLine(t, f, func(n int, line string) {
			m := usesLine.FindStringSubmatch(line)
			if m == nil {
				return
			}
			uses++
			if problem := checkUses(m[1], m[2]); problem != "" {
				t.Errorf("%s:%d: %s: %s", f, n, problem, strings.TrimSpace(line))
			}
		})
	}
	if uses == 0 {
		t.Error("no uses: read in the workflows")
	}
	var stages []string
	froms := 0
	forEachLine(t, "Dockerfile", func(n int, line string) {
		problem, stage := checkFrom(line, stages)
		if stage != "" {
			stages = append(stages, stage)
		}
		if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(line)), "FROM ") {
			froms++
		}
		if problem != "" {
			t.Errorf("Dockerfile:%d: %s: %s", n, problem, line)
		}
	})
	if froms == 0 {
		t.Error("no FROM read in the Dockerfile")
	}

	raw, err := os.ReadFile(".github/dependabot.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Updates []struct {
			Ecosystem   string   `json:"package-ecosystem"`
			Directory   string   `json:"directory"`
			Directories []string `json:"directories"`
			Schedule    struct {
				Interval string `json:"interval"`
			} `json:"schedule"`
		} `json:"updates"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf(".github/dependabot.yml: %v", err)
	}
	weekly := map[string]bool{}
	for _, u := range cfg.Updates {
		if u.Schedule.Interval == "weekly" && (u.Directory == "/" || slices.Contains(u.Directories, "/")) {
			weekly[u.Ecosystem] = true
		}
	}
	for _, eco := range []string{"github-actions", "docker", "gomod"} {
		if !weekly[eco] {
			t.Errorf(".github/dependabot.yml does not update %s weekly from the repository's root", eco)
		}
	}
}

func forEachLine(t *testing.T, file string, fn func(n int, line string)) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		fn(n, s.Text())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}
