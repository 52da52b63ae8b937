package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tui"
	"github.com/system3-dev/system3/wake"
)

// daemon is `system3 serve` running as a process of its own: this test
// binary run as system3, optionally through a wrapper command (a shell
// that sets a resource limit, unshare), so it can be killed like the real
// thing.
type daemon struct {
	t    *testing.T
	cmd  *exec.Cmd
	done chan struct{}
	err  error

	mu     sync.Mutex
	output bytes.Buffer
}

func (d *daemon) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.output.Write(p)
}

func (d *daemon) stderr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.output.String()
}

// startDaemon runs `system3 serve --listen off` with env and waits until it
// serves its socket.
func startDaemon(t *testing.T, env map[string]string, wrapper ...string) *daemon {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append([]string{}, wrapper...), exe, "serve", "--listen", "off")
	d := &daemon{t: t, done: make(chan struct{})}
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), runMainEnv + "=1"}
	for k, v := range env {
		d.cmd.Env = append(d.cmd.Env, k+"="+v)
	}
	d.cmd.Stdout, d.cmd.Stderr = d, d
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() { d.kill() })
	sock := filepath.Join(env["SYSTEM3_STATE_DIR"], ipc.SocketFile)
	testkit.WaitFor(t, 20*time.Second, "system3 serve to serve its socket", func() bool {
		if c, err := ipc.Dial(context.Background(), sock); err == nil {
			served := c.PID() == d.cmd.Process.Pid
			c.Close()
			if served {
				return true
			}
		}
		select {
		case <-d.done:
			t.Fatalf("system3 serve exited (%v) before serving: %s", d.err, d.stderr())
		default:
		}
		return false
	}, func() string { return "stderr: " + d.stderr() })
	return d
}

// kill ends the daemon with SIGKILL, as the kernel's OOM killer or a
// power cut would, and waits for it.
func (d *daemon) kill() {
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// stop asks the daemon to end (SIGTERM) and waits for it.
func (d *daemon) stop() {
	d.t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		d.kill()
		d.t.Fatalf("system3 serve did not stop within 20s of SIGTERM: %s", d.stderr())
	}
}

func dialDaemon(t testing.TB, state string) *ipc.Client {
	t.Helper()
	c, err := ipc.Dial(context.Background(), filepath.Join(state, ipc.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func daemonEnv(t *testing.T, srv tmux.Server, state string) map[string]string {
	return map[string]string{
		"HOME":                     t.TempDir(),
		"SYSTEM3_STATE_DIR":        state,
		"SYSTEM3_TASKS_DIR":        t.TempDir(),
		"SYSTEM3_TMUX_SOCKET_PATH": srv.Path,
	}
}

func captureFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "monitor", "testdata", "captures", "claude", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func startSession(t *testing.T, srv tmux.Server, name, command string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := tmux.NewClient(srv).NewSession(ctx, tmux.NewSessionOptions{Name: name, Width: 120, Height: 40, Command: []string{"sh", "-c", command}}); err != nil {
		t.Fatal(err)
	}
}

// kill -9 of system3 while panes raise and clear wakes many times a
// second: every wake a subscriber was sent (they are sent only once
// fsynced) is back after a restart, the torn last record is skipped and
// reported in the log, and appending resumes after it without damage.
func TestResilienceKill9DuringWakeTraffic(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	// Each pane shows a permission prompt, then work, every 1.1 s (the
	// watcher reports a pane that keeps changing about once a second):
	// an awaiting_input wake raised and cleared per cycle. awk runs the
	// loop so the pane's command is not a shell (a shell in front of an
	// agent's last screen means the agent exited).
	flip := fmt.Sprintf(`exec awk 'BEGIN { while (1) system("clear; cat %s; sleep 1.1; clear; cat %s; sleep 1.1") }'`,
		captureFile(t, "permission_bash.txt"), captureFile(t, "working_spinner_streaming.txt"))
	for i := range 8 {
		startSession(t, srv, fmt.Sprintf("flip-%d", i), flip)
	}
	state := testkit.ShortDir(t)
	env := daemonEnv(t, srv, state)
	d := startDaemon(t, env)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := dialDaemon(t, state)
	msgs, err := c.SubscribeWakes(ctx, api.WakeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]uint64{}
	start := time.Now()
	for len(seen) < 150 {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("the wake stream ended after %d wakes: %s", len(seen), d.stderr())
			}
			if m.Kind == api.WakeRaised {
				seen[m.Event.ID] = m.Event.Seq
			}
		case <-ctx.Done():
			t.Fatalf("only %d wakes in 90s", len(seen))
		}
	}
	d.kill()
	t.Logf("%d wakes delivered in %s before kill -9", len(seen), time.Since(start).Round(time.Millisecond))

	journal := filepath.Join(state, wake.JournalFile)
	st, err := os.Stat(journal)
	if err != nil {
		t.Fatal(err)
	}
	killedAt := st.Size()
	// Whether or not the kill cut a record in half, the file now ends in
	// one: the start of a record that was being written.
	f, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"v":1,"type":"raise","event":{"id":"torn","seq":99999,"rea`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	d2 := startDaemon(t, env)
	c2 := dialDaemon(t, state)
	back, err := c2.Wakes(ctx, api.AllWakes())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	var maxSeq uint64
	for _, ev := range back {
		have[ev.ID] = true
		maxSeq = max(maxSeq, ev.Seq)
	}
	var lost []string
	for id := range seen {
		if !have[id] {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d delivered wakes are gone after kill -9: %v", len(lost), len(seen), lost)
	}
	if have["torn"] {
		t.Fatal("the torn record was read as a wake")
	}
	logText, _ := os.ReadFile(filepath.Join(state, "system3.log"))
	if !strings.Contains(string(logText), "skipped an incomplete last record") {
		t.Errorf("the log does not report the torn record:\n%s", logText)
	}

	// The restarted daemon moved the torn line to the quarantine and
	// rewrote the journal without it: nothing written since is damaged.
	msgs2, err := c2.SubscribeWakes(ctx, api.WakeFilter{SinceSeq: maxSeq})
	if err != nil {
		t.Fatal(err)
	}
	after := map[string]bool{}
	for len(after) < 20 {
		select {
		case m, ok := <-msgs2:
			if !ok {
				t.Fatal("the wake stream ended")
			}
			if m.Kind == api.WakeRaised && !m.Replayed {
				if m.Event.Seq <= maxSeq {
					t.Fatalf("new wake %s has seq %d, not after the journal's %d", m.Event.ID, m.Event.Seq, maxSeq)
				}
				after[m.Event.ID] = true
			}
		case <-ctx.Done():
			t.Fatalf("only %d wakes after the restart", len(after))
		}
	}
	d2.stop()
	evs, warnings, err := wake.ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Fatalf("warnings %v, want none: the torn line was quarantined", warnings)
	}
	var q struct {
		Offset  int64  `json:"offset"`
		Problem string `json:"problem"`
		Line    string `json:"line"`
	}
	qtext, err := os.ReadFile(filepath.Join(state, wake.QuarantineFile))
	if err != nil || json.Unmarshal(qtext, &q) != nil || q.Offset > killedAt || !strings.Contains(q.Line, `"id":"torn"`) || !strings.Contains(q.Problem, "incomplete last record") {
		t.Fatalf("quarantine %q (%v), want the torn line (at or before byte %d)", qtext, err, killedAt)
	}
	have = map[string]bool{}
	for _, ev := range evs {
		have[ev.ID] = true
	}
	for id := range seen {
		if !have[id] {
			t.Fatalf("wake %s from before the kill is not in the journal after the second run", id)
		}
	}
	for id := range after {
		if !have[id] {
			t.Fatalf("wake %s from after the restart is not in the journal", id)
		}
	}
}

// The state dir's journal becomes unwritable (a full disk, simulated with
// RLIMIT_FSIZE below the journal's size, or a read-only file system, a
// read-only bind mount in a private mount namespace): system3 says so in
// the snapshot's problem (the dashboard header and `status` show it) and
// in its log, keeps monitoring and delivering wakes from memory, and loses
// none of the wakes journaled before.
func TestResilienceUnwritableJournal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wrapper func(t *testing.T, journal string) []string
		problem string
	}{
		{"full disk", func(*testing.T, string) []string {
			// 64 blocks (32 or 64 KB, by the shell's block size) is less
			// than the journal, so every append fails with EFBIG; the log,
			// started afresh, has room. Go ignores SIGXFSZ.
			return []string{"sh", "-c", `ulimit -f 64 && exec "$0" "$@"`}
		}, "file too large"},
		{"read-only file system", func(t *testing.T, journal string) []string {
			if os.Getuid() != 0 {
				// Without root a plain permission is enough.
				if err := os.Chmod(journal, 0o400); err != nil {
					t.Fatal(err)
				}
				return nil
			}
			// As root permissions do not stop writes: mount the journal
			// read-only, in a mount namespace of the daemon's own.
			unshare := testkit.LookPath(t, "unshare")
			testkit.LookPath(t, "mount")
			probe := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", `mount --bind "$0" "$0" && mount -o remount,bind,ro "$0"`, journal)
			if out, err := probe.CombinedOutput(); err != nil {
				t.Skipf("this machine cannot make a read-only mount for root (unshare -m: %v: %s); the full-disk case covers the write failures", err, out)
			}
			return []string{unshare, "-m", "--propagation", "private", "sh", "-c",
				`mount --bind "$J" "$J" && mount -o remount,bind,ro "$J" && exec "$0" "$@"`}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tmuxtest.NewServer(t, "sleep", "600")
			state := testkit.ShortDir(t)
			journal := filepath.Join(state, wake.JournalFile)
			// Wakes journaled before the trouble: ~100 KB of them.
			store, _, err := wake.Open(wake.Config{Dir: state})
			if err != nil {
				t.Fatal(err)
			}
			var before []string
			for i := range 80 {
				ev, _, err := store.Raise(api.Wake{Reason: api.ReasonSummary, SuggestedAction: fmt.Sprintf("summary %d", i), Details: strings.Repeat("detail ", 180)})
				if err != nil {
					t.Fatal(err)
				}
				before = append(before, ev.ID)
			}
			if err := store.Close(); err != nil {
				t.Fatal(err)
			}
			startSession(t, srv, "orch-a", "cat '"+captureFile(t, "permission_bash.txt")+"'; exec sleep 600")

			env := daemonEnv(t, srv, state)
			env["J"] = journal
			d := startDaemon(t, env, tc.wrapper(t, journal)...)
			c := dialDaemon(t, state)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			problem := tc.problem
			if problem == "" {
				problem = "read-only file system"
				if os.Getuid() != 0 {
					problem = "permission denied"
				}
			}
			// The prompt's wake is delivered although it cannot be written,
			// and the snapshot says why it is not on disk.
			ev, err := c.WaitWake(ctx, api.WakeFilter{Session: "orch-a", Reasons: []api.Reason{api.ReasonAwaitingInput}})
			if err != nil {
				t.Fatal(err)
			}
			snap := awaitSnapshot(t, c, func(s api.Snapshot) bool { return strings.Contains(s.Problem, "cannot write the wake journal") })
			if !strings.Contains(snap.Problem, problem) || !strings.Contains(snap.Problem, "kept in memory") {
				t.Fatalf("problem %q does not say %q and that wakes are kept in memory", snap.Problem, problem)
			}
			// The dashboard's header says it too.
			tm := teatest.NewTestModel(t, tui.New(c, tui.Options{NoColor: true}), teatest.WithInitialTermSize(200, 40))
			teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("⚠ cannot write the wake journal")) },
				teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(50*time.Millisecond))
			tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'q'}})
			tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
			code, out, errOut := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}, "status")
			if code != 0 || !strings.Contains(out+errOut, "cannot write the wake journal") {
				t.Fatalf("status (exit %d) does not show the problem:\n%s%s", code, out, errOut)
			}

			// Monitoring goes on: a new prompt still wakes a waiter.
			startSession(t, srv, "orch-b", "cat '"+captureFile(t, "permission_bash.txt")+"'; exec sleep 600")
			if _, err := c.WaitWake(ctx, api.WakeFilter{Session: "orch-b", Reasons: []api.Reason{api.ReasonAwaitingInput}}); err != nil {
				t.Fatal(err)
			}
			logText, _ := os.ReadFile(filepath.Join(state, "system3.log"))
			if !strings.Contains(string(logText), "cannot write the wake journal") {
				t.Errorf("the log does not report the journal failure:\n%s", logText)
			}
			d.stop()
			if err := os.Chmod(journal, 0o600); err != nil {
				t.Fatal(err)
			}

			// Back on a writable disk, nothing journaled before is missing,
			// and the prompts still on screen are raised again.
			startDaemon(t, daemonEnv(t, srv, state))
			c2 := dialDaemon(t, state)
			evs, err := c2.Wakes(ctx, api.AllWakes())
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for _, e := range evs {
				have[e.ID] = true
			}
			for _, id := range before {
				if !have[id] {
					t.Fatalf("wake %s, journaled before the failure, is gone", id)
				}
			}
			for _, s := range []string{"orch-a", "orch-b"} {
				if _, err := c2.WaitWake(ctx, api.WakeFilter{Session: s, Reasons: []api.Reason{api.ReasonAwaitingInput}}); err != nil {
					t.Fatalf("%s after the restart: %v", s, err)
				}
			}
			if ev.ID == "" {
				t.Fatal("the first prompt's wake has no id")
			}
		})
	}
}

func awaitSnapshot(t *testing.T, c *ipc.Client, ok func(api.Snapshot) bool) api.Snapshot {
	t.Helper()
	return testkit.WaitForValue(t, 20*time.Second, "the snapshot expected", func() (api.Snapshot, bool) {
		snap, err := c.Snapshot(context.Background())
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		return snap, ok(snap)
	})
}
