package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// attachedDashboard starts `system3 serve` and a dashboard attached to it,
// in a terminal of its own, and returns them once the dashboard shows the
// watched server's session.
func attachedDashboard(t *testing.T, takeoverAfter string) (srv tmux.Server, env map[string]string, d *daemon, term *tmux.Client, pane string) {
	t.Helper()
	srv = tmuxtest.NewServer(t, "sleep", "600")
	state := testkit.ShortDir(t)
	env = daemonEnv(t, srv, state)
	cfg := filepath.Join(state, "config.yaml")
	// Every wake announced by the process running the monitors, the
	// daemon's or the dashboard's after a takeover, goes to one file.
	conf := "mcp:\n  listen: off\nnotify:\n  command: 'cat >> " + filepath.Join(state, "notified.jsonl") + "; echo >> " + filepath.Join(state, "notified.jsonl") + "'\n"
	if takeoverAfter != "" {
		conf += "dashboard:\n  takeover_after: " + takeoverAfter + "\n"
	}
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env["SYSTEM3_CONFIG"] = cfg
	d = startDaemon(t, env)
	term, pane = terminal(t, env, "tui")
	waitDashboard(t, term, pane, "the watched session", func(s string) bool { return strings.Contains(s, "main:0.0") })
	return srv, env, d, term, pane
}

// waitDashboard waits until the dashboard's screen satisfies ok.
func waitDashboard(t *testing.T, term *tmux.Client, pane, what string, ok func(string) bool) string {
	t.Helper()
	return testkit.WaitForValue(t, 60*time.Second, "the dashboard to show "+what, func() (string, bool) {
		s, _ := term.Capture(context.Background(), pane, tmux.CaptureOptions{})
		return s, ok(s)
	})
}

// panePID is the pid of the process a pane runs: here, the dashboard.
func panePID(t *testing.T, term *tmux.Client, pane string) int {
	t.Helper()
	panes, err := term.ListPanes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range panes {
		if p.ID == pane {
			return p.PID
		}
	}
	t.Fatalf("pane %s is gone", pane)
	return 0
}

// servedBy waits until the state dir's socket is served by pid and
// returns a client for it.
func servedBy(t *testing.T, state string, pid int, within time.Duration) *ipc.Client {
	t.Helper()
	sock := filepath.Join(state, ipc.SocketFile)
	var served *ipc.Client
	last := 0
	testkit.WaitForValue(t, within, fmt.Sprintf("the socket served by pid %d (the last answer's pid)", pid), func() (int, bool) {
		c, err := ipc.Dial(context.Background(), sock)
		if err != nil {
			return last, false
		}
		if last = c.PID(); last != pid {
			c.Close()
			return last, false
		}
		served = c
		return last, true
	})
	t.Cleanup(func() { served.Close() })
	return served
}

// sinceOf is when the state of the session's pane began, as the service says.
func sinceOf(t *testing.T, c *ipc.Client, session string) time.Time {
	t.Helper()
	snap, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snap.Sessions {
		if s.Session == session {
			return s.Since
		}
	}
	t.Fatalf("no session %s in %+v", session, snap.Sessions)
	return time.Time{}
}

// TestResilienceDashboardTakesOver: a dashboard attached to `system3
// serve` outlives it. When serve is killed (SIGKILL, or SIGTERM), the
// dashboard shows its rows as stale, then, once the grace has passed,
// runs the monitors itself: it serves the state dir's socket, says so,
// each pane still in its state keeps when that state began, and a prompt
// that appears afterwards raises a wake that is journaled.
func TestResilienceDashboardTakesOver(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			srv, env, d, term, pane := attachedDashboard(t, "")
			state := env["SYSTEM3_STATE_DIR"]
			began := sinceOf(t, servedBy(t, state, d.cmd.Process.Pid, 10*time.Second), "main")
			killed := time.Now()
			_ = d.cmd.Process.Signal(sig)
			<-d.done
			dash := panePID(t, term, pane)
			c := servedBy(t, state, dash, 60*time.Second)
			took := time.Since(killed)
			t.Logf("the dashboard served the state dir %s after serve got %s (grace %s)", took.Round(time.Millisecond), sig, ipc.DefaultGrace)
			if took < ipc.DefaultGrace {
				t.Errorf("took over after %s, before the grace of %s", took, ipc.DefaultGrace)
			}
			waitDashboard(t, term, pane, "the takeover notice", func(s string) bool {
				return strings.Contains(s, "now monitors the state dir itself")
			})
			waitDashboard(t, term, pane, "live rows again", func(s string) bool {
				return strings.Contains(s, "main:0.0") && !strings.Contains(s, "stale")
			})
			// Every view, not only the dashboard, says main has been in its
			// state since before the takeover.
			testkit.WaitFor(t, 10*time.Second, "main's state to keep its start", func() bool {
				return sinceOf(t, c, "main").Equal(began)
			})

			// The monitors are the dashboard's now: a new prompt wakes.
			startSession(t, srv, "ask", fmt.Sprintf("cat %s; exec sleep 600", captureFile(t, "permission_bash.txt")))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			ev, err := c.WaitWake(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}})
			if err != nil {
				t.Fatalf("no awaiting_input wake from the dashboard's monitors: %v", err)
			}
			if ev.Session != "ask" {
				t.Fatalf("wake for %q, want the session ask: %+v", ev.Session, ev)
			}
			journal, err := os.ReadFile(filepath.Join(state, wake.JournalFile))
			if err != nil || !strings.Contains(string(journal), ev.ID) {
				t.Fatalf("wake %s is not in the journal (%v)", ev.ID, err)
			}
			waitDashboard(t, term, pane, "the new session's wake", func(s string) bool {
				return strings.Contains(s, "ask:0.0") && strings.Contains(s, "awaiting_input")
			})
			// notify.command is the dashboard's now too.
			notified := filepath.Join(state, "notified.jsonl")
			testkit.WaitForValue(t, 30*time.Second, fmt.Sprintf("notify.command to get wake %s after the takeover (what it got)", ev.ID), func() (string, bool) {
				b, _ := os.ReadFile(notified)
				return string(b), strings.Contains(string(b), ev.ID)
			})
		})
	}
}

// TestResilienceDashboardFollowsNewDaemon: when serve dies and another
// serve takes the state dir before the dashboard's grace is over, the
// dashboard attaches to the new one instead of competing for the lock.
func TestResilienceDashboardFollowsNewDaemon(t *testing.T) {
	// A long grace: the new daemon wins however slowly it starts.
	_, env, d, term, pane := attachedDashboard(t, "10m")
	d.kill()
	waitDashboard(t, term, pane, "stale rows", func(s string) bool { return strings.Contains(s, "stale") })
	d2 := startDaemon(t, env)
	waitDashboard(t, term, pane, "the attach notice", func(s string) bool {
		return strings.Contains(s, fmt.Sprintf("now attached to system3 pid %d", d2.cmd.Process.Pid))
	})
	waitDashboard(t, term, pane, "live rows again", func(s string) bool {
		return strings.Contains(s, "main:0.0") && !strings.Contains(s, "stale")
	})
	// The new daemon still holds the state dir: the dashboard did not
	// take it.
	servedBy(t, env["SYSTEM3_STATE_DIR"], d2.cmd.Process.Pid, 5*time.Second)
	// And it follows the new daemon's death too.
	d2.kill()
	waitDashboard(t, term, pane, "stale rows after the second daemon went", func(s string) bool { return strings.Contains(s, "stale") })
}
