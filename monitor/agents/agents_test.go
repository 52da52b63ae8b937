package agents

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

// Every registered agent has a rules file that defines it (and only it)
// with the marks its Kind says, rules named after it (shells and agents),
// captures its rules are tested on, and keys.
func TestEveryAgentIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All {
		t.Run(s.Name, func(t *testing.T) {
			if s.Name == "" || seen[s.Name] {
				t.Fatalf("agent name %q is empty or registered twice", s.Name)
			}
			seen[s.Name] = true
			var f rules.File
			if err := yaml.Unmarshal(s.Rules, &f); err != nil {
				t.Fatalf("rules.yaml: %v", err)
			}
			if len(f.Agents) != 1 || f.Agents[0].Name != s.Name {
				t.Fatalf("rules.yaml defines agents %v, want exactly %s", f.Agents, s.Name)
			}
			if a := f.Agents[0]; a.Shell != (s.Kind == agent.Shell) || a.Viewer != (s.Kind == agent.Viewer) {
				t.Errorf("rules.yaml marks shell=%v viewer=%v, but the Spec's kind is %d", a.Shell, a.Viewer, s.Kind)
			}
			if len(f.Agents[0].Processes) == 0 {
				t.Errorf("rules.yaml names no process")
			}
			if s.Kind != agent.Viewer && len(f.Rules) == 0 {
				t.Errorf("rules.yaml has no rules")
			}
			for _, r := range f.Rules {
				if !strings.HasPrefix(r.ID, s.Name+".") || !slices.Equal(r.Agents, []string{s.Name}) {
					t.Errorf("rule %s (agents %v) belongs to another agent: ids start with %q and name only %s", r.ID, r.Agents, s.Name+".", s.Name)
				}
			}
			if _, err := rules.New(rules.Source{Name: s.Name, Data: s.Rules}); err != nil {
				t.Errorf("rules.yaml alone does not load: %v", err)
			}
			if !hasCaptures(s.Name) {
				t.Errorf("no captures in monitor/testdata/captures/%s/: add labelled screens (docs/agents.md)", s.Name)
			}
			k := s.KeysOrDefault()
			if k == nil || k.Interrupt() == "" {
				t.Errorf("no interrupt key")
			}
			if s.Resume != nil && len(s.Launch.Command) == 0 {
				t.Errorf("a resume without a launch command: restore finds agents by their program")
			}
		})
	}
}

func hasCaptures(name string) bool {
	m, _ := filepath.Glob(filepath.Join("..", "testdata", "captures", name, "*.txt"))
	return len(m) > 0
}

// The built-in rules are the agents' files in registry order: the
// engine's agents come in that order, and every rule of the engine is one
// agent's.
func TestBuiltinFollowsTheRegistry(t *testing.T) {
	e, err := rules.New(Builtin())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range e.Agents() {
		names = append(names, a.Name)
	}
	var want []string
	for _, s := range All {
		want = append(want, s.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("engine agents %v, want the registry's %v", names, want)
	}
	if len(e.Patterns()) == 0 {
		t.Errorf("common.yaml's behaviour patterns are missing")
	}
	// A user's file still overrides a built-in rule in place.
	u, err := rules.New(Builtin(), rules.Source{Name: "user.yaml", Data: []byte("version: 1\ndisable: [aider.idle]\n")})
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Rules()) != len(e.Rules())-1 {
		t.Errorf("disable in a user file: %d rules, want %d", len(u.Rules()), len(e.Rules())-1)
	}
}

func TestLookup(t *testing.T) {
	if s := Lookup("codex"); s.Name != "codex" || !s.IsAgent() {
		t.Errorf("Lookup(codex) = %+v", s)
	}
	if IsAgent("") || IsAgent("shell") || IsAgent("viewer") || !IsAgent("claude") || !IsAgent("my-own-agent") {
		t.Errorf("IsAgent: shells, viewers and no agent are not agents; a user's agent is")
	}
	if !IsShell("shell") || IsShell("") || IsShell("claude") {
		t.Errorf("IsShell")
	}
	if got := Lookup("").KeysOrDefault().Interrupt(); got != tmux.Key("C-c") {
		t.Errorf("no agent is interrupted with %q, want C-c", got)
	}
	if got := Lookup("my-own-agent").KeysOrDefault().Interrupt(); got != tmux.KeyEscape {
		t.Errorf("a user's agent is interrupted with %q, want Escape", got)
	}
	if s, ok := ByProgram("gemini"); !ok || !slices.Equal(s.Resume("abc"), []string{"--resume", "abc"}) {
		t.Errorf("ByProgram(gemini) = %+v %v", s, ok)
	}
	if got := Resumable(); got != "claude, codex, gemini, qwen, opencode, cline or copilot" {
		t.Errorf("Resumable() = %q", got)
	}
}

// TestNoSwitchOnAgentNames: outside the agents' own packages
// (monitor/agent and monitor/agents/<name>), no Go file (tests
// aside) compares a value with a known agent's name or switches on it;
// it asks this registry instead.
func TestNoSwitchOnAgentNames(t *testing.T) {
	root := filepath.Join("..", "..")
	found, err := nameSwitches(root, names())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: ask monitor/agents (Lookup, IsAgent, a Spec field) instead of comparing with an agent's name", f)
	}
}

// The check finds what it is for.
func TestNameSwitchesFindsComparisons(t *testing.T) {
	dir := t.TempDir()
	src := `package x

func f(agent string, m map[string]int) int {
	if agent == "codex" {
		return 1
	}
	if "aider" != agent {
		return 2
	}
	switch agent {
	case "gemini", "other":
		return 3
	}
	m["claude"] = 4 // data: no switch
	return m["shell"]
}
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x_test.go"), []byte("package x\n\nvar _ = \"codex\" == \"codex\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := nameSwitches(dir, names())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 3 {
		t.Fatalf("found %q, want the ==, the != and the case", found)
	}
}

func names() []string {
	var out []string
	for _, s := range All {
		out = append(out, s.Name)
	}
	return out
}

// allowed are the switches on a name that are data, not behaviour.
var allowed = map[string]string{
	// A capture file's header key "shell" (the pane's shell), not the
	// shell agent.
	"monitor/rules/capture.go: case \"shell\"": "capture header key",
}

// nameSwitches lists, in the non-test Go files under root outside the
// agents' own packages (monitor/agent, monitor/agents/<name>), every == or != comparison with a name and every case
// clause listing one.
func nameSwitches(root string, names []string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "monitor/agent" || path.Dir(rel) == "monitor/agents" || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		isName := func(e ast.Expr) (string, bool) {
			lit, ok := e.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return "", false
			}
			v, err := strconv.Unquote(lit.Value)
			return v, err == nil && slices.Contains(names, v)
		}
		report := func(n ast.Node, what string) {
			key := fmt.Sprintf("%s: %s", rel, what)
			if _, ok := allowed[key]; ok {
				return
			}
			found = append(found, fmt.Sprintf("%s:%d: %s", rel, fset.Position(n.Pos()).Line, what))
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op != token.EQL && n.Op != token.NEQ {
					return true
				}
				for _, side := range []ast.Expr{n.X, n.Y} {
					if v, ok := isName(side); ok {
						report(n, fmt.Sprintf("%s %q", n.Op, v))
					}
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if v, ok := isName(e); ok {
						report(n, fmt.Sprintf("case %q", v))
					}
				}
			case *ast.CallExpr:
				// strings.EqualFold(x, "codex") and the like.
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "EqualFold" || sel.Sel.Name == "HasPrefix") {
					for _, a := range n.Args {
						if v, ok := isName(a); ok {
							report(n, fmt.Sprintf("%s %q", sel.Sel.Name, v))
						}
					}
				}
			}
			return true
		})
		return nil
	})
	return found, err
}

// The vocabulary tells an agent from a shell or a pager by name
// (api.Session.IsAgent), without the registry: every spec that is no
// coding agent must be one of the names it knows.
func TestSessionIsAgentFollowsTheRegistry(t *testing.T) {
	for _, name := range append(names(), "", "an-agent-a-rules-file-defines") {
		if got, want := (api.Session{Agent: name}).IsAgent(), IsAgent(name); got != want {
			t.Errorf("%q: api.Session.IsAgent says %v, the registry %v", name, got, want)
		}
	}
}

// The tmux package's bound on one send is the vocabulary's.
func TestMaxTextIsTmuxs(t *testing.T) {
	if api.MaxText != tmux.MaxText {
		t.Fatalf("api.MaxText %d, tmux.MaxText %d", api.MaxText, tmux.MaxText)
	}
}
