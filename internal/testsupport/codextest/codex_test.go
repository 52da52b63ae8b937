package codextest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

// These tests drive the real CLI through every screen class and check what
// system3's rules make of each real screen, with the pane's real processes.

func classifier(t *testing.T) func(s *Session) rules.Result {
	t.Helper()
	e, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	return func(s *Session) rules.Result {
		return e.Classify(rules.Input{Screen: s.Capture(), Processes: s.Processes()})
	}
}

// waitClass waits until the real screen classifies as state/kind (by rule,
// when rule is set) and returns that result.
func waitClass(t *testing.T, s *Session, classify func(*Session) rules.Result, state api.State, kind, rule string) rules.Result {
	t.Helper()
	last := testkit.WaitForValue(t, DefaultTimeout, fmt.Sprintf("the screen classified %s/%s (rule %q)", state, kind, rule), func() (rules.Result, bool) {
		r := classify(s)
		return r, r.State == state && r.Kind == kind && (rule == "" || r.Rule == rule)
	}, func() string { return "screen:\n" + s.Capture() })
	if last.Agent != "codex" {
		t.Fatalf("agent = %q, want codex: %+v", last.Agent, last)
	}
	return last
}

// TestRealCodexStates: idle, the busy line, an answer streaming with no
// busy line, a shell command approval, an edit approval, an interrupted
// turn and /quit.
func TestRealCodexStates(t *testing.T) {
	t.Parallel()
	classify := classifier(t)
	fakeAPI := NewFakeAPI(t,
		Rule{Contains: "slow-essay", Steps: []Step{{Text: essay, Chunks: 30, ChunkDelay: 300 * time.Millisecond}}},
		Rule{Contains: "deploy-now", Steps: []Step{
			{Text: "I'll run the deploy script.", Tool: Exec("./deploy.sh --prod", "Do you want to deploy to production?")},
			{Text: "Deployed."},
		}},
		Rule{Contains: "edit-notes", Steps: []Step{{Tool: ApplyPatch(notesPatch)}, {Text: "Edited."}}},
		Rule{Contains: "slow-interrupt", Steps: []Step{{Text: essay, Chunks: 60, ChunkDelay: 300 * time.Millisecond}}},
	)
	s := Start(t, Options{API: fakeAPI})
	writeProjectFiles(t, s)
	if got := s.CurrentCommand(); got != "node" {
		t.Errorf("pane command = %q, want node (the npm launcher)", got)
	}
	if p := s.Processes(); !slices.Contains(p, "codex") {
		t.Errorf("pane processes = %q, want the native codex under the launcher", p)
	}
	waitClass(t, s, classify, api.Idle, "", "codex.idle")

	s.Send("write the slow-essay")
	waitClass(t, s, classify, api.Working, "", "codex.working")
	waitClass(t, s, classify, api.Working, "", "codex.streaming")
	waitTurnDone(s, "slow-essay")
	waitClass(t, s, classify, api.Idle, "", "codex.idle")

	s.Send("deploy-now please")
	r := waitClass(t, s, classify, api.AwaitingInput, "permission", "codex.permission")
	if r.Question != "Would you like to run the following command?" || len(r.Options) != 3 || r.Options[0] != "Yes, proceed (y)" ||
		!strings.HasPrefix(r.Options[2], "No, and tell Codex") || !strings.Contains(r.Detail, "./deploy.sh --prod") {
		t.Errorf("command approval = %+v", r)
	}
	s.Keys("1")
	waitTurnDone(s, "deploy-now")

	s.Send("edit-notes now")
	r = waitClass(t, s, classify, api.AwaitingInput, "permission", "codex.permission")
	if r.Question != "Would you like to make the following edits?" || len(r.Options) != 3 || !strings.Contains(r.Detail, "notes.txt") {
		t.Errorf("edit approval = %+v", r)
	}
	s.Keys("1")
	waitTurnDone(s, "edit-notes")
	if b, _ := os.ReadFile(filepath.Join(s.Dir, "notes.txt")); !strings.Contains(string(b), "BETA") {
		t.Errorf("the approved edit was not applied: %q", b)
	}

	s.Send("slow-interrupt me")
	s.WaitForText("lazy dog. The quick", 0)
	interrupt(s)
	waitClass(t, s, classify, api.Idle, "interrupted", "codex.interrupted")

	s.Send("/quit")
	waitClass(t, s, classify, api.Exited, "process_gone", "codex.exited")
	if !strings.Contains(s.Capture(), "codex resume") {
		t.Errorf("no resume hint after /quit:\n%s", s.Capture())
	}
	if got := fakeAPI.CountMain("deployed-ok"); got != 1 {
		t.Errorf("the approved command's output reached the API %d times, want 1; prompts: %q", got, fakeAPI.MainPrompts())
	}
}

// TestRealCodexErrors: a 500 while retrying and final, a 429, a bad key,
// all in one session (each turn shows only its own error), then Ctrl-C.
func TestRealCodexErrors(t *testing.T) {
	t.Parallel()
	classify := classifier(t)
	fakeAPI := NewFakeAPI(t)
	s := Start(t, Options{API: fakeAPI, Provider: []string{"request_max_retries = 0", "stream_max_retries = 2"}})

	fakeAPI.FailNext(1000, ErrorStatus(500))
	s.Send("fail-500 now")
	r := waitClass(t, s, classify, api.Error, "api_error", "codex.api_retry")
	if !strings.Contains(strings.Join(r.Evidence, " "), "Reconnecting...") {
		t.Errorf("retry evidence = %q", r.Evidence)
	}
	waitClass(t, s, classify, api.Error, "api_error", "codex.api_error")

	fakeAPI.FailNext(1000, ErrorStatus(429))
	s.Send("fail-429 now")
	waitClass(t, s, classify, api.Error, "rate_limited", "codex.rate_limited")
	s.WaitForText("last status: 429", 0)

	fakeAPI.FailNext(1000, ErrorStatus(401))
	s.Send("fail-401 now")
	waitClass(t, s, classify, api.Error, "auth", "codex.auth")

	// A turn that succeeds leaves the errors above it behind.
	fakeAPI.FailNext(0, APIError{})
	s.Send("recover now")
	waitTurnDone(s, "recover now")
	waitClass(t, s, classify, api.Idle, "", "codex.idle")

	s.Keys("C-c")
	waitClass(t, s, classify, api.Exited, "process_gone", "codex.exited")
}

// TestRealCodexUnreachable: with nothing listening, Codex waits for the
// network behind its busy line for as long as it takes; that is an error.
func TestRealCodexUnreachable(t *testing.T) {
	t.Parallel()
	classify := classifier(t)
	s := Start(t, Options{BaseURL: "http://127.0.0.1:9/v1", Provider: []string{"request_max_retries = 0", "stream_max_retries = 1"}})
	s.Send("hello there")
	r := waitClass(t, s, classify, api.Error, "api_error", "codex.api_retry")
	if !strings.Contains(strings.Join(r.Evidence, " "), "waiting for network") {
		t.Errorf("evidence = %q", r.Evidence)
	}
}

// TestRealCodexQuestion: request_user_input in Plan mode is a question with
// the options as shown; a digit answers it.
func TestRealCodexQuestion(t *testing.T) {
	t.Parallel()
	classify := classifier(t)
	fakeAPI := NewFakeAPI(t, Rule{Contains: "pick-db", Steps: []Step{
		{Tool: RequestUserInput(Question{
			ID: "database", Header: "Database", Question: "Which database should we use?",
			Options: []Option{{"Postgres (Recommended)", "Relational, robust"}, {"SQLite", "Embedded file"}},
		})},
		{Text: "Using your choice."},
	}})
	s := Start(t, Options{API: fakeAPI})
	s.WaitStable(500*time.Millisecond, 0)
	s.Send("/plan")
	s.WaitForText("for Plan mode.", 0)
	waitClass(t, s, classify, api.Idle, "", "codex.idle")
	s.Send("pick-db for me")
	r := waitClass(t, s, classify, api.AwaitingInput, "question", "codex.question")
	if r.Question != "Which database should we use?" || strings.Join(r.Options, "|") != "Postgres (Recommended)|SQLite|None of the above" {
		t.Errorf("question = %+v", r)
	}
	s.Keys("2")
	waitTurnDone(s, "pick-db")
	if got := fakeAPI.CountMain("SQLite"); got == 0 {
		t.Errorf("the answer never reached the API; prompts: %q", fakeAPI.MainPrompts())
	}
}

// TestRealCodexDaemon: without --no-daemon, /quit during a turn leaves the
// pane at its shell (exited) while the shared app server, in a session of
// its own, keeps running; with --no-daemon nothing of Codex outlives it.
func TestRealCodexDaemon(t *testing.T) {
	t.Parallel()
	classify := classifier(t)
	fakeAPI := NewFakeAPI(t, Rule{Contains: "slow-essay", Steps: []Step{{Text: essay, Chunks: 40, ChunkDelay: 300 * time.Millisecond}}})
	s := Start(t, Options{API: fakeAPI, Daemon: true})
	s.Send("write the slow-essay")
	s.WaitForText("quick brown fox", 0)
	s.Send("/quit")
	s.WaitForText("Any running work continues", 0)
	waitClass(t, s, classify, api.Exited, "process_gone", "codex.exited")
	if slices.Contains(s.Processes(), "codex") {
		t.Errorf("codex still under the pane: %q", s.Processes())
	}
	if len(s.DaemonPIDs()) == 0 {
		t.Errorf("no live app server daemon after /quit")
	}
}
