package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// TestStatusOnRealClaudeCode runs `system3 status --json` against the real
// Claude Code CLI: the agent is recognised by its process, its state comes
// from the screen, and its task list, named by CLAUDE_CODE_TASK_LIST_ID in
// its environment, is linked with its progress.
func TestStatusOnRealClaudeCode(t *testing.T) {
	fakeAPI := claudetest.NewFakeAPI(t,
		claudetest.Rule{Contains: "plan-login", Steps: []claudetest.Step{
			{Tool: claudetest.TaskCreate("Implement login form", "Build the login form", "Implementing login form")},
			{Tool: claudetest.TaskCreate("Write tests", "Cover the login form", "Writing tests")},
			{Tool: claudetest.TaskUpdate("1", "completed")},
			{Text: "Planned."},
		}},
		claudetest.Rule{Contains: "deploy-now", Steps: []claudetest.Step{
			{Tool: claudetest.Bash("./deploy.sh --prod", "Deploy to production")},
			{Text: "Deployed."},
		}},
	)
	cs := claudetest.Start(t, claudetest.Options{API: fakeAPI, Args: []string{"--permission-mode", "default"},
		Env: []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=1", "CLAUDE_CODE_TASK_LIST_ID=PRD-LOGIN"}})
	env := map[string]string{"SYSTEM3_TASKS_DIR": filepath.Join(cs.Home, ".claude", "tasks"), "SYSTEM3_STATE_DIR": testkit.ShortDir(t)}
	args := []string{"--tmux-socket-path", cs.Socket(), "status", "--json"}

	cs.Send("plan-login please")
	cs.WaitForText("Planned.", 0)
	cs.WaitStable(300*time.Millisecond, 0)
	p := statusOf(t, env, args, cs.Pane)
	if p.Agent != "claude" || p.State != "idle" || p.TaskList != "PRD-LOGIN" || p.Tasks == nil || p.Tasks.Completed != 1 || p.Tasks.Total != 2 {
		t.Fatalf("after planning: %+v (tasks %+v)", p, p.Tasks)
	}

	cs.Send("deploy-now please")
	cs.WaitForText("Do you want to proceed?", 0)
	p = statusOf(t, env, args, cs.Pane)
	if p.State != "awaiting_input" {
		t.Logf("screen:\n%s", cs.Capture())
	}
	if p.State != "awaiting_input" || p.Kind != "permission" || p.Question != "Do you want to proceed?" ||
		len(p.Options) < 3 || p.Options[0] != "Yes" || !strings.Contains(p.Detail, "./deploy.sh --prod") || p.Evidence.Rule != "claude.permission" {
		t.Fatalf("at the permission prompt: %+v", p)
	}

	// wait, with monitors of its own, reports the same prompt as a wake.
	code, out, errOut := invoke(t, env, "--tmux-socket-path", cs.Socket(), "wait", "--json", "--reason", "awaiting_input", "--timeout", "20s")
	var ev api.Wake
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil {
		t.Fatalf("wait: exit %d, out %q, stderr %q", code, out, errOut)
	}
	if ev.Pane != cs.Pane || ev.Kind != "permission" || ev.Question != "Do you want to proceed?" || ev.Options[0] != "Yes" ||
		ev.Tasks == nil || ev.Tasks.ListID != "PRD-LOGIN" || ev.Tasks.Total != 2 || !strings.Contains(ev.SuggestedAction, cs.Pane) {
		t.Fatalf("wake = %+v", ev)
	}
	// A second wait (new monitors, same journal) prints the same wake as text.
	code, out, _ = invoke(t, env, "--tmux-socket-path", cs.Socket(), "wait", "--reason", "awaiting_input", "--timeout", "20s")
	for _, want := range []string{"awaiting_input", "Do you want to proceed?", "1. Yes", "system3 ack " + ev.ID} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("wait text output lacks %q (exit %d):\n%s", want, code, out)
		}
	}
}

func statusOf(t *testing.T, env map[string]string, args []string, pane string) statusPane {
	t.Helper()
	code, out, errOut := invoke(t, env, args...)
	if code != 0 {
		t.Fatalf("status: exit %d, %s", code, errOut)
	}
	var doc statusDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range doc.Panes {
		if p.Pane == pane {
			return p
		}
	}
	t.Fatalf("pane %s not in %s", pane, out)
	return statusPane{}
}
