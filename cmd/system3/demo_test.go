package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tmux"
)

// demoTasks is what each demo session's task list shows at first.
var demoTasks = map[string]func(statusPane) string{
	"orch-auth":    expectTasks("PRD-AUTH", 5, func(_ int, ip []string) bool { return len(ip) == 1 }),
	"orch-billing": expectTasks("PRD-BILLING", 3, func(c int, ip []string) bool { return c == 1 && len(ip) == 1 }),
	"orch-search":  expectTasks("PRD-SEARCH", 3, func(c int, ip []string) bool { return c == 0 && len(ip) == 1 }),
	"orch-payments": expectTasks("PRD-PAY", 3, func(c int, ip []string) bool {
		return c == 0 && len(ip) == 1 && ip[0] == "Fetch yesterday's payouts"
	}),
	"orch-docs": expectTasks("PRD-DOCS", 3, func(c int, _ []string) bool { return c == 3 }),
}

// `system3 demo --no-ui` shows every state within 15 seconds, each agent
// linked to its task list, and leaves nothing behind when it stops.
func TestDemoShowsEveryStateAndCleansUp(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home, "SYSTEM3_STATE_DIR": testkit.ShortDir(t)}
	out := &testkit.SyncBuffer{}
	a := &app{App: core.App{Stderr: out, Getenv: func(k string) string { return env[k] }}, stdin: strings.NewReader(""), stdout: out}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	userState := a.Settings.StateDir
	cmd := newDemoCmd(a)
	cmd.SetArgs([]string{"--no-ui"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	testkit.WaitForValue(t, 10*time.Second, "the demo's banner", func() (string, bool) {
		select {
		case err := <-done:
			t.Fatalf("demo ended early: %v\n%s", err, out.String())
		default:
		}
		s := out.String()
		return s, strings.Contains(s, "Press Ctrl-C to stop the demo")
	})
	// The banner is printed after the settings changed (testkit.SyncBuffer orders them).
	s := a.Settings
	dir := filepath.Dir(s.TmuxSocketPath)
	if !strings.HasPrefix(s.TasksDir, dir) || !strings.HasPrefix(s.StateDir, dir) || s.StateDir == userState || s.TmuxSocket != "" {
		t.Fatalf("settings not pointed at the demo: %+v", s)
	}
	banner := out.String()
	for _, want := range []string{"tmux -S " + s.TmuxSocketPath + " attach -t orch-billing", "--tmux-socket-path " + s.TmuxSocketPath + " --tasks-dir " + s.TasksDir, "orch-legacy"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}

	statusEnv := map[string]string{"SYSTEM3_TMUX_SOCKET_PATH": s.TmuxSocketPath, "SYSTEM3_TASKS_DIR": s.TasksDir, "SYSTEM3_STATE_DIR": s.StateDir}
	checks := map[string]func(statusPane) string{}
	for _, ds := range demoSessions {
		checks[ds.Name] = expectScript(ds.Script, true)
		if tc, ok := demoTasks[ds.Name]; ok {
			checks[ds.Name] = both(checks[ds.Name], tc)
		}
	}
	srv := tmux.Server{Path: s.TmuxSocketPath}
	doc := awaitStatus(t, statusEnv, srv, 15*time.Second-time.Since(start), checks)
	t.Logf("every state shown %v after start", time.Since(start).Round(100*time.Millisecond))
	if doc.Source != "daemon" {
		t.Errorf("status source %q, want the demo's monitors", doc.Source)
	}
	var pids []int
	for _, p := range doc.Panes {
		pids = append(pids, p.PID)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("demo did not stop")
	}
	if _, err := tmux.NewClient(srv).ListPanes(context.Background()); !errors.Is(err, tmux.ErrNoServer) {
		t.Errorf("the demo's tmux server still runs: %v", err)
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("agent %d outlived the demo", pid)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("demo directory %s not removed: %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the demo touched ~/.claude: %v", err)
	}
}

// Close stops everything even when the demo fails half-way, and twice is
// harmless.
func TestDemoCloseAfterFailedStart(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.ShortDir(t)}
	a := &app{App: core.App{Stderr: &testkit.SyncBuffer{}, Getenv: func(k string) string { return env[k] }}, stdin: strings.NewReader(""), stdout: &testkit.SyncBuffer{}}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	before := a.Settings
	// The demo makes its directories in TMPDIR; a private one keeps
	// another run's demos out of what this test counts.
	t.Setenv("TMPDIR", testkit.ShortDir(t))
	leftBefore, _ := filepath.Glob(filepath.Join(os.TempDir(), "system3-demo-*"))
	cmd, err := fakeAgentCommand()
	if err != nil {
		t.Fatal(err)
	}
	// The second session has the first one's name: tmux refuses it.
	sessions := []demoSession{{Name: "orch-x", Script: "idle", TaskList: "X", Project: "x"}, {Name: "orch-x", Script: "idle", TaskList: "Y", Project: "y"}}
	d, err := startDemo(context.Background(), a, demoOptions{Command: cmd, Sessions: sessions})
	if err == nil {
		d.Close()
		t.Fatal("startDemo with a duplicate session succeeded")
	}
	if a.Settings.TmuxSocketPath != before.TmuxSocketPath || a.Settings.StateDir != before.StateDir {
		t.Errorf("a failed start changed the settings: %+v", a.Settings)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "system3-demo-*"))
	for _, m := range after {
		if !slices.Contains(leftBefore, m) {
			t.Errorf("a failed start left %s behind", m)
		}
	}
	var nilEnv *demoEnv
	if err := nilEnv.Close(); err != nil {
		t.Error(err)
	}
}

// demo --agent claude serves its fake API and starts each session with
// only the demo's environment, its projects trusted; Close stops the
// sessions and the fake API and removes everything. A script stands in
// for Claude Code (TestDemoRealClaudeAsksPermission runs the real one).
func TestDemoClaudeSessionsAndClose(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.ShortDir(t)}
	a := &app{App: core.App{Stderr: &testkit.SyncBuffer{}, Getenv: func(k string) string { return env[k] }}, stdin: strings.NewReader(""), stdout: &testkit.SyncBuffer{}}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	t.Setenv("TMPDIR", testkit.ShortDir(t))
	// The user's own settings must not reach Claude Code.
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "the-users-token")
	t.Setenv("CLAUDE_CONFIG_DIR", "/the/users/claude")
	claude := filepath.Join(t.TempDir(), "claude.exe")
	if err := os.WriteFile(claude, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := startDemo(context.Background(), a, demoOptions{Claude: claude, Path: filepath.Dir(testkit.LookPath(t, "sleep"))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if a.Settings.TasksDir != filepath.Join(d.Dir, "home", ".claude", "tasks") {
		t.Errorf("tasks dir %s, want Claude Code's in the demo's HOME", a.Settings.TasksDir)
	}
	resp, err := http.Post(d.API.URL+"/v1/messages", "application/json", strings.NewReader(`{"tools":[{}],"messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "deploy: asks to run a command") {
		t.Errorf("the fake API's plain answer does not list the keywords: %s", body)
	}
	var cfg struct {
		Onboarded bool `json:"hasCompletedOnboarding"`
		Projects  map[string]struct {
			Trusted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(d.Dir, "home", ".claude.json"))), &cfg); err != nil || !cfg.Onboarded {
		t.Fatalf(".claude.json: %+v, %v", cfg, err)
	}
	panes, err := tmux.NewClient(d.Server).ListPanes(context.Background())
	if err != nil || len(panes) != len(demoClaudeSessions) {
		t.Fatalf("panes %+v, %v", panes, err)
	}
	var pids []int
	for _, p := range panes {
		pids = append(pids, p.PID)
		if !cfg.Projects[p.Path].Trusted {
			t.Errorf("%s works in %s, which .claude.json does not trust: %+v", p.SessionName, p.Path, cfg.Projects)
		}
		var pe map[string]string
		testkit.WaitFor(t, 5*time.Second, p.SessionName+"'s process", func() bool {
			pe = processEnviron(t, p.PID)
			return pe["ANTHROPIC_BASE_URL"] != ""
		})
		if pe["ANTHROPIC_BASE_URL"] != d.API.URL || pe["HOME"] != filepath.Join(d.Dir, "home") || pe["CLAUDE_CODE_TASK_LIST_ID"] == "" ||
			pe["ANTHROPIC_AUTH_TOKEN"] != "" || pe["CLAUDE_CONFIG_DIR"] != "" || pe["SYSTEM3_STATE_DIR"] != "" {
			t.Errorf("%s's environment: %q", p.SessionName, pe)
		}
	}

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(d.API.URL + "/v1/models"); err == nil {
		t.Error("the fake API still answers after Close")
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("session %d outlived the demo", pid)
		}
	}
	if _, err := os.Stat(filepath.Dir(a.Settings.TmuxSocketPath)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("demo directory not removed: %v", err)
	}
}

func TestDemoHelp(t *testing.T) {
	cmd := newDemoCmd(&app{})
	for _, want := range []string{"private tmux server", "~/.claude", "--no-ui", "15 seconds", "removes",
		"--agent claude", "--agent-bin", "npm install -g @anthropic-ai/claude-code", "127.0.0.1: nothing reaches the network"} {
		if !strings.Contains(cmd.Long, want) {
			t.Errorf("demo --help lacks %q", want)
		}
	}
	for _, s := range append(slices.Clone(demoSessions), demoClaudeSessions...) {
		if !strings.Contains(cmd.Long, s.Name) {
			t.Errorf("demo --help does not describe %s", s.Name)
		}
	}
	for _, k := range demoKeywords {
		if !regexp.MustCompile(`(?m)^  ` + k.Word + ` +` + regexp.QuoteMeta(k.Shows) + `$`).MatchString(cmd.Long) {
			t.Errorf("demo --help does not list the keyword %s", k.Word)
		}
		if !strings.Contains(demoModelHelp(), "- "+k.Word+": ") {
			t.Errorf("the demo's model does not list the keyword %s", k.Word)
		}
	}
	for _, f := range []string{"agent", "agent-bin"} {
		if fl := cmd.Flags().Lookup(f); fl == nil || fl.Usage == "" {
			t.Errorf("demo has no documented --%s", f)
		}
	}
}

// Without Claude Code, demo --agent claude says in one sentence how to get
// it and starts nothing.
func TestDemoWithoutClaudeSaysHowToGetIt(t *testing.T) {
	tmp := testkit.ShortDir(t)
	t.Setenv("TMPDIR", tmp)
	empty := t.TempDir()
	notExec := filepath.Join(empty, "claude.js")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(empty, "nosuch", "claude")
	const how = "install it with `npm install -g @anthropic-ai/claude-code`, or name its executable with --agent-bin PATH"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not on PATH", []string{"demo", "--agent", "claude"}, "Claude Code is not installed (no claude on PATH): " + how},
		{"not on PATH, no UI", []string{"demo", "--no-ui", "--agent", "claude"}, "Claude Code is not installed (no claude on PATH): " + how},
		{"no such file", []string{"demo", "--agent", "claude", "--agent-bin", missing}, "Claude Code is not at " + missing + " (no such file): " + how},
		{"not executable", []string{"demo", "--agent", "claude", "--agent-bin", notExec}, "Claude Code is not at " + notExec + " (not executable): " + how},
		{"a directory", []string{"demo", "--agent", "claude", "--agent-bin", empty}, "Claude Code is not at " + empty + " (a directory): " + how},
		{"another agent", []string{"demo", "--agent", "codex"}, `--agent takes fake or claude, not "codex"`},
		{"a binary without claude", []string{"demo", "--agent-bin", notExec}, "--agent-bin names Claude Code's executable for --agent claude; add --agent claude"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A demo that starts anyway is stopped, and fails the test.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			env := map[string]string{"PATH": empty, "HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.ShortDir(t)}
			var out, errOut strings.Builder
			code := run(ctx, tc.args, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
			if code == 0 || out.String() != "" || errOut.String() != "system3: "+tc.want+"\n" {
				t.Errorf("exit %d, stdout %q, stderr %q; want a failure saying %q", code, out.String(), errOut.String(), tc.want)
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "system3-demo-*")); len(left) > 0 {
		t.Errorf("the demo started something: %q", left)
	}
}
