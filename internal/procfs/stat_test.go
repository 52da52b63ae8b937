package procfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestReadStat reads a child whose name holds spaces and parentheses:
// the whole name, this process as its parent, and a start time.
func TestReadStat(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/stat is Linux's")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(t.TempDir(), "a) b (c")
	if err := os.Symlink(sleep, odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s, err := ReadStat(cmd.Process.Pid)
	if err != nil || s.Comm != "a) b (c" || s.PPID != os.Getpid() || s.PGRP <= 0 || s.StartTicks <= 0 {
		t.Fatalf("ReadStat = %+v, %v; want name %q, parent %d", s, err, "a) b (c", os.Getpid())
	}
	if _, err := ReadStat(1 << 30); err == nil {
		t.Error("ReadStat of a pid that cannot exist succeeded")
	}
}

// TestParseStatRefusesWhatItCannotRead: no name, too few fields, or a
// field that is not a number is an error naming the file.
func TestParseStatRefusesWhatItCannotRead(t *testing.T) {
	full := "1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 99 1000 10"
	if s, err := parseStat("x", []byte(full)); err != nil || s.Comm != "init" || s.PPID != 0 || s.PGRP != 1 || s.TPGID != -1 || s.StartTicks != 99 {
		t.Fatalf("parseStat(%q) = %+v, %v", full, s, err)
	}
	for _, bad := range []string{"", "1 init S 0", "1 (init) S 0 1 1", "1 (init) S x 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 99 1000 10"} {
		if _, err := parseStat("/proc/1/stat", []byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}
