package testkit

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestLookPath(t *testing.T) {
	if got := LookPath(t, "sh"); !filepath.IsAbs(got) {
		t.Errorf("LookPath(sh) = %q, want an absolute path", got)
	}
	t.Setenv("PATH", t.TempDir())
	r := &recorder{TB: t}
	if got := LookPath(r, "git"); got != "" || r.failed != "git is not installed: README.md's prerequisites install it (apt-get install git)" {
		t.Errorf("without git: %q, failure %q", got, r.failed)
	}
	r = &recorder{TB: t}
	LookPath(r, "node")
	if r.failed != "node is not installed: README.md's prerequisites ask for Node.js 20 or newer" {
		t.Errorf("without node: failure %q", r.failed)
	}
	r = &recorder{TB: t}
	LookPath(r, "no-such-program")
	if !strings.Contains(r.failed, "add it to testkit's programs and README's prerequisites") {
		t.Errorf("a program not in the registry: failure %q", r.failed)
	}
}

// README.md's one apt-get line installs every package a program the tests
// run comes from, and nothing else: that line is what a fresh machine
// runs, and .ci/run installs exactly it.
func TestReadmeInstallsEveryProgram(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := readmePackages(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	needed := map[string][]string{}
	for name, p := range programs {
		if p.pkg != "" {
			needed[p.pkg] = append(needed[p.pkg], name)
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(needed)) {
		if !slices.Contains(listed, pkg) {
			names := slices.Sorted(slices.Values(needed[pkg]))
			t.Errorf("README.md's prerequisites do not install %s, which the tests need for %s: add it to its apt-get line", pkg, strings.Join(names, ", "))
		}
	}
	for _, pkg := range listed {
		if _, ok := needed[pkg]; !ok {
			t.Errorf("README.md's prerequisites install %s, which no program in testkit's programs comes from: add the program the tests run, or take the package off the line", pkg)
		}
	}
}

// readmePackages is the packages of the apt-get install line in
// README.md's Prerequisites section (.ci/run reads the line the same way,
// with sed).
func readmePackages(readme string) ([]string, error) {
	var lines []string
	in := false
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Prerequisites"
			continue
		}
		if in && (strings.HasPrefix(line, "apt-get install ") || strings.HasPrefix(line, "sudo apt-get install ")) {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 {
		return nil, fmt.Errorf("README.md's Prerequisites section has %d lines that start with apt-get install (or sudo apt-get install), want one: %q", len(lines), lines)
	}
	var pkgs []string
	for _, f := range strings.Fields(lines[0][strings.Index(lines[0], "install ")+len("install "):]) {
		if !strings.HasPrefix(f, "-") {
			pkgs = append(pkgs, f)
		}
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("README.md's apt-get line installs no package: %q", lines[0])
	}
	return pkgs, nil
}

func TestReadmePackages(t *testing.T) {
	for _, tc := range []struct {
		readme string
		want   []string
		err    string
	}{
		{"# x\n## Prerequisites\n\n```sh\nsudo apt-get install -y tmux git\n```\n## Install\n", []string{"tmux", "git"}, ""},
		{"## Prerequisites\napt-get install -y -q tmux\n", []string{"tmux"}, ""},
		{"## Prerequisites\n- tmux\n## Install\nsudo apt-get install -y tmux\n", nil, "has 0 lines"},
		{"## Prerequisites\napt-get install tmux\napt-get install git\n", nil, "has 2 lines"},
		{"## Prerequisites\napt-get install -y \n", nil, "installs no package"},
	} {
		got, err := readmePackages(tc.readme)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want one saying %q", tc.readme, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q = %q, %v; want %q", tc.readme, got, err, tc.want)
		}
	}
}

// Every program a test runs is in testkit's programs, so README.md's
// prerequisites install it. The scan reads the tests and the test-support
// packages (everything under internal/testsupport), not product code:
// system3 itself looks up optional programs (notify-send, gh, osascript)
// it works without, and runs the commands its configuration names; the
// tests of those use fakes, and none of them is needed to run the suite.
func TestEveryProgramTheTestsRunIsListed(t *testing.T) {
	root := RepoRoot(t)
	fset := token.NewFileSet()
	found := map[string][]string{} // program: where
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		// This file's examples of what the scan finds run nothing.
		if !strings.HasSuffix(path, ".go") || !testSupport(filepath.ToSlash(rel)) || rel == filepath.Join("internal", "testsupport", "testkit", "programs_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, use := range programsRun(fset, f) {
			pos := use.pos
			pos.Filename = filepath.ToSlash(rel)
			found[use.name] = append(found[use.name], pos.String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The scan sees the tests at all: these are run in the plainest ways.
	for _, name := range []string{"git", "/usr/sbin/sshd", "dbus-daemon", "/bin/sh"} {
		if len(found[name]) == 0 {
			t.Errorf("the scan found no test that runs %s: it reads the wrong files or misses a form", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(found)) {
		if _, ok := programs[name]; ok {
			continue
		}
		if why, ok := notPrograms[name]; ok {
			t.Logf("%s (%s): %s", name, strings.Join(found[name], ", "), why)
			continue
		}
		t.Errorf("%s runs %s, which is not among testkit's programs: add it to internal/testsupport/testkit/programs.go with the Debian package that installs it, and that package to README.md's prerequisites", strings.Join(found[name], ", "), name)
	}
}

// notPrograms are program paths the tests write that no test runs.
var notPrograms = map[string]string{
	"/usr/bin/my-agent": "internal/lifecycle's tests give it as a fake LookPath's answer; nothing runs it",
}

// testSupport tells whether a file (its path from the module's root, with
// slashes) is a test or test support, which the scan reads.
func testSupport(rel string) bool {
	return strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "internal/testsupport/")
}

// programPath is a string that names a program by absolute path.
var programPath = regexp.MustCompile(`^/(usr/)?(local/)?s?bin/[^/\s]+$`)

type programUse struct {
	name string
	pos  token.Position
}

// programsRun is the programs a file names literally: the program of
// exec.LookPath("X"), exec.Command("X", ...), exec.CommandContext(ctx,
// "X", ...) and testkit.LookPath(t, "X") (under whatever names the file
// imports os/exec and testkit as), and every string that is a program's
// absolute path ("/usr/sbin/sshd", "/bin/sh": a pane's command, an argv).
func programsRun(fset *token.FileSet, f *ast.File) []programUse {
	execName, testkitName := "", ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := ""
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch path {
		case "os/exec":
			execName = cmp.Or(name, "exec")
		case "github.com/system3-dev/system3/internal/testsupport/testkit":
			testkitName = cmp.Or(name, "testkit")
		}
	}
	var uses []programUse
	literal := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				uses = append(uses, programUse{s, fset.Position(lit.Pos())})
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			arg := -1
			switch {
			case pkg.Name == execName && (sel.Sel.Name == "LookPath" || sel.Sel.Name == "Command"):
				arg = 0
			case pkg.Name == execName && sel.Sel.Name == "CommandContext", pkg.Name == testkitName && sel.Sel.Name == "LookPath":
				arg = 1
			}
			if arg >= 0 && arg < len(n.Args) {
				if lit, ok := n.Args[arg].(*ast.BasicLit); ok && programPath.MatchString(unquote(lit)) {
					return true // counted once, as an absolute path, below
				}
				literal(n.Args[arg])
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING && programPath.MatchString(unquote(n)) {
				literal(n)
			}
		}
		return true
	})
	return uses
}

func unquote(lit *ast.BasicLit) string {
	s, _ := strconv.Unquote(lit.Value)
	return s
}

func TestProgramsRun(t *testing.T) {
	src := `package x

import (
	osexec "os/exec"
	tk "github.com/system3-dev/system3/internal/testsupport/testkit"
)

func f(t T, ctx C, name string) {
	osexec.LookPath("one")
	osexec.Command("two", "-x")
	osexec.CommandContext(ctx, "three", "four")
	tk.LookPath(t, "five")
	tk.LookPath(t, "/usr/sbin/six")
	osexec.Command(name, "not-a-program")
	_ = []string{"/bin/seven", "eight"}
	_ = "/usr/local/bin/system3 hook"
	_ = "/etc/passwd"
	exec.Command("nine") // not the os/exec of this file
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range programsRun(fset, f) {
		got = append(got, u.name)
	}
	want := []string{"one", "two", "three", "five", "/usr/sbin/six", "/bin/seven"}
	if !slices.Equal(got, want) {
		t.Errorf("programs = %q, want %q", got, want)
	}
	for rel, want := range map[string]bool{
		"tmux/list_test.go":                         true,
		"internal/testsupport/tmuxtest/tmuxtest.go": true,
		"internal/testsupport/testkit/programs.go":  true,
		"internal/testsupport/notifytest/dbus.go":   true,
		"internal/testsupport/clitest/shell.go":     true,
		"wake/notify/desktop.go":                    false,
		"internal/lifecycle/finish.go":              false,
	} {
		if got := testSupport(rel); got != want {
			t.Errorf("testSupport(%s) = %v, want %v", rel, got, want)
		}
	}
}
