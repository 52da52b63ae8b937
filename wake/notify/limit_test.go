package notify

import (
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// A usage limit's notification says so, and when it resets (the
// suggested action says it), at normal priority: nothing is on fire.
func TestUsageLimitMessage(t *testing.T) {
	m := ForWake(api.Wake{Reason: api.ReasonUsageLimit, Session: "orch", Pane: "%1", Details: "You've hit your 5-hour limit · resets 8:10pm (UTC)",
		SuggestedAction: "claude in orch:0.0 (pane %1) hit its usage limit, which resets 20:10 (in 2h 5m). It continues by itself then."})
	if m.Title != "orch %1: usage limit" || !strings.Contains(m.Body, "resets 8:10pm (UTC)") || !strings.Contains(m.Body, "(in 2h 5m)") {
		t.Errorf("message = %+v", m)
	}
	if p := DefaultPriority(api.ReasonUsageLimit); p != 3 {
		t.Errorf("priority = %d", p)
	}
}
