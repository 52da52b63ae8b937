package wake

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// appendLines adds raw lines to the journal in dir.
func appendLines(t *testing.T, dir string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(journalPath(dir), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

func readQuarantine(t *testing.T, dir string) []quarantineEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, QuarantineFile))
	if err != nil {
		t.Fatalf("quarantine file: %v", err)
	}
	var out []quarantineEntry
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e quarantineEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("quarantine line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// One huge seq record appended to the journal used to overflow the seq
// counter: every later wake got seq 0 and a repeating id, was delivered but
// never stored, and was gone after a restart.
func TestJournalHugeSeqIsQuarantined(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	s := open(t, Config{Dir: dir, Clock: clock.Now})
	raise(t, s, api.ReasonAwaitingInput, "a")
	raise(t, s, api.ReasonAwaitingInput, "b")
	s.Close()
	huge := `{"v":1,"type":"seq","seq":18446744073709551615}`
	appendLines(t, dir, huge)

	s, warnings, err := Open(Config{Dir: dir, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || warnings[0].Line != 3 || !strings.Contains(warnings[0].Problem, "seq record") ||
		warnings[0].Quarantine != filepath.Join(dir, QuarantineFile) {
		t.Fatalf("warnings = %v, want the seq record on line 3, quarantined", warnings)
	}
	if !strings.Contains(warnings[0].String(), QuarantineFile) {
		t.Fatalf("the warning does not say where the line went: %s", warnings[0])
	}
	q := readQuarantine(t, dir)
	if len(q) != 1 || q[0].Line == nil || *q[0].Line != huge || q[0].LineNo != 3 || q[0].Problem == "" {
		t.Fatalf("quarantine = %+v, want the seq line whole", q)
	}
	if strings.Contains(readFile(t, journalPath(dir)), "18446744073709551615") {
		t.Fatal("the rejected line is still in the journal")
	}

	// New wakes get unique, increasing ids and are stored, acknowledged and
	// read back after a restart.
	var ids []string
	for i, key := range []string{"c", "d", "e"} {
		ev := raise(t, s, api.ReasonAwaitingInput, key)
		if ev.Seq != uint64(3+i) {
			t.Fatalf("wake %s has seq %d, want %d", key, ev.Seq, 3+i)
		}
		if len(ids) > 0 && ev.ID <= ids[len(ids)-1] {
			t.Fatalf("id %s does not sort after %s", ev.ID, ids[len(ids)-1])
		}
		if _, ok := s.Get(ev.ID); !ok {
			t.Fatalf("wake %s was delivered but not stored", ev.ID)
		}
		ids = append(ids, ev.ID)
	}
	if _, err := s.Ack(ids[0], "cli"); err != nil {
		t.Fatalf("ack of a new wake: %v", err)
	}
	s.Close()
	s = open(t, Config{Dir: dir, Clock: clock.Now}) // no warnings: the line is gone
	if got := keys(s.Unacked()); strings.Join(got, ",") != "a,b,d,e" {
		t.Fatalf("after a restart unacked = %v, want a b d e", got)
	}
	if s.LastSeq() != 5 {
		t.Fatalf("LastSeq = %d, want 5", s.LastSeq())
	}
}

// Records the store cannot have written are rejected, quarantined and
// reported, and cost no other wake.
func TestJournalRejectsForgedRecords(t *testing.T) {
	good1, id1 := raiseRecord(t, 1, "a", api.ReasonAwaitingInput)
	good2, id2 := raiseRecord(t, 2, "b", api.ReasonAwaitingInput)
	at := time.Date(2025, 11, 21, 9, 0, 30, 0, time.UTC)
	forge := func(mut func(ev *api.Wake)) string {
		ev := api.Wake{Seq: 2, Time: at, Reason: api.ReasonAwaitingInput, Key: "forged"}
		ev.ID = eventID(ev.Seq, ev.Time)
		mut(&ev)
		b, err := json.Marshal(record{V: 1, Type: recRaise, Event: &ev})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct {
		name, line, problem string
	}{
		{"id not made by the store", forge(func(ev *api.Wake) { ev.ID = "w1" }), "not of the form"},
		{"id of another seq", forge(func(ev *api.Wake) { ev.ID = eventID(7, ev.Time) }), "does not match its seq"},
		{"id of another time", forge(func(ev *api.Wake) { ev.ID = eventID(2, ev.Time.Add(time.Hour)) }), "does not match its seq"},
		{"seq jump", forge(func(ev *api.Wake) { ev.Seq = 900; ev.ID = eventID(900, ev.Time) }), "jumps past"},
		{"seq beyond ids", forge(func(ev *api.Wake) { ev.Seq = maxSeq + 1; ev.ID = eventID(ev.Seq, ev.Time) }), "outside 1.."},
		{"no time", forge(func(ev *api.Wake) { ev.Time = time.Time{}; ev.ID = "w0000000002-0" }), "no valid time"},
		{"no reason", forge(func(ev *api.Wake) { ev.Reason = "" }), "no valid reason"},
		{"reason with markup", forge(func(ev *api.Wake) { ev.Reason = "\x1b[31mred" }), "no valid reason"},
		{"no key", forge(func(ev *api.Wake) { ev.Key = "" }), "no valid key"},
		{"acked without time", forge(func(ev *api.Wake) { ev.Acked = true }), "acknowledged without"},
		{"ack fields on an open wake", forge(func(ev *api.Wake) { ev.AckedBy = "x" }), "ack fields"},
		{"newer version", strings.Replace(forge(func(*api.Wake) {}), `"v":1`, `"v":2`, 1), "version 2"},
		{"ack of no wake id", `{"v":1,"type":"ack","ids":["../../x"],"at":"2025-11-21T10:00:00Z"}`, "no wake id"},
		{"ack without time", `{"v":1,"type":"ack","ids":["` + id1 + `"]}`, "without a valid time"},
		{"clear without key", `{"v":1,"type":"clear","id":"` + id1 + `"}`, "without a key"},
		{"seq record after the start", `{"v":1,"type":"seq","seq":5}`, "not the first record"},
		{"rename without session", `{"v":1,"type":"rename","ids":["` + id1 + `"],"at":"2025-11-21T10:00:00Z"}`, "without wake ids or a session"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			appendLines(t, dir, good1, tc.line, good2)
			evs, warnings, err := ReadJournal(journalPath(dir))
			if err != nil || len(warnings) != 1 || warnings[0].Line != 2 || !strings.Contains(warnings[0].Problem, tc.problem) {
				t.Fatalf("ReadJournal warnings = %v, %v; want line 2: %q", warnings, err, tc.problem)
			}
			if len(evs) != 2 || evs[0].ID != id1 || evs[1].ID != id2 || evs[0].Acked {
				t.Fatalf("ReadJournal = %+v, want %s and %s unacknowledged", evs, id1, id2)
			}
			if _, err := os.Stat(filepath.Join(dir, QuarantineFile)); err == nil {
				t.Fatal("a reader that does not own the journal wrote the quarantine")
			}
			s, warnings, err := Open(Config{Dir: dir, Clock: newClock().Now})
			if err != nil || len(warnings) != 1 || warnings[0].Quarantine == "" {
				t.Fatalf("Open warnings = %v, %v", warnings, err)
			}
			defer s.Close()
			if q := readQuarantine(t, dir); len(q) != 1 || *q[0].Line != tc.line {
				t.Fatalf("quarantine = %+v, want the line", q)
			}
			if ev := raise(t, s, api.ReasonValidationFailed, ""); ev.Seq != 3 {
				t.Fatalf("next wake seq = %d, want 3", ev.Seq)
			}
		})
	}
}

// A damaged line may have held raises: the wakes after it are kept even
// though their seqs jump.
func TestJournalGapAfterDamageIsKept(t *testing.T) {
	dir := t.TempDir()
	r1, _ := raiseRecord(t, 1, "a", api.ReasonAwaitingInput)
	r2, _ := raiseRecord(t, 2, "b", api.ReasonAwaitingInput)
	r3, _ := raiseRecord(t, 3, "c", api.ReasonAwaitingInput)
	r4, id4 := raiseRecord(t, 4, "d", api.ReasonAwaitingInput)
	appendLines(t, dir, r1, r2[:40]+r3[:len(r3)-3], r4)
	evs, warnings, err := ReadJournal(journalPath(dir))
	if err != nil || len(warnings) != 1 || len(evs) != 2 || evs[1].ID != id4 {
		t.Fatalf("ReadJournal = %v, %v, %v; want a and d", keys(evs), warnings, err)
	}
}

// A line the quarantine cannot take stays in the journal, and says so.
func TestJournalQuarantineFailureKeepsTheLine(t *testing.T) {
	dir := t.TempDir()
	r1, _ := raiseRecord(t, 1, "a", api.ReasonAwaitingInput)
	bad := `{"v":1,"type":"seq","seq":18446744073709551615}`
	appendLines(t, dir, r1, bad)
	// A quarantine file that cannot be opened for writing.
	if err := os.Mkdir(filepath.Join(dir, QuarantineFile), 0o700); err != nil {
		t.Fatal(err)
	}
	s, warnings, err := Open(Config{Dir: dir, Clock: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(warnings) != 2 || !strings.Contains(warnings[1].Problem, "stay in the journal") {
		t.Fatalf("warnings = %v", warnings)
	}
	if !strings.Contains(readFile(t, journalPath(dir)), bad) {
		t.Fatal("the line was dropped without a copy")
	}
}

// The store never delivers a wake it does not hold.
func TestRaiseRefusesWhatItCannotStore(t *testing.T) {
	s := open(t, Config{})
	var sub *Subscription
	sub, err := s.Subscribe(t.Context(), api.WakeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	s.mu.Lock()
	s.st.seq = maxSeq
	s.mu.Unlock()
	if _, _, err := s.Raise(api.Wake{Reason: api.ReasonValidationFailed}); err == nil || !strings.Contains(err.Error(), "move wakes.jsonl aside") {
		t.Fatalf("Raise at the last seq = %v", err)
	}
	s.mu.Lock()
	s.st.seq, s.st.lastRaised = 1, 50
	s.mu.Unlock()
	if _, _, err := s.Raise(api.Wake{Reason: api.ReasonValidationFailed}); err == nil {
		t.Fatal("Raise of a wake the state refuses succeeded")
	}
	select {
	case m := <-sub.C:
		t.Fatalf("delivered %+v", m)
	default:
	}
}

// After a rename the open wakes of the pane carry the new name, in the
// journal too; acknowledged ones keep the name they were raised under.
func TestRenameSession(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	s := open(t, Config{Dir: dir, Clock: clock.Now})
	acked := raise(t, s, api.ReasonAwaitingInput, "a")
	s.Ack(acked.ID, "tui")
	open1 := raise(t, s, api.ReasonSessionIdle, "b")
	other, _, _ := s.Raise(api.Wake{Reason: api.ReasonSessionIdle, Key: "c", Session: "s", Pane: "%2"})
	sub, err := s.Subscribe(t.Context(), api.WakeFilter{Session: "new-*"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	got, err := s.RenameSession("%1", "s", "new-s")
	if err != nil || len(got) != 1 || got[0].ID != open1.ID || got[0].Session != "new-s" {
		t.Fatalf("RenameSession = %+v, %v", got, err)
	}
	if m := <-sub.C; m.Kind != api.WakeRaised || m.Event.ID != open1.ID || m.Event.Session != "new-s" {
		t.Fatalf("subscriber of new-* got %+v", m)
	}
	check := func(s *Store) {
		t.Helper()
		evs, _ := s.List(api.WakeFilter{Session: "new-*", IncludeAcked: true})
		if len(evs) != 1 || evs[0].ID != open1.ID {
			t.Fatalf("List(new-*) = %v", keys(evs))
		}
		if ev, _ := s.Get(other.ID); ev.Session != "s" {
			t.Fatalf("another pane's wake was renamed: %+v", ev)
		}
		if ev, _ := s.Get(acked.ID); ev.Session != "s" {
			t.Fatalf("an acknowledged wake was renamed: %+v", ev)
		}
	}
	check(s)
	s.Close()
	check(open(t, Config{Dir: dir, Clock: clock.Now}))
}
