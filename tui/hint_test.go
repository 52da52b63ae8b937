package tui

import (
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// A screen no rule explains shows a one-line hint in the detail view.
func TestDetailShowsUnmatchedHint(t *testing.T) {
	d := newDetail(testStyles(), newKeyMap().Zoom)
	d.SetSize(200, 20)
	sess := fixtureSessions()[1]
	sess.State, sess.Kind, sess.Agent, sess.Pane = api.Unknown, "", "claude", "%7"
	sess.Evidence = api.Evidence{Source: "screen", Rule: api.RuleNoMatch, Lines: []string{"no rule matched (claude 2.1.330)", "odd"}}
	d.SetSession(sess, 1, true)
	if v := d.View(); !strings.Contains(v, "system3 rules capture %7") || !strings.Contains(v, "no rule matched (claude 2.1.330)") {
		t.Fatalf("view:\n%s", v)
	}
	sess.Evidence.Rule = "claude.idle"
	sess.State = api.Idle
	d.SetSession(sess, 2, true)
	if v := d.View(); strings.Contains(v, "rules capture") {
		t.Fatalf("a hint for a known screen:\n%s", v)
	}
}
