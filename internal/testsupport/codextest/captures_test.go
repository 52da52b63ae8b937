package codextest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

var updateCaptures = flag.Bool("update-captures", false,
	"run the real Codex CLI through every state and rewrite monitor/testdata/captures/codex/")

// capturesDir holds the real screens the monitor's classifier rules are tested on.
const capturesDir = "monitor/testdata/captures/codex"

// captureHome is the fixed parent of the throwaway HOMEs, so paths in the
// captures do not change from one regeneration to the next.
const captureHome = "/tmp/system3-codex-captures"

var captures = clitest.Captures{Dir: capturesDir, Home: captureHome, FinalNewline: false}

// TestCaptureFixtures regenerates the screen fixtures from the real CLI:
//
//	go test ./internal/testsupport/codextest -run TestCaptureFixtures -update-captures
//
// Every fixture is described in the README beside it; update that table
// when adding one.
func TestCaptureFixtures(t *testing.T) {
	if !*updateCaptures {
		t.Skip("regenerates fixtures; run with -update-captures")
	}
	captures.Begin(t)

	t.Run("main", captureMain)
	t.Run("retries", captureRetries)
	t.Run("errors", captureErrors)
	t.Run("unreachable", captureUnreachable)
	t.Run("trust", captureTrust)
	t.Run("question", captureQuestion)
	t.Run("daemon", captureDaemon)
}

// essay is a long answer; streamed slowly it keeps the CLI busy.
var essay = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 12)

const notesPatch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n alpha\n-beta\n+BETA\n gamma\n*** End Patch\n"

func writeProjectFiles(t *testing.T, s *Session) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.Dir, "deploy.sh"), []byte("#!/bin/sh\nsleep 3\necho deployed-ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "notes.txt"), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitTurnDone waits for the "Worked for" line Codex prints under a
// finished turn, below the last prompt that contains marker.
func waitTurnDone(s *Session, marker string) string {
	return s.WaitFor("turn after "+marker+" to finish", 0, func(screen string) bool {
		i := strings.LastIndex(screen, marker)
		return i >= 0 && strings.Contains(screen[i:], "Worked for") && IsReady(screen)
	})
}

func captureMain(t *testing.T) {
	t.Parallel()
	api := NewFakeAPI(t)
	s := Start(t, Options{API: api, Home: filepath.Join(captureHome, "main")})
	writeProjectFiles(t, s)
	captures.Save(t, "idle.txt", s.WaitStable(time.Second, 0))

	api.AddRule(Rule{Contains: "say-hello", Steps: []Step{{Text: "Hello! How can I help?"}}})
	s.Send("say-hello please")
	waitTurnDone(s, "say-hello")
	captures.Save(t, "idle_after_turn.txt", s.WaitStable(time.Second, 0))

	// The first chunk is slow: the busy line shows until text arrives, then
	// the text streams with no busy line at all.
	api.AddRule(Rule{Contains: "slow-essay", Steps: []Step{{Text: essay, Chunks: 30, ChunkDelay: 300 * time.Millisecond}}})
	s.Send("write the slow-essay")
	captures.Save(t, "working_spinner.txt", s.WaitForText("esc to interrupt", 0))
	captures.Save(t, "working_streaming.txt", s.WaitFor("streamed text without a busy line", 0, func(sc string) bool {
		return strings.Contains(sc, "quick brown fox") && !strings.Contains(sc, "esc to interrupt")
	}))
	waitTurnDone(s, "slow-essay")

	api.AddRule(Rule{Contains: "slow-interrupt", Steps: []Step{{Text: essay, Chunks: 40, ChunkDelay: 300 * time.Millisecond}}})
	s.Send("slow-interrupt me")
	s.WaitForText("lazy dog. The quick", 0)
	interrupt(s)
	captures.Save(t, "interrupted.txt", s.WaitStable(time.Second, 0))

	api.AddRule(Rule{Contains: "deploy-now", Steps: []Step{
		{Text: "I'll run the deploy script.", Tool: Exec("./deploy.sh --prod", "Do you want to deploy to production?")},
		{Text: "Deployed."},
	}})
	s.Send("deploy-now please")
	s.WaitForText("Press enter to confirm or esc to cancel", 0)
	captures.Save(t, "permission_exec.txt", s.WaitStable(500*time.Millisecond, 0))
	captures.Save(t, "permission_exec.ansi.txt", s.CaptureANSI())
	s.Keys("1")
	captures.Save(t, "working_tool_running.txt", s.WaitFor("the approved command running", 0, func(sc string) bool {
		return strings.Contains(sc, "You approved codex") && strings.Contains(sc, "Running ./deploy.sh")
	}))
	waitTurnDone(s, "deploy-now")

	api.AddRule(Rule{Contains: "edit-notes", Steps: []Step{{Tool: ApplyPatch(notesPatch)}, {Text: "Edited."}}})
	s.Send("edit-notes now")
	s.WaitForText("Would you like to make the following edits?", 0)
	captures.Save(t, "permission_edit.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("1")
	waitTurnDone(s, "edit-notes")

	api.AddRule(Rule{Contains: "remove-build", Steps: []Step{{Tool: Exec("rm -rf build", "Remove the build directory?")}, {Text: "Removed."}}})
	s.Send("remove-build dir")
	s.WaitForText("Press enter to confirm or esc to cancel", 0)
	s.WaitStable(500*time.Millisecond, 0)
	s.Keys("Escape")
	s.WaitFor("approval gone", 0, func(sc string) bool { return !strings.Contains(sc, "Press enter to confirm") && IsReady(sc) })
	captures.Save(t, "interrupted_permission.txt", s.WaitStable(time.Second, 0))

	s.Send("/quit")
	s.WaitForText("codex resume", 0)
	captures.Save(t, "exited_shell.txt", s.WaitStable(500*time.Millisecond, 0))
}

func captureRetries(t *testing.T) {
	t.Parallel()
	api := NewFakeAPI(t)
	s := Start(t, Options{API: api, Home: filepath.Join(captureHome, "retries")})
	// Every request fails: the stream is retried 5 times, each after a
	// few quick request retries, before the turn ends on the error.
	api.FailNext(1000, ErrorStatus(500))
	s.Send("retry-me please")
	captures.Save(t, "api_error_retry.txt", s.WaitForText("Reconnecting... 1/5", 0))
	captures.Save(t, "api_error_retry_attempt3.txt", s.WaitForText("Reconnecting... 3/5", 60*time.Second))
	s.WaitForText("■", 120*time.Second)
	captures.Save(t, "api_error_500_after_retries.txt", s.WaitStable(time.Second, 0))
	api.FailNext(0, APIError{})

	s.Keys("C-c")
	s.WaitForText("codex resume", 0)
	captures.Save(t, "exited_shell_ctrl_c.txt", s.WaitStable(500*time.Millisecond, 0))
}

func captureErrors(t *testing.T) {
	t.Parallel()
	// One fresh session per error, so each screen shows only its own error;
	// no retries, so the final message shows at once.
	for _, c := range []struct {
		file, want string
		err        APIError
	}{
		{"api_error_500.txt", "high demand", ErrorStatus(500)},
		{"rate_limited.txt", "429 Too Many Requests", ErrorStatus(429)},
		{"auth_error.txt", "401 Unauthorized", ErrorStatus(401)},
	} {
		api := NewFakeAPI(t)
		s := Start(t, Options{
			API:      api,
			Home:     filepath.Join(captureHome, strings.TrimSuffix(c.file, ".txt")),
			Provider: []string{"request_max_retries = 0", "stream_max_retries = 0"},
		})
		api.FailNext(1000, c.err)
		s.Send("fail now")
		s.WaitForText(c.want, 0)
		captures.Save(t, c.file, s.WaitStable(time.Second, 0))
	}
}

func captureUnreachable(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{
		BaseURL:  "http://127.0.0.1:9/v1",
		Home:     filepath.Join(captureHome, "unreachable"),
		Provider: []string{"request_max_retries = 0", "stream_max_retries = 1"},
	})
	// Codex waits for the network for as long as it takes: there is no
	// final error to capture.
	s.Send("hello there")
	captures.Save(t, "unreachable_retry.txt", s.WaitForText("waiting for network", 0))
}

// interrupt presses Escape until the turn says it was interrupted: an
// Escape that reaches the CLI between two chunks of a stream is sometimes
// taken for the start of a key sequence and dropped.
func interrupt(s *Session) {
	s.t.Helper()
	for range 5 {
		s.Keys("Escape")
		if testkit.Poll(3*time.Second, func() bool { return strings.Contains(s.Capture(), "Conversation interrupted") }) {
			return
		}
	}
	s.WaitForText("Conversation interrupted", 0)
}

func captureTrust(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{Home: filepath.Join(captureHome, "trust"), Untrusted: true})
	captures.Save(t, "trust_dialog.txt", s.WaitStable(500*time.Millisecond, 0))
	// Digits do not choose here; Enter takes the highlighted first option.
	s.Keys("Enter")
	s.WaitFor("input box", 0, IsReady)
}

func captureQuestion(t *testing.T) {
	t.Parallel()
	api := NewFakeAPI(t, Rule{Contains: "pick-db", Steps: []Step{
		{Tool: RequestUserInput(Question{
			ID: "database", Header: "Database", Question: "Which database should we use?",
			Options: []Option{{"Postgres (Recommended)", "Relational, robust"}, {"SQLite", "Embedded file"}},
		})},
		{Text: "Using your choice."},
	}})
	s := Start(t, Options{API: api, Home: filepath.Join(captureHome, "question")})
	// request_user_input is offered in Plan mode only.
	s.WaitStable(500*time.Millisecond, 0)
	s.Send("/plan")
	s.WaitForText("for Plan mode.", 0)
	captures.Save(t, "idle_plan_mode.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Send("pick-db for me")
	s.WaitForText("Which database should we use?", 0)
	captures.Save(t, "question.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("2")
	waitTurnDone(s, "pick-db")
}

func captureDaemon(t *testing.T) {
	t.Parallel()
	api := NewFakeAPI(t, Rule{Contains: "slow-essay", Steps: []Step{{Text: essay, Chunks: 40, ChunkDelay: 300 * time.Millisecond}}})
	s := Start(t, Options{API: api, Home: filepath.Join(captureHome, "daemon"), Daemon: true})
	s.Send("write the slow-essay")
	s.WaitForText("quick brown fox", 0)
	s.Send("/quit")
	s.WaitForText("Any running work continues", 0)
	captures.Save(t, "exited_daemon.txt", s.WaitStable(500*time.Millisecond, 0))
}
