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
