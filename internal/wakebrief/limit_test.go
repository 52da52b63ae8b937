package wakebrief

import (
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// A usage limit's brief says the agent waits for the reset, and when.
func TestBriefSaysWhenALimitResets(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ev := api.Wake{ID: "w0000000008-abc", Reason: api.ReasonUsageLimit, Session: "orch-a", Pane: "%4", Agent: "claude", Time: now,
		ResetsAt: now.Add(5 * time.Hour), Details: "You've hit your 5-hour limit · resets 5pm (UTC)"}
	out := Write(ev, Options{Now: now})
	for _, want := range []string{"claude hit its usage limit and waits for it to reset.", "the limit resets 17:00 (in 5h).", "│ You've hit your 5-hour limit · resets 5pm (UTC)"} {
		if !strings.Contains(out, want) {
			t.Errorf("brief lacks %q:\n%s", want, out)
		}
	}
}
