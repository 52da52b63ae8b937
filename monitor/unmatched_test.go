package monitor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// A known agent showing a screen no rule explains keeps its previous
// state for UnmatchedAfter, then is unknown with evidence naming the agent
// and its version, and a hint saying what to do.
func TestUnmatchedScreenBecomesUnknownAfterGrace(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.AgentVersion = func(pid int, agent string, isAgent func(string) bool) string {
			if agent == "claude" && isAgent("claude") && !isAgent("bash") {
				return "2.1.330"
			}
			return ""
		}
	})
	h.tm.show(t, "%1", "claude", "claude/working_tool_running.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Working || s.AgentVersion != "2.1.330" || s.Hint() != "" {
		t.Fatalf("session = %s by %s, version %q, hint %q", s.State, s.Evidence.Rule, s.AgentVersion, s.Hint())
	}
	updates := h.watch()

	// A frame no rule knows: still working, for a moment.
	h.tm.mu.Lock()
	h.tm.screens["%1"] = "⏺ Reading 3 files…\n\nsomething new the rules have never seen\n"
	h.tm.panes[0].Activity = h.tm.panes[0].Activity.Add(time.Second)
	h.tm.mu.Unlock()
	h.step()
	h.clock.Add(2 * time.Second)
	h.step()
	if s := h.session("%1"); s.State != api.Working || s.Evidence.Rule != "claude.working_footer" {
		t.Fatalf("before the grace ended: %s by %s", s.State, s.Evidence.Rule)
	}
	if u := updates.drain(); len(u) != 0 {
		t.Fatalf("updates while the state was held: %+v", u)
	}

	// The screen stays the same, with no new output: time alone decides.
	h.clock.Add(time.Second)
	h.sup.timeChecks(h.clock.Now())
	s := h.session("%1")
	if s.State != api.Unknown || s.Evidence.Rule != api.RuleNoMatch || len(s.Evidence.Lines) == 0 ||
		s.Evidence.Lines[0] != "no rule matched (claude 2.1.330)" || s.Agent != "claude" {
		t.Fatalf("after the grace: %s by %s, agent %q, evidence %q", s.State, s.Evidence.Rule, s.Agent, s.Evidence.Lines)
	}
	if !strings.Contains(s.Hint(), "system3 rules capture %1") {
		t.Errorf("hint = %q", s.Hint())
	}
	if u := updates.drain(); len(u) != 1 || u[0].Session.State != api.Unknown || u[0].Previous != api.Working {
		t.Fatalf("updates = %+v", u)
	}

	// A rule matches again: at once.
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Idle || s.Hint() != "" {
		t.Fatalf("after a known screen: %s by %s", s.State, s.Evidence.Rule)
	}
}

// Unmatched frames that come and go within the grace never show.
func TestUnmatchedFramesDoNotFlap(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	for range 5 {
		h.tm.show(t, "%1", "claude", "claude/idle.txt")
		h.tm.mu.Lock()
		h.tm.screens["%1"] = "half a frame\n"
		h.tm.mu.Unlock()
		h.step()
		h.clock.Add(2 * time.Second)
		h.tm.show(t, "%1", "claude", "claude/idle.txt")
		h.step()
		if s := h.session("%1"); s.State != api.Idle {
			t.Fatalf("state = %s by %s", s.State, s.Evidence.Rule)
		}
		h.clock.Add(2 * time.Second)
		h.step()
	}
	if s := h.session("%1"); s.State != api.Idle {
		t.Fatalf("state = %s by %s", s.State, s.Evidence.Rule)
	}
}

type updateLog struct{ ch <-chan api.Update }

// watch subscribes to updates for the rest of the test.
func (h *harness) watch() updateLog {
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := h.sup.Watch(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		cancel()
		for range ch {
		}
	})
	return updateLog{ch}
}

// drain returns the updates published so far (publishing is synchronous).
func (l updateLog) drain() []api.Update {
	var out []api.Update
	for len(l.ch) > 0 {
		out = append(out, <-l.ch)
	}
	return out
}
