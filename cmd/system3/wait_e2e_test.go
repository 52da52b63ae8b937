package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// TestWaitWithRealMonitors runs `system3 wait` twice at once with real
// monitors on a private tmux server: the first starts the monitors and
// serves them, the second shares them; a permission prompt appearing in a
// pane wakes both with the same wake, which a restart still has until it is
// acknowledged.
func TestWaitWithRealMonitors(t *testing.T) {
	capture, err := filepath.Abs(filepath.Join("..", "..", "monitor", "testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := tmuxtest.NewServer(t, "sleep", "600")
	state := testkit.ShortDir(t)
	env := map[string]string{"SYSTEM3_STATE_DIR": state}
	args := func(a ...string) []string { return append(socketArgs(srv), a...) }

	type result struct {
		code        int
		out, errOut string
	}
	results := make(chan result, 2)
	wait := func() {
		code, out, errOut := invoke(t, env, args("wait", "--json", "--reason", "awaiting_input", "--timeout", "30s")...)
		results <- result{code, out, errOut}
	}
	go wait()
	waitServed(t, state)
	go wait()
	time.Sleep(300 * time.Millisecond) // let the second wait connect

	c := tmux.NewClient(srv)
	if _, err := c.NewSession(context.Background(), tmux.NewSessionOptions{Name: "orch-deploy", Width: 120, Height: 40,
		Command: []string{"sh", "-c", "cat '" + capture + "'; exec sleep 600"}}); err != nil {
		t.Fatal(err)
	}

	var ids []string
	for range 2 {
		r := <-results
		if r.code != 0 {
			t.Fatalf("wait exit %d, stderr %q", r.code, r.errOut)
		}
		var ev api.Wake
		if err := json.Unmarshal([]byte(r.out), &ev); err != nil {
			t.Fatalf("wait --json printed %q: %v", r.out, err)
		}
		if ev.Reason != api.ReasonAwaitingInput || ev.Session != "orch-deploy" || ev.Kind != "permission" ||
			ev.Question != "Do you want to proceed?" || len(ev.Options) != 4 || ev.Agent != "claude" {
			t.Fatalf("wake = %+v", ev)
		}
		ids = append(ids, ev.ID)
	}
	if ids[0] != ids[1] {
		t.Fatalf("the two waits got different wakes %v: one condition must raise one wake", ids)
	}

	// Both waits are gone, and their monitors with them; a new wait reads
	// the journal and returns the unacked wake at once.
	code, out, errOut := invoke(t, env, args("wait", "--json", "--timeout", "10s")...)
	if code != 0 || !strings.Contains(out, ids[0]) {
		t.Fatalf("wait after restart: exit %d, out %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := invoke(t, env, args("ack", ids[0])...); code != 0 {
		t.Fatalf("ack: exit %d, %s", code, errOut)
	}
	// Acked, and the prompt still on screen raises no new wake.
	if code, out, _ := invoke(t, env, args("wait", "--json", "--reason", "awaiting_input", "--timeout", "2s")...); code != 2 {
		t.Fatalf("wait after ack: exit %d, out %q; want the timeout's 2", code, out)
	}
}

// A task marked completed whose validation command fails wakes `wait`
// with the command's output.
func TestWaitForValidationFailure(t *testing.T) {
	base := t.TempDir()
	state := testkit.ShortDir(t)
	tasksDir := filepath.Join(base, "tasks")
	list := filepath.Join(tasksDir, "PRD-AUTH-001")
	if err := os.MkdirAll(list, 0o755); err != nil {
		t.Fatal(err)
	}
	task := func(status string) {
		body := `{"id":"1","subject":"Implement login form","status":"` + status + `","blocks":[],"blockedBy":[]}`
		if err := os.WriteFile(filepath.Join(list, "1.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	task("in_progress")
	cfg := filepath.Join(base, "config.yaml")
	conf := "validation:\n  - list: 'PRD-*'\n    dir: " + base + "\n    command: 'echo \"--- FAIL: TestLogin\"; exit 1'\n    timeout: 30s\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_CONFIG": cfg, "SYSTEM3_TASKS_DIR": tasksDir}
	srv := tmuxtest.NewStoppedServer(t)

	type result struct {
		code        int
		out, errOut string
	}
	res := make(chan result, 1)
	go func() {
		code, out, errOut := invoke(t, env, append(socketArgs(srv), "wait", "--json", "--reason", "validation_failed", "--timeout", "20s")...)
		res <- result{code, out, errOut}
	}()
	waitServed(t, state)
	task("completed")
	r := <-res
	var ev api.Wake
	if r.code != 0 || json.Unmarshal([]byte(r.out), &ev) != nil {
		t.Fatalf("wait: exit %d, out %q, stderr %q", r.code, r.out, r.errOut)
	}
	if ev.Reason != api.ReasonValidationFailed || !strings.Contains(ev.Details, "--- FAIL: TestLogin") || !strings.Contains(ev.SuggestedAction, "PRD-AUTH-001") {
		t.Fatalf("wake = %+v", ev)
	}
}

// waitServed waits until a system3 serves its monitors for the state dir.
func waitServed(t *testing.T, state string) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "a system3 to serve its monitors", func() bool {
		_, err := os.Stat(filepath.Join(state, ipc.SocketFile))
		return err == nil
	})
}

// lineWriter hands each written line to a channel, for reading a command's
// output while it runs.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- string(w.buf[:i]):
		default: // the test stopped reading
		}
		w.buf = w.buf[i+1:]
	}
}

// TestWatchWithRealMonitors streams with `watch --json` while a pane on a
// private tmux server shows a permission prompt: the session's change and
// the wake both arrive, and Ctrl-C (ctx) ends watch with status 0.
func TestWatchWithRealMonitors(t *testing.T) {
	capture, err := filepath.Abs(filepath.Join("..", "..", "monitor", "testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := tmuxtest.NewServer(t, "sleep", "600")
	state := testkit.ShortDir(t)
	vars := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state}
	out := &lineWriter{lines: make(chan string, 256)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- run(ctx, append(socketArgs(srv), "watch", "--json"), strings.NewReader(""), out, io.Discard, func(k string) string { return vars[k] })
	}()
	waitServed(t, state)
	if _, err := tmux.NewClient(srv).NewSession(context.Background(), tmux.NewSessionOptions{Name: "orch-deploy", Width: 120, Height: 40,
		Command: []string{"sh", "-c", "cat '" + capture + "'; exec sleep 600"}}); err != nil {
		t.Fatal(err)
	}
	var sawSession, sawWake bool
	timeout := time.After(15 * time.Second)
	for !sawSession || !sawWake {
		select {
		case l := <-out.lines:
			var wl watchLine
			if err := json.Unmarshal([]byte(l), &wl); err != nil {
				t.Fatalf("watch --json printed %q: %v", l, err)
			}
			if wl.Type == "session" && wl.Session != nil && wl.Session.Session == "orch-deploy" && wl.Session.State == "awaiting_input" {
				sawSession = true
			}
			if wl.Type == "wake" && wl.Kind == "raised" && wl.Wake != nil && wl.Wake.Session == "orch-deploy" && wl.Wake.Question == "Do you want to proceed?" {
				sawWake = true
			}
		case <-timeout:
			t.Fatalf("watch never showed the prompt (session %v, wake %v)", sawSession, sawWake)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("watch exited %d after Ctrl-C, want 0", code)
	}
}
