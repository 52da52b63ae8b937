//go:build linux

package bench

import (
	"os"
	"os/exec"
	"testing"
	"time"
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
	for deadline := time.Now().Add(20 * time.Second); before < 300*time.Millisecond; {
		st, err := readStat(cmd.Process.Pid)
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the child used %v of CPU, %v", before, err)
		}
		before = st.cpu
		time.Sleep(20 * time.Millisecond)
	}
	m, err := startCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.below0[cmd.Process.Pid] < before {
		t.Fatalf("the meter saw the child at %v, want at least %v", m.below0[cmd.Process.Pid], before)
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
