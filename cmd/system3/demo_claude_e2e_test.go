package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tmux"
)

// TestDemoRealClaudeAsksPermission runs `system3 demo --agent claude` with
// the pinned Claude Code, as a person would in a terminal: the dashboard
// opens on the demo's Claude Code sessions, each answered by the demo's
// own fake API; "deploy" typed into one makes it ask to run a Bash
// command, which the dashboard shows as that session awaiting input with
// the question, and answers with 1. Quitting removes everything: the
// sessions, the fake API and the demo's directory.
func TestDemoRealClaudeAsksPermission(t *testing.T) {
	bin := claudetest.ClaudeBin(t)
	tmp, state := testkit.ShortDir(t), testkit.ShortDir(t)
	cfg := filepath.Join(state, "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  listen: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	term, pane := terminal(t, map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_CONFIG": cfg, "TMPDIR": tmp},
		"demo", "--agent", "claude", "--agent-bin", bin)
	ctx := context.Background()
	screen := func() string {
		s, _ := term.Capture(ctx, pane, tmux.CaptureOptions{})
		return s
	}
	waitScreen := func(what string, ok func(string) bool) string {
		t.Helper()
		var s string
		testkit.WaitFor(t, 60*time.Second, what, func() bool {
			s = screen()
			return ok(s)
		})
		return s
	}
	row := func(session, rest string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^..` + regexp.QuoteMeta(session) + `:0\.0\s+claude\s+` + rest)
	}
	var socks []string
	testkit.WaitFor(t, 30*time.Second, "the demo's tmux server", func() bool {
		socks, _ = filepath.Glob(filepath.Join(tmp, "system3-demo-*", "tmux.sock"))
		return len(socks) > 0
	})
	if len(socks) != 1 {
		t.Fatalf("demo sockets in %s: %q", tmp, socks)
	}
	demoDir := filepath.Dir(socks[0])
	demo := tmux.NewClient(tmux.Server{Path: socks[0]})
	var panes []tmux.Pane
	testkit.WaitFor(t, 10*time.Second, "the demo's two sessions", func() bool {
		panes, _ = demo.ListPanes(ctx)
		return len(panes) == 2
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dashboard:\n%s", screen())
			for _, p := range panes {
				s, _ := demo.Capture(ctx, p.ID, tmux.CaptureOptions{})
				t.Logf("%s:\n%s", p.SessionName, s)
			}
			if b, err := os.ReadFile(filepath.Join(demoDir, "state", "wakes.jsonl")); err == nil {
				t.Logf("the demo's wake journal:\n%s", b)
			}
		}
	})
	var apiPane string
	var pids []int
	for _, p := range panes {
		if p.SessionName == "claude-api" {
			apiPane = p.ID
		}
		pids = append(pids, p.PID)
	}
	// Both sessions answer their first prompt with the keywords, and wait.
	for _, p := range panes {
		testkit.WaitFor(t, 60*time.Second, p.SessionName+" to list the keywords", func() bool {
			s, _ := demo.Capture(ctx, p.ID, tmux.CaptureOptions{})
			return strings.Contains(s, "deploy: asks to run a command") && claudetest.IsInputBoxShown(s)
		})
	}
	waitScreen("both Claude Code sessions idle", func(s string) bool {
		return row("claude-api", "○ idle").MatchString(s) && row("claude-web", "○ idle").MatchString(s)
	})
	t.Logf("both sessions idle %v after start", time.Since(start).Round(100*time.Millisecond))
	// The dashboard's cursor is on claude-api, the first row, so that its
	// detail shows the question and 1 answers it.
	selected := regexp.MustCompile(`─ claude-api:0\.0 · claude`)
	if !selected.MatchString(screen()) {
		if err := tmuxSendRaw(term, pane, "k"); err != nil {
			t.Fatal(err)
		}
		waitScreen("claude-api selected", selected.MatchString)
	}

	// Claude Code runs with the demo's environment only, pointed at the
	// demo's fake API on loopback.
	env := processEnviron(t, pids[0])
	api, _ := strings.CutPrefix(env["ANTHROPIC_BASE_URL"], "http://")
	if !strings.HasPrefix(api, "127.0.0.1:") || env["HOME"] != filepath.Join(demoDir, "home") || env[runMainEnv] != "" {
		t.Fatalf("Claude Code's environment: %q", env)
	}

	if _, err := demo.SendText(ctx, apiPane, "deploy", tmux.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	s := waitScreen("claude-api awaiting input with Claude Code's question", func(s string) bool {
		return row("claude-api", `⏸ awaiting.*Do you want to`).MatchString(s) &&
			regexp.MustCompile(`asks\s+Do you want to proceed\?`).MatchString(s) &&
			regexp.MustCompile(`awaiting_input\s+claude-api:0\.0`).MatchString(s)
	})
	if !row("claude-web", "○ idle").MatchString(s) {
		t.Errorf("claude-web is no longer idle:\n%s", s)
	}
	if !strings.Contains(s, "./deploy.sh --prod") {
		t.Errorf("the dashboard does not show the command asked for:\n%s", s)
	}

	// The dashboard's answer reaches Claude Code, which runs the demo's
	// deploy.sh and ends its turn. Pressed once the prompt has shown for a
	// second, as a person reads it first: Claude Code 2.1.330 drops a key
	// typed within 100 ms of its dialog showing (one at 200 ms takes).
	waitScreen("the prompt on screen for a second", row("claude-api", `⏸ awaiting\s+[1-9]\d*s\s`).MatchString)
	if err := tmuxSendRaw(term, pane, "1"); err != nil {
		t.Fatal(err)
	}
	waitScreen("claude-api idle after the answer", func(s string) bool { return row("claude-api", "○ idle").MatchString(s) })
	if got, _ := demo.Capture(ctx, apiPane, tmux.CaptureOptions{}); !strings.Contains(got, "Deployed (deploy.sh only prints") {
		t.Errorf("claude-api did not finish the deploy:\n%s", got)
	}

	if err := tmuxSendRaw(term, pane, "q"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the demo to quit on q", func() bool {
		ok, _ := term.HasSession(ctx, "term")
		return !ok
	})
	if _, err := demo.ListPanes(ctx); !errors.Is(err, tmux.ErrNoServer) {
		t.Errorf("the demo's tmux server still runs: %v", err)
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("Claude Code %d outlived the demo", pid)
		}
	}
	if c, err := net.DialTimeout("tcp", api, time.Second); err == nil {
		c.Close()
		t.Errorf("the demo's fake API still answers on %s", api)
	}
	if _, err := os.Stat(demoDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("demo directory %s not removed: %v", demoDir, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// processEnviron is a process's environment, from /proc.
func processEnviron(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
