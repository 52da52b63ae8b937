package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/rules"
)

func TestClassifyCommand(t *testing.T) {
	capture := filepath.Join("..", "..", "monitor", "testdata", "captures", "codex", "permission_exec.txt")
	code, out, errOut := invoke(t, nil, "classify", "--json", capture)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"agent", "state", "kind", "rule", "evidence", "question", "options"} {
		if _, ok := doc[key]; !ok {
			t.Errorf("classify --json lacks key %q: %s", key, out)
		}
	}
	if doc["state"] != "awaiting_input" || doc["kind"] != "permission" || doc["agent"] != "codex" {
		t.Errorf("unexpected classification: %s", out)
	}

	code, out, _ = invoke(t, nil, "classify", capture)
	if code != 0 || !strings.Contains(out, "awaiting_input / permission") || !strings.Contains(out, "1. Yes, proceed (y)") {
		t.Fatalf("text output (exit %d):\n%s", code, out)
	}

	code, _, errOut = invoke(t, nil, "classify", "--agent", "nobody", capture)
	if code != 1 || !strings.Contains(errOut, `unknown agent "nobody"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = invoke(t, nil, "classify", filepath.Join(t.TempDir(), "missing.txt"))
	if code != 1 || !strings.Contains(errOut, "open capture") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// classify reads the header of a rules capture file as rules test does:
// the pane's process, shell and foreground job (and a dead pane) are the
// inputs, and the header is not screen. A working bash capture is working
// by builtin.shell_job, as its label says; a flag given wins over the
// header.
func TestClassifyReadsCaptureHeader(t *testing.T) {
	dir := filepath.Join("..", "..", "monitor", "testdata", "captures", "shell")
	classify := func(args ...string) classifyDoc {
		t.Helper()
		code, out, errOut := invoke(t, nil, append([]string{"classify", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("classify %v: exit %d: %s", args, code, errOut)
		}
		var doc classifyDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	for file, want := range map[string]classifyDoc{
		"working_bash.txt": {Agent: "shell", State: "working", Rule: "builtin.shell_job"},
		"working_sh.txt":   {Agent: "shell", State: "working", Rule: "builtin.shell_job"},
		"idle_bash.txt":    {Agent: "shell", State: "idle", Rule: "shell.prompt"},
		"exited_dead.txt":  {Agent: "shell", State: "exited", Kind: "dead", Rule: "builtin.pane_dead"},
	} {
		got := classify(filepath.Join(dir, file))
		if got.Agent != want.Agent || got.State != want.State || got.Kind != want.Kind || got.Rule != want.Rule {
			t.Errorf("%s: agent %q, state %s/%s by %s; want agent %q, %s/%s by %s", file, got.Agent, got.State, got.Kind, got.Rule, want.Agent, want.State, want.Kind, want.Rule)
		}
		for _, l := range got.Evidence {
			if strings.HasPrefix(l, "# ") {
				t.Errorf("%s: the header is taken for screen: evidence %q", file, l)
			}
		}
	}
	// The same capture from standard input.
	data, err := os.ReadFile(filepath.Join(dir, "working_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	code := run(context.Background(), []string{"classify", "-"}, strings.NewReader(string(data)), &out, io.Discard, func(k string) string {
		return map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.StateDir(t)}[k]
	})
	if code != 0 || !strings.Contains(out.String(), "builtin.shell_job") {
		t.Errorf("classify - (exit %d):\n%s", code, out.String())
	}
	// A flag given wins: the pane's process named on the command line.
	if got := classify("--process", "claude", filepath.Join(dir, "working_bash.txt")); got.Agent != "claude" || got.Rule == "builtin.shell_job" {
		t.Errorf("--process claude: agent %q, %s by %s; want claude, not the shell's job", got.Agent, got.State, got.Rule)
	}
}

func TestRulesCommandShowsUserRules(t *testing.T) {
	cfgDir := t.TempDir()
	cfg := filepath.Join(cfgDir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("log_level: info\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	user := "version: 1\nrules:\n  - id: my.rule\n    agents: [shell]\n    state: working\n    priority: 99\n    match: [{contains: BUILDING}]\ndisable: [claude.compacting, ci_push_loop]\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "rules.yaml"), []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := invoke(t, map[string]string{"SYSTEM3_CONFIG": cfg}, "rules")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "my.rule") || !strings.Contains(out, filepath.Join(cfgDir, "rules.yaml")) || !strings.Contains(out, "claude.permission") {
		t.Fatalf("rules output:\n%s", out)
	}
	// Switched-off rules are listed apart, with the file that switched them off.
	_, off, ok := strings.Cut(out, "DISABLED (not applied)")
	active, _, _ := strings.Cut(out, "DISABLED")
	if !ok || strings.Contains(active, "claude.compacting") || !strings.Contains(off, "claude.compacting  rule") ||
		!strings.Contains(off, "ci_push_loop") || !strings.Contains(off, filepath.Join(cfgDir, "rules.yaml")) {
		t.Fatalf("disabled rules not shown apart:\n%s", out)
	}
	code, out, _ = invoke(t, map[string]string{"SYSTEM3_CONFIG": cfg}, "rules", "--json")
	var doc struct {
		Disabled []rules.Disabled `json:"disabled"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Disabled) != 2 || doc.Disabled[0].ID != "claude.compacting" ||
		doc.Disabled[0].Source != "builtin" || doc.Disabled[1].Kind != "pattern" {
		t.Fatalf("rules --json disabled: %s", out)
	}

	if err := os.WriteFile(filepath.Join(cfgDir, "rules.yaml"), []byte("version: 1\nrules:\n  - id: broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = invoke(t, map[string]string{"SYSTEM3_CONFIG": cfg}, "rules")
	if code != 1 || !strings.Contains(errOut, "rules.yaml") || !strings.Contains(errOut, "move it aside") {
		t.Fatalf("broken rules: exit %d, stderr %q", code, errOut)
	}
}
