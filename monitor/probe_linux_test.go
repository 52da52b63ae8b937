//go:build linux

package monitor

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/agents/claude"
)

// A pane whose process is not named claude (a stand-in such as system3's
// fake agent, or a wrapper) still links the task list its environment
// names, from the pane's process or one below it.
func TestProbeClaudeLinksTaskListFromEnvironment(t *testing.T) {
	start := func(t *testing.T, env []string, args ...string) int {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		})
		// Start returns once the child is in execve, before the kernel
		// has set up the new program's environment: until then
		// /proc/PID/environ reads empty.
		pid := cmd.Process.Pid
		testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("the environment of %v to be readable", args), func() bool {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			return err == nil && len(b) > 0
		})
		return pid
	}
	t.Run("pane process", func(t *testing.T) {
		pid := start(t, []string{"CLAUDE_CODE_TASK_LIST_ID=PRD-AUTH"}, "sleep", "30")
		if got := ProbeAgent(claude.Spec.Probe, pid, t.TempDir()); got.TaskList != "PRD-AUTH" || got.Transcript != "" {
			t.Fatalf("ProbeClaude = %+v, want task list PRD-AUTH and no transcript", got)
		}
	})
	t.Run("below the pane process", func(t *testing.T) {
		pid := start(t, []string{"CLAUDE_CODE_TASK_LIST_ID="}, "sh", "-c", "CLAUDE_CODE_TASK_LIST_ID=PRD-DOCS sleep 30 & wait")
		testkit.WaitForValue(t, 5*time.Second, "ProbeAgent to find task list PRD-DOCS from the child", func() (AgentInfo, bool) {
			got := ProbeAgent(claude.Spec.Probe, pid, "")
			return got, got.TaskList == "PRD-DOCS"
		})
	})
	t.Run("none", func(t *testing.T) {
		pid := start(t, []string{"CLAUDE_CODE_TASK_LIST_ID="}, "sleep", "30")
		if got := ProbeAgent(claude.Spec.Probe, pid, ""); got != (AgentInfo{}) {
			t.Fatalf("ProbeClaude = %+v, want nothing", got)
		}
	})
}
