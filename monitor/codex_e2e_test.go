package monitor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/codextest"
)

// TestRealCodex runs the supervisor against the real Codex CLI talking to
// the scripted fake Responses API: a streamed answer is working, a shell
// command approval raises an awaiting_input wake with its question and
// options that Answer "1" resolves in the real CLI (the fake receives the
// command's output), retries are errors and then a loop, and /quit leaves
// the pane exited.
func TestRealCodex(t *testing.T) {
	t.Parallel()
	fakeAPI := codextest.NewFakeAPI(t,
		codextest.Rule{Contains: "slow-essay", Steps: []codextest.Step{{
			Text: strings.Repeat("The quick brown fox jumps over the lazy dog. ", 8), Chunks: 20, ChunkDelay: 250 * time.Millisecond,
		}}},
		codextest.Rule{Contains: "deploy-now", Steps: []codextest.Step{
			{Text: "I'll run the deploy script.", Tool: codextest.Exec("./deploy.sh --prod", "Do you want to deploy to production?")},
			{Text: "Deployed."},
		}},
	)
	cs := codextest.Start(t, codextest.Options{API: fakeAPI})
	if err := os.WriteFile(filepath.Join(cs.Dir, "deploy.sh"), []byte("#!/bin/sh\necho deployed-ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, 45*time.Second, nil)

	s := m.waitState(api.Idle, "")
	if s.Agent != "codex" || s.AgentBy != "process" {
		t.Fatalf("agent = %q by %q", s.Agent, s.AgentBy)
	}

	// Codex streams an answer with no busy line: still working.
	cs.Send("write the slow-essay")
	s = m.waitRule("codex.streaming")
	if s.State != api.Working {
		t.Fatalf("streaming = %+v", s)
	}
	m.waitState(api.Idle, "")

	cs.Send("deploy-now please")
	ev := m.waitWake(api.ReasonAwaitingInput)
	if ev.Kind != "permission" || ev.Question != "Would you like to run the following command?" || len(ev.Options) != 3 ||
		ev.Options[0] != "Yes, proceed (y)" || !strings.Contains(ev.Details, "./deploy.sh --prod") || ev.Pane != cs.Pane {
		t.Fatalf("permission wake = %+v", ev)
	}
	res, err := m.sup.Answer(context.Background(), api.AnswerRequest{Target: api.Target{Pane: cs.Pane}, Answer: "1", Origin: "test"})
	if err != nil {
		t.Fatalf("answer 1: %v", err)
	}
	if res.Option != "Yes, proceed (y)" {
		t.Errorf("answer chose %q", res.Option)
	}
	m.waitState(api.Idle, "")
	if fakeAPI.CountMain("deployed-ok") == 0 {
		t.Fatalf("the command's output never reached the API; prompts: %q", fakeAPI.MainPrompts())
	}
	if !strings.Contains(cs.Capture(), "Deployed.") {
		t.Fatalf("approval did not reach the agent:\n%s", cs.Capture())
	}

	// Server errors: Codex retries ("Reconnecting... k/5") behind its busy
	// line; that is an error at once and a loop as the attempts climb.
	fakeAPI.FailNext(1000, codextest.ErrorStatus(500))
	cs.Send("retry-me please")
	m.waitState(api.Error, "api_error")
	ev = m.waitWake(api.ReasonErrorLoopDetected)
	if ev.State != "error_loop" {
		t.Fatalf("error loop wake = %+v", ev)
	}
	fakeAPI.FailNext(0, codextest.APIError{})
	cs.Keys("Escape")
	m.waitState(api.Idle, "interrupted")

	// /quit is the user's choice: no worker failed.
	cs.Send("/quit")
	m.waitState(api.Exited, "process_gone")
	m.waitRule("codex.exited")
	noWake(t, m, api.ReasonWorkerFailed)
}

// TestRealCodexTrustDialog: the folder-trust dialog of a real Codex is
// awaiting_input/trust with its options, and Answer "1" (Enter: digits do
// not work there) accepts it.
func TestRealCodexTrustDialog(t *testing.T) {
	t.Parallel()
	cs := codextest.Start(t, codextest.Options{Untrusted: true})
	m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, 45*time.Second, nil)
	ev := m.waitWake(api.ReasonAwaitingInput)
	if ev.Kind != "trust" || ev.Question != "Trust this folder?" ||
		strings.Join(ev.Options, "|") != "Trust and continue|Back to Agent Command Center" || ev.Agent != "codex" {
		t.Fatalf("trust wake = %+v", ev)
	}
	if _, err := m.sup.Answer(context.Background(), api.AnswerRequest{Target: api.Target{Pane: cs.Pane}, Answer: "1", Origin: "test"}); err != nil {
		t.Fatalf("answer 1: %v", err)
	}
	m.waitState(api.Idle, "")
}
