package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/lifecycle"
)

// fakeLifecycle records spawn requests, reports two steps and answers
// with err or a result.
type fakeLifecycle struct {
	mu   sync.Mutex
	reqs []lifecycle.SpawnRequest
	err  error
}

func (f *fakeLifecycle) Spawn(ctx context.Context, req lifecycle.SpawnRequest) (lifecycle.SpawnResult, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	err := f.err
	f.mu.Unlock()
	req.Progress(lifecycle.StepWorktree, "creating worktree")
	req.Progress(lifecycle.StepReady, "waiting for claude")
	if err != nil {
		return lifecycle.SpawnResult{}, err
	}
	return lifecycle.SpawnResult{Status: "spawned", Session: lifecycle.SessionName(req.Initiative), Worktree: "/repo/trees/" + req.Initiative,
		TaskList: lifecycle.DefaultTaskList(req.Initiative), AutoTrusted: true}, nil
}

func (f *fakeLifecycle) requests() []lifecycle.SpawnRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]lifecycle.SpawnRequest(nil), f.reqs...)
}

func TestSpawnForm(t *testing.T) {
	lc := &fakeLifecycle{}
	h := newHarness(t, newFixtureService(t), Options{Lifecycle: lc}, 100, 30)
	h.press("s")
	if h.m.input != inputForm || !strings.Contains(h.m.View(), "spawn an orchestrator") {
		t.Fatalf("s did not open the spawn form:\n%s", h.m.View())
	}
	// enter with required fields empty names the first one and sends nothing.
	h.press("enter")
	if len(lc.requests()) != 0 || !strings.Contains(h.m.View(), "initiative is required") {
		t.Fatalf("an incomplete form was submitted:\n%s", h.m.View())
	}
	h.typeText("auth")
	h.press("tab")
	h.typeText("Add OAuth login")
	h.press("tab", "tab", "tab") // repo, base: defaults
	h.typeText("codex")
	h.press("tab", "tab")
	h.typeText("Keep it small.")
	h.press("shift+tab", "down") // back and forth
	h.press("enter")
	reqs := lc.requests()
	if len(reqs) != 1 {
		t.Fatalf("spawns = %+v", reqs)
	}
	r := reqs[0]
	if r.Initiative != "auth" || r.Goal != "Add OAuth login" || r.Agent != "codex" || r.Context != "Keep it small." || r.Repo != "" || r.Origin != "tui" {
		t.Fatalf("request = %+v", r)
	}
	if h.m.input != inputNone || h.m.spawning != "" {
		t.Fatalf("input %v, spawning %q after the spawn", h.m.input, h.m.spawning)
	}
	if s := h.statusText(); !strings.Contains(s, "spawned orch-auth in /repo/trees/auth (task list PRD-AUTH) · trusted the new worktree") {
		t.Fatalf("status = %q", s)
	}

	// A failure shows the lifecycle's message.
	lc.err = &lifecycle.Error{Initiative: "db", Step: lifecycle.StepReady, Err: errors.New("claude was not ready"), CleanedUp: []string{"killed tmux session orch-db"}}
	h.press("s")
	h.typeText("db")
	h.press("tab")
	h.typeText("x")
	h.press("enter")
	if s := h.statusText(); !strings.Contains(s, `✖ spawn db failed at step "wait until ready": claude was not ready; cleaned up: killed tmux session orch-db`) {
		t.Fatalf("status = %q", s)
	}

	// esc closes without spawning.
	h.press("s", "esc")
	if h.m.input != inputNone || len(lc.requests()) != 2 {
		t.Fatalf("esc: input %v, spawns %d", h.m.input, len(lc.requests()))
	}
}

func TestSpawnProgressShows(t *testing.T) {
	h := newHarness(t, newFixtureService(t), Options{}, 100, 30)
	h.m.spawning = "auth"
	ch := make(chan string, 1)
	ch <- "creating worktree"
	close(ch) // the spawn has ended: the next read stops
	h.send(spawnProgressMsg{text: "waiting for claude", ch: ch})
	if s := h.statusText(); s != "spawning auth: creating worktree" { // the step after, read at once
		t.Fatalf("status = %q", s)
	}
}

func TestSpawnWithoutLifecycle(t *testing.T) {
	h := newHarness(t, newFixtureService(t), Options{}, 100, 30)
	h.press("s")
	if h.m.input != inputNone || !strings.Contains(h.statusText(), "cannot spawn") {
		t.Fatalf("input %v, status %q", h.m.input, h.statusText())
	}
}

func TestLinkKey(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	h.selectPane("%4")
	sel, _ := h.m.table.Selected()
	h.press("t")
	if h.m.input != inputForm || !strings.Contains(h.m.View(), "link "+sel.Target) {
		t.Fatalf("L did not open the link form:\n%s", h.m.View())
	}
	h.press("ctrl+u")
	h.typeText("PRD-API")
	h.press("enter")
	calls := h.calls()
	if len(calls) != 1 || calls[0].Method != "link" || calls[0].TaskList != "PRD-API" || calls[0].Origin != "tui" {
		t.Fatalf("calls = %+v", calls)
	}
	if want := (monitor.Target{Session: sel.Session}); calls[0].Target != want && calls[0].Target != (monitor.Target{Pane: sel.Pane}) {
		t.Fatalf("target = %+v", calls[0].Target)
	}
	if s := h.statusText(); !strings.Contains(s, "to PRD-API") {
		t.Fatalf("status = %q", s)
	}
	// A bad id is refused by the service, and said so.
	h.press("t", "ctrl+u")
	h.typeText("../x")
	h.press("enter")
	if s := h.statusText(); !strings.Contains(s, "✖ could not link") || !strings.Contains(s, "not a task list id") {
		t.Fatalf("status = %q", s)
	}
}
