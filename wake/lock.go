package wake

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is the name of the lock in the state dir.
const LockFile = "system3.lock"

// ErrLocked matches (errors.Is) the error [AcquireLock] returns when another
// process owns the state dir.
var ErrLocked = errors.New("state dir in use")

// LockedError names the process that holds the lock.
type LockedError struct {
	Path string
	PID  int // 0 if the holder's pid could not be read
}

func (e *LockedError) Error() string {
	who := "another system3"
	if e.PID > 0 {
		who = fmt.Sprintf("another system3 (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s is already using %s; stop it, or give this one another --state-dir", who, filepath.Dir(e.Path))
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock is an exclusive claim on a state dir, held until Release or process
// exit (the kernel drops the flock with the last descriptor, so a crash never
// leaves a stale lock behind). Go opens files close-on-exec, so a tmux server
// we start does not inherit the descriptor and keep the lock after we exit.
type Lock struct {
	f    *os.File
	path string
}

// AcquireLock claims dir (creating it) for this process without waiting, and
// writes our pid into the lock file so a second system3 can say who holds it.
// flock works per open file description: a second AcquireLock in the same
// process fails too.
func AcquireLock(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the state dir (%w); give system3 a writable one with --state-dir or SYSTEM3_STATE_DIR", err)
	}
	path := filepath.Join(dir, LockFile)
	// Not O_TRUNC: the pid in the file belongs to the holder until we hold it.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the state dir %s is not writable (%w); give system3 a writable one with --state-dir or SYSTEM3_STATE_DIR", dir, err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, &LockedError{Path: path, PID: readPID(path)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	// A lock without a pid still protects the journal; only the message a
	// second process prints is poorer, so a failed write is not fatal.
	if f.Truncate(0) == nil {
		f.WriteAt(pid, 0)
	}
	return &Lock{f: f, path: path}, nil
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// Path returns the lock file's path.
func (l *Lock) Path() string { return l.path }

// Release gives the state dir up. The pid stays in the file; it is only read
// while the lock is held.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
