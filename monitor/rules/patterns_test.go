package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultPatterns(t *testing.T) {
	e, err := New(Builtin())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"test_error_loop", "formatter_loop", "ci_push_loop", "permission_denials"}
	ps := e.Patterns()
	if len(ps) != len(want) {
		t.Fatalf("patterns = %d, want %d", len(ps), len(want))
	}
	for i, id := range want {
		p := ps[i]
		if p.ID != id || p.Source != "builtin" || p.Line == 0 || len(p.Interventions) == 0 {
			t.Errorf("pattern %d = %s (source %s, line %d, %d interventions), want %s from builtin with a line", i, p.ID, p.Source, p.Line, len(p.Interventions), id)
		}
	}
	f, _ := e.Pattern("formatter_loop")
	if !f.Preventive || f.FireAt() != 2 || f.WindowDuration() != 10*time.Minute {
		t.Errorf("formatter_loop: preventive %v fire at %d window %s", f.Preventive, f.FireAt(), f.WindowDuration())
	}
	if !f.Trigger.Match.Matches(ToolCall{Tool: "Edit", File: "main.go"}) || f.Trigger.Match.Matches(ToolCall{Tool: "Bash"}) {
		t.Error("formatter_loop match: Edit must match, Bash must not")
	}
	if !f.Trigger.After.Matches(ToolCall{Tool: "Bash", Command: "gofmt -l ."}) {
		t.Error("formatter_loop after: gofmt must match")
	}
	s, x, err := f.Interventions[0].Render(TemplateData{Pattern: f.Name, Subject: "main.go", Count: 2, Threshold: 3})
	if err != nil || !strings.Contains(s, "main.go") || x == "" {
		t.Errorf("render = %q, %q, %v", s, x, err)
	}
	test, _ := e.Pattern("test_error_loop")
	if !test.Trigger.Match.Matches(ToolCall{Tool: "Bash", Command: "go test ./pkg -run TestX", Failed: true}) ||
		test.Trigger.Match.Matches(ToolCall{Tool: "Bash", Command: "go test ./pkg", Failed: false}) {
		t.Error("test_error_loop must match a failing go test only")
	}
	perm, _ := e.Pattern("permission_denials")
	if !perm.Trigger.Match.Matches(ToolCall{Tool: "Bash", Failed: true, Error: "The user doesn't want to proceed with this tool use."}) {
		t.Error("permission_denials must match a rejected tool use")
	}
}

func TestPatternOverrideAndDisable(t *testing.T) {
	user := Source{Name: "user.yaml", Data: []byte(`version: 1
disable: [ci_push_loop]
patterns:
  - id: formatter_loop
    name: My formatter loop
    threshold: 4
    auto_send: true
    when: {agents: [claude], repos: ["web", "/opt/*"], languages: [typescript]}
    directive: user/style/run-prettier
    trigger:
      match: {tool: '^Edit$'}
      same: file
    interventions:
      - id: prettier
        suggestion: Run prettier --write on {{.Subject}}.
        expected: The check passes.
`)}
	e, err := New(Builtin(), user)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Pattern("ci_push_loop"); ok {
		t.Error("disabled pattern still active")
	}
	p, ok := e.Pattern("formatter_loop")
	if !ok || p.Name != "My formatter loop" || p.Source != "user.yaml" || p.Line != 4 || p.FireAt() != 4 || !p.AutoSend {
		t.Fatalf("override = %+v", p)
	}
	if ids := e.Patterns(); ids[1].ID != "formatter_loop" {
		t.Errorf("override must keep its place, got %s second", ids[1].ID)
	}
	if !p.When.Applies("/src/web", "claude", "typescript") || p.When.Applies("/src/api", "claude", "typescript") || p.When.Applies("/src/web", "codex", "typescript") {
		t.Error("context filter wrong")
	}
}

func TestPatternErrors(t *testing.T) {
	head := "version: 1\npatterns:\n"
	ok := "    trigger: {match: {tool: Bash}}\n    interventions: [{id: a, suggestion: s, expected: e}]\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"no id", head + "  - name: x\n" + ok, "line 3: pattern (no id): a pattern has no id"},
		{"no name", head + "  - id: x\n" + ok, "line 3: pattern x: no name"},
		{"bad threshold", head + "  - id: x\n    name: X\n    threshold: 1\n" + ok, "line 5: pattern x: threshold 1"},
		{"bad window", head + "  - id: x\n    name: X\n    window: soon\n" + ok, `line 5: pattern x: window "soon"`},
		{"bad same", head + "  - id: x\n    name: X\n    trigger: {match: {tool: Bash}, same: branch}\n    interventions: [{id: a, suggestion: s, expected: e}]\n", `same "branch"`},
		{"empty match", head + "  - id: x\n    name: X\n    trigger: {match: {}}\n    interventions: [{id: a, suggestion: s, expected: e}]\n", "line 5: pattern x: match: no condition"},
		{"bad regexp", head + "  - id: x\n    name: X\n    trigger:\n      match: {command: '('}\n    interventions: [{id: a, suggestion: s, expected: e}]\n", "line 6: pattern x: match: command regexp"},
		{"no interventions", head + "  - id: x\n    name: X\n    trigger: {match: {tool: Bash}}\n", "no interventions"},
		{"duplicate intervention", head + "  - id: x\n    name: X\n    trigger: {match: {tool: Bash}}\n    interventions: [{id: a, suggestion: s, expected: e}, {id: a, suggestion: s, expected: e}]\n", "used twice"},
		{"bad template field", head + "  - id: x\n    name: X\n    trigger: {match: {tool: Bash}}\n    interventions: [{id: a, suggestion: '{{.Branch}}', expected: e}]\n", "templates can use"},
		{"unknown field", head + "  - id: x\n    name: X\n    treshold: 3\n" + ok, "treshold"},
		{"unknown agent", head + "  - id: x\n    name: X\n    when: {agents: [nobody]}\n" + ok, `line 3: pattern x names agent "nobody"`},
		{"duplicate id", head + "  - id: x\n    name: X\n" + ok + "  - id: x\n    name: Y\n" + ok, "line 7: pattern id x is defined twice"},
		{"bad repo glob", head + "  - id: x\n    name: X\n    when: {repos: ['[']}\n" + ok, "repo glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Builtin(), Source{Name: "user.yaml", Data: []byte(tt.yaml)})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "user.yaml") {
				t.Fatalf("err = %v, want it to name user.yaml and mention %q", err, tt.want)
			}
		})
	}
}

// TestDocsPatternExample keeps the patterns example in docs/rules.md a
// file that loads.
func TestDocsPatternExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "rules.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\npatterns:\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/rules.md has no ```yaml block starting with patterns:")
	}
	e, err := New(Builtin(), Source{Name: "docs/rules.md", Data: []byte("version: 1\npatterns:\n" + block)})
	if err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	p, _ := e.Pattern("formatter_loop")
	if p.Source != "docs/rules.md" || p.Trigger.After == nil || p.Trigger.Reset == nil || len(p.When.Repos) != 2 {
		t.Fatalf("example pattern = %+v", p)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Minute: "1h30m", 45 * time.Second: "45s", 90 * time.Second: "1m30s"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
