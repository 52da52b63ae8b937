//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tmux"
)

// The forgery of issue 13, on a real tmux server and the real `system3
// hook` process: `TMUX_PANE=%N system3 hook` run outside pane %N changes
// nothing there (a PermissionRequest does not make it awaiting_input, a
// SessionEnd does not make it exited, no wake is raised); it is logged and
// audited. The same command typed into the pane itself is taken.
func TestHookProvenanceOnRealPanes(t *testing.T) {
	dir := testkit.ShortDir(t)
	srv := agentServer(t)
	c := tmux.NewClient(srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	victim, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "victim", Command: []string{"bash", "--norc", "--noprofile"}, Width: 160, Height: 40})
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := map[string]string{"HOME": home, "SYSTEM3_STATE_DIR": dir, "SYSTEM3_TASKS_DIR": t.TempDir(), "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	a := &app{App: core.App{Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}, stdin: strings.NewReader(""), stdout: io.Discard}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	svc, stop, err := a.StartMonitors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	session := func() api.Session {
		snap, err := svc.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snap.Sessions {
			if s.Pane == victim {
				return s
			}
		}
		return api.Session{}
	}
	awaitSession := func(what string, ok func(api.Session) bool) api.Session {
		t.Helper()
		return testkit.WaitForValue(t, 30*time.Second, fmt.Sprintf("pane %s %s", victim, what), func() (api.Session, bool) {
			s := session()
			return s, ok(s)
		})
	}
	awaitSession("watched", func(s api.Session) bool { return s.Pane != "" && s.State != "" })

	for _, payload := range []string{
		`{"hook_event_name":"PermissionRequest","tool_name":"Bash"}`,
		`{"hook_event_name":"SessionEnd","reason":"other"}`,
	} {
		outsideHook(t, dir, home, victim, payload)
	}
	// The pane prints, so it is captured again: a hook state that had
	// been taken would show now.
	printed := time.Now()
	if _, err := c.SendText(ctx, victim, "echo after-forgery", tmux.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	s := awaitSession("captured after the forgery", func(s api.Session) bool { return s.Updated.After(printed) })
	if s.State == api.AwaitingInput || s.State == api.Exited || s.Evidence.Source == "hook" {
		t.Fatalf("a forged hook changed the pane: %+v", s)
	}
	ws, err := svc.Wakes(ctx, api.AllWakes())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Pane == victim {
			t.Fatalf("a forged hook raised %+v", w)
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "system3.log"))
	if n := strings.Count(string(log), `msg="hook event refused"`); n != 2 {
		t.Fatalf("the daemon logged %d refusals, want 2:\n%s", n, log)
	}
	if !strings.Contains(string(log), "msg=\"hook refused\"") {
		t.Fatalf("system3 hook did not log its refusal:\n%s", log)
	}
	entries, err := audit.Read(filepath.Join(dir, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range entries {
		if e.Action == "hook" && e.Pane == victim && strings.Contains(e.Error, "does not run in pane "+victim) && strings.HasPrefix(e.Origin, "socket:pid=") {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("audit has %d refusals, want 2: %+v", refused, entries)
	}
	if fi, err := os.Stat(filepath.Join(dir, "hooks.spool")); err == nil && fi.Size() > 0 {
		t.Fatal("a refused hook was spooled")
	}

	// The same hook, run in the pane (as Claude Code runs it there). The
	// shell then keeps a command in front, as Claude Code stays in front
	// of the shell: a shell back at its prompt is a changed screen, which
	// rightly ends what the hook said.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf(`printf '%%s\n' '{"hook_event_name":"PermissionRequest","tool_name":"Bash"}' | %s=1 HOME=%s %s --state-dir %s hook; echo hook-done-$?; sleep 120`,
		runMainEnv, home, exe, dir)
	if _, err := c.SendText(ctx, victim, line, tmux.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	s = awaitSession("hook from inside the pane", func(s api.Session) bool {
		return s.State == api.AwaitingInput && s.Evidence.Rule == "hook.permission_request"
	})
	t.Logf("taken from inside the pane: %s %s", s.State, s.Evidence.Rule)
}

// outsideHook runs `system3 hook` from this test process, naming pane in
// TMUX_PANE, as a forger in another pane would.
func outsideHook(t *testing.T, dir, home, pane, payload string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "hook")
	cmd.Env = []string{runMainEnv + "=1", "HOME=" + home, "SYSTEM3_STATE_DIR=" + dir, "TMUX_PANE=" + pane, "PATH=/usr/bin:/bin"}
	cmd.Stdin = strings.NewReader(payload)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || out.Len() != 0 {
		t.Fatalf("system3 hook: %v, output %q", err, out.String())
	}
}
