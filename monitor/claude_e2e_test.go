package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/monitor/api"
	"github.com/system3-dev/system3/monitor/claudetest"
	"github.com/system3-dev/system3/monitor/rules"
)

// TestRealClaudeCode runs the supervisor, event-driven by a tmux control
// client, against the real Claude Code CLI talking to the scripted fake
// API, and checks every state it reaches and the wakes it raises.
func TestRealClaudeCode(t *testing.T) {
	fakeAPI := claudetest.NewFakeAPI(t,
		claudetest.Rule{Contains: "slow-essay", Steps: []claudetest.Step{{
			Text: strings.Repeat("The quick brown fox jumps over the lazy dog. ", 6), Chunks: 16, ChunkDelay: 250 * time.Millisecond,
		}}},
		claudetest.Rule{Contains: "deploy-now", Steps: []claudetest.Step{
			{Text: "I'll run the deploy script.", Tool: claudetest.Bash("./deploy.sh --prod", "Deploy to production")},
			{Text: "Deployed."},
		}},
		claudetest.Rule{Contains: "break-things", Steps: []claudetest.Step{
			{Tool: claudetest.Bash("ls ./missing-dir", "List the missing directory"), Repeat: 4},
			{Text: "The directory keeps failing to list."},
		}},
		claudetest.Rule{Contains: "pick-db", Steps: []claudetest.Step{
			{Tool: claudetest.AskUserQuestion(claudetest.Question{
				Question: "Which database should we use?", Header: "Database",
				Options: []claudetest.Option{{Label: "Postgres", Description: "Relational, robust"}, {Label: "SQLite", Description: "Embedded file"}},
			})},
			{Text: "Using your choice."},
		}},
	)
	cs := claudetest.Start(t, claudetest.Options{API: fakeAPI, Args: []string{"--permission-mode", "default"}})
	if err := os.WriteFile(filepath.Join(cs.Dir, "deploy.sh"), []byte("#!/bin/sh\necho deployed-ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, 20*time.Second, nil)
	waitState, waitWake := m.waitState, m.waitWake

	s := waitState(rules.Idle, "")
	if s.Agent != "claude" || s.AgentBy != "process" {
		t.Fatalf("agent = %q by %q", s.Agent, s.AgentBy)
	}

	cs.Send("write the slow-essay")
	waitState(rules.Working, "")
	waitState(rules.Idle, "")

	cs.Send("deploy-now please")
	ev := waitWake(api.ReasonAwaitingInput)
	if ev.Kind != "permission" || ev.Question != "Do you want to proceed?" || len(ev.Options) < 3 ||
		ev.Options[0] != "Yes" || !strings.Contains(ev.Details, "./deploy.sh --prod") || ev.Pane != cs.Pane {
		t.Fatalf("permission wake = %+v", ev)
	}
	// Claude Code ignores keys for a moment after a dialog appears.
	cs.WaitStable(300*time.Millisecond, 0)
	cs.Keys("1")
	waitState(rules.Idle, "")
	if !strings.Contains(cs.Capture(), "Deployed.") {
		t.Fatalf("approval did not reach the agent:\n%s", cs.Capture())
	}

	cs.Send("pick-db for me")
	ev = waitWake(api.ReasonAwaitingInput)
	if ev.Kind != "question" || ev.Question != "Which database should we use?" || len(ev.Options) < 2 || ev.Options[0] != "Postgres" {
		t.Fatalf("question wake = %+v", ev)
	}
	cs.WaitStable(300*time.Millisecond, 0)
	cs.Keys("Down")
	cs.WaitForText("❯ 2. SQLite", 0)
	cs.Keys("Enter")
	waitState(rules.Idle, "")

	// Server errors: Claude Code retries with a countdown; the state is
	// error at once, and the wake waits for the grace period.
	// Slow failures keep the error on screen well past the grace period,
	// however loaded the machine.
	slow500 := claudetest.ErrorStatus(500)
	slow500.Delay = 1500 * time.Millisecond
	fakeAPI.FailNext(2, slow500)
	cs.Send("retry-me please")
	waitState(rules.Error, "api_error")
	ev = waitWake(api.ReasonAPIError)
	if ev.Kind != "api_error" || ev.Evidence.Rule != "claude.api_retry" {
		t.Fatalf("api error wake = %+v", ev)
	}
	waitState(rules.Idle, "")

	// More retries within the window: the countdown climbing is a loop.
	fakeAPI.FailNext(3, claudetest.ErrorStatus(500))
	cs.Send("retry-again please")
	ev = waitWake(api.ReasonErrorLoopDetected)
	if ev.State != "error_loop" || ev.Evidence.Rule != "monitor.error_loop" {
		t.Fatalf("error loop wake = %+v", ev)
	}
	waitState(rules.Idle, "")

	// Failing tool calls show on screen only collapsed; the transcript
	// tells each one.
	cs.Send("break-things now")
	ev = waitWake(api.ReasonErrorLoopDetected)
	if ev.Evidence.Source != "transcript" || ev.Evidence.Rule != "monitor.failing_tools" || !strings.Contains(strings.Join(ev.Evidence.Lines, " "), "missing-dir") {
		t.Fatalf("failing tools wake = %+v", ev)
	}

	cs.Send("/exit")
	waitState(rules.Exited, "process_gone")
	ev = waitWake(api.ReasonWorkerFailed)
	if ev.Agent != "claude" {
		t.Fatalf("worker_failed wake = %+v", ev)
	}
}

// TestRealClaudeTrustDialog: the folder-trust dialog of a real Claude Code
// is awaiting_input/trust with its question and options.
func TestRealClaudeTrustDialog(t *testing.T) {
	cs := claudetest.Start(t, claudetest.Options{Untrusted: true})
	m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, 20*time.Second, nil)
	ev := m.waitWake(api.ReasonAwaitingInput)
	if ev.Kind != "trust" || ev.Question != "Is this a project you created or one you trust?" ||
		strings.Join(ev.Options, "|") != "No, exit|Yes, I trust this folder" || ev.Agent != "claude" {
		t.Fatalf("trust wake = %+v", ev)
	}
	cs.WaitStable(300*time.Millisecond, 0)
	cs.Keys("Down") // the dialog starts on "No, exit"
	cs.WaitForText("❯ Yes, I trust this folder", 0)
	cs.Keys("Enter")
	m.waitState(rules.Idle, "")
}
