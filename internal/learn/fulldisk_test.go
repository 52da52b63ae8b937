package learn

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// runFullDisk runs the test named helper in a child process whose files
// cannot grow past limit bytes (RLIMIT_FSIZE: writes beyond it fail with
// EFBIG, as on a full disk; Go ignores SIGXFSZ), with umask 022, and
// returns its output. The limit is the child's own: other tests write on.
func runFullDisk(t *testing.T, helper, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.v")
	cmd.Env = append(os.Environ(), "LEARN_FULLDISK_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", helper, err, out)
	}
	return string(out)
}

func fullDiskChild(t *testing.T, limit uint64) string {
	dir := os.Getenv("LEARN_FULLDISK_DIR")
	if dir == "" {
		return ""
	}
	syscall.Umask(0o022)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// learn.db used to be left 0644 (the umask's mode) when its first write
// failed on a full disk.
func TestOpenDBOnFullDiskKeepsItPrivate(t *testing.T) {
	dir := t.TempDir()
	out := runFullDisk(t, "TestOpenDBFullDiskHelper", dir)
	if !strings.Contains(out, "open failed: ") || !strings.Contains(out, "free disk space") {
		t.Fatalf("OpenDB on a full disk did not fail with the storage sentence:\n%s", out)
	}
	names, _ := filepath.Glob(filepath.Join(dir, FileName+"*"))
	if len(names) == 0 {
		t.Fatal("no database file to check")
	}
	for _, n := range names {
		fi, err := os.Stat(n)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", filepath.Base(n), fi.Mode().Perm())
		}
	}
}

func TestOpenDBFullDiskHelper(t *testing.T) {
	dir := fullDiskChild(t, 0)
	if dir == "" {
		return // only a helper
	}
	db, err := OpenDB(filepath.Join(dir, FileName))
	if err == nil {
		db.Close()
		t.Log("open succeeded")
		return
	}
	if !errors.Is(err, api.ErrLearnStorage) {
		t.Fatalf("error is not ErrStorage: %v", err)
	}
	t.Logf("open failed: %v", err)
}

// A full disk is a storage error the caller can act on, not an internal one.
func TestReportOutcomeOnFullDiskIsAStorageError(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	out := runFullDisk(t, "TestReportOutcomeFullDiskHelper", dir)
	if !strings.Contains(out, "report failed: ") {
		t.Fatalf("helper:\n%s", out)
	}
}

func TestReportOutcomeFullDiskHelper(t *testing.T) {
	if os.Getenv("LEARN_FULLDISK_DIR") == "" {
		return // only a helper
	}
	s, err := Open(os.Getenv("LEARN_FULLDISK_DIR"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fullDiskChild(t, 1)
	_, err = s.ReportOutcome(context.Background(), api.Outcome{Initiative: "x", Outcome: api.OutcomeSuccess, Learnings: []string{strings.Repeat("a long learning ", 100)}})
	if err == nil || !errors.Is(err, api.ErrLearnStorage) || !strings.Contains(err.Error(), "free disk space") {
		t.Fatalf("ReportOutcome on a full disk = %v, want ErrStorage", err)
	}
	t.Logf("report failed: %v", err)
}
