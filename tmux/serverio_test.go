package tmux

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestIOReaderCountsReads: the count is this process's read calls (it
// grows when the process reads), another pid opens its own, and a
// process that exits reads as not ok and closes its file.
func TestIOReaderCountsReads(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/io is Linux's")
	}
	var r ioReader
	defer r.close()
	before, ok := r.read(os.Getpid())
	if !ok {
		t.Fatal("cannot read this process's read count")
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := os.ReadFile(file); err != nil {
			t.Fatal(err)
		}
	}
	after, ok := r.read(os.Getpid())
	if !ok || after < before+5 {
		t.Fatalf("read count %d after five files read, %d before (ok %v)", after, before, ok)
	}

	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.read(cmd.Process.Pid); !ok || r.pid != cmd.Process.Pid {
		t.Fatalf("cannot read a child's read count (ok %v, pid %d)", ok, r.pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n, ok := r.read(cmd.Process.Pid); ok {
		t.Fatalf("a process that exited and was reaped has read count %d", n)
	}
	if r.opened {
		t.Error("the file of a process that is gone stays open")
	}
	if _, ok := r.read(0); ok {
		t.Error("pid 0 has a read count")
	}
}
