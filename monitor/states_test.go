package monitor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// restart is new monitors on the same state dir, tmux server and clock as
// h's: a dashboard taking over from a daemon that died, or a daemon
// started again.
func (h *harness) restart(path string) *harness {
	h.t.Helper()
	n := newHarness(h.t, func(c *Config) { c.StatesPath, c.Tmux, c.Clock = path, h.tm, h.clock.Now })
	n.tm, n.clock = h.tm, h.clock
	return n
}

// TestNewMonitorsCarrySince: monitors that start afresh carry on the time
// each state began, from what the last monitors of the state dir recorded,
// for a pane still in that state: every view's FOR timer, and the idle
// and error clocks, go on instead of starting again at a takeover. A pane
// whose state changed meanwhile, another process in the pane, and a record
// too old to say what happened since, start now.
func TestNewMonitorsCarrySince(t *testing.T) {
	path := filepath.Join(testkit.StateDir(t), StatesFile)
	h := newHarness(t, func(c *Config) { c.StatesPath = path })
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.tm.show(t, "%2", "claude", "claude/working_tool_running.txt")
	h.tm.show(t, "%3", "claude", "claude/idle.txt")
	h.step()
	began := h.clock.Now()
	if s := h.session("%2"); s.State != api.Working {
		t.Fatalf("%%2 is %s, want working", s.State)
	}
	h.clock.Add(4 * time.Minute)
	h.step()
	h.sup.saveStates(h.clock.Now())

	// The daemon dies; 2s later the dashboard's monitors start.
	h.clock.Add(2 * time.Second)
	h.tm.show(t, "%2", "claude", "claude/idle.txt")
	h.tm.mu.Lock()
	h.tm.panes[2].PID = 4242 // %3 runs another process now
	h.tm.mu.Unlock()
	now := h.clock.Now()
	h2 := h.restart(path)
	h2.step()
	for _, tt := range []struct {
		pane  string
		since time.Time
	}{{"%1", began}, {"%2", now}, {"%3", now}} {
		if s := h2.session(tt.pane); !s.Since.Equal(tt.since) {
			t.Errorf("%s (%s) since %s after the takeover, want %s", tt.pane, s.State, s.Since.Format(time.TimeOnly), tt.since.Format(time.TimeOnly))
		}
	}

	// A record whose monitors stopped two minutes ago says nothing of
	// what happened since.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h2.sup.Run(ctx) }()
	cancel()
	<-done
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the monitors kept no record when they stopped: %v", err)
	}
	h.clock.Add(2 * time.Minute)
	now = h.clock.Now()
	h3 := h.restart(path)
	h3.step()
	if s := h3.session("%1"); !s.Since.Equal(now) {
		t.Errorf("%%1 since %s from a record two minutes old, want %s", s.Since.Format(time.TimeOnly), now.Format(time.TimeOnly))
	}
}

// TestStatesFileDamaged: a states file that cannot be read is no record:
// the monitors start as if there were none, and write a good one.
func TestStatesFileDamaged(t *testing.T) {
	path := filepath.Join(testkit.StateDir(t), StatesFile)
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.StatesPath = path })
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	if s := h.session("%1"); !s.Since.Equal(h.clock.Now()) {
		t.Fatalf("since %s", s.Since)
	}
	h.sup.saveStates(h.clock.Now())
	h.clock.Add(30 * time.Second)
	h2 := h.restart(path)
	h2.step()
	if s := h2.session("%1"); s.Since.Equal(h.clock.Now()) {
		t.Fatalf("the rewritten record was not read: since %s", s.Since)
	}
}

// TestStatesAreWrittenAtMostEveryGap: a fleet whose states change many
// times a second writes its record at most every statesGap, the changes
// since the last record in the next one; the record the monitors write as
// they stop holds the last states whatever the time.
func TestStatesAreWrittenAtMostEveryGap(t *testing.T) {
	path := filepath.Join(testkit.StateDir(t), StatesFile)
	h := newHarness(t, func(c *Config) { c.StatesPath = path })
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	h.sup.saveStates(h.clock.Now())
	recorded := func() api.State {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc statesDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Panes["%1"].State
	}
	if got := recorded(); got != api.Idle {
		t.Fatalf("first record: %%1 %s, want idle", got)
	}
	h.clock.Add(statesGap / 4)
	h.tm.show(t, "%1", "claude", "claude/working_tool_running.txt")
	h.step()
	h.sup.saveStates(h.clock.Now())
	if got := recorded(); got != api.Idle {
		t.Fatalf("a change %s after the last record was written at once: %%1 %s", statesGap/4, got)
	}
	h.clock.Add(statesGap)
	h.sup.saveStates(h.clock.Now())
	if got := recorded(); got != api.Working {
		t.Fatalf("after the gap: %%1 %s, want working", got)
	}
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	h.sup.saveStatesAt(h.clock.Now(), 0)
	if got := recorded(); got != api.Idle {
		t.Fatalf("as the monitors stop: %%1 %s, want idle", got)
	}
}
