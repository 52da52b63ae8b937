package tasks

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// A file rewritten 100 times a second, in a list of 1,000, for three
// seconds: reads are throttled (about one per Debounce, never one per
// write), a change to another file in the same list is still reported
// while the storm goes on, and the model ends with the last write.
func TestResilienceRewriteStorm(t *testing.T) {
	root := t.TempDir()
	list := filepath.Join(root, "big")
	for i := 1; i <= 1000; i++ {
		writeFile(t, filepath.Join(list, fmt.Sprintf("%d.json", i)), taskJSON(fmt.Sprint(i), StatusPending, fmt.Sprintf("task %d", i)))
	}
	h := startWatcher(t, root, "", func(c *Config) { c.Debounce = 25 * time.Millisecond })
	h.sync()
	before := h.w.eng.reads.Load()

	p := filepath.Join(list, "7.json")
	var writes atomic.Int64
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			st := StatusInProgress
			if i%2 == 1 {
				st = StatusPending
			}
			// Written in place, as an editor or a careless tool would, so a
			// read can catch a half-written file.
			if err := os.WriteFile(p, []byte(taskJSON("7", st, fmt.Sprintf("rewrite %d", i))), 0o644); err != nil {
				t.Error(err)
				return
			}
			writes.Add(1)
		}
	}()
	// The storm is counted in writes, not seconds: a loaded machine writes
	// less often, and the test waits for as many writes as it needs.
	waitWrites := func(n int64) {
		t.Helper()
		testkit.WaitForValue(t, 2*time.Minute, fmt.Sprintf("%d writes", n), func() (int64, bool) {
			w := writes.Load()
			return w, w >= n
		})
	}
	waitWrites(50)
	writeFile(t, filepath.Join(list, "500.json"), taskJSON("500", StatusCompleted, "task 500"))
	start := time.Now()
	h.expect(is(EventTaskStatusChanged, "big", "500", status(StatusPending, StatusCompleted)))
	t.Logf("a change next to the storm was reported in %s", time.Since(start).Round(time.Millisecond))
	waitWrites(250)
	close(stop)
	<-stopped
	last := writes.Load() - 1
	evs := h.sync()

	reads := h.w.eng.reads.Load() - before
	t.Logf("%d writes caused %d reads and %d events", writes.Load(), reads, len(evs))
	if reads >= writes.Load() {
		t.Errorf("%d writes caused %d reads: rewrites are not coalesced", writes.Load(), reads)
	}
	l, _ := h.list("big")
	if len(l.Tasks) != 1000 || len(l.Errors) != 0 {
		t.Fatalf("the list has %d tasks and errors %v", len(l.Tasks), l.Errors)
	}
	if got := l.Tasks[6]; got.Subject != fmt.Sprintf("rewrite %d", last) {
		t.Errorf("task 7 ends as %q, want the last write (rewrite %d)", got.Subject, last)
	}
	for _, e := range evs {
		if e.Kind == EventFileError {
			t.Errorf("a half-written file surfaced as an error: %v", e)
		}
	}
}

// The whole task directory deleted while files are being written, and
// recreated with other lists: the removed lists are reported gone, the new
// ones are read in full, and the watcher keeps watching.
func TestResilienceTaskDirDeletedAndRecreated(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tasks")
	for i := 1; i <= 1000; i++ {
		writeFile(t, filepath.Join(root, "big", fmt.Sprintf("%d.json", i)), taskJSON(fmt.Sprint(i), StatusPending, "x"))
	}
	writeFile(t, filepath.Join(root, "small", "1.json"), taskJSON("1", StatusPending, "one"))
	h := startWatcher(t, root, "")
	if l, _ := h.list("big"); len(l.Tasks) != 1000 {
		t.Fatalf("loaded %d tasks", len(l.Tasks))
	}

	for round := range 3 {
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		h.expect(is(EventListRemoved, "big", ""), is(EventListRemoved, "small", ""))
		if lists := h.w.Snapshot(); len(lists) != 0 {
			t.Fatalf("round %d: %d lists left after the directory went", round, len(lists))
		}
		name := fmt.Sprintf("new%d", round)
		for i := 1; i <= 1000; i++ {
			writeFile(t, filepath.Join(root, "big", fmt.Sprintf("%d.json", i)), taskJSON(fmt.Sprint(i), StatusCompleted, name))
		}
		writeFile(t, filepath.Join(root, "small", "1.json"), taskJSON("1", StatusPending, name))
		h.sync()
		big, ok := h.list("big")
		if !ok || len(big.Tasks) != 1000 || big.Tasks[999].Subject != name || big.Progress.Completed != 1000 {
			t.Fatalf("round %d: big after recreation: ok %v, %d tasks, %d completed", round, ok, len(big.Tasks), big.Progress.Completed)
		}
		writeFile(t, filepath.Join(root, "small", "2.json"), taskJSON("2", StatusPending, "still watched"))
		h.expect(is(EventTaskCreated, "small", "2"))
		if err := os.Remove(filepath.Join(root, "small", "2.json")); err != nil {
			t.Fatal(err)
		}
		h.expect(is(EventTaskDeleted, "small", "2"))
		h.other = nil
	}
}
