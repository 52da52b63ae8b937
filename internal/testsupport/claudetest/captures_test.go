package claudetest

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
)

var updateCaptures = flag.Bool("update-captures", false,
	"run the real Claude Code CLI through every state and rewrite monitor/testdata/captures/claude/")

// capturesDir holds the real screens the monitor's classifier rules are tested on.
const capturesDir = "monitor/testdata/captures/claude"

// captureHome is the fixed parent of the throwaway HOMEs, so paths in the
// captures do not change from one regeneration to the next.
const captureHome = "/tmp/system3-captures"

var captures = clitest.Captures{Dir: capturesDir, Home: captureHome, FinalNewline: true}

// doneRE matches the line the CLI leaves after a finished turn, such as
// "✻ Baked for 6s · done 5:09 AM".
var doneRE = regexp.MustCompile(`(?m)^✻ \S+ for \d+[smh]`)

// TestCaptureFixtures regenerates the screen fixtures from the real CLI:
//
//	go test ./internal/testsupport/claudetest -run TestCaptureFixtures -update-captures
//
// Every fixture is described in the README beside it; update that table
// when adding one.
func TestCaptureFixtures(t *testing.T) {
	if !*updateCaptures {
		t.Skip("regenerates fixtures; run with -update-captures")
	}
	captures.Begin(t)

	t.Run("main", captureMain)
	t.Run("errors", captureErrors)
	t.Run("toolerrors", captureToolErrors)
	t.Run("plan", capturePlan)
	t.Run("trust", captureTrust)
	t.Run("sizes", captureSizes)
}

// spinnerRE matches a working spinner line: a glyph, a present participle
// with an ellipsis, then the elapsed time in parentheses, such as
// "✶ Accomplishing… (4s · ↓ 38 tokens)".
var spinnerRE = regexp.MustCompile(`(?m)^\S \S[^\n]*… \(\d`)

// retryRE matches the spinner line of an API retry, such as
// "✻ 500 Internal server error · retrying in 3s · attempt 3/10".
var retryRE = regexp.MustCompile(`(?m)^\S .* · retrying(?: in \d+s|…) · attempt \d+/\d+`)

func isSpinnerShown(screen string) bool { return spinnerRE.MatchString(screen) }

func isDone(screen string) bool { return doneRE.MatchString(screen) }

// waitTurnDone waits for a finished-turn line below the last prompt that
// contains marker, so earlier turns' lines do not count.
func waitTurnDone(s *Session, marker string) string {
	return s.WaitFor("turn after "+marker+" to finish", 30*time.Second, func(screen string) bool {
		i := strings.LastIndex(screen, marker)
		return i >= 0 && isDone(screen[i:]) && IsInputBoxShown(screen)
	})
}

func captureMain(t *testing.T) {
	api := NewFakeAPI(t)
	s := Start(t, Options{
		API:  api,
		Home: filepath.Join(captureHome, "main"),
		Args: []string{"--permission-mode", "default"},
		Env:  []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=1", "CLAUDE_CODE_TASK_LIST_ID=FIXTURES"},
	})
	if err := os.WriteFile(filepath.Join(s.Dir, "deploy.sh"), []byte("#!/bin/sh\nsleep 4\necho deployed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "notes.txt"), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	s.WaitFor("logo", 0, func(sc string) bool { return strings.Contains(sc, "▐▛███▛█") })
	captures.Save(t, "idle.txt", s.WaitStable(time.Second, 0))
	captures.Save(t, "idle.ansi.txt", s.CaptureANSI())

	api.AddRule(Rule{Contains: "say-hello", Steps: []Step{{Text: "Hello! How can I help?"}}})
	s.Send("say-hello please")
	waitTurnDone(s, "say-hello")
	captures.Save(t, "idle_after_turn.txt", s.WaitStable(time.Second, 0))

	essay := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 12)
	api.AddRule(Rule{Contains: "slow-essay", Steps: []Step{{Text: essay, Chunks: 40, ChunkDelay: 250 * time.Millisecond}}})
	s.Send("write the slow-essay")
	captures.Save(t, "working_spinner_start.txt", s.WaitForText("(0s", 0))
	captures.Save(t, "working_spinner_streaming.txt", s.WaitForText("quick brown fox", 0))
	captures.Save(t, "working_spinner.ansi.txt", s.CaptureANSI())
	time.Sleep(3 * time.Second)
	captures.Save(t, "working_spinner_late.txt", s.WaitFor("spinner", 0, isSpinnerShown))
	waitTurnDone(s, "slow-essay")

	api.AddRule(Rule{Contains: "slow-interrupt", Steps: []Step{{Text: essay, Chunks: 40, ChunkDelay: 250 * time.Millisecond}}})
	s.Send("slow-interrupt me")
	s.WaitForText("(2s", 0)
	s.Keys("Escape")
	s.WaitForText("Interrupted", 0)
	captures.Save(t, "interrupted.txt", s.WaitStable(time.Second, 0))

	api.AddRule(Rule{Contains: "deploy-now", Steps: []Step{
		{Text: "I'll run the deploy script.", Tool: Bash("./deploy.sh --prod", "Deploy to production")},
		{Text: "Deployed."},
	}})
	s.Send("deploy-now please")
	s.WaitForText("Do you want to proceed?", 0)
	captures.Save(t, "permission_bash.txt", s.WaitStable(500*time.Millisecond, 0))
	captures.Save(t, "permission_bash.ansi.txt", s.CaptureANSI())
	s.Keys("1")
	captures.Save(t, "working_tool_running.txt", s.WaitForText("to run in background", 0))
	waitTurnDone(s, "deploy-now")

	api.AddRule(Rule{Contains: "make-file", Steps: []Step{
		{Text: "Creating the file.", Tool: Write(filepath.Join(s.Dir, "hello.go"), "package main\n\nfunc main() {}\n")},
		{Text: "Written."},
	}})
	s.Send("make-file hello.go")
	s.WaitForText("Do you want to create hello.go?", 0)
	captures.Save(t, "permission_write.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("1")
	waitTurnDone(s, "make-file")

	notes := filepath.Join(s.Dir, "notes.txt")
	api.AddRule(Rule{Contains: "edit-notes", Steps: []Step{
		{Tool: Read(notes)},
		{Tool: Edit(notes, "beta", "BETA")},
		{Text: "Edited."},
	}})
	s.Send("edit-notes now")
	s.WaitForText("Do you want to make this edit to notes.txt?", 0)
	captures.Save(t, "permission_edit.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("1")
	waitTurnDone(s, "edit-notes")

	api.AddRule(Rule{Contains: "remove-build", Steps: []Step{{Tool: Bash("rm -rf build", "Remove the build directory")}, {Text: "Removed."}}})
	s.Send("remove-build dir")
	s.WaitForText("Do you want to proceed?", 0)
	s.Keys("Escape")
	s.WaitForText("Interrupted", 0)
	captures.Save(t, "interrupted_permission.txt", s.WaitStable(time.Second, 0))

	api.AddRule(Rule{Contains: "pick-db", Steps: []Step{
		{Tool: AskUserQuestion(Question{
			Question: "Which database should we use?", Header: "Database",
			Options: []Option{{"Postgres", "Relational, robust"}, {"SQLite", "Embedded file"}, {"Redis", "In-memory"}},
		})},
		{Text: "Using your choice."},
	}})
	s.Send("pick-db for me")
	s.WaitForText("Enter to select", 0)
	captures.Save(t, "question_multiple_choice.txt", s.WaitStable(500*time.Millisecond, 0))
	captures.Save(t, "question_multiple_choice.ansi.txt", s.CaptureANSI())
	s.Keys("Down")
	time.Sleep(300 * time.Millisecond)
	s.Keys("Enter")
	waitTurnDone(s, "pick-db")

	api.AddRule(Rule{Contains: "pick-features", Steps: []Step{
		{Tool: AskUserQuestion(
			Question{Question: "Which features do you want?", Header: "Features", MultiSelect: true,
				Options: []Option{{"Login", "Email login"}, {"Search", "Full text"}, {"Export", "CSV export"}}},
			Question{Question: "Which auth method?", Header: "Auth",
				Options: []Option{{"OAuth", "Via provider"}, {"Password", "Local accounts"}}},
		)},
		{Text: "Got it."},
	}})
	s.Send("pick-features for me")
	s.WaitForText("Which features do you want?", 0)
	s.WaitStable(500*time.Millisecond, 0)
	s.Keys("Space")
	captures.Save(t, "question_multi_select.txt", s.WaitForText("[✔] Login", 0))
	s.Keys("Tab")
	s.WaitForText("Which auth method?", 0)
	s.WaitStable(500*time.Millisecond, 0)
	s.Keys("Enter")
	s.WaitForText("Submit answers", 0)
	captures.Save(t, "question_review.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("Enter")
	waitTurnDone(s, "pick-features")

	// The attempt shown counts the failures so far; "retrying…" (no
	// countdown) shows while a retry is in flight, so the last failure is slow.
	api.FailNext(4, ErrorStatus(500))
	s.Send("retry-me please")
	captures.Save(t, "api_error_retry_attempt2.txt", s.WaitForText("attempt 2/10", 0))
	captures.Save(t, "api_error_retry_attempt3.txt", s.WaitForText("attempt 3/10", 0))
	captures.Save(t, "api_error_retry_attempt4.txt", s.WaitForText("attempt 4/10", 0))
	waitTurnDone(s, "retry-me")

	slow := ErrorStatus(500)
	slow.Delay = 3 * time.Second
	api.FailNext(2, slow)
	s.Send("retry-slowly please")
	captures.Save(t, "api_error_retry_in_flight.txt", s.WaitForText("retrying… · attempt 1/10", 0))
	waitTurnDone(s, "retry-slowly")

	// 529 is retried only a few times, then reported as repeated overload.
	api.FailNext(2, ErrorStatus(529))
	s.Send("overload-me please")
	captures.Save(t, "api_overloaded_retry.txt", s.WaitForText("attempt 2/10", 0))
	waitTurnDone(s, "overload-me")
	api.FailNext(10, ErrorStatus(529))
	s.Send("overload-me-more please")
	s.WaitForText("Repeated 529", 0)
	captures.Save(t, "api_overloaded_final.txt", s.WaitStable(time.Second, 0))
	api.FailNext(0, APIError{})

	api.AddRule(Rule{Contains: "track-tasks", Steps: []Step{
		{Tool: TaskCreate("Implement login form", "Build the login form with validation", "Implementing login form")},
		{Tool: TaskCreate("Write tests", "Cover the login form", "Writing tests")},
		{Tool: TaskUpdate("1", "in_progress")},
		{Text: essay, Chunks: 30, ChunkDelay: 200 * time.Millisecond},
	}})
	s.Send("track-tasks for login")
	s.WaitForText("Implementing login form…", 0)
	captures.Save(t, "working_tasks.txt", s.WaitForText("quick brown fox", 0))
	waitTurnDone(s, "track-tasks")
	captures.Save(t, "idle_tasks.txt", s.WaitStable(time.Second, 0))

	// The task panel is drawn under a permission dialog.
	api.AddRule(Rule{Contains: "deploy-tasks", Steps: []Step{
		{Text: "I'll run the deploy script.", Tool: Bash("./deploy.sh --prod", "Deploy to production")},
		{Text: "Not deployed."},
	}})
	s.Send("deploy-tasks please")
	s.WaitForText("Do you want to proceed?", 0)
	captures.Save(t, "permission_bash_tasks.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("Escape")
	s.WaitForText("Interrupted", 0)
	s.WaitStable(time.Second, 0)

	api.SetCompactReply(Step{Text: CompactSummary, Chunks: 20, ChunkDelay: 300 * time.Millisecond})
	s.Send("/compact")
	captures.Save(t, "compacting.txt", s.WaitForText("Compacting conversation", 0))
	s.WaitForText("Compacted", 0)
	captures.Save(t, "compacted.txt", s.WaitStable(time.Second, 0))

	s.Keys("C-c")
	captures.Save(t, "exit_pending_ctrl_c.txt", s.WaitForText("Press Ctrl-C again to exit", 0))
	s.Keys("C-c")
	s.WaitForText("Resume this session with", 0)
	captures.Save(t, "exited_shell_ctrl_c.txt", s.WaitStable(500*time.Millisecond, 0))
}

func captureErrors(t *testing.T) {
	// One fresh session per error, so each screen shows only its own error;
	// no retries, so the final message shows at once.
	for _, c := range []struct {
		file, prompt, want string
		err                APIError
	}{
		{"api_error_500.txt", "fail-500 now", "API Error: 500", ErrorStatus(500)},
		{"rate_limited.txt", "fail-429 now", "Request rejected (429)", ErrorStatus(429)},
		{"auth_error.txt", "fail-401 now", "Invalid API key", ErrorStatus(401)},
	} {
		api := NewFakeAPI(t)
		s := Start(t, Options{
			API:  api,
			Home: filepath.Join(captureHome, strings.TrimSuffix(c.file, ".txt")),
			Args: []string{"--permission-mode", "default"},
			Env:  []string{"CLAUDE_CODE_MAX_RETRIES=0"},
		})
		api.FailNext(5, c.err)
		s.Send(c.prompt)
		s.WaitForText(c.want, 0)
		captures.Save(t, c.file, s.WaitStable(time.Second, 0))
		if c.err.Status == 429 {
			// Shows that the input box's "Resend your message…" is a placeholder.
			captures.Save(t, "rate_limited.ansi.txt", s.CaptureANSI())
		}
		if c.err.Status != 401 {
			continue
		}
		api.FailNext(0, APIError{})
		s.Send("/exit")
		s.WaitForText("Resume this session with", 0)
		captures.Save(t, "exited_shell.txt", s.WaitStable(500*time.Millisecond, 0))
	}
}

func captureToolErrors(t *testing.T) {
	api := NewFakeAPI(t, Rule{Contains: "break-things", Steps: []Step{
		{Tool: Bash("ls ./missing-dir", "List the missing directory"), Repeat: 4},
		{Text: "The directory keeps failing to list; " + strings.Repeat("still checking. ", 20), Chunks: 20, ChunkDelay: 250 * time.Millisecond},
	}})
	s := Start(t, Options{API: api, Home: filepath.Join(captureHome, "toolerrors"), Args: []string{"--permission-mode", "default"}})
	s.Send("break-things now")
	captures.Save(t, "error_tool_failures_working.txt", s.WaitForText("still checking", 0))
	waitTurnDone(s, "break-things")
	captures.Save(t, "error_tool_failures.txt", s.WaitStable(time.Second, 0))

	ts := s.Transcripts()
	if len(ts) != 1 {
		t.Fatalf("want one transcript in %s, got %v", s.ProjectDir(), ts)
	}
	b, err := os.ReadFile(ts[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"is_error":true`) {
		t.Fatalf("transcript %s has no failed tool call", ts[0])
	}
	captures.Save(t, "transcript_tool_errors.jsonl", string(b))
}

func capturePlan(t *testing.T) {
	const plan = "# Login plan\n\n1. Add the login form\n2. Validate the fields\n3. Add tests\n"
	api := NewFakeAPI(t,
		Rule{Contains: "bare-exit", Steps: []Step{{Tool: ExitPlanMode(plan)}, {Text: "Staying in plan mode."}}},
		// The plan text is slow so the test can write the plan file, whose
		// path the CLI names in the request, before ExitPlanMode arrives.
		Rule{Contains: "make-plan", Steps: []Step{
			{Text: "Here is my plan.", Chunks: 4, ChunkDelay: 500 * time.Millisecond, Tool: ExitPlanMode(plan)},
			{Text: "Starting."},
		}},
	)
	s := Start(t, Options{API: api, Home: filepath.Join(captureHome, "plan"), Args: []string{"--permission-mode", "plan"}, Height: 40})
	captures.Save(t, "idle_plan_mode.txt", s.WaitStable(time.Second, 0))

	// Without a plan file the CLI asks a bare question.
	s.Send("bare-exit now")
	s.WaitForText("Exit plan mode?", 0)
	captures.Save(t, "plan_exit_no_plan_file.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("2")
	s.WaitFor("input box", 0, IsInputBoxShown)
	s.WaitStable(time.Second, 0)

	s.Send("make-plan for login")
	var path string
	s.WaitFor("the plan file path in a request", 0, func(string) bool {
		reqs := api.Requests()
		if m := planFileRE.FindSubmatch(reqs[len(reqs)-1].Body); m != nil {
			path = string(m[1])
			return true
		}
		return false
	})
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitForText("Would you like to proceed?", 0)
	captures.Save(t, "plan_approval.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("2")
	waitTurnDone(s, "make-plan")
}

// planFileRE finds the plan file the CLI asks for in plan mode (2.1.329, 2.1.330).
var planFileRE = regexp.MustCompile(`(?:create your plan at|plan file exists at) (/[^ ]+\.md)`)

func captureTrust(t *testing.T) {
	s := Start(t, Options{Home: filepath.Join(captureHome, "trust"), Untrusted: true})
	captures.Save(t, "trust_dialog.txt", s.WaitStable(500*time.Millisecond, 0))
	captures.Save(t, "trust_dialog.ansi.txt", s.CaptureANSI())
	s.Keys("Enter") // the default choice is "No, exit"
	s.WaitForText("isn't trusted", 0)
	captures.Save(t, "trust_declined_shell.txt", s.WaitStable(500*time.Millisecond, 0))
}

func captureSizes(t *testing.T) {
	for _, sz := range []struct {
		name string
		w, h int
	}{{"80x24", 80, 24}, {"200x50", 200, 50}} {
		api := NewFakeAPI(t, Rule{Contains: "deploy-now", Steps: []Step{
			{Text: "I'll run the deploy script.", Tool: Bash("./deploy.sh --prod", "Deploy to production")},
			{Text: "Deployed."},
		}})
		s := Start(t, Options{API: api, Home: filepath.Join(captureHome, "size"+sz.name),
			Args: []string{"--permission-mode", "default"}, Width: sz.w, Height: sz.h})
		s.WaitFor("logo", 0, func(sc string) bool { return strings.Contains(sc, "▐▛███▛█") })
		captures.Save(t, "idle_"+sz.name+".txt", s.WaitStable(time.Second, 0))
		s.Send("deploy-now please")
		s.WaitForText("Do you want to proceed?", 0)
		captures.Save(t, "permission_bash_"+sz.name+".txt", s.WaitStable(500*time.Millisecond, 0))
	}
}
