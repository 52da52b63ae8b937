package tui

import (
	"strings"
	"testing"

	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/rules"
)

// Sessions of other hosts (as monitor/remote's Fleet names them) get a
// host column, this machine's showing local, and host:NAME filters by host.
func TestHostColumnAndFilter(t *testing.T) {
	svc := newFixtureService(t)
	snap := fixtureSnapshot()
	snap.Sessions = append(snap.Sessions, monitor.Session{Host: "web1", Pane: "web1:%99", Session: "web1:orch-far", SessionID: "web1:$9",
		Target: "web1:orch-far:0.0", Agent: "claude", State: rules.AwaitingInput, Question: "Proceed?", Since: now, Updated: now})
	svc.SetSnapshot(snap)
	h := newHarness(t, svc, Options{}, 140, 40)
	v := h.m.View()
	if !strings.Contains(v, "HOST") || !strings.Contains(v, "local") {
		t.Fatalf("no host column:\n%s", v)
	}
	var far string
	for _, l := range strings.Split(v, "\n") {
		if strings.Contains(l, "orch-far") {
			far = l
		}
	}
	if !strings.Contains(far, "web1") || strings.Contains(far, "web1:orch-far") {
		t.Fatalf("the other host's row: %q", far)
	}
	h.press("/")
	h.typeText("host:web")
	h.press("enter")
	if got := h.targets(); len(got) != 1 || got[0] != "web1:orch-far:0.0" {
		t.Fatalf("host:web shows %q", got)
	}
	h.press("esc")
	h.press("/")
	h.typeText("host:local")
	h.press("enter")
	if got := h.targets(); len(got) != len(snap.Sessions)-1 {
		t.Fatalf("host:local shows %d of %d: %q", len(got), len(snap.Sessions), got)
	}

	// Without other hosts, no host column.
	svc2 := newFixtureService(t)
	if v := newHarness(t, svc2, Options{}, 140, 40).m.View(); strings.Contains(v, "HOST") {
		t.Fatalf("a host column with no hosts:\n%s", v)
	}
}
