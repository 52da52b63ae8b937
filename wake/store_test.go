package wake

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestRaiseDedupClear(t *testing.T) {
	type step struct {
		op      string // raise, clear, ack
		key     string
		wantNew bool   // raise: a new wake was made
		wantSeq uint64 // raise: seq of the returned wake
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"first raise", []step{{"raise", "a", true, 1}}},
		{"same key while active", []step{{"raise", "a", true, 1}, {"raise", "a", false, 1}}},
		{"different keys", []step{{"raise", "a", true, 1}, {"raise", "b", true, 2}, {"raise", "a", false, 1}}},
		{"clear then raise makes a new wake", []step{{"raise", "a", true, 1}, {"clear", "a", false, 0}, {"raise", "a", true, 2}}},
		{"ack does not clear the condition", []step{{"raise", "a", true, 1}, {"ack", "a", false, 0}, {"raise", "a", false, 1}}},
		{"ack, clear, raise", []step{{"raise", "a", true, 1}, {"ack", "a", false, 0}, {"clear", "a", false, 0}, {"raise", "a", true, 2}}},
		{"clear of an unknown key does nothing", []step{{"clear", "x", false, 0}, {"raise", "x", true, 1}}},
		{"clear twice", []step{{"raise", "a", true, 1}, {"clear", "a", false, 0}, {"clear", "a", false, 0}, {"raise", "a", true, 2}}},
		{"empty key always raises", []step{{"raise", "", true, 1}, {"raise", "", true, 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, Config{})
			last := map[string]api.Wake{}
			for i, st := range tc.steps {
				switch st.op {
				case "raise":
					ev, isNew, err := s.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: st.key})
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					if isNew != st.wantNew || ev.Seq != st.wantSeq {
						t.Fatalf("step %d: Raise(%q) = seq %d new %v, want seq %d new %v", i, st.key, ev.Seq, isNew, st.wantSeq, st.wantNew)
					}
					last[st.key] = ev
				case "clear":
					if err := s.Resolve(st.key, "the test ended it"); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				case "ack":
					if _, err := s.Ack(last[st.key].ID, "test"); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
			}
		})
	}
}

func TestRaiseSetsStoreFields(t *testing.T) {
	clock := newClock()
	s := open(t, Config{Clock: clock.Now})
	in := api.Wake{
		ID: "mine", Seq: 99, Reason: api.ReasonAwaitingInput, Key: "k", Session: "api",
		Options: []string{"yes", "no"}, Evidence: api.Evidence{Source: "screen", Rule: "r1", Lines: []string{"? "}},
		Tasks: &api.WakeProgress{ListID: "L", Completed: 1, Total: 3, InProgress: []string{"t2"}},
		Acked: true, AckedBy: "someone",
	}
	ev, _, err := s.Raise(in)
	if err != nil {
		t.Fatal(err)
	}
	wantTime := time.Date(2025, 11, 21, 9, 0, 1, 0, time.UTC)
	if ev.Seq != 1 || !ev.Time.Equal(wantTime) || ev.Acked || ev.AckedBy != "" {
		t.Fatalf("store fields not set: %+v", ev)
	}
	if want := "w0000000001-" + formatBase36(wantTime.UnixMilli()); ev.ID != want {
		t.Fatalf("ID = %q, want %q", ev.ID, want)
	}
	// Neither the caller's input nor the returned copy may alias the store's.
	in.Options[0], ev.Options[1], ev.Tasks.InProgress[0], ev.Evidence.Lines[0] = "x", "x", "x", "x"
	got, _ := s.Get(ev.ID)
	if testkit.MustJSON(t, got.Options) != `["yes","no"]` || got.Tasks.InProgress[0] != "t2" || got.Evidence.Lines[0] != "? " {
		t.Fatalf("store copy was changed through a caller's slice: %+v", got)
	}

	if _, _, err := s.Raise(api.Wake{Reason: "bored"}); err == nil || !strings.Contains(err.Error(), `unknown reason "bored"`) {
		t.Fatalf("Raise with unknown reason: err = %v", err)
	}
}

func TestIDsSortByCreation(t *testing.T) {
	s := open(t, Config{})
	var prev string
	for i := range 20 {
		ev := raise(t, s, api.ReasonValidationFailed, "")
		if ev.ID <= prev {
			t.Fatalf("wake %d: ID %q does not sort after %q", i, ev.ID, prev)
		}
		prev = ev.ID
	}
}

func TestAck(t *testing.T) {
	s := open(t, Config{})
	a := raise(t, s, api.ReasonAwaitingInput, "a")
	b := raise(t, s, api.ReasonAPIError, "b")
	c := raise(t, s, api.ReasonWorkerFailed, "c")

	got, err := s.Ack(b.ID, "tui")
	if err != nil || !got.Acked || got.AckedBy != "tui" || got.AckedAt.IsZero() {
		t.Fatalf("Ack = %+v, %v", got, err)
	}
	// A second ack is a no-op: the first one's origin and time stay.
	again, err := s.Ack(b.ID, "cli")
	if err != nil || again.AckedBy != "tui" || !again.AckedAt.Equal(got.AckedAt) {
		t.Fatalf("second Ack = %+v, %v; want the first ack kept", again, err)
	}
	if _, err := s.Ack("w-nope", "cli"); !errors.Is(err, api.ErrUnknownWake) || !strings.Contains(err.Error(), "w-nope") {
		t.Fatalf("Ack(unknown) = %v, want api.ErrUnknownWake naming the id", err)
	}
	if got := keys(s.Unacked()); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("Unacked = %v, want [a c]", got)
	}

	acked, err := s.AckAll("mcp:claude")
	if err != nil || !slices.Equal(keys(acked), []string{"a", "c"}) {
		t.Fatalf("AckAll = %v, %v", keys(acked), err)
	}
	if n := len(s.Unacked()); n != 0 {
		t.Fatalf("%d unacked after AckAll", n)
	}
	if ev, _ := s.Get(a.ID); ev.AckedBy != "mcp:claude" {
		t.Fatalf("a acked by %q", ev.AckedBy)
	}
	if ev, _ := s.Get(c.ID); !ev.Acked {
		t.Fatal("c not acked")
	}
	if evs, err := s.AckAll("cli"); err != nil || len(evs) != 0 {
		t.Fatalf("AckAll with nothing to ack = %v, %v", evs, err)
	}
}

func TestList(t *testing.T) {
	s := open(t, Config{})
	for _, e := range []api.Wake{
		{Reason: api.ReasonAwaitingInput, Key: "1", Session: "api-1"},
		{Reason: api.ReasonAPIError, Key: "2", Session: "api-2"},
		{Reason: api.ReasonAwaitingInput, Key: "3", Session: "web"},
		{Reason: api.ReasonSessionIdle, Key: "4", Session: "api-1"},
		{Reason: api.ReasonValidationFailed, Key: "5", Session: ""},
	} {
		if _, _, err := s.Raise(e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Ack(s.Unacked()[1].ID, "t"); err != nil { // key 2
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    api.WakeFilter
		want []string
	}{
		{"zero filter: unacked", api.WakeFilter{}, []string{"1", "3", "4", "5"}},
		{"include acked", api.AllWakes(), []string{"1", "2", "3", "4", "5"}},
		{"reasons", api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput, api.ReasonSessionIdle}}, []string{"1", "3", "4"}},
		{"acked reason", api.WakeFilter{Reasons: []api.Reason{api.ReasonAPIError}}, nil},
		{"session glob", api.WakeFilter{Session: "api-*", IncludeAcked: true}, []string{"1", "2", "4"}},
		{"session exact", api.WakeFilter{Session: "web"}, []string{"3"}},
		{"session class", api.WakeFilter{Session: "api-[2-9]", IncludeAcked: true}, []string{"2"}},
		{"since seq", api.WakeFilter{SinceSeq: 3}, []string{"4", "5"}},
		{"since the last seq", api.WakeFilter{SinceSeq: 5}, nil},
		{"a cursor of another journal skips nothing", api.WakeFilter{SinceSeq: 6}, []string{"1", "3", "4", "5"}},
		{"limit pages oldest first", api.WakeFilter{Limit: 2}, []string{"1", "3"}},
		{"next page", api.WakeFilter{Limit: 2, SinceSeq: 3}, []string{"4", "5"}},
		{"everything combined", api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput, api.ReasonSessionIdle}, Session: "api-*", SinceSeq: 1, Limit: 5}, []string{"4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.List(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(keys(got), tc.want) {
				t.Fatalf("List = %v, want %v", keys(got), tc.want)
			}
		})
	}
}

func TestFilterValidate(t *testing.T) {
	cases := []struct {
		f       api.WakeFilter
		wantErr string
	}{
		{api.WakeFilter{}, ""},
		{api.WakeFilter{Session: "api-*"}, ""},
		{api.WakeFilter{Session: "api-["}, "not a valid glob"},
		{api.WakeFilter{Session: `x\`}, "not a valid glob"},
		{api.WakeFilter{Limit: -1}, "negative"},
	}
	s := open(t, Config{})
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.f), func(t *testing.T) {
			err := tc.f.Validate()
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want %q", err, tc.wantErr)
			}
			if _, lerr := s.List(tc.f); (lerr == nil) != (err == nil) {
				t.Fatalf("List err = %v, Validate err = %v", lerr, err)
			}
		})
	}
}

func TestPruneKeepsWhatItMust(t *testing.T) {
	s := open(t, Config{KeepAcked: 4})
	unacked := raise(t, s, api.ReasonAwaitingInput, "keep-unacked")
	activeAcked := raise(t, s, api.ReasonAwaitingInput, "keep-active")
	s.Ack(activeAcked.ID, "t")
	for range 40 {
		ev := raise(t, s, api.ReasonValidationFailed, "")
		s.Ack(ev.ID, "t")
		s.Resolve(ev.Key, "the test ended it")
	}
	all, _ := s.List(api.AllWakes())
	if len(all) > 2+4+4/8+16 {
		t.Fatalf("%d wakes kept, want at most KeepAcked plus a margin", len(all))
	}
	if _, ok := s.Get(unacked.ID); !ok {
		t.Fatal("unacked wake pruned")
	}
	if _, isNew, _ := s.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: "keep-active"}); isNew {
		t.Fatal("the wake of an active condition was pruned: Raise made a new one")
	}
	if _, err := s.Ack(all[2].ID, "t"); err != nil {
		t.Fatalf("re-acking a kept wake: %v", err)
	}
}

func TestClosedStore(t *testing.T) {
	s := open(t, Config{Dir: t.TempDir()})
	ev := raise(t, s, api.ReasonAwaitingInput, "a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := s.Raise(api.Wake{Reason: api.ReasonAwaitingInput}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Raise after Close: %v", err)
	}
	if _, err := s.Ack(ev.ID, "t"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ack after Close: %v", err)
	}
	if err := s.Resolve("a", "the test ended it"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Clear after Close: %v", err)
	}
	if _, err := s.AckAll("t"); !errors.Is(err, ErrClosed) {
		t.Fatalf("AckAll after Close: %v", err)
	}
	if _, err := s.Subscribe(t.Context(), api.WakeFilter{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	if got := s.Unacked(); len(got) != 1 {
		t.Fatalf("reads still work after Close: got %d wakes", len(got))
	}
}

func TestEventJSONKeys(t *testing.T) {
	ev := api.Wake{
		ID: "w1", Seq: 1, Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Reason: api.ReasonAwaitingInput,
		Key: "k", Session: "s", Pane: "%1", Agent: "claude", State: "waiting", Kind: "permission",
		Evidence: api.Evidence{Source: "screen", Rule: "r", Lines: []string{"l"}}, Question: "q?",
		Options: []string{"a"}, Tasks: &api.WakeProgress{ListID: "L", Completed: 1, Total: 2, InProgress: []string{"t"}},
		SuggestedAction: "Answer.", Details: "d", Prompt: "p0123", Resolved: true, ResolvedAt: time.Date(2025, 1, 2, 3, 4, 30, 0, time.UTC),
		Resolution: "answered by cli: a", Acked: true, AckedAt: time.Date(2025, 1, 2, 3, 5, 0, 0, time.UTC), AckedBy: "tui",
	}
	want := `{"id":"w1","seq":1,"time":"2025-01-02T03:04:05Z","reason":"awaiting_input","key":"k","session":"s","pane":"%1","agent":"claude","state":"waiting","kind":"permission","evidence":{"source":"screen","rule":"r","lines":["l"]},"question":"q?","options":["a"],"tasks":{"list_id":"L","completed":1,"total":2,"in_progress":["t"]},"suggested_action":"Answer.","details":"d","prompt":"p0123","resolved":true,"resolved_at":"2025-01-02T03:04:30Z","resolution":"answered by cli: a","acked":true,"acked_at":"2025-01-02T03:05:00Z","acked_by":"tui"}`
	if got := testkit.MustJSON(t, ev); got != want {
		t.Fatalf("JSON changed:\n got %s\nwant %s", got, want)
	}
	if got := testkit.MustJSON(t, api.Wake{}); !strings.Contains(got, `"acked":false`) || !strings.Contains(got, `"resolved":false`) || strings.Contains(got, "acked_at") || strings.Contains(got, "resolved_at") {
		t.Fatalf("zero event JSON: %s", got)
	}
}

// TestReminderSurvivesTheJournal checks that a wake's reminder is written
// and read back, and that the reminder key only appears when set (older
// journals and readers are unaffected).
func TestReminderSurvivesTheJournal(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Config{Dir: dir})
	rem := &api.Reminder{Alert: 7, Pattern: "formatter_loop", Intervention: "run-the-formatter", Directive: "user/style/1", Text: "⚠️ Loop detected: Formatter loop", Preventive: true}
	ev, _, err := s.Raise(api.Wake{Reason: api.ReasonErrorLoopDetected, Key: "pattern/formatter_loop/%1", Pane: "%1", Reminder: rem})
	if err != nil {
		t.Fatal(err)
	}
	rem.Text = "changed by the caller"
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, Config{Dir: dir})
	got, ok := s2.Get(ev.ID)
	if !ok || got.Reminder == nil || got.Reminder.Alert != 7 || got.Reminder.Text != "⚠️ Loop detected: Formatter loop" || !got.Reminder.Preventive {
		t.Fatalf("reminder after reopening = %+v", got.Reminder)
	}
	if strings.Contains(testkit.MustJSON(t, api.Wake{}), "reminder") {
		t.Fatal("an event without a reminder must not write the key")
	}
}
