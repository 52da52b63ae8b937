// Package tmuxtest starts private tmux servers for tests, so no test ever
// touches the user's own server.
package tmuxtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tmux"
)

// config keeps private servers predictable whatever the user's environment:
// a plain POSIX shell and a fixed history size. (Not window-size manual in
// the file: tmux 3.3a's server exits at start-up with it.)
const config = `set -g default-shell /bin/sh
set -g history-limit 2000
`

// Bin is the tmux binary tests run: $SYSTEM3_TMUX (tmux.BinEnv) when set,
// so the same tests can run against several tmux versions, else "tmux".
// Every Server this package returns uses it too, through tmux.Server's own
// default.
func Bin() string {
	if b := os.Getenv(tmux.BinEnv); b != "" {
		return b
	}
	return "tmux"
}

// NewServer starts a private tmux server listening on a socket in a fresh
// temporary directory, with one detached 80x24 session named "main" whose
// pane runs command (/bin/sh when none is given; one element is a shell
// command line, several an argv). The server is killed and the directory
// removed when the test ends. Without tmux the test fails, saying what
// installs it.
//
// The directory is made with a short name under os.TempDir() rather than
// t.TempDir(): Unix socket paths are limited to about 107 bytes, and test
// names are long.
func NewServer(t testing.TB, command ...string) tmux.Server {
	t.Helper()
	s := NewStoppedServer(t)
	if len(command) == 0 {
		command = []string{"/bin/sh"}
	}
	Start(t, s, command...)
	return s
}

// NewStoppedServer is NewServer without starting the server: it returns a
// Server whose socket does not exist yet. Start (or any command that
// creates a session) starts it; it is still killed when the test ends.
func NewStoppedServer(t testing.TB) tmux.Server {
	t.Helper()
	// A missing tmux is a broken setup, not a reason to pass without
	// testing anything.
	if bin := os.Getenv(tmux.BinEnv); bin != "" {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s names %s, which cannot be run: %v", tmux.BinEnv, bin, err)
		}
	} else {
		testkit.LookPath(t, "tmux")
	}
	dir, err := os.MkdirTemp("", "s3t")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	s := tmux.Server{Path: filepath.Join(dir, "sock"), Config: cfg}
	t.Cleanup(func() {
		// Each step has its own deadline, generous for a machine running
		// several race-enabled suites at once on two cores: a server still
		// busy with a flood of output answers late, not never.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := tmux.NewClient(s)
		// Remember what the panes run before the server goes, then wait for
		// it to end, so no test leaves processes writing into removed
		// directories.
		var pids []int
		if panes, err := c.ListPanes(ctx); err == nil {
			for _, p := range panes {
				pids = append(pids, descendants(p.PID)...)
			}
		}
		killCtx, cancelKill := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancelKill()
		patient := s
		patient.Timeout = 15 * time.Second
		if err := tmux.NewClient(patient).KillServer(killCtx); err != nil {
			t.Errorf("kill test server: %v", err)
			// A wedged server must not outlive the test, spinning on a
			// shared machine: end it and its clients by their pids.
			pids = append(pids, usingSocket(s.Path)...)
		}
		reap(pids, 5*time.Second)
		os.RemoveAll(dir)
	})
	return s
}

// Start creates the "main" session (starting the server if it is not
// running) with an 80x24 pane running command, and returns the pane id.
func Start(t testing.TB, s tmux.Server, command ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		pane, err := tmux.NewClient(s).NewSession(ctx, tmux.NewSessionOptions{
			Name: "main", Command: command, Width: 80, Height: 24,
		})
		if err == nil {
			return pane
		}
		// Right after kill-server the old server may still hold the
		// socket ("server exited unexpectedly"): try again shortly.
		if !errors.Is(err, tmux.ErrNoServer) || ctx.Err() != nil {
			t.Fatalf("start tmux test server: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Widths asks the tmux server s how many cells it gives each string (the
// `#{w:}` format, which measures with the same code tmux uses to draw), so
// tests can check their width arithmetic against tmux's own. The strings
// must hold no control characters.
func Widths(t testing.TB, s tmux.Server, strs []string) []int {
	t.Helper()
	out := make([]int, 0, len(strs))
	for len(strs) > 0 {
		// One command list travels in one message to the server, which
		// has a size limit (16 KB): send a few kilobytes at a time.
		n, size := 0, 0
		for n < len(strs) && (n == 0 || size+len(strs[n]) < 3000) {
			size += len(strs[n]) + 48 // with the command and the format
			n++
		}
		var args, formats []string
		for i, str := range strs[:n] {
			// The "|" keeps a value from ending in ";", tmux's command
			// separator, and from being empty.
			args = append(args, "set-option", "-g", fmt.Sprintf("@s3w%d", i), str+"|", ";")
			formats = append(formats, fmt.Sprintf("#{w:@s3w%d}", i))
		}
		args = append(args, "display-message", "-p", strings.Join(formats, " "))
		argv := append([]string{"-u", "-S", s.Path}, args...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, Bin(), argv...)
		cmd.WaitDelay = time.Second
		b, err := cmd.Output()
		cancel()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("tmux widths: %v: %s", err, stderr)
		}
		fields := strings.Fields(string(b))
		if len(fields) != n {
			t.Fatalf("tmux widths: %d answers for %d strings: %q", len(fields), n, b)
		}
		for _, f := range fields {
			w, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("tmux widths: %q", b)
			}
			out = append(out, w-1)
		}
		strs = strs[n:]
	}
	return out
}
