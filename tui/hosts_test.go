package tui

import (
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// Sessions of other hosts (as internal/remote's Fleet names them) get a
// host column, this machine's showing local, and host:NAME filters by host.
func TestHostColumnAndFilter(t *testing.T) {
	svc := newFixtureService(t)
	snap := fixtureSnapshot()
	snap.Sessions = append(snap.Sessions, api.Session{Host: "web1", Pane: "web1:%99", Session: "web1:orch-far", SessionID: "web1:$9",
		Target: "web1:orch-far:0.0", Agent: "claude", State: api.AwaitingInput, Question: "Proceed?", Since: now, Updated: now})
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

// Another host's orchestrator cannot be stopped, finished or jumped into
// from here (the lifecycle and the jump act on this machine): the status
// line says how to do it from a terminal, and nothing is called.
func TestHostRowsSayHowToReachThem(t *testing.T) {
	svc := newFixtureService(t)
	snap := fixtureSnapshot()
	snap.Sessions = append(snap.Sessions, api.Session{Host: "web1", Pane: "web1:%99", Session: "web1:orch-far", Target: "web1:orch-far:0.0",
		Agent: "claude", State: api.Working, Since: now, Updated: now})
	svc.SetSnapshot(snap)
	jumped := false
	h := newHarness(t, svc, Options{Jump: func(api.Session) error { jumped = true; return nil },
		AttachHint: func(s api.Session) string { return "ssh -t web1 tmux attach -t orch-far:0.0" }}, 140, 40)
	h.selectPane("web1:%99")
	h.press("S")
	if st := h.statusText(); !strings.Contains(st, "system3 stop web1:orch-far") {
		t.Fatalf("S on another host's row: %q", st)
	}
	h.press("F")
	if st := h.statusText(); !strings.Contains(st, "system3 finish web1:orch-far") {
		t.Fatalf("F on another host's row: %q", st)
	}
	h.press("o")
	if st := h.statusText(); jumped || !strings.Contains(st, "ssh -t web1") {
		t.Fatalf("o on another host's row: jumped %v, %q", jumped, st)
	}
	if c := h.calls(); len(c) != 0 {
		t.Fatalf("calls: %+v", c)
	}
}
