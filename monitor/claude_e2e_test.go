package monitor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/claudetest"
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
		claudetest.Rule{Contains: "migrate-twice", Steps: []claudetest.Step{
			{Text: "Migrating staging first.", Tool: claudetest.Bash("./migrate.sh --env staging", "Migrate staging")},
			{Text: "Now production.", Tool: claudetest.Bash("./migrate.sh --env production --drop-all-tables", "Migrate production")},
			{Text: "Stopped, as you asked."},
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
	for _, script := range []string{"deploy.sh", "migrate.sh"} {
		if err := os.WriteFile(filepath.Join(cs.Dir, script), []byte("#!/bin/sh\necho ran-ok \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, 20*time.Second, nil)
	waitState, waitWake := m.waitState, m.waitWake

	s := waitState(api.Idle, "")
	if s.Agent != "claude" || s.AgentBy != "process" {
		t.Fatalf("agent = %q by %q", s.Agent, s.AgentBy)
	}

	cs.Send("write the slow-essay")
	waitState(api.Working, "")
	waitState(api.Idle, "")

	cs.Send("deploy-now please")
	ev := waitWake(api.ReasonAwaitingInput)
	if ev.Kind != "permission" || ev.Question != "Do you want to proceed?" || len(ev.Options) < 3 ||
		ev.Options[0] != "Yes" || !strings.Contains(ev.Details, "./deploy.sh --prod") || ev.Pane != cs.Pane {
		t.Fatalf("permission wake = %+v", ev)
	}
	// Claude Code ignores keys for a moment after a dialog appears.
	cs.WaitStable(300*time.Millisecond, 0)
	cs.Keys("1")
	waitState(api.Idle, "")
	if !strings.Contains(cs.Capture(), "Deployed.") {
		t.Fatalf("approval did not reach the agent:\n%s", cs.Capture())
	}

	// Two Bash prompts in a row: the same question about two commands,
	// nothing between them. Two wakes, each naming the command on screen
	// when it was raised; answers are compare-and-set.
	ctx := context.Background()
	cs.Send("migrate-twice please")
	first := waitWake(api.ReasonAwaitingInput)
	if !strings.Contains(first.Details, "./migrate.sh --env staging") || first.Prompt == "" {
		t.Fatalf("first prompt's wake = %+v", first)
	}
	// Answered at once, as a supervisor woken by the wake would: system3
	// lets the dialog settle before typing (Claude Code drops a key typed
	// within about 100 ms of it appearing).
	if _, err := m.sup.Answer(ctx, api.AnswerRequest{Wake: first.ID, Answer: "yes", Origin: "cli"}); err != nil {
		t.Fatalf("the first answer to %+v: %v", first, err)
	}
	// A second answer to the same prompt right after the first: refused,
	// however the registry lags.
	if _, err := m.sup.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: cs.Pane}, Prompt: first.Prompt, Answer: "1", Origin: "mcp:test"}); !errors.Is(err, api.ErrPromptChanged) {
		t.Fatalf("a second answer to the first prompt: %v", err)
	}
	second := waitWake(api.ReasonAwaitingInput)
	if second.ID == first.ID || second.Question != first.Question || second.Prompt == first.Prompt ||
		!strings.Contains(second.Details, "./migrate.sh --env production --drop-all-tables") {
		t.Fatalf("second prompt's wake = %+v (first %+v)", second, first)
	}
	if got, _ := m.store.Get(first.ID); !got.Resolved || got.Resolution != "answered by cli: Yes" {
		t.Fatalf("the first wake after its answer = %+v", got)
	}
	if screen := cs.Capture(); !strings.Contains(screen, "--drop-all-tables") {
		t.Fatalf("the second wake names a command not on screen:\n%s", screen)
	}
	// The first prompt's answer arriving now (a stale push button, a slow
	// client) types nothing.
	for _, req := range []api.AnswerRequest{
		{Wake: first.ID, Answer: "1", Origin: "web:action"},
		{Target: api.Target{Pane: cs.Pane}, Prompt: first.Prompt, Answer: "yes", Origin: "tui"},
	} {
		if _, err := m.sup.Answer(ctx, req); !errors.Is(err, api.ErrPromptChanged) {
			t.Fatalf("a stale answer %+v: %v", req, err)
		}
	}
	cs.WaitStable(300*time.Millisecond, 0)
	if _, err := m.sup.Answer(ctx, api.AnswerRequest{Wake: second.ID, Answer: "no", Origin: "cli"}); err != nil {
		t.Fatalf("declining the second prompt: %v", err)
	}
	m.wait("the prompt gone", func(s api.Session) bool { return s.State != api.AwaitingInput })
	if _, err := m.sup.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: cs.Pane}, Answer: "1", Origin: "mcp:test"}); !errors.Is(err, api.ErrNotAwaiting) && !errors.Is(err, api.ErrPromptChanged) {
		t.Fatalf("an answer with no prompt on screen: %v", err)
	}
	cs.WaitStable(500*time.Millisecond, 0)
	// Nothing the refused answers carried reached the agent: its input box
	// is empty and no request to the API holds a stray "1" or "yes".
	if screen := cs.Capture(); strings.Contains(screen, "❯ 1") || strings.Contains(screen, "❯ yes") {
		t.Fatalf("a refused answer was typed:\n%s", screen)
	}
	for _, p := range fakeAPI.MainPrompts() {
		if q := strings.TrimSpace(p); q == "1" || q == "yes" {
			t.Fatalf("the API got a typed answer as a prompt: %q", p)
		}
	}
	if strings.Contains(cs.Capture(), "ran-ok --env production") {
		t.Fatal("the declined production command ran")
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
	waitState(api.Idle, "")

	// Server errors: Claude Code retries with a countdown; the state is
	// error at once, and the wake waits for the grace period.
	// Slow failures keep the error on screen well past the grace period,
	// however loaded the machine.
	slow500 := claudetest.ErrorStatus(500)
	slow500.Delay = 1500 * time.Millisecond
	fakeAPI.FailNext(2, slow500)
	cs.Send("retry-me please")
	waitState(api.Error, "api_error")
	ev = waitWake(api.ReasonAPIError)
	if ev.Kind != "api_error" || ev.Evidence.Rule != "claude.api_retry" {
		t.Fatalf("api error wake = %+v", ev)
	}
	waitState(api.Idle, "")

	// More retries within the window: the countdown climbing is a loop.
	fakeAPI.FailNext(3, claudetest.ErrorStatus(500))
	cs.Send("retry-again please")
	ev = waitWake(api.ReasonErrorLoopDetected)
	if ev.State != "error_loop" || ev.Evidence.Rule != "monitor.error_loop" {
		t.Fatalf("error loop wake = %+v", ev)
	}
	waitState(api.Idle, "")

	// Failing tool calls show on screen only collapsed; the transcript
	// tells each one.
	cs.Send("break-things now")
	ev = waitWake(api.ReasonErrorLoopDetected)
	if ev.Evidence.Source != "transcript" || ev.Evidence.Rule != "monitor.failing_tools" || !strings.Contains(strings.Join(ev.Evidence.Lines, " "), "missing-dir") {
		t.Fatalf("failing tools wake = %+v", ev)
	}

	// /exit is the user's choice, not a failed worker.
	cs.Send("/exit")
	waitState(api.Exited, "process_gone")
	noWake(t, m, api.ReasonWorkerFailed)
}

// noWake checks that no wake of reason r is raised within the exit grace
// and two seconds more: the time a worker_failed for an exit without a
// goodbye takes.
func noWake(t *testing.T, m *liveMonitors, r api.Reason) {
	t.Helper()
	wctx, cancel := context.WithTimeout(m.ctx, m.sup.cfg.ExitGrace+2*time.Second)
	defer cancel()
	if ev, err := m.store.Wait(wctx, api.WakeFilter{Reasons: []api.Reason{r}, IncludeResolved: true, IncludeAcked: true}); err == nil {
		t.Fatalf("unexpected %s wake: %+v\nscreen:\n%s", r, ev, m.screen())
	}
}

// TestRealClaudeExits: Ctrl-C twice leaves Claude Code as /exit does, with
// no wake; killing it (kill -9) is a failed worker.
func TestRealClaudeExits(t *testing.T) {
	cs := claudetest.Start(t, claudetest.Options{})
	m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, 20*time.Second, nil)
	m.waitState(api.Idle, "")
	cs.Keys("C-c")
	cs.WaitForText("Press Ctrl-C again to exit", 0)
	cs.Keys("C-c")
	m.waitState(api.Exited, "process_gone")
	noWake(t, m, api.ReasonWorkerFailed)

	// Started again in the same pane, then killed.
	cs.Run()
	cs.WaitFor("input box", 30*time.Second, claudetest.IsInputBoxShown)
	m.waitState(api.Idle, "")
	pid := childNamed(t, cs.PanePID(), "claude")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.waitState(api.Exited, "process_gone")
	if ev := m.waitWake(api.ReasonWorkerFailed); ev.Agent != "claude" {
		t.Fatalf("worker_failed wake = %+v", ev)
	}
}

// childNamed is the pid of the child of pid whose name is name.
func childNamed(t *testing.T, pid int, name string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(b)) {
		child, _ := strconv.Atoi(f)
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child)); strings.TrimSpace(string(comm)) == name {
			return child
		}
	}
	t.Fatalf("no child of %d is named %s (children %q)", pid, name, b)
	return 0
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
	m.waitState(api.Idle, "")
}
