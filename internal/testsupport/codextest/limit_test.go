package codextest

import (
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/rules"
)

// TestRealCodexUsageLimit: a spent ChatGPT plan ends the turn with "You've
// hit your usage limit. Try again at 9:52 PM." in the CLI's own zone,
// which it does not name (here New York's, not the tests'), or with the
// date when the reset is another day. That is rate_limited, nothing to
// continue it by itself, the reset read in the zone its process runs in
// (monitor.PaneZone). A turn that goes through leaves the limit behind.
func TestRealCodexUsageLimit(t *testing.T) {
	t.Parallel()
	fakeAPI := NewFakeAPI(t)
	s := Start(t, Options{API: fakeAPI, Provider: []string{"request_max_retries = 0", "stream_max_retries = 0"}, Env: []string{"TZ=America/New_York"}})
	classify := classifier(t)
	zone := monitor.PaneZone(s.PanePID())
	if zone == nil || zone.String() != "America/New_York" {
		t.Fatalf("the pane's zone = %v, want America/New_York", zone)
	}
	for i, ahead := range []time.Duration{3 * time.Hour, 30 * time.Hour} {
		reset := time.Now().Add(ahead)
		fakeAPI.FailNext(1, UsageLimit(reset))
		s.Send("hello there")
		r := waitClass(t, s, classify, api.RateLimited, "", "codex.usage_limit")
		at, ok := rules.ParseReset(r.Resets, time.Now(), zone)
		if !ok || at.After(reset) || reset.Sub(at) >= time.Minute || !strings.Contains(r.Detail, "hit your usage limit") {
			t.Fatalf("limit %d: %+v, reset read as %s (ok %v), want the minute of %s\n%s", i, r, at, ok, reset.In(zone), s.Capture())
		}
		if *updateCaptures {
			captures.Save(t, []string{"rate_limited_usage.txt", "rate_limited_usage_tomorrow.txt"}[i], s.Capture())
		}
		s.Send("go on")
		waitTurnDone(s, "go on")
		waitClass(t, s, classify, api.Idle, "", "codex.idle")
	}
}
