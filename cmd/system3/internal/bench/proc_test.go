//go:build linux

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// A child that used CPU before the meter started and is reaped during the
// interval adds all its time to the root's own (cutime): that earlier part
// must not count as the root's, nor make its part larger than the tree.
func TestCPUMeterChildReapedMeanwhile(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var before time.Duration
	testkit.WaitForValue(t, 20*time.Second, "the child to use 300ms of CPU", func() (time.Duration, bool) {
		st, err := readStat(cmd.Process.Pid)
		if err != nil {
			t.Fatalf("the child used %v of CPU, %v", before, err)
		}
		before = st.cpu
		return before, before >= 300*time.Millisecond
	})
	m, err := startCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.children0[cmd.Process.Pid] < before {
		t.Fatalf("the meter saw the child at %v, want at least %v", m.children0[cmd.Process.Pid], before)
	}
	cmd.Process.Kill()
	cmd.Wait()
	time.Sleep(100 * time.Millisecond)
	tree, own, err := m.split()
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(m.wall0)
	ownTime := time.Duration(own / 100 * float64(wall))
	if own > tree || ownTime >= before {
		t.Fatalf("own %.1f %% (%v) of tree %.1f %%; the child's %v before the start counted as the root's", own, ownTime, tree, before)
	}
}

// TestCPUMeterGrandchildReapedMeanwhile: a process below a child, reaped
// by that child during the interval, adds its time to the child, not to
// the root: the root's own CPU is what it used, not that less the
// grandchild's time before the start (which read as 0 % for the tmux
// server whose agents reaped their commands).
func TestCPUMeterGrandchildReapedMeanwhile(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "stop")
	// sh runs a busy subshell until flag exists, waits for it, then sleeps.
	cmd := exec.Command("sh", "-c", `(while [ ! -e "$1" ]; do :; done); sleep 30`, "sh", flag)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var sub int
	var before time.Duration
	testkit.WaitForValue(t, 20*time.Second, "the subshell to use 300ms of CPU (its pid and CPU)", func() ([2]any, bool) {
		_, kids, err := treeCPUs(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		for p, c := range kids {
			sub, before = p, c
		}
		return [2]any{sub, before}, before >= 300*time.Millisecond
	})
	m, err := startCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, err := readStat(sub); err == nil; _, err = readStat(sub) {
		time.Sleep(10 * time.Millisecond) // until sh has reaped it
	}
	// The root works for 200 ms of CPU.
	for start, _ := readStat(os.Getpid()); ; {
		now, _ := readStat(os.Getpid())
		if now.cpu-start.cpu >= 200*time.Millisecond {
			break
		}
	}
	_, own, err := m.split()
	if err != nil {
		t.Fatal(err)
	}
	if ownTime := time.Duration(own / 100 * float64(time.Since(m.wall0))); ownTime < 150*time.Millisecond {
		t.Fatalf("the root's own CPU read as %v after it worked 200 ms; the grandchild's %v before the start was taken off it", ownTime, before)
	}
}
