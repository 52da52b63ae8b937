package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/coach"
	"github.com/system3-dev/system3/internal/learn"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

// seedCoach records a formatter loop alert in stateDir's database, as the
// monitoring process would.
func seedCoach(t *testing.T, stateDir string) api.CoachAlert {
	t.Helper()
	db, err := learn.OpenDB(filepath.Join(stateDir, learn.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	co, err := coach.New(context.Background(), coach.Config{DB: db, Patterns: e.Patterns()})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	var got []api.CoachAlert
	for i, tc := range []api.ToolCall{{Tool: "Bash", Command: "gofmt -l ."}, {Tool: "Edit", File: "main.go"}, {Tool: "Bash", Command: "gofmt -l ."}, {Tool: "Edit", File: "main.go"}} {
		tc.Time, tc.Pane, tc.Target, tc.Session, tc.Agent = at.Add(time.Duration(i)*time.Second), "%4", "orch:0.0", "orch", "claude"
		a, err := co.Handle(context.Background(), tc)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a...)
	}
	if len(got) != 1 {
		t.Fatalf("seeded %d alerts", len(got))
	}
	return got[0]
}

func claudeHome(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	md := "# Style\n\n- Never fix formatting by hand: run the formatter and keep its output.\n\n# Tests\n\n- Find the root cause of a failing test before running it again.\n"
	if err := os.WriteFile(filepath.Join(dir, "CLAUDE.md"), []byte(md), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCoachCommands(t *testing.T) {
	state := testkit.StateDir(t)
	alert := seedCoach(t, state)
	env := map[string]string{"SYSTEM3_STATE_DIR": state, "CLAUDE_CONFIG_DIR": claudeHome(t)}

	code, out, errOut := invoke(t, env, "patterns")
	if code != 0 || !strings.Contains(out, "formatter_loop") || !strings.Contains(out, "user/style/never-fix-formatting-by-hand (match") ||
		!strings.Contains(out, "preventive") || !strings.Contains(out, "permission_denials") {
		t.Fatalf("patterns: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = invoke(t, env, "patterns", "formatter_loop")
	if code != 0 || !strings.Contains(out, "* run-the-formatter: effectiveness 0.50") || !strings.Contains(out, `"main.go" x2`) || !strings.Contains(out, "defined in builtin line") {
		t.Fatalf("patterns ID: exit %d\n%s", code, out)
	}
	if code, _, errOut = invoke(t, env, "patterns", "nope"); code == 0 || !strings.Contains(errOut, "system3 patterns") {
		t.Fatalf("unknown pattern: exit %d %s", code, errOut)
	}
	code, out, _ = invoke(t, env, "patterns", "--json")
	var doc struct {
		Patterns []api.PatternInfo `json:"patterns"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Patterns) != 4 || doc.Patterns[1].Open != 1 {
		t.Fatalf("patterns --json: exit %d\n%s", code, out)
	}

	code, out, _ = invoke(t, env, "directives")
	if code != 0 || !strings.Contains(out, "user/tests/find-the-root-cause-of") || !strings.Contains(out, "test_error_loop") || !strings.Contains(out, "text match") {
		t.Fatalf("directives: exit %d\n%s", code, out)
	}

	code, out, _ = invoke(t, env, "interventions")
	if code != 0 || !strings.Contains(out, "formatter_loop") || !strings.Contains(out, "orch:0.0") || !strings.Contains(out, "no intervention has been shown") {
		t.Fatalf("interventions: exit %d\n%s", code, out)
	}
	if code, _, errOut = invoke(t, env, "interventions", "--status", "great"); code == 0 || !strings.Contains(errOut, "--status") {
		t.Fatalf("bad status: exit %d %s", code, errOut)
	}
	if code, _, errOut = invoke(t, env, "interventions", "report", "formatter_loop", "run-the-formatter"); code == 0 || !strings.Contains(errOut, "--worked or --failed") {
		t.Fatalf("report without a verdict: exit %d %s", code, errOut)
	}
	if code, _, errOut = invoke(t, env, "interventions", "report", "formatter_loop", "nope", "--worked"); code == 0 || !strings.Contains(errOut, "run-the-formatter, read-the-lint-rule") {
		t.Fatalf("report of an unknown intervention: exit %d %s", code, errOut)
	}
	code, out, _ = invoke(t, env, "interventions", "report", "formatter_loop", "read-the-lint-rule", "--worked", "--notes", "it read the rule")
	if code != 0 || !strings.Contains(out, "effectiveness 0.67") || !strings.Contains(out, "chosen now") {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	code, out, _ = invoke(t, env, "interventions", "--json")
	var hist struct {
		Alerts        []api.CoachAlert `json:"alerts"`
		Interventions []api.CoachStats `json:"interventions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &hist) != nil || len(hist.Alerts) != 1 || hist.Alerts[0].ID != alert.ID || len(hist.Interventions) != 1 {
		t.Fatalf("interventions --json: exit %d\n%s", code, out)
	}
}

// TestMonitorsRunTheCoach: the monitoring process runs the coach on the
// state dir's database, and a changed rules.yaml reaches its patterns, and
// those of commands that only read.
func TestMonitorsRunTheCoach(t *testing.T) {
	srv := tmuxtest.NewServer(t, "cat")
	base := t.TempDir()
	env := map[string]string{"HOME": t.TempDir(), "XDG_CONFIG_HOME": base, "SYSTEM3_STATE_DIR": testkit.ShortDir(t), "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	a := &app{App: core.App{Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}, stdin: strings.NewReader(""), stdout: io.Discard}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, stop, err := a.StartMonitors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := stop(); err != nil {
			t.Errorf("stop monitors: %v", err)
		}
		if a.Coach() != nil {
			t.Error("the coach outlives the monitors")
		}
	}()
	co := a.Coach()
	if co == nil || len(co.Patterns()) != 4 {
		t.Fatalf("coach = %v", co)
	}
	if err := os.MkdirAll(filepath.Join(base, "system3"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "system3", "rules.yaml"), []byte("version: 1\ndisable: [ci_push_loop]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.WaitForValue(t, 15*time.Second, "3 patterns after the reload", func() (int, bool) {
		n := len(co.Patterns())
		return n, n == 3
	})
	code, out, errOut := invoke(t, env, "patterns")
	if code != 0 || strings.Contains(out, "ci_push_loop") || !strings.Contains(out, "formatter_loop") {
		t.Fatalf("patterns while the monitors run: exit %d\n%s%s", code, out, errOut)
	}
}
