package v1alpha1

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// regenerate is what to run when the generated files are stale.
const regenerate = "make generate-crds (or CONTROLLER_GEN=... bash hack/generate-crds.sh .)"

// TestGeneratedFilesAreCurrent runs controller-gen over these types into a temporary directory
// and compares what it writes with the committed DeepCopy and CRDs (kustomize's and the
// chart's): a change to a type or a marker without regenerating fails here. make test builds
// controller-gen and names it in CONTROLLER_GEN.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	gen := os.Getenv("CONTROLLER_GEN")
	if gen == "" {
		t.Fatal("CONTROLLER_GEN is not set: make test sets it; by hand, make controller-gen and " +
			"CONTROLLER_GEN=$PWD/.cache/controller-gen/<version>/controller-gen go test ./api/v1alpha1/")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "hack", "generate-crds.sh"), out)
	cmd.Env = append(os.Environ(), "CONTROLLER_GEN="+gen)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/generate-crds.sh: %v\n%s", err, msg)
	}

	var generated []string
	err = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(out, path)
		if err != nil {
			return err
		}
		generated = append(generated, rel)
		want, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		have, err := os.ReadFile(filepath.Join(root, rel))
		switch {
		case os.IsNotExist(err):
			t.Errorf("%s is not committed; run %s", rel, regenerate)
		case err != nil:
			return err
		case !bytes.Equal(have, want):
			t.Errorf("%s is stale: it differs from what controller-gen makes of api/v1alpha1; run %s", rel, regenerate)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(generated) < 5 {
		t.Fatalf("controller-gen wrote %q; want the DeepCopy and two CRDs, each in two places", generated)
	}

	// Every CRD the manifests ship is generated: a hand-written one left beside them is not.
	for _, dir := range []string{"kustomize/crds", "charts/router-hosts-operator/crds"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if rel, _ := filepath.Rel(root, f); !slices.Contains(generated, rel) {
				t.Errorf("%s is not generated from api/v1alpha1: add its type there, or remove it", rel)
			}
		}
	}
}
