package tui

import (
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/facadetest"
)

func TestFinishKeyShowsTheDiffThenFinishes(t *testing.T) {
	lc := &facadetest.Orchestrators{}
	h := newPartsHarness(t, newFixtureService(t), backend.Parts{Orchestrators: lc}, Options{}, 120, 40)
	h.selectPane("%1")
	h.press("F")
	v := h.m.View()
	if h.m.input != inputForm || !strings.Contains(v, "finish auth: auth against main, 1 commit(s)") || !strings.Contains(v, "login.go | 1 +") ||
		!strings.Contains(v, "+package login") || !strings.Contains(v, "    indented") || !strings.Contains(v, "merge into main?") {
		t.Fatalf("F did not show the diff and the form:\n%s", v)
	}
	if strings.Contains(v, "\x1b[31mlogin") {
		t.Fatal("an escape from the diff reached the screen")
	}
	if fs := lc.Finishes(); len(fs) != 1 || fs[0].Merge != "" || fs[0].Remove || fs[0].Name != "auth" {
		t.Fatalf("the diff request changed something: %+v", fs)
	}
	// A bad answer is refused.
	h.typeText("rebase")
	h.press("enter")
	if v := h.m.View(); h.m.input != inputForm || !strings.Contains(v, "answer ff, merge, pr") {
		t.Fatalf("bad mode accepted:\n%s", v)
	}
	h.press("esc")
	h.press("F")
	h.typeText("ff")
	h.press("tab")
	h.typeText("y")
	h.press("enter")
	fs := lc.Finishes()
	last := fs[len(fs)-1]
	if last.Merge != "ff" || !last.Remove || last.PR || last.Origin != "tui" {
		t.Fatalf("finish request = %+v", last)
	}
	if s := h.statusText(); !strings.Contains(s, "finished auth: merged auth into main (ff)") {
		t.Fatalf("status = %q", s)
	}
}

func TestRestoreKey(t *testing.T) {
	lc := &facadetest.Orchestrators{}
	lc.SetRestore(api.RestoreResult{Orchestrators: []api.RestoreOutcome{
		{Name: "auth", Status: api.RestoreRestored}, {Name: "db", Status: api.RestoreSkipped},
		{Name: "ui", Status: api.RestoreFailed, Reason: "its worktree /r/trees/ui is gone"}}})
	h := newPartsHarness(t, newFixtureService(t), backend.Parts{Orchestrators: lc}, Options{}, 120, 40)
	h.press("R")
	if rs := lc.Restores(); len(rs) != 1 || !rs[0].All || rs[0].Origin != "tui" {
		t.Fatalf("restores = %+v", rs)
	}
	if s := h.statusText(); !strings.Contains(s, "1 restored, 1 already running, 1 failed") || !strings.Contains(s, "ui: its worktree /r/trees/ui is gone") {
		t.Fatalf("status = %q", s)
	}
	// A dashboard whose lifecycle cannot restore says so.
	h2 := newPartsHarness(t, newFixtureService(t), backend.Parts{Orchestrators: lc.Plain()}, Options{}, 120, 40)
	h2.press("R")
	if s := h2.statusText(); !strings.Contains(s, "system3 restore --all") {
		t.Fatalf("status = %q", s)
	}
}
