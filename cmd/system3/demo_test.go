package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/testkit"
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

	for !strings.Contains(out.String(), "Press Ctrl-C to stop the demo") {
		select {
		case err := <-done:
			t.Fatalf("demo ended early: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("no banner:\n%s", out.String())
		}
	}
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

func TestDemoHelp(t *testing.T) {
	cmd := newDemoCmd(&app{})
	for _, want := range []string{"private tmux server", "~/.claude", "--no-ui", "15 seconds", "removes"} {
		if !strings.Contains(cmd.Long, want) {
			t.Errorf("demo --help lacks %q", want)
		}
	}
	for _, s := range demoSessions {
		if !strings.Contains(cmd.Long, s.Name) {
			t.Errorf("demo --help does not describe %s", s.Name)
		}
	}
}
