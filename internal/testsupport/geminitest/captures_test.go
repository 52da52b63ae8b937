package geminitest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
)

var updateCaptures = flag.Bool("update-captures", false,
	"run the real Gemini CLI through every state and rewrite monitor/testdata/captures/gemini/")

// capturesDir holds the real screens the classifier rules are tested on.
const capturesDir = "monitor/testdata/captures/gemini"

// captureHome is the fixed parent of the throwaway HOMEs, so paths in the
// captures do not change from one regeneration to the next.
const captureHome = "/tmp/system3-gemini-captures"

var captures = clitest.Captures{Dir: capturesDir, Home: captureHome, FinalNewline: false}

// TestCaptureFixtures regenerates the screen fixtures from the real CLI:
//
//	go test ./internal/testsupport/geminitest -run TestCaptureFixtures -update-captures
//
// Every fixture is described in the README beside it.
func TestCaptureFixtures(t *testing.T) {
	if !*updateCaptures {
		t.Skip("regenerates fixtures; run with -update-captures")
	}
	captures.Begin(t)
	for _, f := range []struct {
		name string
		fn   func(*testing.T)
	}{{"main", captureMain}, {"errors", captureErrors}, {"unreachable", captureUnreachable}, {"firstrun", captureFirstRun}, {"trust", captureTrust}, {"yolo", captureYolo}, {"limits", captureLimits}} {
		t.Run(f.name, f.fn)
	}
}

func captureMain(t *testing.T) {
	api := NewFakeAPI(t)
	s := Start(t, Options{API: api, Home: filepath.Join(captureHome, "main")})
	if err := os.WriteFile(filepath.Join(s.Dir, "deploy.sh"), []byte("#!/bin/sh\nsleep 4\necho deployed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(s.Dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	captures.Save(t, "idle.txt", s.WaitStable(time.Second, 0))

	api.AddRule(Rule{Contains: "say-hello", Steps: []Step{{Text: "Hello! How can I help?"}}})
	s.Send("say-hello please")
	s.WaitFor("answer", 0, func(sc string) bool { return strings.Contains(sc, "How can I help?") && IdleAfter("say-hello")(sc) })
	captures.Save(t, "idle_after_turn.txt", s.WaitStable(time.Second, 0))

	api.AddRule(Rule{Contains: "slow-essay", Steps: []Step{{Text: Essay, Chunks: 40, ChunkDelay: 250 * time.Millisecond}}})
	// A first chunk held back: the busy line shows before any text.
	api.AddRule(Rule{Contains: "slow-start", Steps: []Step{{Text: Essay, Chunks: 20, ChunkDelay: 2 * time.Second}}})
	s.Send("slow-start now")
	captures.Save(t, "working_thinking.txt", s.WaitFor("busy line", 0, func(sc string) bool {
		return strings.Contains(sc, "slow-start") && IsSpinnerShown(sc)
	}))
	s.WaitForText("quick brown fox", 0)
	captures.Save(t, "working_streaming.txt", s.Capture())
	s.Keys("Escape")
	s.WaitFor("cancelled", 0, func(sc string) bool { return strings.Contains(sc, "Request cancelled") && IsInputBoxShown(sc) })
	captures.Save(t, "interrupted.txt", s.WaitStable(time.Second, 0))

	s.Send("write the slow-essay")
	s.WaitForText("jumps over the lazy dog. The quick", 0)
	captures.Save(t, "working_streaming_late.txt", s.Capture())
	s.WaitFor("essay done", 60*time.Second, IdleAfter("slow-essay"))

	api.AddRule(Rule{Contains: "deploy-now", Steps: []Step{
		{Text: "I'll run the deploy script.", Call: Shell("./deploy.sh --prod", "Deploy to production")},
		{Text: "Deployed."},
	}})
	s.Send("deploy-now please")
	s.WaitForText("Allow execution of", 0)
	captures.Save(t, "permission_shell.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("1")
	captures.Save(t, "working_tool_running.txt", s.WaitFor("shell running", 0, func(sc string) bool {
		return strings.Contains(sc, "./deploy.sh --prod") && !strings.Contains(sc, "Allow execution of") && IsSpinnerShown(sc)
	}))
	s.WaitFor("deployed", 30*time.Second, func(sc string) bool { return strings.Contains(sc, "Deployed.") && IdleAfter("deploy-now")(sc) })

	api.AddRule(Rule{Contains: "make-file", Steps: []Step{
		{Text: "Creating the file.", Call: WriteFile(filepath.Join(s.Dir, "hello.go"), "package main\n\nfunc main() {}\n")},
		{Text: "Written."},
	}})
	s.Send("make-file hello.go")
	s.WaitForText("Apply this change?", 0)
	captures.Save(t, "permission_write.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("1")
	s.WaitFor("written", 0, func(sc string) bool { return strings.Contains(sc, "Written.") && IdleAfter("make-file")(sc) })

	api.AddRule(Rule{Contains: "edit-notes", Steps: []Step{
		{Call: Replace(notes, "beta", "BETA")},
		{Text: "Edited."},
	}})
	s.Send("edit-notes please")
	s.WaitForText("Apply this change?", 0)
	captures.Save(t, "permission_edit.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("Escape")
	s.WaitFor("edit declined", 0, func(sc string) bool {
		return !strings.Contains(sc, "Apply this change?") && IsInputBoxShown(sc) && !IsSpinnerShown(sc)
	})
	captures.Save(t, "interrupted_permission.txt", s.WaitStable(time.Second, 0))

	api.AddRule(Rule{Contains: "pick-db", Steps: []Step{
		{Call: AskUser("Which database should we use?", "Database", Option{"Postgres", "Relational, robust"}, Option{"SQLite", "Embedded file"})},
		{Text: "Using your choice."},
	}})
	s.Send("pick-db for me")
	s.WaitForText("Enter to select", 0)
	captures.Save(t, "question.txt", s.WaitStable(500*time.Millisecond, 0))
	s.Keys("2")
	s.WaitFor("answered", 0, func(sc string) bool { return strings.Contains(sc, "Using your choice.") && IdleAfter("pick-db")(sc) })

	s.Keys("C-c")
	captures.Save(t, "exit_pending_ctrl_c.txt", s.WaitFor("exit hint", 0, func(sc string) bool { return strings.Contains(strings.ToLower(sc), "again to exit") }))
	s.Keys("C-c")
	captures.Save(t, "exited_shell_ctrl_c.txt", s.WaitFor("shell prompt", 0, func(sc string) bool {
		return strings.HasSuffix(strings.TrimRight(sc, "\n "), "$")
	}))
	s.Send("clear")
	s.WaitFor("cleared", 0, func(sc string) bool { return strings.TrimSpace(sc) == "$" })
	s.Send("gemini")
	s.WaitFor("input box", 40*time.Second, IsInputBoxShown)
	s.WaitStable(time.Second, 0)
	s.Send("/quit")
	captures.Save(t, "exited_shell.txt", s.WaitFor("shell prompt", 0, func(sc string) bool {
		return strings.Contains(sc, "gemini --resume") && strings.HasSuffix(strings.TrimRight(sc, "\n "), "$")
	}))
}

func captureErrors(t *testing.T) {
	api := NewFakeAPI(t)
	s := Start(t, Options{API: api, Home: filepath.Join(captureHome, "errors")})
	s.WaitStable(time.Second, 0)

	// 500 every time: the CLI retries behind its busy line; 0.61.0 did not
	// give up within minutes (its model fallback resets the attempts).
	slow := ErrorStatus(500)
	slow.Delay = 2 * time.Second
	api.FailNext(1000, slow)
	s.Send("fail-500 please")
	s.WaitFor("first failure", 60*time.Second, func(sc string) bool { return api.CountMain() >= 1 && IsSpinnerShown(sc) })
	captures.Save(t, "api_error_retrying.txt", s.Capture())
	captures.Save(t, "api_error_retrying_long.txt", s.WaitForText("(esc to cancel, 1m", 120*time.Second))
	api.FailNext(0, APIError{})
	s.Keys("Escape")
	s.WaitFor("cancelled", 0, IdleAfter("fail-500"))
	s.Send("/clear")
	s.WaitStable(time.Second, 0)

	api.FailNext(1000, ErrorStatus(429))
	s.Send("fail-429 please")
	s.WaitFor("retries", 60*time.Second, func(sc string) bool { return api.CountMain() >= 3 && IsSpinnerShown(sc) })
	captures.Save(t, "rate_limited_retrying.txt", s.Capture())
	api.FailNext(0, APIError{})
	s.Keys("Escape")
	s.WaitFor("cancelled", 0, IdleAfter("fail-429"))
	s.Send("/clear")
	s.WaitStable(time.Second, 0)

	api.FailNext(1, ErrorStatus(400))
	s.Send("bad-key please")
	s.WaitFor("auth error", 30*time.Second, func(sc string) bool { return strings.Contains(sc, "API key not valid") && IsInputBoxShown(sc) })
	captures.Save(t, "auth_error.txt", s.WaitStable(time.Second, 0))
	for _, p := range []string{"bad-key again", "bad-key thrice"} {
		api.FailNext(1, ErrorStatus(400))
		s.Send(p)
		s.WaitFor("auth error", 30*time.Second, func(sc string) bool {
			i := strings.LastIndex(sc, p)
			return i >= 0 && strings.Contains(sc[i:], "API key not valid") && IsInputBoxShown(sc)
		})
	}
	captures.Save(t, "api_error_loop.txt", s.WaitStable(time.Second, 0))
}

func captureUnreachable(t *testing.T) {
	s := Start(t, Options{URL: UnreachableURL(t), Home: filepath.Join(captureHome, "unreachable")})
	s.WaitStable(time.Second, 0)
	s.Send("anyone there")
	captures.Save(t, "api_error_unreachable_retrying.txt", s.WaitFor("busy", 0, IsSpinnerShown))
	captures.Save(t, "api_error_unreachable.txt", s.WaitFor("final error", 120*time.Second, func(sc string) bool {
		return !IsSpinnerShown(sc) && IsInputBoxShown(sc) && strings.Contains(sc, "anyone there") && strings.Contains(sc, "✕")
	}))
}

func captureFirstRun(t *testing.T) {
	s := Start(t, Options{FirstRun: true, Home: filepath.Join(captureHome, "firstrun"), ReadyText: "Gemini CLI"})
	captures.Save(t, "first_start.txt", s.WaitStable(2*time.Second, 60*time.Second))
	s.Keys("1")
	s.WaitFor("next screen", 0, func(sc string) bool { return !strings.Contains(sc, "Do you trust the files") })
	captures.Save(t, "first_start_auth.txt", s.WaitStable(2*time.Second, 60*time.Second))
}

func captureTrust(t *testing.T) {
	settings := DefaultSettings()
	settings["security"] = map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": true}}
	s := Start(t, Options{Settings: settings, Home: filepath.Join(captureHome, "trust"), ReadyText: "Gemini CLI"})
	captures.Save(t, "trust_dialog.txt", s.WaitStable(2*time.Second, 60*time.Second))
}

// captureYolo: the CLI in yolo mode (its input line starts with *, a mode
// line says YOLO), and a tool call held by a BeforeTool hook named
// system3 that takes its time, as system3's does while its approval
// policy asks a person.
func captureYolo(t *testing.T) {
	api := NewFakeAPI(t, Rule{Contains: "hooked-now", Steps: []Step{{Text: "Running.", Call: Shell("./deploy.sh --staging", "Deploy to staging")}, {Text: "Hooked done."}}})
	settings := map[string]any{"hooks": map[string]any{"BeforeTool": []any{map[string]any{"matcher": "run_shell_command",
		"hooks": []any{map[string]any{"name": "system3", "type": "command", "command": "sleep 6", "timeout": 60000}}}}}}
	s := Start(t, Options{API: api, Settings: settings, Args: []string{"--approval-mode", "yolo"}, Home: filepath.Join(captureHome, "yolo")})
	if err := os.WriteFile(filepath.Join(s.Dir, "deploy.sh"), []byte("#!/bin/sh\necho deployed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	captures.Save(t, "idle_yolo.txt", s.WaitStable(time.Second, 0))
	s.Send("hooked-now please")
	captures.Save(t, "working_hook.txt", s.WaitForText("Executing Hook: system3", 0))
	s.WaitFor("done", 30*time.Second, IdleAfter("Hooked done."))
	captures.Save(t, "idle_yolo_after_turn.txt", s.WaitStable(time.Second, 0))
}

// captureLimits: a spent quota's usage-limit dialog, with when access
// resets (the API said to retry in an hour) and without (a spent daily
// quota), each answered Stop (its second option), and the error the turn
// ends on.
func captureLimits(t *testing.T) {
	api := NewFakeAPI(t)
	s := Start(t, Options{API: api, Home: filepath.Join(captureHome, "limits")})
	dialog := func(sc string) bool {
		return strings.Contains(sc, "Usage limit reached for") && strings.Contains(sc, "2. Stop")
	}
	for _, c := range []struct {
		err          APIError
		prompt, name string
	}{{QuotaRetry(time.Hour), "usage-limit please", "usage"}, {DailyQuota(), "daily-quota please", "daily"}} {
		api.FailNext(1000, c.err)
		s.Send(c.prompt)
		s.WaitFor("the usage-limit dialog", 60*time.Second, dialog)
		captures.Save(t, "usage_limit_dialog_"+c.name+".txt", s.WaitStable(time.Second, 0))
		s.Keys("2")
		s.WaitFor("the turn's end", 30*time.Second, func(sc string) bool { return !dialog(sc) && IdleAfter(c.prompt)(sc) })
		captures.Save(t, "rate_limited_"+c.name+".txt", s.WaitStable(time.Second, 0))
		api.FailNext(0, APIError{})
		s.Send("/clear")
		s.WaitStable(time.Second, 0)
	}
}
