package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheChartREADMEIsGenerated: the chart's README carries the table its values.yaml makes, so
// a value added, renamed or re-described without `go run ./hack/chart-readme` fails here.
func TestTheChartREADMEIsGenerated(t *testing.T) {
	chart := filepath.Join("..", "..", "charts", "router-hosts-operator")
	readme, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	values, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(readme, values)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(readme) {
		t.Error("charts/router-hosts-operator/README.md's values table is out of date: run go run ./hack/chart-readme")
	}
}

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name, values string
		want         []string // "path type default description"
	}{
		{name: "leaves and a described object, in file order", values: `
# -- The image.
image:
  # -- Its repository.
  repository: ghcr.io/x
  tag: ""
# -- Liveness,
# continued.
probe:
  httpGet: {path: /healthz}
`, want: []string{"image object {\"repository\":\"ghcr.io/x\",\"tag\":\"\"} The image.", "image.repository string \"ghcr.io/x\" Its repository.",
			"probe object {\"httpGet\":{\"path\":\"/healthz\"}} Liveness, continued."}},
		{name: "a plain comment or a blank line ends a description", values: `
# -- Orphaned.

# plain
a: 1
# -- Kept | piped.
b: [x]
`, want: []string{"b list [\"x\"] Kept \\| piped."}},
		{name: "a sibling after a nested block is not its child", values: `
outer:
  # -- Nested.
  inner: true
# -- Top.
top: null
`, want: []string{"outer.inner bool true Nested.", "top null null Top."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, err := table([]byte(c.values))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, strings.Join([]string{r.path, r.typ, r.def, r.desc}, " "))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}
