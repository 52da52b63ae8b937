// Package testkit holds the small helpers the tests of every package
// share: waiting for a condition or a value, a buffer a running command
// writes to while the test reads it, JSON that must encode, a temporary
// directory short enough for a Unix socket, and the registry of the
// programs outside Go that the tests run (LookPath). It imports nothing of
// system3's, so any package's tests can use it.
package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// WaitFor polls cond until it holds, and fails the test when timeout
// passes first, saying what it waited for, and then what each of also
// returns: what only a failure needs (a pane's screen, a log), taken when
// the wait fails rather than at every look. It polls every 2 ms at first,
// backing off to every 20 ms, or to as long as one look at cond takes when
// that is longer, so a condition that holds soon is seen at once and a
// long wait, or a costly look (a screen capture, a command run), does not
// keep the machine busy.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool, also ...func() string) {
	t.Helper()
	if !poll(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s%s", timeout, what, more(also))
	}
}

// WaitForValue polls get, as WaitFor polls its condition, until get says
// that the value it returns is the one waited for, and returns that value.
// When timeout passes first it fails the test, saying what it waited for
// and the last value get returned (a screen, a count, a state), so that a
// failure shows how far the wait got, and then what each of also returns,
// as WaitFor shows it.
func WaitForValue[T any](t testing.TB, timeout time.Duration, what string, get func() (T, bool), also ...func() string) T {
	t.Helper()
	var v T
	if !poll(timeout, func() bool {
		var ok bool
		v, ok = get()
		return ok
	}) {
		t.Fatalf("timed out after %s waiting for %s; last seen:%s%s", timeout, what, shown(v), more(also))
	}
	return v
}

// Poll looks at cond as WaitFor does, and says whether it held before
// timeout passed, failing nothing: for a wait whose end is no failure (a
// process given time to exit before it is killed), or whose failure the
// test reports itself and goes on.
func Poll(timeout time.Duration, cond func() bool) bool { return poll(timeout, cond) }

// poll looks at cond until it holds (true) or timeout has passed (false).
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	pause := 2 * time.Millisecond
	for {
		start := time.Now()
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(max(pause, time.Since(start)))
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// more is what each of also returns, each on lines of its own.
func more(also []func() string) string {
	var b strings.Builder
	for _, f := range also {
		b.WriteString("\n" + f())
	}
	return b.String()
}

// shown is v as a failure shows it: on a line of its own, or after a
// space when it is one short line.
func shown(v any) string {
	s := fmt.Sprintf("%+v", v)
	if strings.Contains(s, "\n") || len(s) > 80 {
		return "\n" + s
	}
	return " " + s
}

// SyncBuffer is a bytes.Buffer safe for concurrent use: what a running
// command or program has written so far, read while it runs.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// MustJSON is v encoded as JSON; the test fails if it cannot be.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T as JSON: %v", v, err)
	}
	return string(b)
}

// StateDir is a state dir for a test, mode 0700 as system3 requires of
// one (t.TempDir's dirs are 0755 under the usual umask, which system3
// refuses: other users could read them).
func StateDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ShortDir is a fresh directory under os.TempDir(), removed when the test
// ends. Unix socket paths are limited to about 107 bytes and t.TempDir()
// puts the test's name in the path, so a directory that will hold a
// socket comes from here.
func ShortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "s3")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
