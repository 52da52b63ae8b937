package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
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
	state := testkit.ShortDir(t)
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
		return testkit.WaitForValue(t, 20*time.Second, "the dashboard to show "+what, func() (string, bool) {
			s := screen()
			return s, ok(s)
		})
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
	testkit.WaitFor(t, 10*time.Second, "the dashboard to quit on q", func() bool {
		ok, _ := term.HasSession(ctx, "term")
		return !ok
	}, func() string { return "screen:\n" + screen() })
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

// hostileText holds characters whose width tmux (wcwidth), grapheme rules
// and terminals disagree on: prepended concatenation marks, a soft hyphen,
// ZWJ sequences, variation selectors, flags, spacing marks, bidi controls.
const hostileText = "\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\U000110bd\u00ad" +
	"👨\u200d👩\u200d👧 ☺\ufe0f ⚠\ufe0f 🇫🇷🇩🇪 कि\u093f \u202eevil\u202c 日本語 e\u0301 \u200b"

// TestResilienceDashboardHostileWidths runs the real dashboard in an 80×24 tmux
// terminal on a server whose session names and screens are full of
// characters whose width is disputed: no line may wrap, so the header
// stays on the first line and the help bar on the last.
func TestResilienceDashboardHostileWidths(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	screen := filepath.Join(t.TempDir(), "screen.txt")
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "%d %s %s\n", i, strings.Repeat(hostileText, 1+i%3), strings.Repeat("\u0600", 40+i))
	}
	b.WriteString("Do you want to proceed? " + hostileText + "\n ❯ 1. Yes " + hostileText + "\n   2. No\n")
	if err := os.WriteFile(screen, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"\u0600\u0601\u0602\u0603\u0604\u0605", "x\u06dd\U000110bd\u00ady", "👨\u200d👩\u200d👧🇫🇷", "कि\u093fकि"} {
		startSession(t, srv, fmt.Sprintf("%s-%d", name, i), "cat "+screen+"; exec sleep 600")
	}
	state := testkit.ShortDir(t)
	cfg := filepath.Join(state, "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  listen: off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	term := tmux.NewClient(tmuxtest.NewStoppedServer(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env := map[string]string{runMainEnv: "1", "HOME": t.TempDir(), "TERM": "xterm-256color", "LANG": "C.UTF-8",
		"SYSTEM3_STATE_DIR": state, "SYSTEM3_CONFIG": cfg}
	pane, err := term.NewSession(ctx, tmux.NewSessionOptions{Name: "term", Width: 80, Height: 24, Env: env,
		Command: []string{exe, "--tmux-socket-path", srv.Path, "tui"}})
	if err != nil {
		t.Fatal(err)
	}
	capture := func() []string {
		s, _ := term.Capture(context.Background(), pane, tmux.CaptureOptions{})
		return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	}
	// check waits until the screen shows the table (or, zoomed, the
	// preview) and fails if a line wrapped: the header must be line 1, the
	// help bar line 24, the table's title on screen once, and every
	// session listed.
	check := func(what string, zoomed bool) {
		t.Helper()
		var problem string
		testkit.WaitForValue(t, 30*time.Second, what+" with no line wrapped", func() (string, bool) {
			lines := capture()
			all := strings.Join(lines, "\n")
			switch {
			case len(lines) != 24 || !strings.HasPrefix(lines[0], "system3") || !strings.Contains(lines[23], "quit"):
				problem = "the header is not on line 1 or the help bar not on line 24"
			case zoomed && !strings.Contains(lines[23], "esc back"):
				problem = "not zoomed"
			case !zoomed && strings.Count(all, "Panes ·") != 1:
				problem = "the table title is not on screen exactly once"
			default:
				problem = ""
				for i := range 4 {
					if !zoomed && !strings.Contains(all, fmt.Sprintf("-%d:0.0", i)) {
						problem = fmt.Sprintf("session %d is not listed", i)
					}
				}
			}
			return problem + ":\n" + all, problem == ""
		})
	}
	check("the table", false)
	for _, step := range []struct {
		key    string
		zoomed bool
	}{{"j", false}, {"j", false}, {"Enter", true}, {"Escape", false}, {"j", false}, {"Tab", false}, {"j", false}} {
		if err := tmuxSendRaw(term, pane, step.key); err != nil {
			t.Fatal(err)
		}
		check("after "+step.key, step.zoomed)
	}
}

// A dashboard that runs the monitors but cannot serve them on the state
// dir's socket says so in its status line, and nothing is printed over
// its screen.
func TestDashboardWithoutSocketSaysSo(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	state := testkit.ShortDir(t)
	if err := os.WriteFile(filepath.Join(state, "system3.sock"), []byte("not a socket"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := daemonEnv(t, srv, state)
	cfg := filepath.Join(state, "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  listen: off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env["SYSTEM3_CONFIG"] = cfg
	term, pane := terminal(t, env, "tui")
	s := waitDashboard(t, term, pane, "the socket warning", func(s string) bool {
		return strings.Contains(s, "is not a socket; move it away") && strings.Contains(s, "main:0.0")
	})
	if first, _, _ := strings.Cut(s, "\n"); !strings.Contains(first, "system3") || strings.Contains(s, "system3: warning") {
		t.Fatalf("the warning was printed over the dashboard:\n%s", s)
	}
}

// TestDashboardSaysTmuxServerIsGone: when the watched tmux server dies with
// every pane, the dashboard says the server is not running and how to bring
// the orchestrators back, not the text for a first start.
func TestDashboardSaysTmuxServerIsGone(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	state := testkit.ShortDir(t)
	env := daemonEnv(t, srv, state)
	cfg := filepath.Join(state, "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  listen: off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env["SYSTEM3_CONFIG"] = cfg
	term, pane := terminal(t, env, "tui")
	waitDashboard(t, term, pane, "the watched session", func(s string) bool { return strings.Contains(s, "main:0.0") })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tmux.NewClient(srv).KillServer(ctx); err != nil {
		t.Fatal(err)
	}
	waitDashboard(t, term, pane, "that the tmux server is gone", func(s string) bool {
		return strings.Contains(s, "is not running.") && strings.Contains(s, "system3 restore --all") && !strings.Contains(s, "No tmux panes are being watched")
	})
}
