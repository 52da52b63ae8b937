package wake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestJournalRoundTrip(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	s := open(t, Config{Dir: dir, Clock: clock.Now})
	full := api.Wake{
		Reason: api.ReasonAwaitingInput, Key: "awaiting_input/%3", Session: "api", Pane: "%3", Agent: "claude",
		State: "waiting", Kind: "permission", Question: "Allow rm -rf build?", Options: []string{"yes", "no"},
		Evidence:        api.Evidence{Source: "screen", Rule: "claude.permission", Lines: []string{"Do you want to proceed?", "❯ 1. Yes"}},
		Tasks:           &api.WakeProgress{ListID: "PRD-1", Completed: 2, Total: 5, InProgress: []string{"write tests"}},
		SuggestedAction: "Answer the permission prompt.", Details: "line1\nline2 \"quoted\"",
	}
	a, _, err := s.Raise(full)
	if err != nil {
		t.Fatal(err)
	}
	b := raise(t, s, api.ReasonValidationFailed, "b")
	raise(t, s, api.ReasonSessionIdle, "c")
	s.Ack(b.ID, "mcp:claude")
	s.Resolve("c", "the test ended it")
	raise(t, s, api.ReasonValidationFailed, "")
	before, _ := s.List(api.AllWakes())
	lastSeq := s.LastSeq()

	// A reader without the lock sees the same, while the owner runs.
	read, warnings, err := ReadJournal(journalPath(dir))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("ReadJournal: %v %v", err, warnings)
	}
	if testkit.MustJSON(t, read) != testkit.MustJSON(t, before) {
		t.Fatalf("ReadJournal differs:\n got %s\nwant %s", testkit.MustJSON(t, read), testkit.MustJSON(t, before))
	}
	s.Close()

	s2 := open(t, Config{Dir: dir, Clock: clock.Now})
	after, _ := s2.List(api.AllWakes())
	if testkit.MustJSON(t, after) != testkit.MustJSON(t, before) {
		t.Fatalf("reopened store differs:\n got %s\nwant %s", testkit.MustJSON(t, after), testkit.MustJSON(t, before))
	}
	if s2.LastSeq() != lastSeq {
		t.Fatalf("LastSeq = %d, want %d", s2.LastSeq(), lastSeq)
	}
	// Active conditions survive the restart; cleared ones do not.
	if ev, isNew, _ := s2.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: full.Key}); isNew || ev.ID != a.ID {
		t.Fatalf("active condition lost: Raise = %s new=%v", ev.ID, isNew)
	}
	if ev, isNew, _ := s2.Raise(api.Wake{Reason: api.ReasonSessionIdle, Key: "c"}); !isNew || ev.Seq != lastSeq+1 {
		t.Fatalf("cleared condition: Raise = seq %d new=%v, want a new wake seq %d", ev.Seq, isNew, lastSeq+1)
	}
}

func TestRestart(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Config{Dir: dir})
	raise(t, s, api.ReasonAwaitingInput, "a")
	b := raise(t, s, api.ReasonAPIError, "b")
	raise(t, s, api.ReasonWorkerFailed, "c")
	if _, err := s.Ack(b.ID, "tui"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, Config{Dir: dir})
	if got := keys(s.Unacked()); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("Unacked after restart = %v, want [a c]", got)
	}
	if ev, ok := s.Get(b.ID); !ok || !ev.Acked || ev.AckedBy != "tui" {
		t.Fatalf("acked wake after restart = %+v, %v", ev, ok)
	}
	if d := raise(t, s, api.ReasonValidationFailed, ""); d.Seq != 4 {
		t.Fatalf("seq after restart = %d, want 4", d.Seq)
	}
}

// damagedJournal writes a journal with wakes a, b, c and an ack of b, and
// returns its lines.
func damagedJournal(t *testing.T, dir string) []string {
	t.Helper()
	s := open(t, Config{Dir: dir})
	raise(t, s, api.ReasonAwaitingInput, "a")
	b := raise(t, s, api.ReasonAwaitingInput, "b")
	raise(t, s, api.ReasonAwaitingInput, "c")
	s.Ack(b.ID, "t")
	s.Close()
	return strings.SplitAfter(strings.TrimSuffix(readFile(t, journalPath(dir)), "\n"), "\n")
}

func TestJournalDamage(t *testing.T) {
	cases := []struct {
		name         string
		damage       func(lines []string) string
		wantWarnings []string // "line: problem substring"
		wantUnacked  []string
	}{
		{
			name:        "intact",
			damage:      func(l []string) string { return strings.Join(l, "") + "\n" },
			wantUnacked: []string{"a", "c"},
		},
		{
			name: "torn last line",
			damage: func(l []string) string {
				return strings.Join(l, "") + "\n" + `{"v":1,"type":"raise","event":{"id":"w00`
			},
			wantWarnings: []string{"5: incomplete last record"},
			wantUnacked:  []string{"a", "c"},
		},
		{
			name: "truncated in the middle of the last record",
			damage: func(l []string) string {
				s := strings.Join(l, "")
				return s[:len(s)-10]
			},
			wantWarnings: []string{"4: incomplete last record"},
			wantUnacked:  []string{"a", "b", "c"}, // the ack was lost, nothing else
		},
		{
			name: "last record complete but for its newline",
			damage: func(l []string) string {
				return strings.Join(l, "")
			},
			wantUnacked: []string{"a", "c"},
		},
		{
			name: "garbage middle line",
			damage: func(l []string) string {
				return l[0] + "\x00\xff#not json at all\n" + strings.Join(l[1:], "") + "\n"
			},
			wantWarnings: []string{"2: damaged record"},
			wantUnacked:  []string{"a", "c"},
		},
		{
			name: "two records fused by a crash",
			damage: func(l []string) string {
				return l[0][:30] + strings.Join(l[1:], "") + "\n"
			},
			wantWarnings: []string{"1: damaged record"},
			wantUnacked:  []string{"c"},
		},
		{
			name: "unknown record type",
			damage: func(l []string) string {
				return l[0] + `{"v":2,"type":"snooze","id":"x"}` + "\n" + strings.Join(l[1:], "") + "\n"
			},
			wantWarnings: []string{`2: unknown type "snooze"`},
			wantUnacked:  []string{"a", "c"},
		},
		{
			name: "raise without id",
			damage: func(l []string) string {
				return `{"v":1,"type":"raise","event":{"seq":7}}` + "\n" + strings.Join(l, "") + "\n"
			},
			wantWarnings: []string{"1: without an event id"},
			wantUnacked:  []string{"a", "c"},
		},
		{
			name: "json that is not a record",
			damage: func(l []string) string {
				return "[1,2]\n" + strings.Join(l, "") + "\n"
			},
			wantWarnings: []string{"1: damaged record"},
			wantUnacked:  []string{"a", "c"},
		},
		{
			name: "blank lines",
			damage: func(l []string) string {
				return "\n  \n" + strings.Join(l, "\n") + "\n\n"
			},
			wantUnacked: []string{"a", "c"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			lines := damagedJournal(t, dir)
			if err := os.WriteFile(journalPath(dir), []byte(tc.damage(lines)), 0o600); err != nil {
				t.Fatal(err)
			}
			check := func(what string, evs []api.Wake, warnings []Warning) {
				t.Helper()
				var unacked []string
				for _, e := range evs {
					if !e.Acked {
						unacked = append(unacked, e.Key)
					}
				}
				if !slices.Equal(unacked, tc.wantUnacked) {
					t.Errorf("%s: unacked = %v, want %v", what, unacked, tc.wantUnacked)
				}
				if len(warnings) != len(tc.wantWarnings) {
					t.Fatalf("%s: warnings = %v, want %v", what, warnings, tc.wantWarnings)
				}
				for i, w := range warnings {
					line, problem, _ := strings.Cut(tc.wantWarnings[i], ": ")
					if fmt.Sprint(w.Line) != line || !strings.Contains(w.String(), problem) || w.Path != journalPath(dir) {
						t.Errorf("%s: warning %q, want line %s with %q", what, w, line, problem)
					}
				}
			}

			evs, warnings, err := ReadJournal(journalPath(dir))
			if err != nil {
				t.Fatal(err)
			}
			check("ReadJournal", evs, warnings)

			s, warnings, err := Open(Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			all, _ := s.List(api.AllWakes())
			check("Open", all, warnings)

			// Appending after the damage must not fuse a new record with a
			// torn line: the new wake survives the next restart.
			d, _, err := s.Raise(api.Wake{Reason: api.ReasonValidationFailed})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			evs, _, err = ReadJournal(journalPath(dir))
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 || evs[len(evs)-1].ID != d.ID {
				t.Fatalf("the wake raised after the damage was not read back: %v", keys(evs))
			}
		})
	}
}

// raiseRecord is a raise record as the store writes it, for hand-made journals.
func raiseRecord(t testing.TB, seq uint64, key string, reason api.Reason) (line, id string) {
	t.Helper()
	at := time.Date(2025, 11, 21, 9, 0, 0, 0, time.UTC).Add(time.Duration(seq) * time.Second)
	ev := api.Wake{ID: eventID(seq, at), Seq: seq, Time: at, Reason: reason, Key: key}
	b, err := encodeRecord(record{Type: recRaise, Event: &ev})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n"), ev.ID
}

func TestReplayIsIdempotent(t *testing.T) {
	// What a journal looks like after a retry wrote a batch again: the same
	// raise, clear and ack records twice.
	raiseA, wA := raiseRecord(t, 1, "k", api.ReasonAwaitingInput)
	clearA := `{"v":1,"type":"clear","key":"k","id":"` + wA + `"}`
	raiseB, wB := raiseRecord(t, 2, "k", api.ReasonAwaitingInput)
	ackB := `{"v":1,"type":"ack","ids":["` + wB + `"],"by":"first","at":"2025-11-21T10:00:00Z"}`
	ackB2 := `{"v":1,"type":"ack","ids":["` + wB + `"],"by":"second","at":"2025-11-21T10:00:01Z"}`
	journal := strings.Join([]string{raiseA, clearA, raiseB, ackB, clearA, raiseB, ackB2}, "\n") + "\n"
	dir := t.TempDir()
	os.WriteFile(journalPath(dir), []byte(journal), 0o600)
	s := open(t, Config{Dir: dir})
	all, _ := s.List(api.AllWakes())
	if len(all) != 2 {
		t.Fatalf("got %d wakes, want 2", len(all))
	}
	if all[1].AckedBy != "first" {
		t.Fatalf("second ack record changed the ack: %+v", all[1])
	}
	// k is still active for wB: a replayed clear of wA must not end it.
	if ev, isNew, _ := s.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: "k"}); isNew || ev.ID != wB {
		t.Fatalf("Raise(k) = %s new=%v, want %s kept active", ev.ID, isNew, wB)
	}
}

func TestJournalOutOfOrderSeqIsSkipped(t *testing.T) {
	r5, _ := raiseRecord(t, 5, "a", api.ReasonValidationFailed)
	r3, _ := raiseRecord(t, 3, "a", api.ReasonValidationFailed)
	j := `{"v":1,"type":"seq","seq":5}` + "\n" + r5 + "\n" + r3 + "\n"
	path := filepath.Join(t.TempDir(), JournalFile)
	os.WriteFile(path, []byte(j), 0o600)
	evs, warnings, err := ReadJournal(path)
	if err != nil || len(evs) != 1 || len(warnings) != 1 || !strings.Contains(warnings[0].Problem, "not after") {
		t.Fatalf("ReadJournal = %v, %v, %v", keys(evs), warnings, err)
	}
}

func TestReadJournalMissingOrUnreadable(t *testing.T) {
	dir := t.TempDir()
	evs, warnings, err := ReadJournal(journalPath(dir))
	if err != nil || evs != nil || warnings != nil {
		t.Fatalf("missing journal: %v %v %v, want nothing", evs, warnings, err)
	}
	// A directory where the journal should be cannot be read.
	os.Mkdir(journalPath(dir), 0o700)
	if _, _, err := ReadJournal(journalPath(dir)); err == nil || !strings.Contains(err.Error(), "cannot read the wake journal") {
		t.Fatalf("ReadJournal(dir) = %v", err)
	}
	if _, _, err := Open(Config{Dir: dir}); err == nil || !strings.Contains(err.Error(), "cannot read the wake journal") {
		t.Fatalf("Open with an unreadable journal = %v", err)
	}
}

func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	cfg := Config{Dir: dir, Clock: clock.Now, CompactRecords: 20, KeepAcked: 3, Buffer: 1000}
	s := open(t, cfg)
	sub, _ := s.Subscribe(t.Context(), api.AllWakes())
	defer sub.Close()

	unacked := raise(t, s, api.ReasonAwaitingInput, "unacked")
	active := raise(t, s, api.ReasonAwaitingInput, "active-acked")
	s.Ack(active.ID, "t")
	cleared := raise(t, s, api.ReasonWorkerFailed, "cleared-unacked")
	s.Resolve(cleared.Key, "the test ended it")
	var lastAcked []string
	for range 40 {
		ev := raise(t, s, api.ReasonValidationFailed, "")
		s.Ack(ev.ID, "t")
		lastAcked = append(lastAcked, ev.ID)
	}
	lastAcked = lastAcked[len(lastAcked)-3:]
	lastSeq := s.LastSeq()
	if h := s.Health(); !h.OK() || h.CompactErr != nil {
		t.Fatalf("Health = %+v", h)
	}
	s.Close()

	// 85 records were written; compaction kept the file small.
	if n := strings.Count(readFile(t, journalPath(dir)), "\n"); n > 2*20+10 {
		t.Fatalf("journal has %d records after compaction", n)
	}
	if tmps, _ := filepath.Glob(journalPath(dir) + ".tmp-*"); len(tmps) != 0 {
		t.Fatalf("temp files left: %v", tmps)
	}
	// Every change reached the subscriber, compaction or not.
	count := 0
	for len(sub.C) > 0 {
		<-sub.C
		count++
	}
	if want := 3 + 1 + 1 + 2*40; count != want {
		t.Fatalf("subscriber got %d messages, want %d", count, want)
	}

	s = open(t, cfg)
	if got := keys(s.Unacked()); !slices.Equal(got, []string{unacked.Key}) {
		t.Fatalf("Unacked after compaction = %v", got)
	}
	if got, ok := s.Get(cleared.ID); !ok || !got.Resolved || got.Resolution != "the test ended it" || got.Acked {
		t.Fatalf("the resolved, unacked wake after compaction = %+v, %v", got, ok)
	}
	all, _ := s.List(api.AllWakes())
	var acked []string
	for _, e := range all {
		if e.Acked && e.ID != active.ID {
			acked = append(acked, e.ID)
		}
	}
	if !slices.Equal(acked, lastAcked) {
		t.Fatalf("acked history = %v, want the last 3: %v", acked, lastAcked)
	}
	if ev, isNew, _ := s.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: "active-acked"}); isNew || ev.ID != active.ID || !ev.Acked {
		t.Fatalf("active acked condition lost in compaction: %+v new=%v", ev, isNew)
	}
	if ev, isNew, _ := s.Raise(api.Wake{Reason: api.ReasonWorkerFailed, Key: cleared.Key}); !isNew || ev.Seq != lastSeq+1 {
		t.Fatalf("cleared condition: seq %d new=%v, want a new wake with seq %d", ev.Seq, isNew, lastSeq+1)
	}
}

func TestCompactionFailureKeepsJournal(t *testing.T) {
	dir := t.TempDir()
	fl := &faults{}
	fl.set(func(f *faults) { f.tempErr = syscall.ENOSPC })
	cfg := Config{Dir: dir, CompactRecords: 5, ops: fl.ops()}
	s := open(t, cfg)
	for range 20 {
		raise(t, s, api.ReasonValidationFailed, "")
	}
	h := s.Health()
	if !h.OK() || !errors.Is(h.CompactErr, syscall.ENOSPC) {
		t.Fatalf("Health = %+v, want OK with a compaction error", h)
	}
	s.Close()
	s = open(t, Config{Dir: dir})
	if n := len(s.Unacked()); n != 20 {
		t.Fatalf("%d wakes after a failed compaction, want 20", n)
	}
}

// faults makes the journal's files fail on demand, for disk errors a test
// cannot cause for real (as root, a read-only dir is still writable).
type faults struct {
	mu       sync.Mutex
	openErr  error
	writeErr error
	partial  bool // write half the bytes before failing with writeErr
	syncErr  error
	tempErr  error
	devFull  bool // open /dev/full instead of the journal
}

func (fl *faults) set(f func(*faults)) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	f(fl)
}

func (fl *faults) get() faults {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return faults{openErr: fl.openErr, writeErr: fl.writeErr, partial: fl.partial, syncErr: fl.syncErr, tempErr: fl.tempErr, devFull: fl.devFull}
}

func (fl *faults) ops() fileOps {
	ops := osFileOps
	ops.openAppend = func(path string) (file, int64, bool, error) {
		cur := fl.get()
		if cur.openErr != nil {
			return nil, 0, false, &fs.PathError{Op: "open", Path: path, Err: cur.openErr}
		}
		if cur.devFull {
			f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			return f, 0, false, err
		}
		f, size, torn, err := osOpenAppend(path)
		if err != nil {
			return nil, 0, false, err
		}
		return &faultyFile{file: f, fl: fl}, size, torn, nil
	}
	ops.createTemp = func(dir, pattern string) (file, string, error) {
		if err := fl.get().tempErr; err != nil {
			return nil, "", &fs.PathError{Op: "createtemp", Path: dir, Err: err}
		}
		return osFileOps.createTemp(dir, pattern)
	}
	return ops
}

type faultyFile struct {
	file
	fl *faults
}

func (f *faultyFile) Write(p []byte) (int, error) {
	cur := f.fl.get()
	if cur.writeErr == nil {
		return f.file.Write(p)
	}
	if cur.partial {
		n, _ := f.file.Write(p[:len(p)/2])
		return n, cur.writeErr
	}
	return 0, cur.writeErr
}

func (f *faultyFile) Sync() error {
	if err := f.fl.get().syncErr; err != nil {
		return err
	}
	return f.file.Sync()
}

func TestDiskErrors(t *testing.T) {
	cases := []struct {
		name    string
		fault   func(*faults)
		cause   string
		damaged bool // a partial write leaves damaged lines behind
		viaSync bool
	}{
		{name: "disk full", fault: func(f *faults) { f.writeErr = syscall.ENOSPC }, cause: "no space left on device"},
		{name: "partial write", fault: func(f *faults) { f.writeErr, f.partial = syscall.ENOSPC, true }, cause: "no space left on device", damaged: true},
		{name: "fsync fails", fault: func(f *faults) { f.syncErr = syscall.EIO }, cause: "input/output error"},
		{name: "cannot open", fault: func(f *faults) { f.openErr = syscall.EROFS }, cause: "read-only file system"},
		{name: "recovered by Sync", fault: func(f *faults) { f.writeErr = syscall.ENOSPC }, cause: "no space left on device", viaSync: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fl := &faults{}
			s := open(t, Config{Dir: dir, ops: fl.ops()})
			sub, _ := s.Subscribe(t.Context(), api.WakeFilter{})
			defer sub.Close()
			raise(t, s, api.ReasonAwaitingInput, "before")

			fl.set(tc.fault)
			wantDelivered := []string{"before", "x1", "x2"}
			if tc.name == "cannot open" {
				wantDelivered = []string{"before", "x0", "x1", "x2"}
				// Force a reopen, as after any earlier failure.
				fl.set(func(f *faults) { f.writeErr = syscall.EBADF })
				s.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: "x0"})
				fl.set(func(f *faults) { f.writeErr = nil })
			}
			var failed []api.Wake
			for _, key := range []string{"x1", "x2"} {
				ev, isNew, err := s.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: key})
				var je *JournalError
				if !isNew || !errors.Is(err, ErrNotDurable) || !errors.As(err, &je) {
					t.Fatalf("Raise(%s) while failing = new %v, err %v; want a new wake and a JournalError", key, isNew, err)
				}
				if !strings.Contains(err.Error(), tc.cause) {
					t.Fatalf("error %q does not give the cause %q", err, tc.cause)
				}
				failed = append(failed, ev)
			}
			if _, err := s.Ack(failed[0].ID, "tui"); !errors.Is(err, ErrNotDurable) {
				t.Fatalf("Ack while failing: %v", err)
			}
			// Delivered and served from memory all the same.
			for _, want := range wantDelivered {
				if m := next(t, sub); m.Event.Key != want {
					t.Fatalf("subscriber got %q, want %q", m.Event.Key, want)
				}
			}
			h := s.Health()
			msg := fmt.Sprint(h.Err)
			if h.OK() || h.Pending < 3 || !strings.Contains(msg, "cannot write the wake journal "+journalPath(dir)+": "+tc.cause) ||
				!strings.Contains(msg, "kept in memory") || h.ErrAt.IsZero() {
				t.Fatalf("Health while failing = %+v, message %q", h, msg)
			}

			fl.set(func(f *faults) {
				f.openErr, f.writeErr, f.partial, f.syncErr, f.tempErr, f.devFull = nil, nil, false, nil, nil, false
			})
			if tc.viaSync {
				if err := s.Sync(); err != nil {
					t.Fatalf("Sync after recovery: %v", err)
				}
			} else if _, _, err := s.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: "after"}); err != nil {
				t.Fatalf("Raise after recovery: %v", err)
			}
			if h := s.Health(); !h.OK() || h.Err != nil {
				t.Fatalf("Health after recovery = %+v", h)
			}
			want, _ := s.List(api.AllWakes())
			s.Close()

			got, warnings, err := ReadJournal(journalPath(dir))
			if err != nil {
				t.Fatal(err)
			}
			if testkit.MustJSON(t, got) != testkit.MustJSON(t, want) {
				t.Fatalf("journal after recovery:\n got %s\nwant %s", testkit.MustJSON(t, got), testkit.MustJSON(t, want))
			}
			if (len(warnings) > 0) != tc.damaged {
				t.Fatalf("warnings = %v, want damaged lines: %v", warnings, tc.damaged)
			}
		})
	}
}

func TestDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	fl := &faults{devFull: true}
	s := open(t, Config{Dir: dir, ops: fl.ops()})
	ev, isNew, err := s.Raise(api.Wake{Reason: api.ReasonAPIError, Key: "k"})
	if !isNew || !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrNotDurable) {
		t.Fatalf("Raise on /dev/full = new %v, err %v", isNew, err)
	}
	if h := s.Health(); h.Pending != 1 || !strings.Contains(h.Err.Error(), "no space left on device") {
		t.Fatalf("Health = %+v", h)
	}
	fl.set(func(f *faults) { f.devFull = false })
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	evs, warnings, err := ReadJournal(journalPath(dir))
	if err != nil || len(warnings) != 0 || len(evs) != 1 || evs[0].ID != ev.ID {
		t.Fatalf("ReadJournal = %v, %v, %v", evs, warnings, err)
	}
}

func TestUncreatableStateDir(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notADir, nil, 0o600)
	s := open(t, Config{Dir: filepath.Join(notADir, "state")})
	if h := s.Health(); h.Err == nil {
		t.Fatalf("Health = %+v, want the mkdir error", h)
	}
	ev, isNew, err := s.Raise(api.Wake{Reason: api.ReasonValidationFailed})
	if !isNew || !errors.Is(err, ErrNotDurable) || len(s.Unacked()) != 1 || ev.Seq != 1 {
		t.Fatalf("Raise = %+v %v %v", ev, isNew, err)
	}
}

func TestRunRetriesFailingJournal(t *testing.T) {
	dir := t.TempDir()
	fl := &faults{}
	s := open(t, Config{Dir: dir, ops: fl.ops(), RetryInterval: 5 * time.Millisecond})
	fl.set(func(f *faults) { f.writeErr = syscall.ENOSPC })
	if _, _, err := s.Raise(api.Wake{Reason: api.ReasonValidationFailed}); !errors.Is(err, ErrNotDurable) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	fl.set(func(f *faults) { f.writeErr = nil })
	// No new wake comes to push the pending one: Run must write it.
	testkit.WaitForValue(t, 5*time.Second, "Run to catch up", func() (Health, bool) {
		h := s.Health()
		return h, h.OK()
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	s.Close()
	if err := s.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close = %v", err)
	}
	if evs, _, _ := ReadJournal(journalPath(dir)); len(evs) != 1 {
		t.Fatalf("journal holds %d wakes, want 1", len(evs))
	}
}

func TestHealthInMemory(t *testing.T) {
	s := open(t, Config{})
	raise(t, s, api.ReasonValidationFailed, "")
	if h := s.Health(); !h.OK() || h.Path != "" || s.Path() != "" || s.Sync() != nil {
		t.Fatalf("Health = %+v", h)
	}
}
