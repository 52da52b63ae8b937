package claudetest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

var saveLimit = flag.Bool("update-limit-capture", false, "save the usage-limit screens to monitor/testdata/captures/claude/rate_limited_*.txt")

// TestRealClaudeUsageLimit: with a subscription (an OAuth token) and the
// response headers of a spent 5-hour allowance, the real CLI says "You've
// hit your 5-hour limit · resets …" and waits to continue by itself at the
// reset ("Continuing automatically at …"): rate_limited/auto_resume, the
// reset read from the screen. Escape cancels that ("Automatic continue
// cancelled"): rate_limited with nothing to continue it, the same reset.
// Its /rate-limit-options dialog is a prompt with its options.
func TestRealClaudeUsageLimit(t *testing.T) {
	t.Parallel()
	fakeAPI := NewFakeAPI(t, Rule{Contains: "hello there", Steps: []Step{{Text: "Hello again."}}})
	reset := time.Now().Add(2 * time.Hour)
	fakeAPI.FailNext(1000, SpentAllowance(reset))
	home := ""
	if *saveLimit {
		home = "/tmp/system3-claude-limit-capture"
		os.RemoveAll(home)
		t.Cleanup(func() { os.RemoveAll(home) })
	}
	s := Start(t, Options{API: fakeAPI, Home: home, Env: []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=" + FakeOAuthToken}})
	e, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	classify := func(sc string) rules.Result {
		return e.Classify(rules.Input{Screen: sc, Processes: []string{"claude"}})
	}
	save := func(name, screen string) {
		if *saveLimit {
			if err := os.WriteFile(filepath.Join(testkit.RepoRoot(t), capturesDir, name), []byte(screen), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The screen shows the minute the reset falls in, in the CLI's zone.
	wantResets := func(r rules.Result, screen string) {
		t.Helper()
		at, ok := rules.ParseReset(r.Resets, time.Now(), time.Local)
		if !ok || at.After(reset) || reset.Sub(at) >= time.Minute {
			t.Fatalf("resets %q read as %s (ok %v), want the minute of %s\n%s", r.Resets, at, ok, reset, screen)
		}
	}

	s.Send("hello there")
	var r rules.Result
	screen := s.WaitFor("the usage limit classified", 0, func(sc string) bool {
		r = classify(sc)
		return r.State == api.RateLimited && r.Kind == api.KindAutoResume
	})
	if r.Rule != "claude.usage_limit_waiting" || !strings.Contains(r.Detail, "hit your 5-hour limit · resets ") {
		t.Fatalf("usage limit = %+v\n%s", r, screen)
	}
	wantResets(r, screen)
	save("rate_limited_5h.txt", screen)

	// Escape cancels the automatic continue: nothing will continue it.
	s.Keys("Escape")
	screen = s.WaitFor("the automatic continue cancelled", 0, func(sc string) bool {
		r = classify(sc)
		return strings.Contains(sc, "Automatic continue cancelled") && r.State == api.RateLimited && r.Kind == ""
	})
	if r.Rule != "claude.usage_limit" || !strings.Contains(r.Detail, "hit your 5-hour limit · resets ") {
		t.Fatalf("cancelled = %+v\n%s", r, screen)
	}
	wantResets(r, screen)
	save("rate_limited_cancelled.txt", screen)

	// The dialog it offers to wait again is a prompt, never typed into.
	s.Send("/rate-limit-options")
	screen = s.WaitFor("the usage-limit dialog", 0, func(sc string) bool {
		r = classify(sc)
		return r.State == api.AwaitingInput
	})
	if r.Rule != "claude.limit_options" || r.Question != "What do you want to do?" || len(r.Options) < 2 {
		t.Fatalf("dialog = %+v\n%s", r, screen)
	}
	save("awaiting_input_limit_options.txt", screen)
	s.Keys("Escape")
	s.WaitFor("the dialog closed", 0, func(sc string) bool { return classify(sc).State == api.RateLimited })
}
