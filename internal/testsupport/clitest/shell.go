package clitest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// ShellOptions configure StartShell.
type ShellOptions struct {
	// Command is the name the shell knows Bin by: a person types "claude",
	// whatever the binary's file is called. It also names the tmux session.
	Command string
	// Bin is the CLI's executable, linked as Command in a directory that
	// comes first in PATH.
	Bin string
	// PathDirs are searched after Bin's link and before the system's
	// /usr/local/bin:/usr/bin:/bin.
	PathDirs []string
	// Home is HOME, Dir the working directory (see Home).
	Home, Dir string
	// Env adds KEY=VALUE pairs after HOME, PATH, TERM, LANG, SHELL and PS1,
	// overriding them.
	Env []string
	// Width and Height of the pane.
	Width, Height int
	// Timeout bounds WaitFor and WaitStable calls that pass 0.
	Timeout time.Duration
	// ShowWait bounds how long Send waits for the typed text to show, and
	// Settle is how long it waits after that before pressing Enter.
	ShowWait, Settle time.Duration
}

// Shell is an interactive bash in a pane of a private tmux server, from
// which a test starts a CLI like a person would: when the CLI exits, the
// shell prompt returns.
type Shell struct {
	t    testing.TB
	tmux *tmux.Client
	pane string
	opts ShellOptions
}

var shellSeq atomic.Int64

// Home returns the HOME for a session, symlinks resolved: home, created if
// missing, or a fresh t.TempDir() when home is "". dir is its "project"
// subdirectory, created, for the CLI to run in.
func Home(t testing.TB, home string) (realHome, dir string) {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	} else if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	realHome, err := filepath.EvalSymlinks(home)
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(realHome, "project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return realHome, dir
}

// StartShell starts bash in a fresh pane of a private tmux server, with only
// the environment opts gives it (env -i: never the developer's own
// settings), and waits for its prompt. Everything is torn down when the
// test ends.
func StartShell(t testing.TB, opts ShellOptions) *Shell {
	t.Helper()
	binDir := t.TempDir()
	if err := os.Symlink(opts.Bin, filepath.Join(binDir, opts.Command)); err != nil {
		t.Fatal(err)
	}
	path := strings.Join(append(append([]string{binDir}, opts.PathDirs...), "/usr/local/bin", "/usr/bin", "/bin"), ":")
	env := []string{
		"HOME=" + opts.Home,
		"PATH=" + path,
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
		"SHELL=/bin/bash",
		"PS1=$ ",
	}
	env = append(env, opts.Env...)
	s := &Shell{t: t, opts: opts, tmux: tmux.NewClient(tmuxtest.NewStoppedServer(t))}
	pane, err := s.tmux.NewSession(context.Background(), tmux.NewSessionOptions{
		Name: fmt.Sprintf("%s%d", opts.Command, shellSeq.Add(1)), Dir: opts.Dir, Width: opts.Width, Height: opts.Height,
		Command: append(append([]string{"env", "-i"}, env...), "/bin/bash", "--noprofile", "--norc", "-i"),
	})
	if err != nil {
		t.Fatalf("start tmux session: %v", err)
	}
	s.pane = pane
	s.WaitFor("shell prompt", 10*time.Second, func(screen string) bool {
		return strings.Contains(screen, "$ ")
	})
	return s
}

// Run types the CLI's command line, args quoted for the shell, and presses
// Enter.
func (s *Shell) Run(args ...string) {
	s.t.Helper()
	line := s.opts.Command
	for _, a := range args {
		line += " " + shellQuote(a)
	}
	s.Send(line)
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// PaneID is the tmux pane id, e.g. "%0".
func (s *Shell) PaneID() string { return s.pane }

// Socket is the path of the private tmux server's socket, for code under
// test that talks to tmux itself (tmux.Server{Path: s.Socket()}).
func (s *Shell) Socket() string { return s.tmux.Server.Path }

// Capture returns the visible screen as plain text (capture-pane -p -J).
func (s *Shell) Capture() string {
	s.t.Helper()
	out, err := s.tmux.Capture(context.Background(), s.pane, tmux.CaptureOptions{KeepTrailing: true})
	if err != nil {
		s.t.Fatalf("capture: %v", err)
	}
	return out
}

// CaptureANSI returns the visible screen with colour escapes (capture-pane -e).
func (s *Shell) CaptureANSI() string {
	s.t.Helper()
	out, err := s.tmux.Capture(context.Background(), s.pane, tmux.CaptureOptions{KeepTrailing: true, Escapes: true})
	if err != nil {
		s.t.Fatalf("capture: %v", err)
	}
	return out
}

// Type types text literally, without pressing Enter.
func (s *Shell) Type(text string) {
	s.t.Helper()
	if _, err := s.tmux.SendText(context.Background(), s.pane, text, tmux.SendOptions{NoEnter: true, NoVerify: true}); err != nil {
		s.t.Fatal(err)
	}
}

// Keys presses keys by name: "Enter", "Escape", "C-c", "Down", "Tab", "1"...
// (the closed set of tmux.AllowedKeys).
func (s *Shell) Keys(names ...string) {
	s.t.Helper()
	keys := make([]tmux.Key, len(names))
	for i, n := range names {
		k, err := tmux.ParseKey(n)
		if err != nil {
			s.t.Fatal(err)
		}
		keys[i] = k
	}
	if err := s.tmux.SendKeys(context.Background(), s.pane, keys...); err != nil {
		s.t.Fatal(err)
	}
}

// Send types text, waits until its first line shows on screen (at most
// ShowWait) and Settle more, so the CLI does not take Enter as part of a
// paste, then presses Enter alone.
func (s *Shell) Send(text string) {
	s.t.Helper()
	s.Type(text)
	probe, _, _ := strings.Cut(text, "\n")
	if r := []rune(probe); len(r) > 30 {
		probe = string(r[:30])
	}
	testkit.Poll(s.opts.ShowWait, func() bool { return strings.Contains(s.Capture(), probe) })
	time.Sleep(s.opts.Settle)
	s.Keys("Enter")
}

// Resize changes the pane's size.
func (s *Shell) Resize(width, height int) {
	s.t.Helper()
	if err := s.tmux.ResizeWindow(context.Background(), s.pane, width, height); err != nil {
		s.t.Fatal(err)
	}
}

// CurrentCommand returns the pane's foreground command (tmux
// #{pane_current_command}): the CLI's while it runs, "bash" after.
func (s *Shell) CurrentCommand() string {
	s.t.Helper()
	p, err := s.tmux.PaneInfo(context.Background(), s.pane)
	if err != nil {
		s.t.Fatal(err)
	}
	return p.Command
}

// PanePID returns the pid of the pane's shell.
func (s *Shell) PanePID() int {
	s.t.Helper()
	p, err := s.tmux.PaneInfo(context.Background(), s.pane)
	if err != nil {
		s.t.Fatal(err)
	}
	return p.PID
}

// WaitFor polls the screen until cond holds and returns that screen. It
// fails the test with the last screen after timeout (0 means the shell's
// Timeout).
func (s *Shell) WaitFor(what string, timeout time.Duration, cond func(screen string) bool) string {
	s.t.Helper()
	if timeout == 0 {
		timeout = s.opts.Timeout
	}
	return testkit.WaitForValue(s.t, timeout, what, func() (string, bool) {
		screen := s.Capture()
		return screen, cond(screen)
	})
}

// WaitStable waits until the screen has not changed for quiet and returns
// it; useful before saving an idle screen. It fails the test after timeout
// (0 means the shell's Timeout). A spinner never settles: wait for text
// instead.
func (s *Shell) WaitStable(quiet, timeout time.Duration) string {
	s.t.Helper()
	if timeout == 0 {
		timeout = s.opts.Timeout
	}
	last, since := s.Capture(), time.Now()
	return testkit.WaitForValue(s.t, timeout, fmt.Sprintf("the screen to stay unchanged for %v", quiet), func() (string, bool) {
		screen := s.Capture()
		if screen != last {
			last, since = screen, time.Now()
		}
		return screen, time.Since(since) >= quiet
	})
}

// WaitForText waits until the screen contains text.
func (s *Shell) WaitForText(text string, timeout time.Duration) string {
	s.t.Helper()
	return s.WaitFor(fmt.Sprintf("%q", text), timeout, func(screen string) bool {
		return strings.Contains(screen, text)
	})
}
