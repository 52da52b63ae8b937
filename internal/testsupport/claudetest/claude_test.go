package claudetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// These assertions on screen text stand in for the monitor's classifier
// until it exists; the strings are the ones recorded in
// monitor/testdata/captures/claude/README.md.

// TestRealClaudeStates drives the real CLI through idle, working, a Bash
// permission prompt, a multiple-choice question, API error retries and exit.
func TestRealClaudeStates(t *testing.T) {
	api := NewFakeAPI(t,
		Rule{Contains: "slow-essay", Steps: []Step{{
			Text: strings.Repeat("The quick brown fox jumps over the lazy dog. ", 6), Chunks: 12, ChunkDelay: 250 * time.Millisecond,
		}}},
		Rule{Contains: "deploy-now", Steps: []Step{
			{Text: "I'll run the deploy script.", Tool: Bash("./deploy.sh --prod", "Deploy to production")},
			{Text: "Deployed."},
		}},
		Rule{Contains: "pick-db", Steps: []Step{
			{Tool: AskUserQuestion(Question{
				Question: "Which database should we use?", Header: "Database",
				Options: []Option{{"Postgres", "Relational, robust"}, {"SQLite", "Embedded file"}},
			})},
			{Text: "Using your choice."},
		}},
		Rule{Contains: "retry-me", Steps: []Step{{Text: "Recovered."}}},
	)
	s := Start(t, Options{API: api, Args: []string{"--permission-mode", "default"}})
	if err := os.WriteFile(filepath.Join(s.Dir, "deploy.sh"), []byte("#!/bin/sh\necho deployed-ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	t.Log("idle")
	s.WaitFor("idle footer", 0, func(sc string) bool {
		return IsInputBoxShown(sc) && strings.Contains(sc, "? for shortcuts")
	})
	if got := s.CurrentCommand(); got != "claude" {
		t.Errorf("pane command = %q, want claude", got)
	}

	t.Log("working")
	s.Send("write the slow-essay")
	s.WaitFor("spinner", 0, func(sc string) bool {
		return isSpinnerShown(sc) && strings.Contains(sc, "esc to interrupt")
	})
	waitTurnDone(s, "slow-essay")

	t.Log("permission")
	s.Send("deploy-now please")
	sc := s.WaitForText("Do you want to proceed?", 0)
	for _, want := range []string{"Bash command", "./deploy.sh --prod", "❯ 1. Yes", "No", "Esc to cancel"} {
		if !strings.Contains(sc, want) {
			t.Errorf("permission prompt lacks %q:\n%s", want, sc)
		}
	}
	s.WaitStable(300*time.Millisecond, 0)
	s.Keys("1")
	waitTurnDone(s, "deploy-now")

	t.Log("question")
	s.Send("pick-db for me")
	sc = s.WaitForText("Enter to select", 0)
	for _, want := range []string{"Which database should we use?", "❯ 1. Postgres", "2. SQLite"} {
		if !strings.Contains(sc, want) {
			t.Errorf("question lacks %q:\n%s", want, sc)
		}
	}
	s.WaitStable(300*time.Millisecond, 0)
	s.Keys("Down")
	s.WaitForText("❯ 2. SQLite", 0)
	s.Keys("Enter")
	s.WaitForText("→ SQLite", 0)
	waitTurnDone(s, "pick-db")

	t.Log("API error retry")
	api.FailNext(2, ErrorStatus(500))
	s.Send("retry-me please")
	s.WaitFor("retry line", 0, func(sc string) bool {
		return retryRE.MatchString(sc)
	})
	waitTurnDone(s, "retry-me")

	t.Log("exit")
	s.Send("/exit")
	s.WaitFor("shell prompt after exit", 0, func(sc string) bool {
		return strings.Contains(sc, "Resume this session with") && strings.HasSuffix(strings.TrimRight(sc, "\n "), "$")
	})
	testkit.Poll(5*time.Second, func() bool { return s.CurrentCommand() == "bash" })
	if got := s.CurrentCommand(); got != "bash" {
		t.Errorf("pane command after exit = %q, want bash", got)
	}

	// What the CLI sent: every prompt, the tool results, and nothing the fake
	// did not expect.
	prompts := api.MainPrompts()
	if len(prompts) == 0 || prompts[0] != "write the slow-essay" {
		t.Errorf("first prompt = %q", prompts)
	}
	joined := strings.Join(prompts, "\n")
	for _, want := range []string{"deployed-ok", `"Which database should we use?"="SQLite"`, "retry-me please"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no main request carried %q; prompts:\n%s", want, joined)
		}
	}
	for _, r := range api.Requests() {
		if r.Path != "/v1/messages" || r.Query != "beta=true" || r.Kind != KindMain {
			t.Errorf("unexpected request %s %s?%s kind=%s", r.Method, r.Path, r.Query, r.Kind)
		}
	}
	if ts := s.Transcripts(); len(ts) != 1 {
		t.Errorf("transcripts in %s = %v, want one", s.ProjectDir(), ts)
	}
}

// TestRealClaudeTrustDialog starts the CLI in an untrusted folder and
// accepts the trust dialog.
func TestRealClaudeTrustDialog(t *testing.T) {
	s := Start(t, Options{Untrusted: true})
	sc := s.WaitForText("Enter to confirm · Esc to cancel", 0)
	if !strings.Contains(sc, "❯ No, exit") {
		t.Errorf("trust dialog does not default to No:\n%s", sc)
	}
	s.WaitStable(300*time.Millisecond, 0)
	s.Keys("Down")
	s.WaitForText("❯ Yes, I trust this folder", 0)
	s.Keys("Enter")
	s.WaitFor("input box", 30*time.Second, IsInputBoxShown)
}
