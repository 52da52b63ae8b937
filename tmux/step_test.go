package tmux

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// ticker drives Watcher.step for one pane with a fake clock.
type stepper struct {
	w   *Watcher
	tr  *paneTrack
	now time.Time
	sig PaneSignal
}

func newStepper() *stepper {
	w := NewWatcher(Server{}, WatcherOptions{PollInterval: 50 * time.Millisecond, BusyGap: time.Second, Settle: 200 * time.Millisecond})
	now := time.Unix(1_800_000_000, 0)
	sig := PaneSignal{ID: "%1", Activity: now.Unix(), CursorX: 2, CursorY: 29}
	// Quiet for long before the test starts.
	return &stepper{w: w, tr: &paneTrack{sig: sig, settle: 1}, now: now.Add(10 * time.Second), sig: sig}
}

// tick advances the clock one poll and steps with the current signal.
func (s *stepper) tick() bool {
	s.now = s.now.Add(50 * time.Millisecond)
	return s.w.step(s.tr, &s.sig, false, false, s.now)
}

func (s *stepper) scroll()  { s.sig.HistorySize++ } // a layout change
func (s *stepper) redrawn() { s.sig.Activity++ }    // written in place
func (s *stepper) ticks(n int) (reports []int) {
	for i := range n {
		if s.tick() {
			reports = append(reports, i)
		}
	}
	return reports
}

func TestStepReportsAPromptOneTickAfterAStream(t *testing.T) {
	s := newStepper()
	// Output that scrolls every tick for two seconds: reported at once (it
	// changed after a quiet spell), then at most once a BusyGap.
	var reports []int
	for i := range 40 {
		s.scroll()
		if s.tick() {
			reports = append(reports, i)
		}
	}
	if len(reports) < 2 || len(reports) > 3 || reports[0] != 0 {
		t.Fatalf("a pane scrolling every tick for 2s was reported at ticks %v, want at once and then every second", reports)
	}
	// The stream stops on a prompt: one more change, then quiet. It is
	// reported on that tick (when a BusyGap has passed since the last
	// report) or on the quiet tick after it, and then never again.
	// A report on its tick is only a beat (Streaming), which a consumer
	// may skip, so the quiet tick reports it again as a stop.
	s.scroll()
	at, beat := s.tick(), s.tr.streaming
	if at && !beat {
		t.Fatal("the last change of a stream was reported on its tick as more than a beat")
	}
	if quiet := s.tick(); !quiet || s.tr.streaming {
		t.Fatalf("the quiet tick after a stream's last change: reported %v, as a beat %v; want reported as a stop", quiet, s.tr.streaming)
	}
	if r := s.ticks(30); len(r) != 0 {
		t.Fatalf("a quiet pane was reported again at ticks %v", r)
	}
}

func TestStepLooksAtOnceWhenAStableLayoutChanges(t *testing.T) {
	s := newStepper()
	// A steady working screen: written in place every tick (activity only
	// moves once a second, but the test moves it more to be sure).
	for range 30 {
		s.redrawn()
		s.tick()
	}
	// A dialog is drawn: the layout changes for the first time in a while.
	s.scroll()
	if !s.tick() {
		t.Fatal("a layout change after a stable second was not reported at once")
	}
	// Quiet afterwards: reported once more, in case the first look caught
	// half a frame, then never again.
	if r := s.ticks(20); len(r) != 1 || r[0] != 0 {
		t.Fatalf("after the dialog the pane was reported at ticks %v, want once, at the first quiet tick", r)
	}
}

func TestStepBacksOffOnPauses(t *testing.T) {
	s := newStepper()
	s.scroll()
	s.tick() // at once, after the quiet spell
	// Output in bursts: a change, a pause of three ticks (150ms, shorter
	// than Settle)... A pause reported as a stop doubles the quiet spell
	// needed (1, 2, then 4 ticks), so the pane stops being reported at every
	// pause instead of 40 times.
	reports := 0
	for range 40 { // 8 seconds
		s.scroll()
		if s.tick() {
			reports++
		}
		for range 3 {
			if s.tick() {
				reports++
			}
		}
	}
	if s.tr.settle != s.w.maxSettle || s.w.maxSettle != 4 {
		t.Fatalf("settle is %d ticks after 40 pauses of 150ms, want the most, 4 (%d)", s.tr.settle, s.w.maxSettle)
	}
	// Two pauses taken for stops, and one report a BusyGap.
	if reports > 12 {
		t.Fatalf("%d reports for 40 pauses in 8 s", reports)
	}
	// Quiet for a BusyGap: the next burst starts from one tick again.
	s.ticks(25)
	if s.tr.settle != 1 {
		t.Fatalf("settle is %d after a quiet second, want 1", s.tr.settle)
	}
}

func TestParseSignals(t *testing.T) {
	out := "%1 1795237000 4 29 120\n%12 0 0 0 0\n"
	got, err := parseSignals([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []PaneSignal{
		{ID: "%1", Activity: 1795237000, CursorX: 4, CursorY: 29, HistorySize: 120},
		{ID: "%12"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d signals, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("signal %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{
		"%1 1 2\n",           // too few fields
		"%1 1 2 3 4 extra\n", // too many
		"x1 1 2 3 4\n",       // not a pane id
		"%1 1 2 three 4\n",   // not a number
		"%1 1 2 3 \\037\n",   // an escaped byte (3.4 and later)
		"%1 1 2 3 4\n\n",     // an empty record
	} {
		if _, err := parseSignals([]byte(bad)); err == nil {
			t.Errorf("parseSignals(%q) accepted garbage", strings.TrimSpace(bad))
		}
	}
}

// TestPiggybackBatchesBusyPanes: panes that keep changing, each reported
// at its own moment, fall into step once a beat (one a BusyGap) carries
// every pane that changed since its last report: over ten seconds the ticks that
// report anything (each one capture batch, one connection) are about one
// a second, not one per pane per second (100 ticks without, 19 with, when
// written); each pane is still reported about once a second, not more,
// even while other panes are reported on other ticks (the first version
// carried them on every tick that reported anything: 17 reports a pane
// in 10 s instead of 10), and once more when it goes quiet.
func TestPiggybackBatchesBusyPanes(t *testing.T) {
	w := NewWatcher(Server{}, WatcherOptions{PollInterval: 50 * time.Millisecond, BusyGap: time.Second, Settle: 200 * time.Millisecond})
	now := time.Unix(1_800_000_000, 0)
	const panes = 10
	tracks := map[string]*paneTrack{}
	sigs := map[string]PaneSignal{}
	for i := range panes {
		id := "%" + string(rune('a'+i))
		sigs[id] = PaneSignal{ID: id}
		tracks[id] = &paneTrack{sig: sigs[id], settle: 1}
	}
	others := false
	run := func(ticks int, busy func(tick int, pane int) bool, piggy bool) (reportTicks int, perPane map[string]int) {
		perPane = map[string]int{}
		for k := range ticks {
			now = now.Add(50 * time.Millisecond)
			var reported []string
			for i := range panes {
				id := "%" + string(rune('a'+i))
				s := sigs[id]
				if busy(k, i) {
					s.Activity++
					sigs[id] = s
				}
				if w.step(tracks[id], &s, false, false, now) {
					reported = append(reported, id)
				}
			}
			if others && k%3 == 0 {
				// Another pane (a prompt drawn, a stream stopped) is
				// reported on this tick.
				reported = append(reported, "%z")
			}
			if piggy {
				reported = w.piggyback(tracks, reported, now)
			}
			if others && k%3 == 0 {
				reported = slices.DeleteFunc(reported, func(id string) bool { return id == "%z" })
			}
			if len(reported) > 0 {
				reportTicks++
			}
			for _, id := range reported {
				perPane[id]++
			}
		}
		return reportTicks, perPane
	}
	// Each pane starts streaming on its own tick, so their reports are
	// staggered, then all stream for 10 s.
	streaming := func(start int) func(int, int) bool {
		return func(k, i int) bool { return k+start >= i*2 }
	}
	without, _ := run(200, streaming(0), false)
	for id := range tracks {
		tracks[id] = &paneTrack{sig: sigs[id], settle: 1}
	}
	with, perPane := run(200, streaming(0), true)
	if without < 80 || with > without/4 {
		t.Fatalf("ticks with reports in 10 s of 10 staggered streams: %d without piggyback, %d with; want many fewer with", without, with)
	}
	t.Logf("ticks with reports in 10 s: %d without piggyback, %d with; reports per pane with it: %v", without, with, perPane)
	for id, n := range perPane {
		if n < 8 || n > 13 {
			t.Errorf("pane %s reported %d times in 10 s of streaming", id, n)
		}
	}
	// Other panes reported every third tick do not make the streaming
	// ones reported more often.
	others = true
	_, perPane = run(200, streaming(1000), true)
	others = false
	t.Logf("with another pane reported every third tick, reports per pane: %v", perPane)
	for id, n := range perPane {
		if n < 8 || n > 13 {
			t.Errorf("pane %s reported %d times in 10 s of streaming while another pane was reported every third tick", id, n)
		}
	}
	// All stop: each is reported once more when quiet, and then never.
	_, quiet := run(40, func(int, int) bool { return false }, true)
	for id := range tracks {
		if quiet[id] != 1 {
			t.Errorf("pane %s reported %d times after its stream stopped, want 1", id, quiet[id])
		}
	}
}

// With terminal events, ticks stay PollInterval apart however long a
// listing takes; listings are spaced by their cost (a twentieth of the
// server's time at most), and a read no event explains is listed once a
// listing is due, not forgotten.
func TestSlowListingsSpaceListingsNotTicks(t *testing.T) {
	w := NewWatcher(Server{}, WatcherOptions{PollInterval: 50 * time.Millisecond, LayoutEvery: 250 * time.Millisecond})
	const slow = 10 * time.Millisecond // a listing at 200 panes on a busy server
	if got := w.tickGap(true, false, slow); got != 50*time.Millisecond {
		t.Errorf("with terminal events and %v listings, ticks are %v apart, want 50ms", slow, got)
	}
	if got := w.tickGap(false, false, slow); got != 200*time.Millisecond {
		t.Errorf("without terminal events and %v listings, ticks are %v apart, want 200ms", slow, got)
	}
	if got := w.tickGap(false, false, 100*time.Millisecond); got != maxPoll {
		t.Errorf("ticks are %v apart for 100ms listings, want at most %v", got, maxPoll)
	}
	// A fleet quiet for quietAfter: four times further apart with terminal
	// events; without them nothing changes.
	if got := w.tickGap(true, true, slow); got != 200*time.Millisecond {
		t.Errorf("with terminal events, a quiet fleet's ticks are %v apart, want 200ms", got)
	}
	if got := w.tickGap(false, true, slow); got != 200*time.Millisecond {
		t.Errorf("without terminal events, a quiet fleet's ticks are %v apart, want pollGap's 200ms", got)
	}
	for _, c := range []struct {
		since, cost                    time.Duration
		wrote, gate, unexplained, want bool
	}{
		{since: 60 * time.Millisecond, cost: time.Millisecond, gate: true, unexplained: true, want: true},
		{since: 60 * time.Millisecond, cost: slow, gate: true, unexplained: true, want: false},
		{since: 210 * time.Millisecond, cost: slow, gate: true, unexplained: true, want: true},
		{since: time.Minute, cost: slow, gate: true, want: false}, // nothing to explain
		{since: 210 * time.Millisecond, cost: time.Millisecond, wrote: true, gate: true, want: false},
		{since: 260 * time.Millisecond, cost: time.Millisecond, wrote: true, gate: true, want: true},
		{since: 260 * time.Millisecond, cost: 20 * time.Millisecond, wrote: true, want: true},
		{since: 100 * time.Millisecond, cost: time.Millisecond, want: false}, // no read count: every LayoutEvery
		{since: 260 * time.Millisecond, cost: time.Millisecond, want: true},
	} {
		if got := w.listOnEvents(c.since, c.cost, c.wrote, c.gate, c.unexplained); got != c.want {
			t.Errorf("listOnEvents(since %v, cost %v, wrote %v, read count %v, unexplained %v) = %v, want %v",
				c.since, c.cost, c.wrote, c.gate, c.unexplained, got, c.want)
		}
	}
}

// With terminal events, full listings are maxFull apart, whether panes
// write or not and whatever they cost (a pane made, freed or exited lists
// in full at once, and an agent started or quit in a shell is read from
// /proc at its capture); without, they stay FullEvery apart (they are how
// a changed command is seen). A FullEvery above maxFull is kept.
func TestFullListingsAreSpacedWithEvents(t *testing.T) {
	w := NewWatcher(Server{}, WatcherOptions{FullEvery: time.Second})
	if got := w.fullGap(true); got != maxFull {
		t.Errorf("fullGap with terminal events = %v, want %v", got, maxFull)
	}
	if got := w.fullGap(false); got != time.Second {
		t.Errorf("fullGap without terminal events = %v, want 1s", got)
	}
	w = NewWatcher(Server{}, WatcherOptions{FullEvery: 10 * time.Second})
	if got := w.fullGap(true); got != 10*time.Second {
		t.Errorf("fullGap with terminal events and FullEvery 10s = %v, want 10s", got)
	}
}

// TestStepMarksTheBeatsOfAStream: only the reports a pane gets because it
// kept changing are Streaming; its first change after a quiet spell, a
// dialog drawn over a steady screen and its first pause are not, so a
// consumer that skips beats still looks at each of those at once.
func TestStepMarksTheBeatsOfAStream(t *testing.T) {
	s := newStepper()
	var kinds []bool
	for range 60 { // 3 s written in place every tick
		s.redrawn()
		if s.tick() {
			kinds = append(kinds, s.tr.streaming)
		}
	}
	if len(kinds) < 3 || kinds[0] || !kinds[1] || !kinds[len(kinds)-1] {
		t.Fatalf("a pane redrawn every tick for 3s was reported streaming=%v; want the first report not a beat and the others beats", kinds)
	}
	// It pauses: that report is not a beat.
	if !s.tick() || s.tr.streaming {
		t.Fatalf("the first pause was not reported, or reported as a beat (streaming=%v)", s.tr.streaming)
	}
	// A dialog drawn over a steady working screen.
	for range 30 {
		s.redrawn()
		s.tick()
	}
	s.scroll()
	if !s.tick() || s.tr.streaming {
		t.Fatalf("a dialog drawn over a steady screen was not reported at once, or as a beat (streaming=%v)", s.tr.streaming)
	}

	// A change after a quiet spell, held because a quiet report came less
	// than a BusyGap ago, then going on: its report is still not a beat.
	s = newStepper()
	s.redrawn()
	s.tick() // at once
	s.redrawn()
	s.tick() // held
	if !s.tick() {
		t.Fatal("a held change was not reported once quiet")
	}
	for range 18 {
		s.tick()
	}
	s.redrawn() // 1 s after the last change, 0.95 s after the last report
	if s.tick() {
		t.Fatal("a change within a BusyGap of the last report was reported at once")
	}
	s.redrawn()
	if !s.tick() || s.tr.streaming {
		t.Fatalf("a change after a quiet spell, held for a tick, was not reported, or as a beat (streaming=%v)", s.tr.streaming)
	}
}

// TestQueueCoalescesStreamingOnlyWhenAllWere: a beat coalesced with a
// report that is not one is not a beat.
func TestQueueCoalescesStreamingOnlyWhenAllWere(t *testing.T) {
	q := newQueue(16, 0)
	q.push(Event{Kind: EventOutput, PaneID: "%1", Streaming: true})
	q.push(Event{Kind: EventOutput, PaneID: "%1", Streaming: false})
	q.push(Event{Kind: EventOutput, PaneID: "%2", Streaming: true})
	q.push(Event{Kind: EventOutput, PaneID: "%2", Streaming: true})
	got := map[string]bool{}
	for _, e := range q.items {
		got[e.PaneID] = e.Streaming
	}
	if got["%1"] || !got["%2"] || len(q.items) != 2 {
		t.Fatalf("coalesced: %v (%d events), want %%1 not streaming, %%2 streaming", got, len(q.items))
	}
}

// TestTickEventsSkipsPanesAtRest: a tick that listed nothing looks only at
// panes written to, held or settling; a held pane is still reported once
// quiet, and a pane at rest stays as it was.
func TestTickEventsSkipsPanesAtRest(t *testing.T) {
	w := NewWatcher(Server{}, WatcherOptions{PollInterval: 50 * time.Millisecond, BusyGap: time.Second, Settle: 200 * time.Millisecond})
	now := time.Unix(1_800_000_000, 0)
	rest := &paneTrack{settle: 1, changed: now.Add(-time.Minute), reported: now.Add(-time.Minute), quiet: 7}
	held := &paneTrack{settle: 1, held: true, changed: now.Add(-50 * time.Millisecond), reported: now.Add(-100 * time.Millisecond)}
	tracks := map[string]*paneTrack{"%1": rest, "%2": held}
	before := *rest
	w.tickEvents(tracks, map[string]bool{}, now)
	if *rest != before {
		t.Fatalf("a pane at rest was stepped: %+v, was %+v", *rest, before)
	}
	var got []string
	for _, e := range w.q.items {
		got = append(got, e.PaneID)
	}
	if !slices.Equal(got, []string{"%2"}) || held.held {
		t.Fatalf("reported %v (held still %v), want the held pane once quiet", got, held.held)
	}
	// A write to the pane at rest is looked at.
	w.tickEvents(tracks, map[string]bool{"%1": true}, now.Add(50*time.Millisecond))
	if rest.changed.Equal(before.changed) {
		t.Fatal("a write to a pane at rest was not stepped")
	}
}

// TestStepDoesNotLookAgainAtADialogItSawGoQuiet: with terminal events, an
// agent redraws its working screen in place, then draws a dialog and stops.
// The tick after it stops reports it (the consumer looks at the dialog);
// the layout listing that comes after shows the layout the dialog moved,
// but nothing was written since that report: the listing only catches up
// with a screen already looked at, and reports nothing. A layout change no
// write came before (a terminal's echo) is still reported at once, and so
// is one with a write after the report.
func TestStepDoesNotLookAgainAtADialogItSawGoQuiet(t *testing.T) {
	for _, tc := range []struct {
		name        string
		wroteBefore bool // the dialog was drawn by writes the events saw
		wroteAfter  bool // and written to again after its quiet report
		want        bool // the listing reports the layout change
	}{
		{"drawn, reported, then listed", true, false, false},
		{"no write explains the layout", false, false, true},
		{"written again after the report", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStepper()
			tick := func(wrote bool, listed bool) bool {
				s.now = s.now.Add(50 * time.Millisecond)
				var sig *PaneSignal
				if listed {
					sig = &s.sig
				}
				return s.w.step(s.tr, sig, false, wrote, s.now)
			}
			// A steady working screen, written in place for 2 s, listed every
			// fifth tick (the layout listing while panes are written to).
			for i := range 40 {
				s.redrawn()
				tick(true, i%5 == 4)
			}
			if tc.wroteBefore {
				// The dialog's writes, then quiet: reported for going quiet.
				s.scroll()
				tick(true, false)
				reported := false
				for range 5 {
					if tick(false, false) {
						reported = true
						break
					}
				}
				if !reported || s.tr.streaming {
					t.Fatalf("the dialog's quiet tick was not reported, or as a beat (streaming=%v)", s.tr.streaming)
				}
			} else {
				s.scroll()
			}
			if tc.wroteAfter {
				s.redrawn()
				if tick(true, false) {
					t.Fatal("a write right after a report was reported at once")
				}
			}
			if got := tick(false, true); got != tc.want {
				t.Fatalf("the listing that shows the new layout reported %v, want %v", got, tc.want)
			}
		})
	}
}
