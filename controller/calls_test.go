package controller

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheLoopAndTheProviderCallNoRule: what the controller and the providers need of the
// registry travels in the Decision; the planner alone calls it (Decide, Record). A call of a
// registry function, or of a method through the Config's Registry, in their code fails here.
func TestTheLoopAndTheProviderCallNoRule(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "../provider"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "registry" {
				t.Errorf("%s: calls registry.%s", fset.Position(call.Pos()), sel.Sel.Name)
			}
			if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Registry" {
				t.Errorf("%s: calls the registry's %s", fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if len(files) < 5 {
		t.Fatalf("read %d files", len(files))
	}
}
