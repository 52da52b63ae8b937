package monitor

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tmux"
)

// A preview stream reads its pane when the watcher reports the pane's
// output, and only then: it sends the screen when it changed, nothing
// when it did not, nothing for another pane's output; after a report it
// follows a pane that keeps changing every PreviewEvery for about a
// second, and stops reading once a read finds the screen as it was.
func TestWatchPreviewReadsOnOutput(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.tm.show(t, "%2", "claude", "claude/idle.txt")
	h.step()
	setScreen := func(s string) {
		h.tm.mu.Lock()
		h.tm.screens["%1"] = s
		h.tm.mu.Unlock()
	}
	reads := func() int {
		h.tm.mu.Lock()
		defer h.tm.mu.Unlock()
		n := 0
		for _, p := range h.tm.captured {
			if p == "%1" {
				n++
			}
		}
		return n
	}
	output := func(pane string) { h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: pane}) }
	setScreen("one")
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := h.sup.WatchPreview(ctx, api.PreviewRequest{Target: api.Target{Session: "orch-1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		for range ch {
		}
	}()
	next := func(within time.Duration) (api.PreviewUpdate, bool) {
		t.Helper()
		select {
		case u := <-ch:
			return u, true
		case <-time.After(within):
			return api.PreviewUpdate{}, false
		}
	}
	if u, ok := next(5 * time.Second); !ok || u.Pane != "%1" || u.Session != "orch-1" || !slices.Equal(u.Lines, []string{"one"}) {
		t.Fatalf("first screen %+v", u)
	}
	base := reads()

	output("%2")
	output("%1") // the screen is as it was: read, not sent
	testkit.WaitFor(t, 5*time.Second, "the pane read again", func() bool { return reads() > base })
	if u, ok := next(500 * time.Millisecond); ok {
		t.Fatalf("an unchanged screen was sent: %+v", u)
	}
	if n := reads(); n != base+1 {
		t.Fatalf("%d reads after one report of an unchanged screen, want 1", n-base)
	}

	setScreen("two")
	output("%1")
	if u, ok := next(time.Second); !ok || !slices.Equal(u.Lines, []string{"two"}) {
		t.Fatalf("changed screen %+v, %v", u, ok)
	}
	// Nothing more: the next read found it as it was.
	if u, ok := next(1500 * time.Millisecond); ok {
		t.Fatalf("sent %+v with no output", u)
	}
	quiet := reads()
	time.Sleep(500 * time.Millisecond)
	if n := reads(); n != quiet {
		t.Fatalf("%d reads of an idle pane", n-quiet)
	}

	// A pane that changes at every read is followed after one report.
	h.tm.mu.Lock()
	n := 0
	h.tm.onCapture = func(context.Context, string) error {
		n++
		h.tm.mu.Lock()
		h.tm.screens["%1"] = fmt.Sprint("frame ", n)
		h.tm.mu.Unlock()
		return nil
	}
	h.tm.mu.Unlock()
	start := time.Now()
	output("%1")
	frames := 0
	for {
		if _, ok := next(time.Second); !ok {
			break
		}
		frames++
	}
	if took := time.Since(start) - time.Second; frames < 3 || took > 2*time.Second {
		t.Fatalf("one report of a pane that keeps changing: %d screens over %v, want about a second's worth", frames, took)
	}
}
