package tasks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// How long to wait for an event that should come. Only reached on failure.
const eventTimeout = 5 * time.Second

// readyTimeout bounds the first full read: a thousand files on a loaded
// 2-core machine under -race take seconds.
const readyTimeout = time.Minute

// harness runs a Watcher on real directories with real fsnotify.
type harness struct {
	t     *testing.T
	root  string
	todos string
	w     *Watcher
	sub   *Subscription
	other []Event // events read while looking for others
	syncN int
}

func startWatcher(t *testing.T, root, todos string, opts ...func(*Config)) *harness {
	t.Helper()
	cfg := Config{Root: root, TodosDir: todos, Debounce: 10 * time.Millisecond, RetryDelay: 100 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	w := NewWatcher(cfg)
	h := &harness{t: t, root: root, todos: todos, w: w, sub: w.Subscribe(8192)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(eventTimeout):
			t.Errorf("Run did not return after cancel")
		}
	})
	select {
	case <-w.Ready():
	case <-time.After(readyTimeout):
		t.Fatal("watcher not ready")
	}
	return h
}

type matcher struct {
	desc string
	f    func(Event) bool
}

// is matches an event of kind k for list (and task, if not empty).
func is(k EventKind, list, task string, more ...func(Event) bool) matcher {
	return matcher{
		desc: fmt.Sprintf("%s list=%q task=%q", k, list, task),
		f: func(e Event) bool {
			if e.Kind != k || e.ListID != list || (task != "" && e.TaskID != task) {
				return false
			}
			for _, m := range more {
				if !m(e) {
					return false
				}
			}
			return true
		},
	}
}

func status(from, to Status) func(Event) bool {
	return func(e Event) bool { return e.From == from && e.To == to && e.Task.Status == to }
}

func errContains(s string) func(Event) bool {
	return func(e Event) bool { return strings.Contains(e.Err, s) }
}

// expect reads events until every matcher has matched a distinct event, in
// any order, and returns the matched events in matcher order.
func (h *harness) expect(ms ...matcher) []Event {
	h.t.Helper()
	got := make([]Event, len(ms))
	done := make([]bool, len(ms))
	left := len(ms)
	deadline := time.After(eventTimeout)
	for left > 0 {
		select {
		case e, ok := <-h.sub.C():
			if !ok {
				h.t.Fatalf("event channel closed")
			}
			matched := false
			for i, m := range ms {
				if !done[i] && m.f(e) {
					got[i], done[i], matched = e, true, true
					left--
					break
				}
			}
			if !matched {
				h.other = append(h.other, e)
			}
		case <-deadline:
			var missing []string
			for i, m := range ms {
				if !done[i] {
					missing = append(missing, m.desc)
				}
			}
			h.t.Fatalf("timed out waiting for %q; other events: %v", missing, h.other)
		}
	}
	return got
}

// sync makes sure the watcher has handled every change made before it, and
// returns the events not yet consumed by expect (sentinel events left out).
// It writes a task to a sentinel list and waits for it: fsnotify delivers in
// order, and a batch's events are published together, so once the
// sentinel's event is read everything earlier is queued.
func (h *harness) sync() []Event {
	h.t.Helper()
	h.syncN++
	writeFile(h.t, filepath.Join(h.root, "zz-sync", fmt.Sprintf("%d.json", h.syncN)), taskJSON(fmt.Sprint(h.syncN), StatusPending, "sync"))
	h.expect(is(EventTaskCreated, "zz-sync", fmt.Sprint(h.syncN)))
	for {
		select {
		case e := <-h.sub.C():
			h.other = append(h.other, e)
			continue
		default:
		}
		break
	}
	var out []Event
	for _, e := range h.other {
		if e.ListID != "zz-sync" {
			out = append(out, e)
		}
	}
	h.other = nil
	return out
}

func kinds(evs []Event) []string {
	var s []string
	for _, e := range evs {
		s = append(s, e.String())
	}
	return s
}

func (h *harness) list(id string) (List, bool) {
	return Find(h.w.Snapshot(), id)
}

// writeAtomic writes like write-file-atomic: a temporary file in the same
// directory, renamed over the target.
func writeAtomic(t *testing.T, p, content string) {
	t.Helper()
	tmp := p + ".tmp." + fmt.Sprint(time.Now().UnixNano())
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

func TestWatchTaskLifecycle(t *testing.T) {
	root := t.TempDir()
	list := filepath.Join(root, "L")
	writeFile(t, filepath.Join(list, ".lock"), "")
	writeFile(t, filepath.Join(list, "1.json"), taskJSON("1", StatusPending, "first"))
	h := startWatcher(t, root, "")

	l, ok := h.list("L")
	if !ok || len(l.Tasks) != 1 || l.Tasks[0].Subject != "first" {
		t.Fatalf("initial snapshot = %+v", l)
	}
	if evs := h.sync(); len(evs) != 0 {
		t.Errorf("initial state produced events: %v", kinds(evs))
	}

	// Created.
	writeFile(t, filepath.Join(list, "2.json"), taskJSON("2", StatusPending, "second", "1"))
	ev := h.expect(is(EventTaskCreated, "L", "2"))[0]
	if ev.Task.Subject != "second" || ev.Path != filepath.Join(list, "2.json") || ev.Time.IsZero() || ev.ListPath != list {
		t.Errorf("created event = %+v", ev)
	}
	if l, ok := h.w.Lookup(ev.ListPath); !ok || len(l.Tasks) != 2 {
		t.Errorf("Lookup(%q) = %+v, %v", ev.ListPath, l, ok)
	}
	if _, ok := h.w.Lookup(filepath.Join(root, "nope")); ok {
		t.Error("Lookup found a list that does not exist")
	}
	if l, _ := h.list("L"); len(l.Progress.Blocked) != 1 {
		t.Errorf("task 2 should be blocked by 1: %+v", l.Progress)
	}

	// Rewritten in place: status change.
	writeFile(t, filepath.Join(list, "1.json"), taskJSON("1", StatusInProgress, "first"))
	h.expect(is(EventTaskStatusChanged, "L", "1", status(StatusPending, StatusInProgress)))

	// Rewritten in place: other fields only.
	writeFile(t, filepath.Join(list, "1.json"), taskJSON("1", StatusInProgress, "first, renamed"))
	ev = h.expect(is(EventTaskUpdated, "L", "1"))[0]
	if !slices.Equal(ev.Fields, []string{"subject", "active_form"}) || ev.Task.Subject != "first, renamed" {
		t.Errorf("updated event = %+v", ev)
	}

	// Renamed over (atomic write), with the temporary file never showing up.
	writeAtomic(t, filepath.Join(list, "1.json"), taskJSON("1", StatusCompleted, "first, renamed"))
	h.expect(is(EventTaskStatusChanged, "L", "1", status(StatusInProgress, StatusCompleted)))
	if l, _ := h.list("L"); len(l.Tasks) != 2 || len(l.Progress.Blocked) != 0 || l.Progress.Completed != 1 {
		t.Errorf("after completing 1: %+v", l)
	}

	// Completing the last task completes the list, once.
	writeAtomic(t, filepath.Join(list, "2.json"), taskJSON("2", StatusCompleted, "second", "1"))
	h.expect(is(EventTaskStatusChanged, "L", "2", status(StatusPending, StatusCompleted)), is(EventListCompleted, "L", "", func(e Event) bool { return e.Total == 2 }))
	writeFile(t, filepath.Join(list, "2.json"), taskJSON("2", StatusCompleted, "second", "1")) // same content again
	for _, e := range h.sync() {
		t.Errorf("rewrite with the same content produced %v", e)
	}

	// A new task reopens the list; completing it completes the list again.
	writeFile(t, filepath.Join(list, "3.json"), taskJSON("3", StatusPending, "third"))
	h.expect(is(EventTaskCreated, "L", "3"))
	writeFile(t, filepath.Join(list, "3.json"), taskJSON("3", StatusCompleted, "third"))
	h.expect(is(EventTaskStatusChanged, "L", "3"), is(EventListCompleted, "L", ""))

	// Deleted.
	if err := os.Remove(filepath.Join(list, "2.json")); err != nil {
		t.Fatal(err)
	}
	ev = h.expect(is(EventTaskDeleted, "L", "2"))[0]
	if ev.Task.Subject != "second" {
		t.Errorf("deleted event should carry the last version: %+v", ev)
	}
	// Renamed away.
	if err := os.Rename(filepath.Join(list, "3.json"), filepath.Join(list, ".3.json.bak")); err != nil {
		t.Fatal(err)
	}
	h.expect(is(EventTaskDeleted, "L", "3"))
	if l, _ := h.list("L"); !slices.Equal(taskIDs(l), []string{"1"}) {
		t.Errorf("tasks after deletions = %q", taskIDs(l))
	}
	for _, e := range h.sync() {
		t.Errorf("unexpected event %v", e)
	}
}

func TestWatchListDirRemovedAndRecreated(t *testing.T) {
	root := t.TempDir()
	list := filepath.Join(root, "L")
	writeFile(t, filepath.Join(list, "1.json"), taskJSON("1", StatusPending, "one"))
	writeFile(t, filepath.Join(list, "2.json"), taskJSON("2", StatusPending, "two"))
	h := startWatcher(t, root, "")

	// New list.
	writeFile(t, filepath.Join(root, "M", "1.json"), taskJSON("1", StatusPending, "m-one"))
	h.expect(is(EventListAdded, "M", ""), is(EventTaskCreated, "M", "1"))

	if err := os.RemoveAll(list); err != nil {
		t.Fatal(err)
	}
	h.expect(is(EventListRemoved, "L", ""))
	if _, ok := h.list("L"); ok {
		t.Error("removed list still in the snapshot")
	}
	for _, e := range h.sync() {
		if e.Kind != EventTaskDeleted || e.ListID != "L" {
			t.Errorf("unexpected event %v", e)
		}
	}

	writeFile(t, filepath.Join(list, "1.json"), taskJSON("1", StatusCompleted, "one again"))
	h.expect(is(EventListAdded, "L", ""), is(EventTaskCreated, "L", "1"), is(EventListCompleted, "L", ""))
	writeFile(t, filepath.Join(list, "2.json"), taskJSON("2", StatusPending, "two again"))
	h.expect(is(EventTaskCreated, "L", "2"))
	if l, _ := h.list("L"); !slices.Equal(taskIDs(l), []string{"1", "2"}) || l.Tasks[0].Subject != "one again" {
		t.Errorf("recreated list = %+v", l)
	}

	// Removed and recreated faster than the debounce: the list is re-read.
	if err := os.RemoveAll(list); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(list, "5.json"), taskJSON("5", StatusPending, "five"))
	h.sync()
	if l, ok := h.list("L"); !ok || !slices.Equal(taskIDs(l), []string{"5"}) {
		t.Errorf("list after a quick remove and recreate = %+v (ok=%v)", l, ok)
	}
	// And it is still watched.
	writeFile(t, filepath.Join(list, "6.json"), taskJSON("6", StatusPending, "six"))
	h.expect(is(EventTaskCreated, "L", "6"))
}

func TestWatchRootCreatedLater(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "claude", "tasks") // neither exists yet
	h := startWatcher(t, root, "")
	if lists := h.w.Snapshot(); len(lists) != 0 {
		t.Fatalf("snapshot = %+v", lists)
	}

	writeFile(t, filepath.Join(root, "L", "1.json"), taskJSON("1", StatusPending, "one"))
	h.expect(is(EventListAdded, "L", ""), is(EventTaskCreated, "L", "1"))
	writeFile(t, filepath.Join(root, "L", "2.json"), taskJSON("2", StatusPending, "two"))
	h.expect(is(EventTaskCreated, "L", "2"))

	// The whole root goes away, and comes back.
	if err := os.RemoveAll(filepath.Join(base, "claude")); err != nil {
		t.Fatal(err)
	}
	h.expect(is(EventListRemoved, "L", ""))
	writeFile(t, filepath.Join(root, "N", "1.json"), taskJSON("1", StatusPending, "n-one"))
	h.expect(is(EventListAdded, "N", ""), is(EventTaskCreated, "N", "1"))
	if lists := h.w.Snapshot(); len(lists) != 1 || lists[0].ID != "N" {
		t.Errorf("snapshot = %+v", lists)
	}

	// Removed and recreated faster than the debounce, with different content.
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "N", "2.json"), taskJSON("2", StatusPending, "n-two"))
	h.sync()
	if l, ok := h.list("N"); !ok || !slices.Equal(taskIDs(l), []string{"2"}) {
		t.Errorf("list N after the root was recreated = %+v", l)
	}
	writeFile(t, filepath.Join(root, "N", "3.json"), taskJSON("3", StatusPending, "n-three"))
	h.expect(is(EventTaskCreated, "N", "3"))
}

// TestWatchClaudeCodeWritePattern replays how Claude Code 2.1 rewrites a
// task file (seen with strace): open without O_TRUNC, write the new content
// over the old, then ftruncate to the new length. A read between the two sees
// the new JSON followed by the tail of the old one. That must not surface as
// an error, nor lose the task.
func TestWatchClaudeCodeWritePattern(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "L", "1.json")
	writeFile(t, p, taskJSON("1", StatusPending, "a subject long enough to leave a tail behind when shortened"))
	h := startWatcher(t, root, "")

	short := taskJSON("1", StatusInProgress, "short")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(short); err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * time.Millisecond) // past the debounce: the watcher reads the mixed content
	if err := f.Truncate(int64(len(short))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h.expect(is(EventTaskStatusChanged, "L", "1", status(StatusPending, StatusInProgress)))
	time.Sleep(150 * time.Millisecond) // past the retry delay
	for _, e := range h.sync() {
		if e.Kind == EventFileError {
			t.Errorf("a write finished in time was reported: %v", e)
		}
	}
	// Its lock directories (proper-lockfile's <file>.lock) are not tasks.
	if err := os.Mkdir(p+".lock", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range h.sync() {
		t.Errorf("lock directory produced %v", e)
	}
}

// TestWatchPolling runs the fallback used when fsnotify is unavailable.
func TestWatchPolling(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tasks")
	writeFile(t, filepath.Join(root, "L", "1.json"), taskJSON("1", StatusPending, "one"))
	w := NewWatcher(Config{Root: root, TodosDir: filepath.Join(base, "todos"), PollInterval: 20 * time.Millisecond})
	w.pollOnly = true
	sub := w.Subscribe(100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	h := &harness{t: t, root: root, w: w, sub: sub}
	<-w.Ready()

	writeFile(t, filepath.Join(root, "L", "1.json"), taskJSON("1", StatusCompleted, "one"))
	writeFile(t, filepath.Join(root, "M", "1.json"), taskJSON("1", StatusPending, "m"))
	writeFile(t, filepath.Join(base, "todos", "a-agent-b.json"), `[{"content":"x","status":"pending"}]`)
	h.expect(is(EventTaskStatusChanged, "L", "1"), is(EventListCompleted, "L", ""),
		is(EventListAdded, "M", ""), is(EventTaskCreated, "M", "1"),
		is(EventListAdded, "a-agent-b", ""), is(EventTaskCreated, "a-agent-b", "1"))
	if err := os.RemoveAll(filepath.Join(root, "L")); err != nil {
		t.Fatal(err)
	}
	h.expect(is(EventListRemoved, "L", ""))
}

func TestWatchHalfWrittenFile(t *testing.T) {
	root := t.TempDir()
	list := filepath.Join(root, "L")
	p := filepath.Join(list, "1.json")
	writeFile(t, p, taskJSON("1", StatusPending, "one"))
	h := startWatcher(t, root, "")

	// Caught mid-write and never finished: reported after the retry delay,
	// with no further event, and the last good version stays.
	full := taskJSON("1", StatusInProgress, "one")
	writeFile(t, p, full[:len(full)/2])
	ev := h.expect(is(EventFileError, "L", "", errContains("not valid JSON")))[0]
	if ev.Path != p {
		t.Errorf("error path = %q", ev.Path)
	}
	l, _ := h.list("L")
	if len(l.Tasks) != 1 || l.Tasks[0].Status != StatusPending || len(l.Errors) != 1 || l.Errors[0].Path != p {
		t.Errorf("snapshot during the error = %+v", l)
	}

	// Finished: the task updates and the error clears.
	writeFile(t, p, full)
	h.expect(is(EventTaskStatusChanged, "L", "1", status(StatusPending, StatusInProgress)), is(EventFileRecovered, "L", ""))
	if l, _ := h.list("L"); len(l.Errors) != 0 {
		t.Errorf("errors after recovery = %+v", l.Errors)
	}

	// Half-written and finished quickly: no error is ever reported.
	full = taskJSON("1", StatusCompleted, "one")
	writeFile(t, p, full[:10])
	writeFile(t, p, full)
	h.expect(is(EventTaskStatusChanged, "L", "1", status(StatusInProgress, StatusCompleted)))
	time.Sleep(150 * time.Millisecond) // past the retry delay
	for _, e := range h.sync() {
		if e.Kind == EventFileError {
			t.Errorf("a write finished in time should not be reported: %v", e)
		}
	}

	// A new file that starts broken: error first, task when it is fixed.
	p2 := filepath.Join(list, "2.json")
	writeFile(t, p2, "")
	h.expect(is(EventFileError, "L", "", errContains("the file is empty")))
	writeFile(t, p2, taskJSON("2", StatusPending, "two"))
	h.expect(is(EventTaskCreated, "L", "2"), is(EventFileRecovered, "L", ""))
}

func TestWatchFileProblems(t *testing.T) {
	root := t.TempDir()
	list := filepath.Join(root, "L")
	writeFile(t, filepath.Join(list, "1.json"), taskJSON("1", StatusPending, "one"))
	h := startWatcher(t, root, "")

	// A directory named like a task.
	if err := os.Mkdir(filepath.Join(list, "7.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.expect(is(EventFileError, "L", "", errContains("directory, not a task file")))
	if err := os.Remove(filepath.Join(list, "7.json")); err != nil {
		t.Fatal(err)
	}
	h.expect(is(EventFileRecovered, "L", ""))

	// An unknown status: the task shows, with a problem.
	writeFile(t, filepath.Join(list, "1.json"), taskJSON("1", "blocked", "one"))
	h.expect(is(EventTaskStatusChanged, "L", "1", status(StatusPending, "blocked")), is(EventFileError, "L", "", errContains(`unknown status "blocked"`)))
	writeFile(t, filepath.Join(list, "1.json"), taskJSON("1", StatusPending, "one"))
	h.expect(is(EventTaskStatusChanged, "L", "1"), is(EventFileRecovered, "L", ""))

	// A file that is bad and then deleted: the problem goes with it.
	writeFile(t, filepath.Join(list, "3.json"), "{{{")
	h.expect(is(EventFileError, "L", ""))
	if err := os.Remove(filepath.Join(list, "3.json")); err != nil {
		t.Fatal(err)
	}
	h.expect(is(EventFileRecovered, "L", ""))
	for _, e := range h.sync() {
		t.Errorf("unexpected event %v", e)
	}
}

func TestWatchLegacyTodos(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tasks")
	todos := filepath.Join(base, "todos") // created after start
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	h := startWatcher(t, root, todos)

	p := filepath.Join(todos, "s1-agent-s1.json")
	item := func(content string, s Status) string {
		return fmt.Sprintf(`{"content":%q,"status":%q,"activeForm":%q}`, content, s, content+"-ing")
	}
	writeFile(t, p, "["+item("a", StatusPending)+","+item("b", StatusPending)+"]")
	evs := h.expect(is(EventListAdded, "s1-agent-s1", ""), is(EventTaskCreated, "s1-agent-s1", "1"), is(EventTaskCreated, "s1-agent-s1", "2"))
	if !evs[0].Legacy {
		t.Errorf("legacy flag missing: %+v", evs[0])
	}
	writeAtomic(t, p, "["+item("a", StatusCompleted)+"]")
	h.expect(is(EventTaskStatusChanged, "s1-agent-s1", "1", status(StatusPending, StatusCompleted)),
		is(EventTaskDeleted, "s1-agent-s1", "2"), is(EventListCompleted, "s1-agent-s1", ""))
	writeFile(t, p, "[")
	h.expect(is(EventFileError, "s1-agent-s1", ""))
	if l, _ := h.list("s1-agent-s1"); len(l.Tasks) != 1 || l.Tasks[0].Status != StatusCompleted {
		t.Errorf("last good version lost: %+v", l)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	h.expect(is(EventListRemoved, "s1-agent-s1", ""))
	if lists := h.w.Snapshot(); len(lists) != 0 {
		t.Errorf("snapshot = %+v", lists)
	}
}

func TestWatchCoalescesRewrites(t *testing.T) {
	root := t.TempDir()
	list := filepath.Join(root, "L")
	for i := 1; i <= 50; i++ {
		writeFile(t, filepath.Join(list, fmt.Sprintf("%d.json", i)), taskJSON(fmt.Sprint(i), StatusPending, "task"))
	}
	h := startWatcher(t, root, "", func(c *Config) { c.Debounce = 30 * time.Millisecond })
	h.sync()

	before := h.w.eng.reads.Load()
	p := filepath.Join(list, "7.json")
	for i := range 100 {
		writeFile(t, p, taskJSON("7", StatusInProgress, fmt.Sprintf("rewrite %d", i)))
	}
	evs := h.sync()
	reads := h.w.eng.reads.Load() - before - 1 // the sentinel is read too
	t.Logf("100 rewrites: %d reads, %d events", reads, len(evs))
	if reads < 1 || reads > 20 {
		t.Errorf("100 rapid rewrites caused %d reads, want them coalesced (and only the changed file read)", reads)
	}
	if l, _ := h.list("L"); l.Tasks[6].Subject != "rewrite 99" || l.Tasks[6].Status != StatusInProgress {
		t.Errorf("final state = %+v", l.Tasks[6])
	}
	if len(evs) == 0 || len(evs) > 2*int(reads) {
		t.Errorf("events = %v", kinds(evs))
	}
}

func TestWatchThousandTasks(t *testing.T) {
	root := t.TempDir()
	list := filepath.Join(root, "big")
	for i := 1; i <= 1000; i++ {
		writeFile(t, filepath.Join(list, fmt.Sprintf("%d.json", i)), taskJSON(fmt.Sprint(i), StatusPending, fmt.Sprintf("task %d", i)))
	}
	start := time.Now()
	h := startWatcher(t, root, "")
	loaded := time.Since(start)
	t.Logf("initial load of 1,000 task files: %v", loaded)

	l, _ := h.list("big")
	if len(l.Tasks) != 1000 || l.Tasks[999].ID != "1000" {
		t.Fatalf("loaded %d tasks", len(l.Tasks))
	}

	// One change reads one file, not the list.
	h.sync()
	before := h.w.eng.reads.Load()
	writeFile(t, filepath.Join(list, "500.json"), taskJSON("500", StatusCompleted, "task 500"))
	h.expect(is(EventTaskStatusChanged, "big", "500"))
	h.sync()
	if reads := h.w.eng.reads.Load() - before; reads != 2 { // the change and the sentinel
		t.Errorf("one change caused %d reads", reads)
	}

	// 1,000 files appearing at once in a new list.
	start = time.Now()
	var ms []matcher
	ms = append(ms, is(EventListAdded, "big2", ""))
	for i := 1; i <= 1000; i++ {
		writeFile(t, filepath.Join(root, "big2", fmt.Sprintf("%d.json", i)), taskJSON(fmt.Sprint(i), StatusPending, "x"))
		ms = append(ms, is(EventTaskCreated, "big2", fmt.Sprint(i)))
	}
	h.expect(ms...)
	t.Logf("1,000 files created while watching: all events in %v", time.Since(start))
	if h.sub.Dropped() != 0 {
		t.Errorf("dropped %d events", h.sub.Dropped())
	}
	if l, _ := h.list("big2"); len(l.Tasks) != 1000 {
		t.Errorf("big2 has %d tasks", len(l.Tasks))
	}
}

func TestSubscriptionOverflow(t *testing.T) {
	root := t.TempDir()
	h := startWatcher(t, root, "")
	slow := h.w.Subscribe(3)
	for i := 1; i <= 20; i++ {
		writeFile(t, filepath.Join(root, "L", fmt.Sprintf("%d.json", i)), taskJSON(fmt.Sprint(i), StatusPending, "x"))
	}
	// The fast subscriber sees everything: publishing did not wait for the slow one.
	ms := []matcher{is(EventListAdded, "L", "")}
	for i := 1; i <= 20; i++ {
		ms = append(ms, is(EventTaskCreated, "L", fmt.Sprint(i)))
	}
	h.expect(ms...)
	// publish sends each event to the subscribers in turn, under w.mu: the
	// fast one can see the last event before the slow one is sent it.
	// Taking the lock waits for that delivery to finish.
	h.w.mu.Lock()
	h.w.mu.Unlock()

	var got []Event
	for len(got) < 4 {
		select {
		case e := <-slow.C():
			got = append(got, e)
		case <-time.After(eventTimeout):
			t.Fatalf("slow subscriber got only %v", kinds(got))
		}
	}
	if got[3].Kind != EventOverflow {
		t.Errorf("slow subscriber events = %v, want 3 then an overflow", kinds(got))
	}
	if slow.Dropped() != 21-3 {
		t.Errorf("dropped = %d, want 18", slow.Dropped())
	}
	if l, _ := h.list("L"); len(l.Tasks) != 20 {
		t.Errorf("snapshot has %d tasks; resync would be incomplete", len(l.Tasks))
	}
	slow.Close()
	slow.Close() // twice is fine
	if _, ok := <-slow.C(); ok {
		t.Error("closed subscription still delivers")
	}
}

func TestWatcherNeedsRoot(t *testing.T) {
	w := NewWatcher(Config{})
	if err := w.Run(context.Background()); err == nil {
		t.Error("Run without a root should fail")
	}
	<-w.Ready() // closed, not stuck
}

func TestWatcherLifecycle(t *testing.T) {
	w := NewWatcher(Config{Root: t.TempDir()})
	sub := w.Subscribe(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-w.Ready()
	if err := w.Run(ctx); err == nil {
		t.Error("second Run should fail")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil after cancel", err)
	}
	if _, ok := <-sub.C(); ok {
		t.Error("subscription open after Run returned")
	}
	if _, ok := <-w.Subscribe(1).C(); ok {
		t.Error("subscription made after Run returned should be closed")
	}
}

// TestEngineRescan covers the path taken when events are lost (kernel queue
// overflow) or cannot be had (polling): only changed files are read again,
// and the same events come out.
func TestEngineRescan(t *testing.T) {
	root := t.TempDir()
	list := filepath.Join(root, "L")
	for i := 1; i <= 3; i++ {
		writeFile(t, filepath.Join(list, fmt.Sprintf("%d.json", i)), taskJSON(fmt.Sprint(i), StatusPending, "x"))
	}
	e := newEngine(root, "")
	e.quiet = true
	e.syncAll(false)
	e.finish()
	e.quiet = false

	writeFile(t, filepath.Join(list, "2.json"), taskJSON("2", StatusCompleted, "x"))
	os.Chtimes(filepath.Join(list, "2.json"), time.Now().Add(time.Second), time.Now().Add(time.Second))
	if err := os.Remove(filepath.Join(list, "3.json")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "M", "1.json"), taskJSON("1", StatusCompleted, "x"))
	before := e.reads.Load()
	e.syncAll(true)
	evs := e.finish()
	if reads := e.reads.Load() - before; reads != 2 {
		t.Errorf("rescan read %d files, want 2 (the changed and the new one)", reads)
	}
	want := []string{
		`task_status_changed list="L" task="2" pending->completed`,
		`task_deleted list="L" task="3"`,
		`list_added list="M"`,
		`task_created list="M" task="1"`,
		`list_completed list="M" total=1`,
	}
	if got := kinds(evs); !slices.Equal(got, want) {
		t.Errorf("events = %q\nwant %q", got, want)
	}
}
