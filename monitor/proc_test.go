//go:build linux

package monitor

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestProcessTreeFindsGrandchildren(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	testkit.WaitForValue(t, 5*time.Second, "sleep in the process tree of sh", func() ([]string, bool) {
		names := ProcessTree(cmd.Process.Pid)
		return names, slices.Contains(names, "sleep")
	})
}
