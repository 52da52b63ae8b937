package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// A usage limit's wake says when the limit resets, as the screen said it
// (claude.rate_limited reads it into the detail).
func TestSuggestSaysWhenALimitResets(t *testing.T) {
	s := &Supervisor{cfg: Config{Clock: time.Now}}
	cur := api.Session{Agent: "claude", Target: "orch:0.0", Pane: "%1", State: api.Error, Kind: "rate_limited",
		Detail: "You've hit your 5-hour limit · resets 8:10pm (UTC)"}
	if got := s.suggest(cur, api.ReasonAPIError); !strings.Contains(got, "(You've hit your 5-hour limit · resets 8:10pm (UTC))") {
		t.Errorf("suggestion = %q", got)
	}
	cur.Detail = ""
	if got := s.suggest(cur, api.ReasonAPIError); !strings.Contains(got, "held by a rate or usage limit; wait for the reset") {
		t.Errorf("suggestion without a reset = %q", got)
	}
}
