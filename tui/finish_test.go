package tui

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// fakeFinisher is a lifecycle that also restores and finishes.
type fakeFinisher struct {
	fakeLifecycle
	fmu      sync.Mutex
	finishes []api.FinishRequest
	restores []api.RestoreRequest
	restoreR api.RestoreResult
}

func (f *fakeFinisher) Finish(ctx context.Context, req api.FinishRequest) (api.FinishResult, error) {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	f.finishes = append(f.finishes, req)
	res := api.FinishResult{Name: req.Name, Branch: req.Name, Base: "main", Commits: 1,
		Stat: " login.go | 1 +\n 1 file changed, 1 insertion(+)", Diff: "diff --git a/login.go b/login.go\n+package \x1b[31mlogin\n\tindented\n",
		Steps: []string{"diff"}}
	if req.Merge != "" {
		res.Merged = req.Merge
		res.Steps = append(res.Steps, "merged auth into main ("+req.Merge+")")
	}
	return res, nil
}

func (f *fakeFinisher) Restore(ctx context.Context, req api.RestoreRequest) (api.RestoreResult, error) {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	f.restores = append(f.restores, req)
	return f.restoreR, nil
}

func TestFinishKeyShowsTheDiffThenFinishes(t *testing.T) {
	lc := &fakeFinisher{}
	h := newPartsHarness(t, newFixtureService(t), facade.Parts{Orchestrators: lc}, Options{}, 120, 40)
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
	lc.fmu.Lock()
	if len(lc.finishes) != 1 || lc.finishes[0].Merge != "" || lc.finishes[0].Remove || lc.finishes[0].Name != "auth" {
		t.Fatalf("the diff request changed something: %+v", lc.finishes)
	}
	lc.fmu.Unlock()
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
	lc.fmu.Lock()
	last := lc.finishes[len(lc.finishes)-1]
	lc.fmu.Unlock()
	if last.Merge != "ff" || !last.Remove || last.PR || last.Origin != "tui" {
		t.Fatalf("finish request = %+v", last)
	}
	if s := h.statusText(); !strings.Contains(s, "finished auth: merged auth into main (ff)") {
		t.Fatalf("status = %q", s)
	}
}

func TestRestoreKey(t *testing.T) {
	lc := &fakeFinisher{restoreR: api.RestoreResult{Orchestrators: []api.RestoreOutcome{
		{Name: "auth", Status: api.RestoreRestored}, {Name: "db", Status: api.RestoreSkipped},
		{Name: "ui", Status: api.RestoreFailed, Reason: "its worktree /r/trees/ui is gone"}}}}
	h := newPartsHarness(t, newFixtureService(t), facade.Parts{Orchestrators: lc}, Options{}, 120, 40)
	h.press("R")
	if len(lc.restores) != 1 || !lc.restores[0].All || lc.restores[0].Origin != "tui" {
		t.Fatalf("restores = %+v", lc.restores)
	}
	if s := h.statusText(); !strings.Contains(s, "1 restored, 1 already running, 1 failed") || !strings.Contains(s, "ui: its worktree /r/trees/ui is gone") {
		t.Fatalf("status = %q", s)
	}
	// A dashboard whose lifecycle cannot restore says so.
	h2 := newPartsHarness(t, newFixtureService(t), facade.Parts{Orchestrators: &fakeLifecycle{}}, Options{}, 120, 40)
	h2.press("R")
	if s := h2.statusText(); !strings.Contains(s, "system3 restore --all") {
		t.Fatalf("status = %q", s)
	}
}
