//go:build linux

package bench

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// start runs a command for the test's length.
func start(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// The paired slices give the server's CPU with the supervisor running and
// stopped: a "server" that is its own supervisor (a busy loop, stopped
// with it) spends nearly a core running and nothing stopped, all of it
// added; one beside a supervisor that does nothing (sleep) spends the
// same in both halves, nothing added. The supervisor is left running.
func TestTmuxAddedRunningAndStoppedInTurns(t *testing.T) {
	busy := start(t, "sh", "-c", "while :; do :; done")
	idle := start(t, "sleep", "60")
	ctx := context.Background()

	p, err := tmuxAdded(ctx, busy.Process.Pid, busy.Process.Pid, 2, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if p.Running < 30 || p.Stopped > 5 || p.Added != p.Running-p.Stopped {
		t.Errorf("a server stopped with its supervisor: %+v; want it busy running, idle stopped, all of it added", p)
	}
	st, err := readStat(busy.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if st2, _ := readStat(busy.Process.Pid); st2.cpu <= st.cpu {
		t.Errorf("the supervisor was left stopped: its CPU stayed at %v", st.cpu)
	}

	p, err = tmuxAdded(ctx, busy.Process.Pid, idle.Process.Pid, 2, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if p.Running < 30 || p.Stopped < 30 || p.Added > p.Running/2 || p.Added < -p.Running/2 {
		t.Errorf("a server beside a supervisor that does nothing: %+v; want it as busy in both halves", p)
	}

	if _, err := tmuxAdded(ctx, busy.Process.Pid, 1<<30, 1, time.Millisecond); err == nil {
		t.Error("a supervisor that does not exist: no error")
	}
}
