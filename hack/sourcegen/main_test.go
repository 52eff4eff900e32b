package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// helmBin is the helm make test builds and names in HELM.
func helmBin(t *testing.T) string {
	t.Helper()
	h := os.Getenv("HELM")
	if h == "" {
		t.Fatal("HELM is not set: make test sets it; by hand, make helm and HELM=$PWD/.cache/helm/<version>/helm go test ./hack/sourcegen/")
	}
	return h
}

// TestGeneratedFilesAreCurrent: the chart's table of sources, its schema's list of them,
// kustomize/rbac.yaml and the table of docs/operations.md are what source/kinds.go and the chart make, so a source added or given
// other rules, or a chart template's RBAC changed, without make generate-sources fails here.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	if err := run(filepath.Join("..", ".."), helmBin(t), false); err != nil {
		t.Error(err)
	}
}

// TestTheRecipeNamesWhatIsGenerated: docs/sources.md's "Adding a source" names every file this
// generates, and its table at the top has every source, as the recipe says it must.
func TestTheRecipeNamesWhatIsGenerated(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "sources.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	files, err := generate(root, helmBin(t))
	if err != nil {
		t.Fatal(err)
	}
	recipe, table := section(t, doc, "## Adding a source"), section(t, doc, "| `--source` |")
	for rel := range files {
		if !strings.Contains(recipe, "`"+rel+"`") {
			t.Errorf("docs/sources.md's recipe does not name %s, which make generate-sources writes", rel)
		}
	}
	for _, n := range source.Names() {
		if !strings.Contains(table, "`"+n+"`") {
			t.Errorf("docs/sources.md's table of sources has no %s", n)
		}
	}
}

// TestAStaleFileFails: each generated file edited by hand fails the check, naming it; writing
// brings it back.
// section is doc's paragraph or section that starts with start, up to the next blank line or
// heading.
func section(t *testing.T, doc, start string) string {
	t.Helper()
	i := strings.Index(doc, start)
	if i < 0 {
		t.Fatalf("docs/sources.md has no %q", start)
	}
	rest := doc[i+len(start):]
	end := len(rest)
	if strings.HasPrefix(start, "#") {
		if j := strings.Index(rest, "\n## "); j >= 0 {
			end = j
		}
	} else if j := strings.Index(rest, "\n\n"); j >= 0 {
		end = j
	}
	return start + rest[:end]
}

func TestAStaleFileFails(t *testing.T) {
	helm := helmBin(t)
	root := t.TempDir()
	repo := filepath.Join("..", "..")
	if err := os.CopyFS(filepath.Join(root, chartDir), os.DirFS(filepath.Join(repo, chartDir))); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{rbacPath, docPath} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(root, helm, false); err != nil {
		t.Fatalf("the copy, before any edit: %v", err)
	}
	for _, c := range []struct{ file, edit string }{
		{tablePath, `"ingress"`},
		{schemaPath, `"ingress",`},
		{rbacPath, `"ingresses"`},
		{docPath, "| `ingress` |"},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			path := filepath.Join(root, c.file)
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(good), c.edit) {
				t.Fatalf("%s has no %s to edit", c.file, c.edit)
			}
			// A source's name or rule changed by hand, as if the file were kept by hand.
			edited := strings.Replace(string(good), c.edit, strings.Replace(c.edit, "ingress", "ingres", 1), 1)
			if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			err = run(root, helm, false)
			if err == nil || !strings.Contains(err.Error(), c.file) || !strings.Contains(err.Error(), "make generate-sources") {
				t.Errorf("the check with %s edited: %v; want it named, and how to regenerate", c.file, err)
			}
			if err := run(root, helm, true); err != nil {
				t.Fatal(err)
			}
			if back, err := os.ReadFile(path); err != nil || string(back) != string(good) {
				t.Errorf("writing did not bring %s back (%v):\n%s", c.file, err, back)
			}
		})
	}
}

// TestSourceTable: every --source value is in the chart's table, a name that stands for others
// with them, a kind with its rules.
func TestSourceTable(t *testing.T) {
	b, err := sourceTable(source.Names())
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	body := text[strings.Index(text, "-}}\n")+len("-}}\n") : strings.LastIndex(text, "{{- end -}}")]
	var table map[string]row
	if err := json.Unmarshal([]byte(body), &table); err != nil {
		t.Fatalf("the table is not JSON: %v\n%s", err, body)
	}
	if len(table) != len(source.Names()) {
		t.Errorf("the table has %d sources, the operator %d", len(table), len(source.Names()))
	}
	for _, n := range source.Names() {
		e, ok := table[n]
		switch {
		case !ok:
			t.Errorf("no %s in the table", n)
		case n == "gateway":
			if want := []string{"gateway-httproute", "gateway-grpcroute", "gateway-tlsroute"}; !reflect.DeepEqual(e.StandsFor, want) || e.Rules != nil {
				t.Errorf("gateway: %+v, want it to stand for %v", e, want)
			}
		default:
			var want []rule
			for _, r := range source.Rules(n) {
				want = append(want, rule{r.Groups, r.Resources, r.Verbs, r.Everywhere})
			}
			if e.StandsFor != nil || len(e.Rules) == 0 || !reflect.DeepEqual(e.Rules, want) {
				t.Errorf("%s: %+v, want the rules %+v", n, e, want)
			}
		}
	}
}

func TestSpliceEnum(t *testing.T) {
	const schema = `{
  "properties": {
    "other": {"enum": ["x"]},
    "sources": {
      "type": "array",
      "items": {
        "enum": [
          "old"
        ]
      },
      "minItems": 1
    }
  }
}
`
	got, err := spliceEnum([]byte(schema), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(schema, `          "old"`, "          \"a\",\n          \"b\"", 1)
	if string(got) != want {
		t.Errorf("spliced:\n%s\nwant:\n%s", got, want)
	}
	for _, c := range []struct{ name, schema, err string }{
		{"no sources", `{"properties": {"other": {}}}`, `no "sources": {`},
		{"no list of sources", `{"properties": {"sources": {"type": "array"}}}`, `no "enum": [`},
		// The first enum after the key is another property's: the check after the splice
		// catches it.
		{"the list elsewhere", `{"properties": {"sources": {"type": "array"}, "other": {"enum": ["x"]}}}`, "did not land"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := spliceEnum([]byte(c.schema), []string{"a"}); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("spliceEnum: %v, want an error with %q", err, c.err)
			}
		})
	}
}

func TestKustomizeRBAC(t *testing.T) {
	const rendered = `---
# Source: chart/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: op
  namespace: ns
  labels:
    helm.sh/chart: chart-1.0.0
    app.kubernetes.io/managed-by: Helm
---
# Source: chart/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: op
  labels:
    app: op
---
# Source: chart/templates/clusterrole.yaml
# Why these rules.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: op
  labels:
    helm.sh/chart: chart-1.0.0
rules:
  - apiGroups: [""]
    resources: ["services"]
    verbs: ["get"]
---
# Source: chart/templates/clusterrolebinding.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: op
  labels:
    helm.sh/chart: chart-1.0.0
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op}
`
	got, err := kustomizeRBAC([]byte(rendered))
	if err != nil {
		t.Fatal(err)
	}
	want := rbacHeader + `---
# Source: chart/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: op
  namespace: ns
---
# Source: chart/templates/clusterrole.yaml
# Why these rules.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: op
rules:
  - apiGroups: [""]
    resources: ["services"]
    verbs: ["get"]
---
# Source: chart/templates/clusterrolebinding.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: op
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op}
`
	if string(got) != want {
		t.Errorf("kustomizeRBAC:\n%s\nwant:\n%s", got, want)
	}

	for _, c := range []struct{ name, rendered, err string }{
		{"inline labels", "kind: ServiceAccount\nmetadata:\n  name: op\n  labels: {a: b}\n", "inline"},
		{"no labels", "kind: ServiceAccount\nmetadata:\n  name: op\n", "no metadata.labels"},
		{"no ClusterRole", "kind: ServiceAccount\nmetadata:\n  name: op\n  labels:\n    a: b\n", "no ClusterRole"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := kustomizeRBAC([]byte(c.rendered)); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("kustomizeRBAC: %v, want an error with %q", err, c.err)
			}
		})
	}
}

func TestRulesTable(t *testing.T) {
	got := rulesTable([]string{"traefik", "hostmapping", "gateway-tlsroute", "gateway"})
	want := "| source | rules |\n|---|---|\n" +
		"| `traefik` | get/list/watch on `traefik.io` and `traefik.containo.us` `ingressroutes` and `ingressroutetcps` |\n" +
		"| `hostmapping` | get/list/watch on `router-hosts.fzymgc.house` `hostmappings`; patch/update on `router-hosts.fzymgc.house` `hostmappings/status` |\n" +
		"| `gateway-tlsroute` | get/list/watch on `gateway.networking.k8s.io` `tlsroutes`; in every namespace, whatever is watched: " +
		"get/list/watch on `gateway.networking.k8s.io` `gateways`, get/list/watch on core `namespaces` |\n" +
		"| `gateway` | those of `gateway-httproute`, `gateway-grpcroute` and `gateway-tlsroute` |\n"
	if got != want {
		t.Errorf("rulesTable:\n%s\nwant:\n%s", got, want)
	}
}

func TestSpliceMarked(t *testing.T) {
	doc := "before\n" + docBegin + "\nold\n" + docEnd + "\nafter\n"
	got, err := spliceMarked([]byte(doc), "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "before\n" + docBegin + "\nnew\n" + docEnd + "\nafter\n"; string(got) != want {
		t.Errorf("spliced:\n%s\nwant:\n%s", got, want)
	}
	for _, doc := range []string{"no markers", docEnd + "\n" + docBegin} {
		if _, err := spliceMarked([]byte(doc), "new\n"); err == nil || !strings.Contains(err.Error(), "markers") {
			t.Errorf("spliceMarked(%q): %v, want the markers named", doc, err)
		}
	}
}
