package tmuxtest

import (
	"os"
	"testing"
)

// tmux 3.8 lists a dead pane's pid as empty (0): reaping "its processes"
// once killed every process on the machine.
func TestNoProcessBelowNoPid(t *testing.T) {
	for _, pid := range []int{-1, 0, 1} {
		if got := descendants(pid); got != nil {
			t.Errorf("descendants(%d) = %d processes, want none", pid, len(got))
		}
	}
	if got := descendants(os.Getpid()); len(got) == 0 || got[0] != os.Getpid() {
		t.Errorf("descendants(self) = %v", got)
	}
	reap([]int{-1, 0, 1, os.Getpid()}, 0) // must return, and leave us alive
}
