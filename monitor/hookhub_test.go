//go:build linux

package monitor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/hooks"
)

// A hook run below the Cline CLI's hub daemon, which runs the sessions of
// any pane with the environment (the pane, the token) and below the
// process of the CLI that started it, is refused even when that CLI runs
// in the pane the event names and the event is signed with its session's
// token: it may be another pane's.
func TestHookFromAHubIsRefused(t *testing.T) {
	key, err := hooks.LoadKey(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.HookKey = key })
	h.tm.show(t, "%1", "claude", "claude/idle.txt") // session orch-1
	// This test is the pane's process; below it, a "hub" (its arguments
	// hold Cline's mark), and below that the hook.
	h.tm.setPID("%1", os.Getpid())
	h.step()
	cmd := exec.Command("sh", "-c", "sleep 60 & wait", "--cline-hub-daemon")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	hook := testkit.WaitForValue(t, 5*time.Second, "the hub's child", func() (int, bool) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		// Until it execs sleep, a forked child still has the shell's
		// arguments.
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		return pid, err == nil && pid > 0 && strings.HasPrefix(string(cmdline), "sleep\x00")
	})
	if hub, agent := HubAbove(hook, os.Getpid()); hub != cmd.Process.Pid || agent != "cline" {
		t.Fatalf("HubAbove = %d %q, want %d cline", hub, agent, cmd.Process.Pid)
	}
	if hub, _ := HubAbove(os.Getpid(), 0); hub != 0 {
		t.Fatalf("this test runs under a hub %d", hub)
	}
	ev := hooks.Sign(api.HookEvent{Name: api.Stop, Pane: "%1", Received: h.clock.Now()}, hooks.SessionToken(key, "orch-1"))
	ev.Sender = api.HookSender{Via: api.ViaSocket, PID: hook}
	if _, err := h.sup.Hook(context.Background(), ev); !errors.Is(err, api.ErrHookRefused) || !strings.Contains(err.Error(), "cline's hub") {
		t.Fatalf("an event from below the hub: %v", err)
	}
	if s := h.session("%1"); s.Evidence.Source == "hook" {
		t.Fatalf("the hub's event changed the state: %+v", s)
	}
}
