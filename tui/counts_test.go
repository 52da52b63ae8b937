package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

// The dashboard counts panes as panes, as status and watch do: one tmux
// session with three panes is 3 panes in the counts line, the table's
// title and the filter, never 3 sessions.
func TestDashboardCountsPanes(t *testing.T) {
	svc := monitortest.NewService(t, monitortest.Ticking(now.Add(-10*time.Minute)))
	panes := fixtureSessions()[:3]
	for i := range panes {
		panes[i].Session = "work"
	}
	svc.SetSnapshot(api.Snapshot{Server: "tmux server -L work", Running: true, Sessions: panes, Taken: now})
	h := newHarness(t, svc, Options{}, 120, 30)
	v := h.m.View()
	for _, want := range []string{"3 panes", "Panes · 3"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "3 sessions") || strings.Contains(v, "Sessions · 3") {
		t.Errorf("view counts panes as sessions:\n%s", v)
	}
	h.press("/")
	h.typeText(panes[0].Agent)
	if v := h.m.View(); !strings.Contains(v, " of 3 panes") {
		t.Errorf("the filter counts no panes:\n%s", v)
	}

	svc.SetSnapshot(api.Snapshot{Server: "tmux server -L work", Running: true, Sessions: []api.Session{}, Taken: now})
	e := newHarness(t, svc, Options{}, 120, 30)
	if v := e.m.View(); !strings.Contains(v, "no panes") {
		t.Errorf("an empty server's view:\n%s", v)
	}
}
