package tmux_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// The test binary doubles as a tiny full-screen program run inside panes.
const helperEnv = "SYSTEM3_TMUX_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
	case "inputbox":
		inputBox()
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
	goleak.VerifyTestMain(m)
}

// inputBox imitates an agent's input line on a raw tty: it echoes typed
// bytes after "> ", and on Enter prints "sent: TEXT" and a fresh prompt. It
// ignores the first SWALLOW Enters, like an Ink CLI that was still busy
// with a paste.
func inputBox() {
	swallow, _ := strconv.Atoi(os.Getenv("SWALLOW"))
	var buf []byte
	out := bufio.NewWriter(os.Stdout)
	draw := func() {
		out.WriteString("\r\x1b[K> " + string(buf))
		out.Flush()
	}
	out.WriteString("inputbox ready\r\n")
	draw()
	in := bufio.NewReader(os.Stdin)
	for {
		b, err := in.ReadByte()
		if err != nil {
			return
		}
		if b != '\r' {
			buf = append(buf, b)
			draw()
			continue
		}
		if swallow > 0 {
			swallow--
			continue
		}
		out.WriteString("\r\x1b[Ksent: " + string(buf) + "\r\n")
		buf = buf[:0]
		draw()
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// tmuxRun runs a raw tmux command against the test server, for setting up
// situations the package API deliberately does not offer.
func tmuxRun(t *testing.T, s tmux.Server, args ...string) string {
	t.Helper()
	out, err := exec.Command(tmuxtest.Bin(), append([]string{"-S", s.Path}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newWindow adds a window to the "main" session and returns its pane.
func newWindow(t *testing.T, c *tmux.Client, command ...string) string {
	t.Helper()
	pane, err := c.NewWindow(ctxFor(t, 5*time.Second), tmux.NewWindowOptions{Session: "main", Command: command})
	if err != nil {
		t.Fatal(err)
	}
	return pane
}

// sink starts a pane whose tty is raw (no echo, no line editing, no CR/NL
// translation, no signals) and whose input goes byte for byte to a file.
// It returns the pane and a function reading the file.
func sink(t *testing.T, c *tmux.Client) (string, func() []byte) {
	t.Helper()
	dir := t.TempDir()
	file, ready := filepath.Join(dir, "out"), filepath.Join(dir, "ready")
	pane := newWindow(t, c, fmt.Sprintf("stty raw -echo -iexten && touch %s && exec cat > %s", ready, file))
	testkit.WaitFor(t, 5*time.Second, "the sink pane to be ready", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	return pane, func() []byte {
		b, _ := os.ReadFile(file)
		return b
	}
}

// waitBytes waits until read returns at least len(want) bytes, then checks
// them (and that nothing more arrives shortly after).
func waitBytes(t *testing.T, read func() []byte, want []byte) {
	t.Helper()
	testkit.Poll(20*time.Second, func() bool { return len(read()) >= len(want) })
	time.Sleep(50 * time.Millisecond)
	if got := read(); !bytes.Equal(got, want) {
		t.Fatalf("pane received %d bytes, want %d\n got %q\nwant %q", len(got), len(want), clip(got), clip(want))
	}
}

func clip(b []byte) []byte {
	if len(b) > 300 {
		return append(append([]byte{}, b[:150]...), b[len(b)-150:]...)
	}
	return b
}

// tmuxChildren counts tmux processes whose parent is this test process:
// every control client must be reaped by the time its owner returns.
func tmuxChildren(t *testing.T, srv tmux.Server) int {
	t.Helper()
	// Tests run in parallel, each forking tmux commands of its own: count
	// only the children that talk to this test's server.
	sock := srv.Path
	if sock == "" {
		sock = srv.Name
	}
	entries, _ := os.ReadDir("/proc")
	n := 0
	me := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < 0 {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 2 || s[open+1:close] != "tmux" || f[1] != me {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		if slices.Contains(strings.Split(string(cmdline), "\x00"), sock) {
			n++
		}
	}
	return n
}

// hasChild reports whether process pid has a child named comm.
func hasChild(pid int, comm string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < 0 {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) > 1 && s[open+1:close] == comm && f[1] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

func controlClients(t *testing.T, s tmux.Server) int {
	t.Helper()
	out := tmuxRun(t, s, "list-clients", "-F", "#{client_control_mode}")
	return strings.Count(out, "1")
}

// events collects a Watcher's events in the background.
type events struct {
	ch chan tmux.Event
}

func collect(w *tmux.Watcher) *events {
	e := &events{ch: make(chan tmux.Event, 10000)}
	go func() {
		for ev := range w.Events() {
			e.ch <- ev
		}
		close(e.ch)
	}()
	return e
}

// drain drops every event already delivered.
func (e *events) drain() {
	for {
		select {
		case <-e.ch:
		default:
			return
		}
	}
}

// await returns the first event matching, failing the test after timeout.
func (e *events) await(t *testing.T, timeout time.Duration, what string, match func(tmux.Event) bool) tmux.Event {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var seen []string
	for {
		select {
		case ev, ok := <-e.ch:
			if !ok {
				t.Fatalf("event stream ended while waiting for %s (saw %v)", what, seen)
			}
			if match(ev) {
				return ev
			}
			if len(seen) < 40 {
				seen = append(seen, ev.String())
			}
		case <-timer.C:
			t.Fatalf("no %s within %s (saw %v)", what, timeout, seen)
		}
	}
}

func kind(k tmux.EventKind) func(tmux.Event) bool {
	return func(e tmux.Event) bool { return e.Kind == k }
}

var _ = tmuxtest.NewServer

var ctxDeadline = context.DeadlineExceeded

// tmuxRunRaw is tmuxRun without trimming the output.
func tmuxRunRaw(t *testing.T, s tmux.Server, args ...string) string {
	t.Helper()
	out, err := exec.Command(tmuxtest.Bin(), append([]string{"-S", s.Path}, args...)...).Output()
	if err != nil {
		t.Fatalf("tmux %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
