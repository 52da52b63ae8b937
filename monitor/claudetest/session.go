package claudetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tmux/tmuxtest"
)

// FakeKey is the API key the CLI is given; it is pre-approved in .claude.json.
const FakeKey = "sk-ant-api03-claudetest-0000000000000000000000000000000000000000"

// Options configure Start.
type Options struct {
	// API answers the CLI; nil starts a FakeAPI without rules.
	API *FakeAPI
	// Args are passed to claude, e.g. "--permission-mode", "default".
	Args []string
	// Env adds KEY=VALUE pairs to the CLI's environment, overriding Start's
	// (HOME, PATH, TERM, LANG, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY and the
	// variables that stop non-essential traffic).
	Env []string
	// Width and Height of the pane; 0 means 100x30.
	Width, Height int
	// Home is used as HOME instead of a fresh t.TempDir(); it is created if
	// missing and must not be shared by concurrent sessions. A fixed path
	// keeps captures stable across runs.
	Home string
	// Untrusted leaves the working directory untrusted, so the CLI opens on
	// its trust dialog; Start then waits for that dialog, not the input box.
	Untrusted bool
	// ReadyTimeout bounds the wait for the CLI to be ready; 0 means 30s.
	ReadyTimeout time.Duration
}

// Session is a real Claude Code CLI running in a pane of a private tmux
// server, talking to a FakeAPI, with a throwaway HOME.
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
const DefaultTimeout = 20 * time.Second

// Start launches claude from an interactive shell in a fresh tmux pane, so the
// shell prompt returns when the CLI exits, and waits until it is ready.
// Everything is torn down when the test ends.
func Start(t testing.TB, opts Options) *Session {
	t.Helper()
	bin := ClaudeBin(t)
	if opts.API == nil {
		opts.API = NewFakeAPI(t)
	}
	if opts.Width == 0 {
		opts.Width = 100
	}
	if opts.Height == 0 {
		opts.Height = 30
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 30 * time.Second
	}

	home := opts.Home
	if home == "" {
		home = t.TempDir()
	} else if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	home = realDir(t, home)
	dir := filepath.Join(home, "project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeClaudeJSON(home, dir, !opts.Untrusted); err != nil {
		t.Fatal(err)
	}

	// The shell types "claude" like a person would, whatever the binary's name.
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "claude")); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HOME=" + home,
		"PATH=" + binDir + ":/usr/local/bin:/usr/bin:/bin",
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
		"SHELL=/bin/bash",
		"PS1=$ ",
		"ANTHROPIC_BASE_URL=" + opts.API.URL,
		"ANTHROPIC_API_KEY=" + FakeKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	}
	env = append(env, opts.Env...)
	s := &Session{API: opts.API, Home: home, Dir: dir, t: t}
	s.tmux = tmux.NewClient(tmuxtest.NewStoppedServer(t))
	name := fmt.Sprintf("claude%d", sessionSeq.Add(1))
	pane, err := s.tmux.NewSession(context.Background(), tmux.NewSessionOptions{
		Name: name, Dir: dir, Width: opts.Width, Height: opts.Height,
		// env -i: the CLI sees only this environment, never the developer's
		// own ANTHROPIC_* or CLAUDE_* settings.
		Command: append(append([]string{"env", "-i"}, env...), "/bin/bash", "--noprofile", "--norc", "-i"),
	})
	if err != nil {
		t.Fatalf("start tmux session: %v", err)
	}
	s.Pane = pane

	line := "claude"
	for _, a := range opts.Args {
		line += " " + shellQuote(a)
	}
	s.WaitFor("shell prompt", 10*time.Second, func(screen string) bool {
		return strings.Contains(screen, "$ ")
	})
	s.Send(line)
	if opts.Untrusted {
		s.WaitForText("Yes, I trust this folder", opts.ReadyTimeout)
	} else {
		s.WaitFor("input box", opts.ReadyTimeout, IsInputBoxShown)
	}
	return s
}

// IsInputBoxShown reports whether the CLI shows its prompt input box: a "❯"
// line between two horizontal rules.
func IsInputBoxShown(screen string) bool {
	return inputBoxRE.MatchString(screen)
}

var inputBoxRE = regexp.MustCompile(`(?m)^─{10,}\n❯.*\n─{10,}`)

func realDir(t testing.TB, dir string) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// writeClaudeJSON writes the CLI's user config: onboarding done, the fake key
// approved and, if trusted, dir's trust dialog already accepted.
func writeClaudeJSON(home, dir string, trusted bool) error {
	project := map[string]any{
		"hasTrustDialogAccepted": trusted,
		"allowedTools":           []string{},
	}
	cfg := map[string]any{
		"hasCompletedOnboarding": true,
		// The pinned CLI version, as if it had run its own onboarding.
		"lastOnboardingVersion": PinnedVersion,
		"numStartups":           1,
		"theme":                 "dark",
		"customApiKeyResponses": map[string]any{
			"approved": []string{FakeKey[len(FakeKey)-20:]},
			"rejected": []string{},
		},
		"projects": map[string]any{dir: project},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600)
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

// CaptureANSI returns the visible screen with colour escapes (capture-pane -e).
func (s *Session) CaptureANSI() string {
	s.t.Helper()
	out, err := s.tmux.Capture(context.Background(), s.Pane, tmux.CaptureOptions{KeepTrailing: true, Escapes: true})
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

// Keys presses keys by name: "Enter", "Escape", "C-c", "Down", "Tab", "1"...
// (the closed set of tmux.AllowedKeys).
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

// Send types text, waits until it shows on screen and a little more, so the
// CLI does not take Enter as part of the text, then presses Enter alone.
func (s *Session) Send(text string) {
	s.t.Helper()
	s.Type(text)
	probe, _, _ := strings.Cut(text, "\n")
	if r := []rune(probe); len(r) > 30 {
		probe = string(r[:30])
	}
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(s.Capture(), probe) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	s.Keys("Enter")
}

// Resize changes the pane's size.
func (s *Session) Resize(width, height int) {
	s.t.Helper()
	if err := s.tmux.ResizeWindow(context.Background(), s.Pane, width, height); err != nil {
		s.t.Fatal(err)
	}
}

// CurrentCommand returns the pane's foreground command (tmux
// #{pane_current_command}): "claude" while the CLI runs, "bash" after.
func (s *Session) CurrentCommand() string {
	s.t.Helper()
	p, err := s.tmux.PaneInfo(context.Background(), s.Pane)
	if err != nil {
		s.t.Fatal(err)
	}
	return p.Command
}

// WaitFor polls the screen until cond holds and returns that screen. It
// fails the test with the last screen after timeout (0 means DefaultTimeout).
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
// it; useful before saving an idle screen. It fails the test after timeout
// (0 means DefaultTimeout). A spinner never settles: wait for text instead.
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

// ProjectDir is where the CLI keeps this session's transcripts:
// ~/.claude/projects/<cwd with every non-alphanumeric character as '-'>.
func (s *Session) ProjectDir() string {
	enc := regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(s.Dir, "-")
	return filepath.Join(s.Home, ".claude", "projects", enc)
}

// Transcripts returns the session transcript files (*.jsonl) written so far.
func (s *Session) Transcripts() []string {
	m, _ := filepath.Glob(filepath.Join(s.ProjectDir(), "*.jsonl"))
	return m
}

// Socket is the path of the private tmux server's socket, for code under
// test that talks to tmux itself (tmux.Server{Path: s.Socket()}).
func (s *Session) Socket() string { return s.tmux.Server.Path }
