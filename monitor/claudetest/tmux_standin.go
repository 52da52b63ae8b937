package claudetest

// STAND-IN: this file is a minimal private-socket tmux driver, written because
// the project's tmux package did not have a test server helper or a
// new-session function yet when claudetest was written. Swap it for
// github.com/system3-dev/system3/tmux (and its tmuxtest helper) once those
// exist; nothing outside this file builds tmux argv.
//
// It only ever talks to its own server on a socket in a fresh temporary
// directory (tmux -S <dir>/sock), never to the user's default server.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const tmuxTimeout = 10 * time.Second

type tmuxServer struct {
	socket string
	env    []string // environment of the server process, so of every pane
}

// newTmuxServer prepares a private server; the first newSession starts it and
// t.Cleanup kills it together with every process its panes started.
func newTmuxServer(t testing.TB, env []string) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is not installed: %v", err)
	}
	// Not t.TempDir: a unix socket path must stay short (108 bytes).
	dir, err := os.MkdirTemp("", "s3tmux")
	if err != nil {
		t.Fatal(err)
	}
	s := &tmuxServer{socket: filepath.Join(dir, "sock"), env: env}
	t.Cleanup(func() {
		s.kill()
		os.RemoveAll(dir)
	})
	return s
}

func (s *tmuxServer) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), tmuxTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tmux", append([]string{"-S", s.socket, "-u", "-f", "/dev/null"}, args...)...)
	cmd.Env = s.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// newSession starts a detached session running argv in dir and returns its
// pane id.
func (s *tmuxServer) newSession(name, dir string, width, height int, argv ...string) (string, error) {
	args := []string{"new-session", "-d", "-s", name, "-c", dir,
		"-x", strconv.Itoa(width), "-y", strconv.Itoa(height), "-P", "-F", "#{pane_id}"}
	out, err := s.run(append(args, argv...)...)
	if err != nil {
		return "", err
	}
	pane := strings.TrimSpace(out)
	// A detached session keeps -x/-y only with a manual window size.
	if _, err := s.run("set-option", "-t", name, "window-size", "manual"); err != nil {
		return "", err
	}
	return pane, nil
}

func (s *tmuxServer) capture(pane string, escapes bool) (string, error) {
	args := []string{"capture-pane", "-p", "-J", "-t", pane}
	if escapes {
		args = append(args, "-e")
	}
	return s.run(args...)
}

// sendText types text literally: it is data, never tmux key names.
func (s *tmuxServer) sendText(pane, text string) error {
	_, err := s.run("send-keys", "-t", pane, "-l", "--", text)
	return err
}

// sendKeys sends tmux key names such as "Enter", "Escape", "C-c", "Down".
func (s *tmuxServer) sendKeys(pane string, keys ...string) error {
	_, err := s.run(append([]string{"send-keys", "-t", pane}, keys...)...)
	return err
}

func (s *tmuxServer) resize(pane string, width, height int) error {
	_, err := s.run("resize-window", "-t", pane, "-x", strconv.Itoa(width), "-y", strconv.Itoa(height))
	return err
}

func (s *tmuxServer) display(pane, format string) (string, error) {
	out, err := s.run("display-message", "-p", "-t", pane, format)
	return strings.TrimSpace(out), err
}

// kill stops the server and waits for the processes its panes started.
func (s *tmuxServer) kill() {
	var pids []int
	if out, err := s.run("list-panes", "-a", "-F", "#{pane_pid}"); err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, descendants(pid)...)
			}
		}
	}
	_, _ = s.run("kill-server")
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// descendants returns pid and every process below it, read from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name in parentheses may hold spaces; fields follow the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && !bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}
