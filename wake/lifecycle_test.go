package wake

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// A wake is raised, open until resolved (saying how), and separately
// acknowledged; the resolution survives a restart and a compaction.
func TestResolveSaysHowAndSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	s := open(t, Config{Dir: dir, Clock: clock.Now})
	ev := raise(t, s, api.ReasonAwaitingInput, "awaiting_input/%1")
	if !ev.NeedsPerson() || ev.Status() != api.StatusOpen {
		t.Fatalf("a raised wake: needs a person %v, status %q", ev.NeedsPerson(), ev.Status())
	}
	if err := s.Resolve(ev.Key, "answered by cli: Yes"); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ev.ID)
	if !got.Resolved || got.Resolution != "answered by cli: Yes" || got.ResolvedAt.IsZero() || got.NeedsPerson() || got.Status() != api.StatusResolved {
		t.Fatalf("resolved wake = %+v (status %q)", got, got.Status())
	}
	// Resolving again (the screen moved on after the answer) keeps the first word.
	s.Resolve(ev.Key, "the agent moved on (now working)")
	if got, _ := s.Get(ev.ID); got.Resolution != "answered by cli: Yes" {
		t.Fatalf("resolution after a second resolve = %q", got.Resolution)
	}
	if evs, _ := s.List(api.WakeFilter{}); len(evs) != 0 {
		t.Fatalf("the default filter lists resolved wakes: %+v", evs)
	}
	if evs, _ := s.List(api.WakeFilter{IncludeResolved: true}); len(evs) != 1 || evs[0].ID != ev.ID {
		t.Fatalf("IncludeResolved lists %+v", evs)
	}
	s.Close()
	s2 := open(t, Config{Dir: dir, Clock: clock.Now})
	if got, _ := s2.Get(ev.ID); !got.Resolved || got.Resolution != "answered by cli: Yes" {
		t.Fatalf("after a restart: %+v", got)
	}
	// A new raise of the key is a new, open wake.
	again := raise(t, s2, api.ReasonAwaitingInput, "awaiting_input/%1")
	if again.ID == ev.ID || again.Resolved {
		t.Fatalf("raise after resolve = %+v", again)
	}
}

// Heartbeats and summaries are information: none needs a person, and each
// resolves the one before it, live and when the journal is read again.
func TestInformationResolvedByTheNext(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	s := open(t, Config{Dir: dir, Clock: clock.Now})
	sub, _ := s.Subscribe(t.Context(), api.WakeFilter{})
	defer sub.Close()
	h1 := raise(t, s, api.ReasonHeartbeat, "")
	sum := raise(t, s, api.ReasonSummary, "")
	h2 := raise(t, s, api.ReasonHeartbeat, "")
	if h1.NeedsPerson() || sum.NeedsPerson() || api.NeedingPerson([]api.Wake{h1, sum, h2}) != 0 {
		t.Fatal("an information wake needs a person")
	}
	kinds := []string{}
	for len(sub.C) > 0 {
		m := <-sub.C
		kinds = append(kinds, string(m.Kind)+" "+string(m.Event.Reason))
	}
	if want := "raised heartbeat,raised summary,raised heartbeat,resolved heartbeat"; strings.Join(kinds, ",") != want {
		t.Fatalf("messages %v, want %s", kinds, want)
	}
	check := func(s *Store) {
		t.Helper()
		open, _ := s.List(api.WakeFilter{})
		if len(open) != 2 || open[0].ID != sum.ID || open[1].ID != h2.ID {
			t.Fatalf("open wakes = %+v, want the summary and the second heartbeat", open)
		}
		if got, _ := s.Get(h1.ID); !got.Resolved || got.Resolution != "the next heartbeat" {
			t.Fatalf("first heartbeat = %+v", got)
		}
	}
	check(s)
	s.Close()
	check(open(t, Config{Dir: dir, Clock: clock.Now}))
}

// A journal written before wakes had a resolution: a clear record without
// a word, and a key raised again after a compaction dropped its clear,
// both read as resolved.
func TestOldJournalReadsResolved(t *testing.T) {
	dir := t.TempDir()
	r1, id1 := raiseRecord(t, 1, "awaiting_input/%1", api.ReasonAwaitingInput)
	r2, id2 := raiseRecord(t, 2, "awaiting_input/%1", api.ReasonAwaitingInput)
	r3, id3 := raiseRecord(t, 3, "error_loop_detected/%2", api.ReasonErrorLoopDetected)
	clear3 := `{"v":1,"type":"clear","key":"error_loop_detected/%2","id":"` + id3 + `","at":"2025-11-21T09:00:05Z"}` + "\n"
	if err := os.WriteFile(journalPath(dir), []byte(r1+"\n"+r2+"\n"+r3+"\n"+clear3), 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, Config{Dir: dir})
	for _, id := range []string{id1, id3} {
		if got, _ := s.Get(id); !got.Resolved || got.Resolution != "its condition ended" {
			t.Fatalf("%s = %+v, want resolved", id, got)
		}
	}
	if got, _ := s.Get(id2); got.Resolved {
		t.Fatalf("the key's current wake is resolved: %+v", got)
	}
}

// Wait returns only open wakes unless asked: a wake resolved before the
// wait starts does not end it.
func TestWaitSkipsResolved(t *testing.T) {
	s := open(t, Config{})
	old := raise(t, s, api.ReasonAwaitingInput, "a")
	s.Resolve("a", "answered by cli: 1")
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if ev, err := s.Wait(ctx, api.WakeFilter{}); err == nil {
		t.Fatalf("Wait returned the resolved wake %+v", ev)
	}
	if ev, err := s.Wait(t.Context(), api.WakeFilter{IncludeResolved: true}); err != nil || ev.ID != old.ID || !ev.Resolved {
		t.Fatalf("Wait with IncludeResolved = %+v, %v", ev, err)
	}
	done := make(chan api.Wake, 1)
	go func() {
		ev, _ := s.Wait(t.Context(), api.WakeFilter{})
		done <- ev
	}()
	next := raise(t, s, api.ReasonAwaitingInput, "a")
	if ev := <-done; ev.ID != next.ID {
		t.Fatalf("Wait = %s, want the new wake %s", ev.ID, next.ID)
	}
}
