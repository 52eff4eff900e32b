package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// glossaryWord is one word of CONTRIBUTING.md's glossary, with the package (directory) and
// the declaration that are its home; a word without a home is declared nowhere.
type glossaryWord struct {
	word, ident string
	// home is as written (registry.Verdict); homeDir and homePath are filled in once the
	// module is walked.
	home, homeDir string
	homePath      []string
	line          int
}

// readGlossary parses the table under "## Glossary": one row a word, the word (forms
// separated by commas) in the first cell, its home in the second.
func readGlossary(t *testing.T) []glossaryWord {
	t.Helper()
	doc, err := os.ReadFile("CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	var words []glossaryWord
	in := false
	code := regexp.MustCompile("`([^`]+)`")
	for i, line := range strings.Split(string(doc), "\n") {
		switch {
		case line == "## Glossary":
			in = true
			continue
		case strings.HasPrefix(line, "## "):
			in = false
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 || strings.TrimSpace(cells[0]) == "word" || strings.Trim(cells[0], " -") == "" {
			continue
		}
		home := ""
		if m := code.FindStringSubmatch(cells[1]); m != nil {
			home = m[1]
		}
		for form := range strings.SplitSeq(cells[0], ",") {
			form = strings.TrimSpace(strings.Trim(strings.TrimSpace(form), "`"))
			// A word of several parts is declared as one name: known state, KnownState.
			ident := strings.NewReplacer(" ", "", "-", "").Replace(form)
			words = append(words, glossaryWord{word: form, ident: ident, home: home, line: i + 1})
		}
	}
	if len(words) == 0 {
		t.Fatal("CONTRIBUTING.md has no ## Glossary table")
	}
	return words
}

// declaration is one name a Go file declares that a glossary word could be.
type declaration struct {
	pos  token.Position
	dir  string
	kind string
	// name is the name; recv the receiver's type, for a method.
	name, recv string
}

// stdlibMethods are methods a standard interface names, by name and signature: the word is
// Go's there (io.Reader's Read), not the glossary's.
var stdlibMethods = map[string]string{
	"Read": "([]byte) (int, error)",
}

func signature(ft *ast.FuncType) string {
	list := func(fl *ast.FieldList) string {
		if fl == nil {
			return ""
		}
		var out []string
		for _, f := range fl.List {
			for range max(1, len(f.Names)) {
				out = append(out, types.ExprString(f.Type))
			}
		}
		return strings.Join(out, ", ")
	}
	return "(" + list(ft.Params) + ") (" + list(ft.Results) + ")"
}

func receiverOf(fd *ast.FuncDecl) string {
	e := fd.Recv.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	return types.ExprString(e)
}

// moduleDeclarations walks every Go file of the module (not the nested modules under test/,
// the build cache or generated code) and returns what it declares at package level, and each
// package's directory by name.
func moduleDeclarations(t *testing.T) ([]declaration, map[string][]string) {
	t.Helper()
	var decls []declaration
	dirsOf := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == "." {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if pkg := f.Name.Name; !strings.HasSuffix(pkg, "_test") && !strings.HasSuffix(path, "_test.go") && pkg != "main" {
			if !slices.Contains(dirsOf[pkg], dir) {
				dirsOf[pkg] = append(dirsOf[pkg], dir)
			}
		}
		add := func(n *ast.Ident, kind, recv string) {
			decls = append(decls, declaration{pos: fset.Position(n.Pos()), dir: dir, kind: kind, name: n.Name, recv: recv})
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(d.Name, "func", "")
				} else {
					if sig, ok := stdlibMethods[d.Name.Name]; ok && sig == signature(d.Type) {
						continue
					}
					add(d.Name, "method", receiverOf(d))
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(s.Name, "type", "")
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(n, d.Tok.String(), "")
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return decls, dirsOf
}

// names reports whether d's name is the word: a type, a constant or a variable of any case,
// and an exported function or method. An unexported function or method is a file's own verb
// on the word's meaning (claim builds a claim), so it declares no second one.
func (d declaration) names(w glossaryWord) bool {
	if !strings.EqualFold(d.name, w.ident) {
		return false
	}
	return (d.kind != "func" && d.kind != "method") || ast.IsExported(d.name)
}

// TestGlossaryWordsAreDeclaredOnlyAtHome: each word of CONTRIBUTING.md's glossary has one
// meaning, so a Go declaration named by the word (Verdict, verdict) lives in the word's home
// package and nowhere else, and the home the glossary names declares what it says.
func TestGlossaryWordsAreDeclaredOnlyAtHome(t *testing.T) {
	words := readGlossary(t)
	decls, dirsOf := moduleDeclarations(t)
	seen := map[string]int{}
	for i := range words {
		w := &words[i]
		if first, ok := seen[strings.ToLower(w.ident)]; ok {
			t.Errorf("CONTRIBUTING.md:%d: %q is in the glossary twice (line %d)", w.line, w.word, first)
		}
		seen[strings.ToLower(w.ident)] = w.line
		if w.home == "" {
			continue
		}
		parts := strings.Split(w.home, ".")
		dirs := dirsOf[parts[0]]
		if len(dirs) != 1 {
			t.Errorf("CONTRIBUTING.md:%d: the home of %q, %s, is not one package of the module (%v)", w.line, w.word, w.home, dirs)
			continue
		}
		w.homeDir, w.homePath = dirs[0], parts[1:]
		if len(w.homePath) > 0 && !homeDeclares(decls, w.homeDir, w.homePath) {
			t.Errorf("CONTRIBUTING.md:%d: the home of %q, %s, declares no %s", w.line, w.word, w.home, strings.Join(w.homePath, "."))
		}
	}
	for _, d := range decls {
		for _, w := range words {
			if !d.names(w) || d.dir == w.homeDir {
				continue
			}
			what := d.kind + " " + d.name
			if d.recv != "" {
				what = fmt.Sprintf("method %s.%s", d.recv, d.name)
			}
			home := "a home: the word is declared nowhere"
			if w.home != "" {
				home = "its home " + w.home
			}
			t.Errorf("%s:%d: %s gives the glossary's %q (CONTRIBUTING.md:%d) a second meaning outside %s; name it for what it is",
				filepath.ToSlash(d.pos.Filename), d.pos.Line, what, w.word, w.line, home)
		}
	}
}

// homeDeclares reports whether dir declares path: a package-level name, or a type and its
// method (registry.Registry.Decide).
func homeDeclares(decls []declaration, dir string, path []string) bool {
	for _, d := range decls {
		if d.dir != dir {
			continue
		}
		switch {
		case len(path) == 1 && d.recv == "" && d.name == path[0]:
			return true
		case len(path) == 2 && d.recv == path[0] && d.name == path[1]:
			return true
		}
	}
	return false
}
