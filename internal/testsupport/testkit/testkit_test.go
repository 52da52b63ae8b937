package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that records a failure instead of ending the
// test, so the helpers' failures can be checked.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestWaitFor(t *testing.T) {
	n := 0
	WaitFor(t, time.Second, "the third look", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
	r := &recorder{TB: t}
	start := time.Now()
	WaitFor(r, 30*time.Millisecond, "what never holds", func() bool { return r.failed != "" })
	if !strings.Contains(r.failed, "timed out after 30ms waiting for what never holds") {
		t.Errorf("failure = %q", r.failed)
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("gave up after %s, before its timeout", took)
	}
	r = &recorder{TB: t}
	WaitFor(r, 0, "the prompt", func() bool { return false }, func() string { return "screen:\n$ make" }, func() string { return "log:\nstarted" })
	if r.failed != "timed out after 0s waiting for the prompt\nscreen:\n$ make\nlog:\nstarted" {
		t.Errorf("failure = %q", r.failed)
	}
}

func TestWaitForValue(t *testing.T) {
	n := 0
	if got := WaitForValue(t, time.Second, "the third look", func() (int, bool) { n++; return n, n == 3 }); got != 3 {
		t.Errorf("WaitForValue = %d, want the value of the look that held, 3", got)
	}
	r := &recorder{TB: t}
	start := time.Now()
	got := WaitForValue(r, 30*time.Millisecond, "a count of 10", func() (int, bool) { return 7, false })
	if r.failed != "timed out after 30ms waiting for a count of 10; last seen: 7" || got != 7 {
		t.Errorf("failure = %q, value %d", r.failed, got)
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("gave up after %s, before its timeout", took)
	}
	// A screen is shown from a line of its own, a struct with its fields.
	r = &recorder{TB: t}
	WaitForValue(r, 0, "the prompt", func() (string, bool) { return "$ make\nbuilding", false })
	if r.failed != "timed out after 0s waiting for the prompt; last seen:\n$ make\nbuilding" {
		t.Errorf("failure = %q", r.failed)
	}
	r = &recorder{TB: t}
	WaitForValue(r, 0, "the state", func() (struct{ State string }, bool) { return struct{ State string }{"idle"}, false })
	if r.failed != "timed out after 0s waiting for the state; last seen: {State:idle}" {
		t.Errorf("failure = %q", r.failed)
	}
	// What only a failure needs is taken once, when the wait fails.
	r = &recorder{TB: t}
	taken := 0
	WaitForValue(r, 20*time.Millisecond, "the state", func() (string, bool) { return "working", false }, func() string { taken++; return "screen:\n$ make" })
	if r.failed != "timed out after 20ms waiting for the state; last seen: working\nscreen:\n$ make" || taken != 1 {
		t.Errorf("failure = %q, the screen taken %d times", r.failed, taken)
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(time.Second, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Poll of a condition that holds at the third look: %d looks", n)
	}
	start := time.Now()
	if Poll(30*time.Millisecond, func() bool { return false }) {
		t.Error("Poll of a condition that never holds said it held")
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("gave up after %s, before its timeout", took)
	}
}

// A look that takes long is not repeated at once: the pause after it is
// as long as it took.
func TestWaitForPausesAsLongAsALook(t *testing.T) {
	var looks []time.Time
	WaitFor(t, time.Second, "the fourth look", func() bool {
		looks = append(looks, time.Now())
		time.Sleep(30 * time.Millisecond)
		return len(looks) == 4
	})
	for i := 1; i < len(looks); i++ {
		if gap := looks[i].Sub(looks[i-1]); gap < 60*time.Millisecond {
			t.Errorf("look %d came %s after the one before, which took 30ms", i+1, gap)
		}
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Errorf("len %d, want 800", len(got))
	}
}

func TestMustJSON(t *testing.T) {
	if got := MustJSON(t, map[string]int{"a": 1}); got != `{"a":1}` {
		t.Errorf("MustJSON = %s", got)
	}
	r := &recorder{TB: t}
	MustJSON(r, func() {})
	if !strings.Contains(r.failed, "encode func() as JSON") {
		t.Errorf("failure = %q", r.failed)
	}
}

func TestShortDir(t *testing.T) {
	var dir string
	t.Run("inner", func(t *testing.T) {
		dir = ShortDir(t)
		if len(filepath.Join(dir, "system3.sock")) > 100 {
			t.Errorf("%s is too long for a socket path", dir)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("stat %s: %v", dir, err)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after its test: %v", dir, err)
	}
}
