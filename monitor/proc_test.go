//go:build linux

package monitor

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		names := ProcessTree(cmd.Process.Pid)
		if slices.Contains(names, "sleep") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process tree of sh = %q, want sleep in it", names)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
