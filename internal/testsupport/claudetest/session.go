package claudetest

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/claudefake"
	"github.com/system3-dev/system3/internal/testsupport/clitest"
)

// FakeKey is the API key the CLI is given; it is pre-approved in .claude.json.
const FakeKey = claudefake.FakeKey

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
// server, talking to a FakeAPI, with a throwaway HOME. The embedded Shell
// drives it and reads its screen (Capture, Type, Keys, Send, WaitFor...).
type Session struct {
	*clitest.Shell
	API  *FakeAPI
	Home string // throwaway HOME
	Dir  string // working directory the CLI runs in
	Pane string // tmux pane id, e.g. "%0"
}

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
	home, dir := clitest.Home(t, opts.Home)
	// The pinned CLI version, as if it had run its own onboarding.
	if err := claudefake.WriteConfig(home, PinnedVersion, !opts.Untrusted, dir); err != nil {
		t.Fatal(err)
	}
	sh := clitest.StartShell(t, clitest.ShellOptions{
		Command: "claude", Bin: bin, Home: home, Dir: dir,
		Env:   append(claudefake.Env(opts.API.URL), opts.Env...),
		Width: opts.Width, Height: opts.Height,
		Timeout: DefaultTimeout, ShowWait: 3 * time.Second, Settle: 200 * time.Millisecond,
	})
	s := &Session{Shell: sh, API: opts.API, Home: home, Dir: dir, Pane: sh.PaneID()}
	s.Run(opts.Args...)
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
