// Command sourcegen writes what the chart and kustomize know of the sources from the one table
// they come from, source/kinds.go, so that adding a source is its file, its test and its line
// there:
//
//   - the chart's table of sources (templates/_sources.tpl): each --source value, the names it
//     stands for, and the rules its kind declares, from which the chart's RBAC follows sources;
//   - the chart's values.schema.json list of the values sources takes;
//   - kustomize/rbac.yaml: the chart's ServiceAccount and RBAC rendered by helm with every
//     source and the defaults, less the chart's labels (the kustomization sets its own), so that
//     kustomize grants what the chart does;
//   - the table of each source's rules in docs/operations.md, between its rbac:begin and
//     rbac:end markers.
//
// Without -w it only checks that the files are current, as the test beside it does.
//
//	go run ./hack/sourcegen [-w] [-helm .cache/helm/<version>/helm] [-root .]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/source"
)

const (
	chartDir   = "charts/router-hosts-operator"
	tablePath  = chartDir + "/templates/_sources.tpl"
	schemaPath = chartDir + "/values.schema.json"
	rbacPath   = "kustomize/rbac.yaml"
	docPath    = "docs/operations.md"
	// regenerate is what to run when the files are stale.
	regenerate = "make generate-sources (or go run ./hack/sourcegen -w -helm <helm>)"

	// The release kustomize's objects are named after, and the namespace of kustomization.yaml.
	release   = "router-hosts-operator"
	namespace = "router-hosts-system"
	// kubeVersion satisfies the chart's kubeVersion; the RBAC templates do not depend on it.
	kubeVersion = "v1.31.0"
)

func main() {
	write := flag.Bool("w", false, "rewrite the files; without it, only check that they are current")
	helm := flag.String("helm", os.Getenv("HELM"), "the helm binary (make helm builds it under .cache/; default $HELM)")
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	if err := run(*root, *helm, *write); err != nil {
		fmt.Fprintln(os.Stderr, "sourcegen:", err)
		os.Exit(1)
	}
}

// run generates the files from the table and the chart under root, and writes them, or with
// write false reports those that differ.
func run(root, helm string, write bool) error {
	files, err := generate(root, helm)
	if err != nil {
		return err
	}
	var stale []string
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(root, rel)
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reading %s: %w", rel, err)
		}
		if bytes.Equal(old, files[rel]) {
			continue
		}
		if !write {
			stale = append(stale, rel)
			continue
		}
		if err := os.WriteFile(path, files[rel], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", rel, err)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("stale, not what source/kinds.go and the chart make: %s; run %s", strings.Join(stale, ", "), regenerate)
	}
	return nil
}

// generate returns each generated file's content by its path under root. kustomize's RBAC is
// rendered from a copy of the chart that already has the new table and schema, so that one run
// brings every file up to date.
func generate(root, helm string) (map[string][]byte, error) {
	names := source.Names()
	table, err := sourceTable(names)
	if err != nil {
		return nil, err
	}
	oldSchema, err := os.ReadFile(filepath.Join(root, schemaPath))
	if err != nil {
		return nil, fmt.Errorf("reading the chart's schema: %w", err)
	}
	schema, err := spliceEnum(oldSchema, names)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", schemaPath, err)
	}

	tmp, err := os.MkdirTemp("", "sourcegen")
	if err != nil {
		return nil, fmt.Errorf("a directory for the chart: %w", err)
	}
	defer os.RemoveAll(tmp)
	chart := filepath.Join(tmp, "chart")
	if err := os.CopyFS(chart, os.DirFS(filepath.Join(root, chartDir))); err != nil {
		return nil, fmt.Errorf("copying the chart: %w", err)
	}
	for rel, b := range map[string][]byte{tablePath: table, schemaPath: schema} {
		if err := os.WriteFile(filepath.Join(chart, strings.TrimPrefix(rel, chartDir+"/")), b, 0o644); err != nil {
			return nil, fmt.Errorf("writing the chart's copy: %w", err)
		}
	}
	rendered, err := renderEverySource(helm, chart, tmp, source.Expand(names))
	if err != nil {
		return nil, err
	}
	rbac, err := kustomizeRBAC(rendered)
	if err != nil {
		return nil, fmt.Errorf("the chart's RBAC: %w", err)
	}
	oldDoc, err := os.ReadFile(filepath.Join(root, docPath))
	if err != nil {
		return nil, fmt.Errorf("reading the operations doc: %w", err)
	}
	doc, err := spliceMarked(oldDoc, rulesTable(names))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", docPath, err)
	}
	return map[string][]byte{tablePath: table, schemaPath: schema, rbacPath: rbac, docPath: doc}, nil
}

const (
	docBegin = "<!-- rbac:begin (generated by make generate-sources from source/kinds.go; do not edit) -->"
	docEnd   = "<!-- rbac:end -->"
)

// rulesTable is the doc's table of each source's rules, in the table's order.
func rulesTable(names []string) string {
	var b strings.Builder
	b.WriteString("| source | rules |\n|---|---|\n")
	for _, n := range names {
		if ex := source.Expand([]string{n}); len(ex) != 1 || ex[0] != n {
			fmt.Fprintf(&b, "| `%s` | those of %s |\n", n, codeList(ex))
			continue
		}
		var here, everywhere []string
		for _, r := range source.Rules(n) {
			groups := make([]string, len(r.Groups))
			for i, g := range r.Groups {
				groups[i] = "`" + g + "`"
				if g == "" {
					groups[i] = "core"
				}
			}
			text := fmt.Sprintf("%s on %s %s", strings.Join(r.Verbs, "/"), and(groups), codeList(r.Resources))
			if r.Everywhere {
				everywhere = append(everywhere, text)
			} else {
				here = append(here, text)
			}
		}
		row := strings.Join(here, "; ")
		if len(everywhere) > 0 {
			row += "; in every namespace, whatever is watched: " + strings.Join(everywhere, ", ")
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", n, row)
	}
	return b.String()
}

// codeList writes names as code, joined by and.
func codeList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	return and(quoted)
}

// and joins words as a sentence does: "a", "a and b", "a, b and c".
func and(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// spliceMarked returns doc with the part between its rbac markers replaced by body.
func spliceMarked(doc []byte, body string) ([]byte, error) {
	s := string(doc)
	begin, end := strings.Index(s, docBegin), strings.Index(s, docEnd)
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("the markers are missing, or out of order: put %s and %s where the table of the sources' rules goes", docBegin, docEnd)
	}
	return []byte(s[:begin+len(docBegin)] + "\n" + body + s[end:]), nil
}

// row is one --source value in the chart's table.
type row struct {
	StandsFor []string `json:"standsFor,omitempty"`
	Rules     []rule   `json:"rules,omitempty"`
}

// rule is a source.Rule as a Role writes it; everywhere says the ClusterRole grants it whatever
// namespace is watched.
type rule struct {
	APIGroups  []string `json:"apiGroups"`
	Resources  []string `json:"resources"`
	Verbs      []string `json:"verbs"`
	Everywhere bool     `json:"everywhere,omitempty"`
}

const tableHeader = `{{/*
Generated by make generate-sources (go run ./hack/sourcegen -w) from source/kinds.go: do not
edit. Each --source value, with the names it stands for or the rules its kind needs, as JSON:
the chart's RBAC follows the sources from here (rho.sourceRules).
*/}}
{{- define "rho.sourceTable" -}}
`

// sourceTable is the chart's table: one line a source, in the table's order.
func sourceTable(names []string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(tableHeader)
	b.WriteString("{\n")
	for i, n := range names {
		var e row
		if ex := source.Expand([]string{n}); len(ex) != 1 || ex[0] != n {
			e.StandsFor = ex
		} else {
			for _, r := range source.Rules(n) {
				e.Rules = append(e.Rules, rule{r.Groups, r.Resources, r.Verbs, r.Everywhere})
			}
			if len(e.Rules) == 0 {
				return nil, fmt.Errorf("source %q declares no rules: its kind reads nothing", n)
			}
		}
		line, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("source %q: %w", n, err)
		}
		key, _ := json.Marshal(n)
		fmt.Fprintf(&b, "  %s: %s", key, line)
		if i < len(names)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n{{- end -}}\n")
	return b.Bytes(), nil
}

// spliceEnum replaces the list of the values sources takes in the chart's schema by names, one a
// line, leaving the rest of the file as it is written.
func spliceEnum(schema []byte, names []string) ([]byte, error) {
	s := string(schema)
	const key, enum = `"sources": {`, `"enum": [`
	i := strings.Index(s, key)
	if i < 0 {
		return nil, fmt.Errorf("no %s", key)
	}
	j := strings.Index(s[i:], enum)
	if j < 0 {
		return nil, fmt.Errorf("no %s under %s", enum, key)
	}
	j += i
	open := j + len(enum)
	k := strings.Index(s[open:], "]")
	if k < 0 {
		return nil, fmt.Errorf("the sources' %s is not closed", enum)
	}
	line := s[strings.LastIndex(s[:j], "\n")+1 : j]
	indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
	var b strings.Builder
	for n, name := range names {
		q, _ := json.Marshal(name)
		b.WriteString("\n" + indent + "  " + string(q))
		if n < len(names)-1 {
			b.WriteString(",")
		}
	}
	b.WriteString("\n" + indent)
	out := s[:open] + b.String() + s[open+k:]

	// The list spliced is the one the schema reads for sources.
	var parsed struct {
		Properties struct {
			Sources struct {
				Items struct {
					Enum []string `json:"enum"`
				} `json:"items"`
			} `json:"sources"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(out), &parsed); err != nil {
		return nil, fmt.Errorf("the schema after the splice: %w", err)
	}
	if got := parsed.Properties.Sources.Items.Enum; !slices.Equal(got, names) {
		return nil, fmt.Errorf("the splice did not land in properties.sources.items.enum (it holds %q)", got)
	}
	return []byte(out), nil
}

// renderEverySource runs helm template on the chart with every source and the defaults.
func renderEverySource(helm, chart, tmp string, sources []string) ([]byte, error) {
	if helm == "" {
		return nil, errors.New("no helm: pass -helm or set HELM (make helm builds it under .cache/)")
	}
	values, err := json.Marshal(map[string]any{"sources": sources})
	if err != nil {
		return nil, err
	}
	vf := filepath.Join(tmp, "values.json")
	if err := os.WriteFile(vf, values, 0o600); err != nil {
		return nil, fmt.Errorf("writing the values: %w", err)
	}
	cmd := exec.Command(helm, "template", release, chart, "--namespace", namespace, "--kube-version", kubeVersion, "-f", vf)
	// helm's own state goes to the temporary directory, not the user's.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(tmp, "cache"), "HELM_CONFIG_HOME="+filepath.Join(tmp, "config"),
		"HELM_DATA_HOME="+filepath.Join(tmp, "data"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template: %w\n%s", err, stderr.String())
	}
	return out, nil
}

// rbacKinds are the objects kustomize/rbac.yaml holds.
var rbacKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

const rbacHeader = `# Generated by make generate-sources (go run ./hack/sourcegen -w) from the chart's ServiceAccount
# and RBAC with every source and the default values: do not edit. A source's rules come from
# source/kinds.go, the rest from charts/router-hosts-operator/templates/; an overlay patches
# the Lease's or the mTLS Secret's name when the Deployment or the RouterHostsConfig names
# another.
`

// kustomizeRBAC keeps the ServiceAccount and RBAC of helm's output, in its order, without the
// chart's labels: the Helm-specific ones (managed-by, the chart's version) do not belong in
// kustomize's objects, and the kustomization sets its own.
func kustomizeRBAC(rendered []byte) ([]byte, error) {
	var docs, kinds []string
	for _, d := range strings.Split("\n"+string(rendered), "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(d), &meta); err != nil {
			return nil, fmt.Errorf("helm's output: %w\n%s", err, d)
		}
		if !slices.Contains(rbacKinds, meta.Kind) {
			continue
		}
		d, err := withoutLabels(strings.TrimLeft(d, "\n"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", meta.Kind, err)
		}
		docs, kinds = append(docs, strings.TrimRight(d, "\n")+"\n"), append(kinds, meta.Kind)
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
		if !slices.Contains(kinds, k) {
			return nil, fmt.Errorf("helm rendered no %s (it rendered %q)", k, kinds)
		}
	}
	return []byte(rbacHeader + "---\n" + strings.Join(docs, "---\n")), nil
}

// withoutLabels drops metadata.labels, written as the chart writes it: "  labels:" and the
// lines indented under it.
func withoutLabels(doc string) (string, error) {
	lines := strings.Split(doc, "\n")
	var out []string
	found := false
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "  labels:") {
			if strings.TrimSpace(strings.TrimPrefix(lines[i], "  labels:")) != "" {
				return "", fmt.Errorf("labels written inline (%q): write them as a block", lines[i])
			}
			found = true
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") {
				i++
			}
			continue
		}
		out = append(out, lines[i])
	}
	if !found {
		return "", errors.New("no metadata.labels: every object of the chart carries its labels")
	}
	return strings.Join(out, "\n"), nil
}
