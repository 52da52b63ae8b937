package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/monitor/audit"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tmux/tmuxtest"
)

// terminal runs system3 args in a pane of its own private tmux server, as
// an operator's terminal would, and returns that server and pane.
func terminal(t *testing.T, env map[string]string, args ...string) (*tmux.Client, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	term := tmuxtest.NewStoppedServer(t)
	c := tmux.NewClient(term)
	vars := map[string]string{runMainEnv: "1", "HOME": t.TempDir(), "TERM": "xterm-256color"}
	for k, v := range env {
		vars[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "term", Width: 120, Height: 40, Env: vars, Command: append([]string{exe}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	return c, pane
}

// TestDashboardInjectsGuidance runs the real dashboard in tmux against a
// private server, opens the compose box with i, types a two-line message
// and sends it with enter; the target pane (running cat) must receive it
// exactly, and the dashboard must say it was verified.
func TestDashboardInjectsGuidance(t *testing.T) {
	srv := tmuxtest.NewServer(t, "cat")
	target := tmux.NewClient(srv)
	state := shortDir(t)
	cfg := filepath.Join(state, "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  listen: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	term, pane := terminal(t, map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_CONFIG": cfg}, "--tmux-socket-path", srv.Path, "tui")
	ctx := context.Background()
	screen := func() string {
		s, _ := term.Capture(ctx, pane, tmux.CaptureOptions{})
		return s
	}
	waitScreen := func(what string, ok func(string) bool) string {
		t.Helper()
		var s string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if s = screen(); ok(s) {
				return s
			}
		}
		t.Fatalf("dashboard never showed %s; screen:\n%s", what, s)
		return ""
	}
	first := waitScreen("the main session and the MCP endpoint", func(s string) bool {
		return strings.Contains(s, "main:0.0") && mcpAddrRe.MatchString(s)
	})
	// The header's MCP endpoint answers.
	resp, err := http.Get("http://" + mcpAddrRe.FindStringSubmatch(first)[1] + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		OK       bool `json:"ok"`
		Sessions int  `json:"sessions"`
	}
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if err != nil || !health.OK || health.Sessions != 1 {
		t.Fatalf("/health = %+v, %v", health, err)
	}

	press := func(keys ...tmux.Key) {
		t.Helper()
		if err := term.SendKeys(ctx, pane, keys...); err != nil {
			t.Fatal(err)
		}
	}
	typeText := func(s string) {
		t.Helper()
		if _, err := term.SendText(ctx, pane, s, tmux.SendOptions{NoEnter: true, NoVerify: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tmuxSendRaw(term, pane, "i"); err != nil {
		t.Fatal(err)
	}
	waitScreen("the compose box", func(s string) bool {
		return strings.Contains(s, "main:0.0") && strings.Contains(strings.ToLower(s), "guidance")
	})
	typeText("run the tests; then report $HOME #{pane_id}")
	if err := tmuxSendRaw(term, pane, "C-j"); err != nil {
		t.Fatal(err)
	}
	typeText("second line 'quoted'")
	press(tmux.KeyEnter)

	waitPane(t, target, "main", func(s string) bool {
		return strings.Count(s, "run the tests; then report $HOME #{pane_id}") == 2 && strings.Count(s, "second line 'quoted'") == 2
	})
	waitScreen("the verified delivery", func(s string) bool { return strings.Contains(s, "verified") })

	entries, err := audit.Read(filepath.Join(state, audit.File))
	if err != nil || len(entries) != 1 || entries[0].Origin != "tui" || entries[0].Text != "run the tests; then report $HOME #{pane_id}\nsecond line 'quoted'" {
		t.Fatalf("audit = %+v, %v", entries, err)
	}

	if err := tmuxSendRaw(term, pane, "q"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if ok, _ := term.HasSession(ctx, "term"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard did not quit on q; screen:\n%s", screen())
		}
	}
	// It ran its own monitors, and stopped them when it quit.
	if _, err := os.Stat(filepath.Join(state, "system3.sock")); err == nil {
		t.Error("the socket is still there after quitting")
	}
}

var mcpAddrRe = regexp.MustCompile(`MCP: (127\.0\.0\.1:\d+)`)

// tmuxSendRaw presses a key outside system3's allowed set (the dashboard's
// own ctrl+j), through tmux directly.
func tmuxSendRaw(c *tmux.Client, pane, key string) error {
	return osexecTmux(c.Server, "send-keys", "-t", pane, key)
}

func osexecTmux(s tmux.Server, args ...string) error {
	return exec.Command(tmuxtest.Bin(), append([]string{"-S", s.Path}, args...)...).Run()
}
