// Package kustomize_test checks the manifests users install against the code they must agree
// with. There is no Go package here, only these tests.
package kustomize_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// hostMappingCRD reads and decodes crds/hostmapping.yaml.
func hostMappingCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile("crds/hostmapping.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("decoding crds/hostmapping.yaml: %v", err)
	}
	return &crd
}

// tagItems returns the schema of one spec.tags item of every served version.
func tagItems(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) map[string]apiextensionsv1.JSONSchemaProps {
	t.Helper()
	out := map[string]apiextensionsv1.JSONSchemaProps{}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			t.Fatalf("version %s has no schema", v.Name)
		}
		tags, ok := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["tags"]
		if !ok {
			t.Fatalf("version %s: no spec.tags", v.Name)
		}
		if tags.Items == nil || tags.Items.Schema == nil {
			t.Fatalf("version %s: spec.tags has no item schema", v.Name)
		}
		out[v.Name] = *tags.Items.Schema
	}
	if len(out) == 0 {
		t.Fatal("the CRD serves no version")
	}
	return out
}

var (
	// exactTerm and prefixTerm are the two shapes a term of the reservation rule may take.
	exactTerm  = regexp.MustCompile(`^self\s*==\s*'([^'\\]*)'$`)
	prefixTerm = regexp.MustCompile(`^self\.startsWith\('([^'\\]*)'\)$`)
)

// parseReservation reads a rule of the form
//
//	!(self == 'a' || self.startsWith('b:') || ...)
//
// and returns the exact tags and the prefixes it refuses. Any other shape is an error, so the
// rule's meaning is exactly what the test compares with the registry.
func parseReservation(t *testing.T, rule string) (exact, prefixes []string) {
	t.Helper()
	r := strings.Join(strings.Fields(rule), " ")
	inner, ok := strings.CutPrefix(r, "!(")
	if ok {
		inner, ok = strings.CutSuffix(inner, ")")
	}
	if !ok {
		t.Fatalf("reservation rule is not of the form !(term || term ...): %q", r)
	}
	for _, term := range strings.Split(inner, "||") {
		term = strings.TrimSpace(term)
		if m := exactTerm.FindStringSubmatch(term); m != nil {
			exact = append(exact, m[1])
		} else if m := prefixTerm.FindStringSubmatch(term); m != nil {
			prefixes = append(prefixes, m[1])
		} else {
			t.Fatalf("reservation rule term %q is neither self == '<tag>' nor self.startsWith('<prefix>'); rule: %q", term, r)
		}
	}
	return exact, prefixes
}

// diff reports what of want got lacks, what got has beyond want, and what got repeats.
func diff(want, got []string) (missing, extra, dup []string) {
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
		if seen[g] == 2 {
			dup = append(dup, g)
		}
	}
	for _, w := range want {
		if seen[w] == 0 {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) && !slices.Contains(extra, g) {
			extra = append(extra, g)
		}
	}
	return missing, extra, dup
}

// TestCRDReservedTagsMatchRegistry keeps the HostMapping CRD's CEL rule on spec.tags in step
// with the registry's reserved tag namespace: adding (or removing) a reserved prefix in
// registry/tags.go without the CRD fails here.
func TestCRDReservedTagsMatchRegistry(t *testing.T) {
	crd := hostMappingCRD(t)
	wantPrefixes := registry.ReservedPrefixes()
	if len(wantPrefixes) == 0 {
		t.Fatal("registry.ReservedPrefixes() is empty")
	}
	for version, item := range tagItems(t, crd) {
		// The CEL cost estimate the apiserver checks on apply is bounded by these.
		if item.MaxLength == nil || item.Pattern == "" {
			t.Errorf("%s: spec.tags items lost their maxLength or pattern", version)
		}
		var rules []apiextensionsv1.ValidationRule
		for _, r := range item.XValidations {
			if strings.Contains(r.Message, "reserved") {
				rules = append(rules, r)
			}
		}
		if len(rules) != 1 {
			t.Fatalf("%s: want exactly one reservation rule on spec.tags items, got %d: %+v", version, len(rules), item.XValidations)
		}
		rule := rules[0]
		exact, prefixes := parseReservation(t, rule.Rule)

		if m, x, d := diff([]string{registry.TagOwner}, exact); len(m)+len(x)+len(d) > 0 {
			t.Errorf("%s: exact reserved tags: missing %q, not in the registry %q, repeated %q (rule %q)", version, m, x, d, rule.Rule)
		}
		if m, x, d := diff(wantPrefixes, prefixes); len(m)+len(x)+len(d) > 0 {
			t.Errorf("%s: reserved prefixes: missing %q, not in the registry %q, repeated %q (rule %q)", version, m, x, d, rule.Rule)
		}

		// The message tells the user what is reserved; it must name all of it.
		for _, w := range append([]string{registry.TagOwner}, wantPrefixes...) {
			if !slices.Contains(strings.FieldsFunc(rule.Message, func(r rune) bool { return r == ' ' || r == '(' || r == ')' || r == ',' }), w) {
				t.Errorf("%s: the rule's message does not name %q: %q", version, w, rule.Message)
			}
		}
	}
}
