package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/system3-dev/system3"

// moduleImports maps each package of the module (by its path under the
// module, "monitor/rules") to the packages of the module its product
// files (not its tests) import.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	eachProductFile(t, parser.ImportsOnly, func(_ *token.FileSet, rel string, f *ast.File) {
		pkg := path.Dir(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(out[pkg], rest) {
				out[pkg] = append(out[pkg], rest)
			}
		}
	})
	return out
}

// deps is every package of the module pkg depends on, directly or not.
func deps(imports map[string][]string, pkg string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, d := range imports[p] {
			if !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(pkg)
	var out []string
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// The floor plan, checked: the vocabulary is a leaf, the wake store knows
// nothing of the monitor, and the faces speak only the vocabulary and the
// client interface (internal/facade, which the backend, internal/backend,
// implements), depending on nothing else of the domain even through
// another package.
func TestFloorPlan(t *testing.T) {
	imports := moduleImports(t)
	if d := deps(imports, "internal/api"); len(d) > 0 {
		t.Errorf("internal/api, the vocabulary, imports packages of the module: %v", d)
	}
	for _, pkg := range []string{"wake", "wake/notify"} {
		for _, d := range deps(imports, pkg) {
			if d == "monitor" || strings.HasPrefix(d, "monitor/") {
				t.Errorf("%s depends on %s: the wake store and its channels know nothing of the monitor", pkg, d)
			}
		}
	}
	// Test support is no product code: product code imports none of it
	// (the fake Anthropic API that system3 demo --agent claude serves is
	// product code, internal/claudefake).
	for pkg, imps := range imports {
		for _, d := range imps {
			if strings.HasPrefix(d, "internal/testsupport/") {
				t.Errorf("%s imports %s: product code imports no test support", pkg, d)
			}
		}
	}
	// Not even through another package: a face compiles with none of the
	// domain (the backend, SQLite's learning store, the rules, tmux).
	forbidden := []string{"internal/backend", "internal/learn", "internal/lifecycle", "internal/coach", "monitor/rules", "tmux", "internal/remote", "internal/audit", "wake"}
	for _, face := range []string{"tui", "mcpserver", "mcpserver/web"} {
		if _, ok := imports[face]; !ok {
			t.Fatalf("no package %s", face)
		}
		for _, d := range deps(imports, face) {
			if slices.Contains(forbidden, d) || d == "monitor" || strings.HasPrefix(d, "monitor/") {
				t.Errorf("%s depends on %s: a face imports the vocabulary and the client interface, nothing else of the domain, directly or not", face, d)
			}
		}
	}
}

// The rooms stay small enough to read: no product file above maxLines
// lines, no product function above maxComplexity branches (cyclomatic
// complexity as gocyclo counts it).
const (
	maxLines      = 600
	maxComplexity = 25
)

func TestRoomsStaySmall(t *testing.T) {
	eachProductFile(t, parser.ParseComments, func(fset *token.FileSet, rel string, f *ast.File) {
		if n := fset.File(f.Pos()).LineCount(); n > maxLines {
			t.Errorf("%s has %d lines, more than %d: split it by concern", rel, n, maxLines)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if c := complexity(fn); c > maxComplexity {
				t.Errorf("%s: %s has cyclomatic complexity %d, more than %d: split it into steps", rel, funcName(fn), c, maxComplexity)
			}
		}
	})
}

// complexity is fn's cyclomatic complexity as gocyclo counts it: one, and
// one for each if, for, range, case or select case that is not a default,
// and && or || (function literals in its body included).
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	if ix, ok := typ.(*ast.IndexExpr); ok {
		typ = ix.X
	}
	if ix, ok := typ.(*ast.IndexListExpr); ok {
		typ = ix.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return "(" + id.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}

// TestComplexityCountsAsGocyclo: the count on a function whose branches
// are known.
func TestComplexityCountsAsGocyclo(t *testing.T) {
	const src = `package p
func f(a, b bool, xs []int, ch chan int) int {
	if a && b || !a { // 1 if, 1 &&, 1 ||
	}
	for i := 0; i < 3; i++ { // 1
	}
	for range xs { // 1
	}
	switch { // two cases, a default
	case a:
	case b:
	default:
	}
	select { // one case, a default
	case <-ch:
	default:
	}
	g := func() bool { return a && b } // 1 &&
	_ = g
	return 0
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := complexity(f.Decls[0].(*ast.FuncDecl)); got != 10 {
		t.Fatalf("complexity = %d, want 10", got)
	}
}
