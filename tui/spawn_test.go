package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/facadetest"
)

func TestSpawnForm(t *testing.T) {
	lc := &facadetest.Orchestrators{}
	h := newPartsHarness(t, newFixtureService(t), backend.Parts{Orchestrators: lc}, Options{}, 100, 30)
	h.press("s")
	if h.m.input != inputForm || !strings.Contains(h.m.View(), "spawn an orchestrator") {
		t.Fatalf("s did not open the spawn form:\n%s", h.m.View())
	}
	// enter with required fields empty names the first one and sends nothing.
	h.press("enter")
	if len(lc.Spawns()) != 0 || !strings.Contains(h.m.View(), "initiative is required") {
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
	reqs := lc.Spawns()
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
	lc.Fail("spawn", &api.SpawnError{Initiative: "db", Step: api.StepReady, Err: errors.New("claude was not ready"), CleanedUp: []string{"killed tmux session orch-db"}})
	h.press("s")
	h.typeText("db")
	h.press("tab")
	h.typeText("x")
	h.press("enter")
	if s := h.statusText(); !strings.Contains(s, `✖ spawn db failed at step "wait until ready": claude was not ready; cleaned up: killed tmux session orch-db`) {
		t.Fatalf("status = %q", s)
	}

	// An agent the configuration does not name is refused by the form:
	// the dashboard never runs a program typed into it.
	h.press("s")
	h.typeText("pwn")
	h.press("tab")
	h.typeText("x; touch $HOME/PWNED_SPAWN")
	h.press("tab", "tab", "tab")
	h.typeText("sh")
	h.press("enter")
	if len(lc.Spawns()) != 2 || !strings.Contains(h.m.View(), "agent sh is not configured; name one of: aider, claude, codex, gemini") {
		t.Fatalf("spawns %d; an unconfigured agent was not refused:\n%s", len(lc.Spawns()), h.m.View())
	}
	h.press("esc")

	// esc closes without spawning.
	h.press("s", "esc")
	if h.m.input != inputNone || len(lc.Spawns()) != 2 {
		t.Fatalf("esc: input %v, spawns %d", h.m.input, len(lc.Spawns()))
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
	lc := &facadetest.Orchestrators{}
	h := newPartsHarness(t, svc, backend.Parts{Orchestrators: lc}, Options{}, 100, 30)
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
	if want := (api.Target{Session: sel.Session}); calls[0].Target != want && calls[0].Target != (api.Target{Pane: sel.Pane}) {
		t.Fatalf("target = %+v", calls[0].Target)
	}
	if s := h.statusText(); !strings.Contains(s, "to PRD-API") {
		t.Fatalf("status = %q", s)
	}
	// The link takes the one path: the orchestrator records follow it.
	if l := lc.Links(); len(l) != 1 || l[0].TaskList != "PRD-API" || l[0].Target != calls[0].Target {
		t.Fatalf("lifecycle told of %+v", l)
	}
	// A bad id is refused by the service, and said so.
	h.press("t", "ctrl+u")
	h.typeText("../x")
	h.press("enter")
	if s := h.statusText(); !strings.Contains(s, "✖ could not link") || !strings.Contains(s, "not a task list id") {
		t.Fatalf("status = %q", s)
	}
	if l := lc.Links(); len(l) != 1 {
		t.Fatalf("a refused link reached the records: %+v", l)
	}
}

func TestStopKey(t *testing.T) {
	lc := &facadetest.Orchestrators{}
	lc.SetStop(api.StopResult{Status: "stopped", Session: "orch-auth", Interrupted: true, Worktree: "/repo/trees/auth", Branch: "auth"})
	h := newPartsHarness(t, newFixtureService(t), backend.Parts{Orchestrators: lc}, Options{}, 100, 30)
	h.selectPane("%1")
	h.press("S")
	if v := h.m.View(); h.m.input != inputForm || !strings.Contains(v, "stop orchestrator auth") || !strings.Contains(v, "remove worktree? (y/N)") {
		t.Fatalf("S did not open the stop confirmation:\n%s", v)
	}
	if len(lc.Stops()) != 0 {
		t.Fatal("S stopped before the confirmation")
	}
	// enter with the answer empty keeps the worktree.
	h.press("enter")
	stops := lc.Stops()
	if want := (api.StopRequest{Name: "orch-auth", Origin: "tui"}); len(stops) != 1 || stops[0] != want {
		t.Fatalf("stops = %+v, want %+v", stops, want)
	}
	if h.m.input != inputNone || h.m.stopping != "" {
		t.Fatalf("input %v, stopping %q after the stop", h.m.input, h.m.stopping)
	}
	if s, want := h.statusText(), "stopped orch-auth (its agent was interrupted first) · worktree /repo/trees/auth kept; branch auth kept"; s != want {
		t.Fatalf("status = %q, want %q", s, want)
	}

	// y removes the worktree.
	lc.SetStop(api.StopResult{Status: "stopped", Session: "orch-auth", Worktree: "/repo/trees/auth", Removed: true, Branch: "auth"})
	h.selectPane("%2") // another pane of the same session: the same orchestrator
	h.press("S")
	h.typeText("y")
	h.press("enter")
	stops = lc.Stops()
	if want := (api.StopRequest{Name: "orch-auth", RemoveWorktree: true, Origin: "tui"}); len(stops) != 2 || stops[1] != want {
		t.Fatalf("stops = %+v, want %+v last", stops, want)
	}
	if s, want := h.statusText(), "stopped orch-auth · worktree /repo/trees/auth removed; branch auth kept"; s != want {
		t.Fatalf("status = %q, want %q", s, want)
	}

	// Another answer is refused in the form, and nothing is stopped.
	h.press("S")
	h.typeText("maybe")
	h.press("enter")
	if v := h.m.View(); h.m.input != inputForm || len(lc.Stops()) != 2 || !strings.Contains(v, "answer y or n") {
		t.Fatalf("a bad answer: input %v, stops %d:\n%s", h.m.input, len(lc.Stops()), v)
	}
	// esc cancels.
	h.press("esc")
	if h.m.input != inputNone || len(lc.Stops()) != 2 {
		t.Fatalf("esc: input %v, stops %d", h.m.input, len(lc.Stops()))
	}

	// A failure says so; stopped-but-worktree-kept says both.
	lc.SetStop(api.StopResult{})
	lc.Fail("stop", fmt.Errorf("%w: no tmux session orch-auth; run `system3 status` to list sessions", api.ErrOrchestratorNotFound))
	h.press("S", "enter")
	if s, want := h.statusText(), "✖ could not stop orch-auth: no such orchestrator: no tmux session orch-auth; run `system3 status` to list sessions"; s != want {
		t.Fatalf("status = %q, want %q", s, want)
	}
	lc.SetStop(api.StopResult{Status: "stopped", Session: "orch-auth", Worktree: "/repo/trees/auth"})
	lc.Fail("stop", errors.New("the session is stopped, but worktree /repo/trees/auth has uncommitted changes, so it was kept"))
	h.press("S")
	h.typeText("yes")
	h.press("enter")
	if s := h.statusText(); !strings.HasPrefix(s, "✖ stopped orch-auth, but: the session is stopped, but worktree /repo/trees/auth has uncommitted changes") {
		t.Fatalf("status = %q", s)
	}
	if n := len(lc.Stops()); n != 4 {
		t.Fatalf("stops = %d, want 4", n)
	}
}

func TestStopKeyRefuses(t *testing.T) {
	// A session not named orch-* is not stopped: stop kills the whole
	// tmux session, and a bare name would mean orch-NAME first.
	lc := &facadetest.Orchestrators{}
	h := newPartsHarness(t, newFixtureService(t), backend.Parts{Orchestrators: lc}, Options{}, 100, 30)
	h.selectPane("%4")
	h.press("S")
	if s := h.statusText(); h.m.input != inputNone || !strings.Contains(s, "only spawned orchestrators (sessions named orch-*) can be stopped from here") ||
		!strings.Contains(s, "api is not one: x interrupts its agent") {
		t.Fatalf("input %v, status %q", h.m.input, s)
	}
	if len(lc.Stops()) != 0 {
		t.Fatalf("stops = %+v", lc.Stops())
	}

	// Without a lifecycle the key says the dashboard cannot stop.
	h = newHarness(t, newFixtureService(t), Options{}, 100, 30)
	h.selectPane("%1")
	h.press("S")
	if s := h.statusText(); h.m.input != inputNone || !strings.Contains(s, "this dashboard cannot stop orchestrators; use `system3 stop NAME`") {
		t.Fatalf("input %v, status %q", h.m.input, s)
	}
}

func TestStopKeyOneAtATime(t *testing.T) {
	lc := &facadetest.Orchestrators{}
	h := newPartsHarness(t, newFixtureService(t), backend.Parts{Orchestrators: lc}, Options{}, 100, 30)
	h.selectPane("%1")
	h.m.stopping = "orch-db" // a stop still under way
	h.press("S")
	if s := h.statusText(); h.m.input != inputNone || s != "stopping orch-db already; wait for it to finish" {
		t.Fatalf("input %v, status %q", h.m.input, s)
	}
}
