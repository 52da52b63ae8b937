package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// TestUsageLimitIsAStateWithItsWake: a usage limit is rate_limited, never
// an error nor an error loop however long it stays; it raises one
// usage_limit wake that says when the limit resets (the screen's "2am
// (UTC)", read once), whether the CLI continues by itself, and ends when
// the agent moves on.
func TestUsageLimitIsAStateWithItsWake(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/rate_limited_5h.txt")
	h.step()
	want := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC) // seen at 09:00 on the 21st
	s := h.session("%1")
	if s.State != api.RateLimited || s.Kind != api.KindAutoResume || !s.ResetsAt.Equal(want) || s.Evidence.Rule != "claude.usage_limit_waiting" ||
		!strings.Contains(s.Detail, "resets 2am (UTC)") || s.Coarse() != api.CoarseBlocked || !s.NeedsPerson() {
		t.Fatalf("session = %+v", s)
	}
	w := h.unacked(api.ReasonUsageLimit)
	if len(w) != 1 || !w[0].ResetsAt.Equal(want) || w[0].State != "rate_limited" || w[0].Kind != api.KindAutoResume ||
		!strings.Contains(w[0].SuggestedAction, "resets Sun 22 Nov 02:00 (in 17h)") || !strings.Contains(w[0].SuggestedAction, "continues by itself") {
		t.Fatalf("wakes = %+v", w)
	}

	// Hours of the same screen: the same reset, no error, no loop, no more wakes.
	for range 5 {
		h.clock.Add(time.Hour)
		h.tm.show(t, "%1", "claude", "claude/rate_limited_5h.txt")
		h.step()
	}
	if s := h.session("%1"); s.State != api.RateLimited || !s.ResetsAt.Equal(want) || s.ErrorCount != 0 {
		t.Fatalf("after hours: %+v", s)
	}
	// Its automatic continue cancelled: the same limit, nothing continues it.
	h.tm.show(t, "%1", "claude", "claude/rate_limited_cancelled.txt")
	h.step()
	if s := h.session("%1"); s.State != api.RateLimited || s.Kind != "" || !s.ResetsAt.Equal(want) {
		t.Fatalf("cancelled: %+v", s)
	}
	if n := len(h.allWakes(api.ReasonUsageLimit)); n != 1 || len(h.allWakes(api.ReasonErrorLoopDetected))+len(h.allWakes(api.ReasonAPIError)) != 0 {
		t.Fatalf("%d usage_limit wakes, error wakes %+v %+v", n, h.allWakes(api.ReasonErrorLoopDetected), h.allWakes(api.ReasonAPIError))
	}

	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	all := h.allWakes(api.ReasonUsageLimit)
	if s := h.session("%1"); s.State != api.Idle || !s.ResetsAt.IsZero() || len(all) != 1 || !all[0].Resolved || all[0].Resolution != "the agent moved on (now idle)" {
		t.Fatalf("moved on: %+v, wakes %+v", s, all)
	}
}

// TestUsageLimitInTheAgentsZone: Codex tells the reset in its own zone
// without naming it; the pane's zone reads it. Another reset is another
// limit, with a wake of its own.
func TestUsageLimitInTheAgentsZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Zone = func(int) *time.Location { return ny } })
	h.tm.show(t, "%2", "codex", "codex/rate_limited_usage.txt")
	h.step()
	want := time.Date(2026, 11, 21, 22, 1, 0, 0, ny) // "10:01 PM", seen at 04:00 in New York
	if s := h.session("%2"); s.State != api.RateLimited || s.Kind != "" || !s.ResetsAt.Equal(want) {
		t.Fatalf("session = %+v, want the reset %s", s, want)
	}
	if w := h.unacked(api.ReasonUsageLimit); len(w) != 1 || !strings.Contains(w[0].SuggestedAction, "Nothing continues it by itself") {
		t.Fatalf("wakes = %+v", w)
	}
	h.tm.show(t, "%2", "codex", "codex/rate_limited_usage_tomorrow.txt")
	h.step()
	tomorrow := time.Date(2026, 11, 30, 1, 1, 0, 0, ny)
	all := h.allWakes(api.ReasonUsageLimit)
	if s := h.session("%2"); !s.ResetsAt.Equal(tomorrow) || len(all) != 2 || !all[0].Resolved ||
		!strings.HasPrefix(all[0].Resolution, "another usage limit (resets Mon 30 Nov 01:01") || all[1].Resolved || !all[1].ResetsAt.Equal(tomorrow) {
		t.Fatalf("session %+v, wakes %+v", s, all)
	}
}

// TestUsageLimitFromTheHook: Claude Code's StopFailure says rate_limit
// with the screen's words before the screen is captured: rate_limited at
// once, with the reset.
func TestUsageLimitFromTheHook(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	h.hook(api.HookEvent{Name: api.StopFailure, Pane: "%1", Error: "rate_limit", LastMessage: "You've hit your 5-hour limit · resets 2am (UTC)"})
	s := h.session("%1")
	if s.State != api.RateLimited || s.Evidence.Rule != "hook.usage_limit" || !s.ResetsAt.Equal(time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)) {
		t.Fatalf("session = %+v", s)
	}
	// The screen confirms it, and says the CLI goes on by itself: one wake.
	h.tm.show(t, "%1", "claude", "claude/rate_limited_5h.txt")
	h.step()
	if s := h.session("%1"); s.State != api.RateLimited || s.Kind != api.KindAutoResume || len(h.allWakes(api.ReasonUsageLimit)) != 1 {
		t.Fatalf("session = %+v, wakes %+v", s, h.allWakes(api.ReasonUsageLimit))
	}
	// An API key's 429 is an error, as before.
	h.hook(api.HookEvent{Name: api.StopFailure, Pane: "%1", Error: "rate_limit", LastMessage: "API Error: Request rejected (429) · rate limited"})
	if s := h.session("%1"); s.State != api.Error || s.Kind != "rate_limit" {
		t.Fatalf("429 = %+v", s)
	}
}

// TestUsageLimitCountdownIsOneLimit: a countdown to the reset (opencode's
// "retrying in 59m 46s") names the same moment in new words each second:
// one limit, read as the moment first read; a reset further off is another.
func TestUsageLimitCountdownIsOneLimit(t *testing.T) {
	utc := func() *time.Location { return time.UTC }
	seen := time.Date(2026, 11, 29, 4, 28, 30, 400_000_000, time.UTC)
	var m limitMark
	first := m.read(api.RateLimited, "in 59m 46s", api.Evidence{}, seen, utc)
	if want := seen.Add(59*time.Minute + 46*time.Second); !first.Equal(want) {
		t.Fatalf("first reading = %s, want %s", first, want)
	}
	for i, text := range []string{"in 59m 45s", "in 59m 40s", "in 58m 47s", "in 1h", "in 59m"} {
		now := seen.Add(time.Duration(i+1)*1300*time.Millisecond + time.Duration(i)*time.Second)
		if got := m.read(api.RateLimited, text, api.Evidence{}, now, utc); !got.Equal(first) {
			t.Errorf("%q at %s = %s, want the same reset %s", text, now.Format("15:04:05.000"), got, first)
		}
	}
	later := seen.Add(10 * time.Second)
	if got := m.read(api.RateLimited, "in 2h 5m", api.Evidence{}, later, utc); !got.Equal(later.Add(2*time.Hour + 5*time.Minute)) {
		t.Errorf("a reset an hour further off read as %s", got)
	}
}
