//go:build unix

package wake

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := AcquireLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(readFile(t, first.Path())); got != fmt.Sprint(os.Getpid()) {
		t.Fatalf("lock file holds %q, want our pid", got)
	}

	// flock belongs to the open file description, so a second open in the
	// same process conflicts just like another process would.
	_, err = AcquireLock(dir)
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Fatalf("second AcquireLock = %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(msg, dir) {
		t.Fatalf("message %q should name the pid and the state dir", msg)
	}

	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	again, err := AcquireLock(dir)
	if err != nil {
		t.Fatalf("AcquireLock after Release: %v", err)
	}
	again.Release()
}

func TestLockedErrorWithoutPID(t *testing.T) {
	err := &LockedError{Path: "/s/system3.lock"}
	if got := err.Error(); !strings.HasPrefix(got, "another system3 is already using /s;") {
		t.Fatalf("message = %q", got)
	}
}

// A state dir that cannot be written (read-only, or not ours) is refused
// with a sentence that says what to do.
func TestResilienceLockInUnwritableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A path below a regular file can be neither created nor opened, for
	// root too.
	for _, dir := range []string{filepath.Join(file, "state"), file} {
		_, err := AcquireLock(dir)
		if err == nil || !strings.Contains(err.Error(), "--state-dir") || errors.Is(err, ErrLocked) {
			t.Errorf("AcquireLock(%s) = %v, want an error naming --state-dir", dir, err)
		}
	}
}
