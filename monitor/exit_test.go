package monitor

import (
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// An agent that quits as its user asked (/exit, Ctrl-C twice: it prints
// how to resume) is exited with no wake; one that dies without a word
// (kill -9: its last frame stays above the shell prompt) or whose pane's
// process exits with a non-zero status is a failed worker.
func TestCleanExitRaisesNoWorkerFailed(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		dead          bool
		status        int
		failed        bool
	}{
		{name: "/exit", fixture: "claude/exited_shell.txt"},
		{name: "ctrl-c twice", fixture: "claude/exited_shell_ctrl_c.txt"},
		{name: "left a cleared screen", fixture: "shell/prompt.txt"},
		{name: "killed", fixture: "claude/working_spinner_streaming.txt", failed: true},
		{name: "dead pane, status 0", fixture: "claude/idle.txt", dead: true, status: 0},
		{name: "dead pane, status 1", fixture: "claude/idle.txt", dead: true, status: 1, failed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.tm.show(t, "%1", "claude", "claude/working_spinner_streaming.txt")
			h.step()
			if tc.dead {
				h.tm.mu.Lock()
				h.tm.panes[0].Dead, h.tm.panes[0].DeadStatus = true, tc.status
				h.tm.mu.Unlock()
			} else {
				// The agent is gone: the shell holds the pane again.
				h.tm.show(t, "%1", "bash", tc.fixture)
			}
			h.step()
			if !tc.dead {
				// Not yet: the goodbye may still be printed.
				if w := h.allWakes(api.ReasonWorkerFailed); len(w) != 0 {
					t.Fatalf("worker_failed before the exit grace: %+v", w)
				}
			}
			h.clock.Add(h.sup.cfg.ExitGrace)
			h.step()
			s := h.session("%1")
			if s.State != api.Exited || s.Agent != "claude" {
				t.Fatalf("session = %+v", s)
			}
			w := h.allWakes(api.ReasonWorkerFailed)
			if got := len(w) == 1; got != tc.failed {
				t.Fatalf("worker_failed wakes %+v, want failed=%v (evidence %+v)", w, tc.failed, s.Evidence)
			}
		})
	}
}
