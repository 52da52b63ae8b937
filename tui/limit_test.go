package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/system3-dev/system3/internal/api"
)

// A session held by a usage limit shows, at a glance, that it waits for
// the reset and not on an error: its own badge, and in the detail when
// the limit resets, counting down, and whether the agent goes on by
// itself then.
func TestDetailShowsTheUsageLimit(t *testing.T) {
	if b := badge(api.RateLimited); b != "◷ limited" || lookOf(api.RateLimited) == lookOf(api.Error) {
		t.Fatalf("badge = %q", b)
	}
	d := newDetail(testStyles(), newKeyMap().Zoom)
	d.SetSize(200, 30)
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	d.now = now
	sess := fixtureSessions()[1]
	sess.State, sess.Kind, sess.Question, sess.Options = api.RateLimited, api.KindAutoResume, "", nil
	sess.Detail = "You've hit your 5-hour limit · resets 2am (UTC)"
	sess.ResetsAt = time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	d.SetSession(sess, 1, true)
	v := ansi.Strip(d.View())
	for _, want := range []string{"resets Sun 22 Nov 02:00 (in 17h) · continues by itself then", "You've hit your 5-hour limit · resets 2am (UTC)"} {
		if !strings.Contains(v, want) {
			t.Errorf("the detail lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "error") {
		t.Errorf("a usage limit shown as an error:\n%s", v)
	}
}
