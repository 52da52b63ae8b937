package monitor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeTmux struct {
	mu      sync.Mutex
	panes   []tmux.Pane
	screens map[string]string
	err     error
	// lists counts ListPanes calls.
	lists int
	// captured lists the panes captured, in the order captures started.
	captured []string
	// onCapture, when set, runs at the start of each capture, outside the
	// lock; an error from it is the capture's.
	onCapture func(ctx context.Context, pane string) error
}

func (f *fakeTmux) ListPanes(ctx context.Context) ([]tmux.Pane, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	return slices.Clone(f.panes), f.err
}

func (f *fakeTmux) Capture(ctx context.Context, pane string, _ tmux.CaptureOptions) (string, error) {
	f.mu.Lock()
	f.captured = append(f.captured, pane)
	hook := f.onCapture
	f.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, pane); err != nil {
			return "", err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.screens[pane]
	if !ok {
		return "", tmux.ErrNotFound
	}
	return s, nil
}

// show puts a capture fixture on a pane's screen, with cmd in the
// foreground, and makes its activity change as tmux would.
func (f *fakeTmux) show(t *testing.T, pane, cmd, fixture string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "captures", fixture))
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.screens[pane] = string(data)
	for i := range f.panes {
		if f.panes[i].ID == pane {
			f.panes[i].Command = cmd
			f.panes[i].Activity = f.panes[i].Activity.Add(time.Second)
			return
		}
	}
	f.panes = append(f.panes, tmux.Pane{ID: pane, SessionName: "orch-" + strings.TrimPrefix(pane, "%"), Command: cmd, PID: 100, Width: 100, Height: 30, Activity: time.Unix(1, 0)})
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type harness struct {
	t     *testing.T
	tm    *fakeTmux
	clock *clock
	store *wake.Store
	sup   *Supervisor
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	eng, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{now: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)}
	store, _, err := wake.Open(wake.Config{Dir: t.TempDir(), Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tm := &fakeTmux{screens: map[string]string{}}
	cfg := Config{Server: "test", Tmux: tm, Rules: eng, Wakes: store, Clock: c.Now, HeartbeatEvery: -1, MinCapture: -1, OtherCapture: -1}
	if mod != nil {
		mod(&cfg)
	}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, tm: tm, clock: c, store: store, sup: sup}
}

// step is one refresh: list panes, capture what changed, check time.
func (h *harness) step() {
	ctx := context.Background()
	h.sup.rescan(ctx)
	h.sup.flush(ctx)
	h.sup.timeChecks(h.clock.Now())
}

// run runs the supervisor until the test ends.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.sup.Run(ctx) }()
	h.t.Cleanup(func() { cancel(); <-done })
}

// await waits (up to 3s) for a snapshot that ok accepts.
func (h *harness) await(what string, ok func(api.Snapshot) bool) {
	h.t.Helper()
	testkit.WaitForValue(h.t, 3*time.Second, what, func() (api.Snapshot, bool) {
		snap, _ := h.sup.Snapshot(context.Background())
		return snap, ok(snap)
	})
}

// inState accepts a snapshot where pane is in state want.
func inState(pane string, want api.State) func(api.Snapshot) bool {
	return func(snap api.Snapshot) bool {
		for _, s := range snap.Sessions {
			if s.Pane == pane {
				return s.State == want
			}
		}
		return false
	}
}

func (h *harness) session(pane string) api.Session {
	h.t.Helper()
	snap, _ := h.sup.Snapshot(context.Background())
	for _, s := range snap.Sessions {
		if s.Pane == pane {
			return s
		}
	}
	h.t.Fatalf("no session for pane %s in %+v", pane, snap.Sessions)
	return api.Session{}
}

func (h *harness) unacked(reason api.Reason) []api.Wake {
	var out []api.Wake
	for _, e := range h.store.Unacked() {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) allWakes(reason api.Reason) []api.Wake {
	evs, err := h.store.List(api.WakeFilter{Reasons: []api.Reason{reason}, IncludeAcked: true, IncludeResolved: true})
	if err != nil {
		h.t.Fatal(err)
	}
	return evs
}

func TestPermissionPromptWakesOncePerCondition(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.step()
	s := h.session("%1")
	if s.State != api.AwaitingInput || s.Kind != "permission" || s.Agent != "claude" || s.Evidence.Rule != "claude.permission" {
		t.Fatalf("session = %+v", s)
	}
	w := h.unacked(api.ReasonAwaitingInput)
	if len(w) != 1 || w[0].Question != "Do you want to proceed?" || len(w[0].Options) != 4 || w[0].Pane != "%1" ||
		w[0].SuggestedAction == "" || !strings.Contains(w[0].Details, "./deploy.sh --prod") {
		t.Fatalf("wakes = %+v", w)
	}

	// The same prompt captured again, even after an ack: no new wake.
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.step()
	if _, err := h.store.Ack(w[0].ID, "test"); err != nil {
		t.Fatal(err)
	}
	h.tm.show(t, "%1", "claude", "claude/permission_bash_80x24.txt")
	h.step()
	if n := len(h.allWakes(api.ReasonAwaitingInput)); n != 1 {
		t.Fatalf("%d awaiting_input wakes while one prompt stayed on screen", n)
	}

	// The prompt is answered, then a new one appears: a new wake.
	h.tm.show(t, "%1", "claude", "claude/working_tool_running.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Working {
		t.Fatalf("state after answer = %s", s.State)
	}
	h.tm.show(t, "%1", "claude", "claude/permission_edit.txt")
	h.step()
	if w := h.unacked(api.ReasonAwaitingInput); len(w) != 1 || w[0].Question != "Do you want to make this edit to notes.txt?" {
		t.Fatalf("second prompt wakes = %+v", w)
	}
}

func TestErrorWaitsForGraceThenWakes(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%2", "claude", "claude/api_error_500.txt")
	h.step()
	if s := h.session("%2"); s.State != api.Error || s.Kind != "api_error" {
		t.Fatalf("session = %+v", s)
	}
	if len(h.unacked(api.ReasonAPIError)) != 0 {
		t.Fatal("api_error wake raised before the grace period")
	}
	h.clock.Add(31 * time.Second)
	h.step()
	w := h.unacked(api.ReasonAPIError)
	if len(w) != 1 || w[0].Kind != "api_error" {
		t.Fatalf("wakes after grace = %+v", w)
	}
	// Recovery clears the condition; a later error wakes again.
	h.tm.show(t, "%2", "claude", "claude/idle_after_turn.txt")
	h.step()
	h.tm.show(t, "%2", "claude", "claude/api_overloaded_final.txt")
	h.step()
	h.clock.Add(31 * time.Second)
	h.step()
	if n := len(h.allWakes(api.ReasonAPIError)); n != 2 {
		t.Fatalf("%d api_error wakes, want 2", n)
	}
}

func TestRetryCountdownBecomesErrorLoop(t *testing.T) {
	h := newHarness(t, nil)
	for i, f := range []string{"api_error_retry_attempt2.txt", "api_error_retry_attempt2.txt", "api_error_retry_attempt3.txt"} {
		h.tm.show(t, "%3", "claude", "claude/"+f)
		h.step()
		if s := h.session("%3"); s.State != api.Error {
			t.Fatalf("step %d: state %s, want error (count %d)", i, s.State, s.ErrorCount)
		}
		h.clock.Add(5 * time.Second)
	}
	h.tm.show(t, "%3", "claude", "claude/api_error_retry_attempt4.txt")
	h.step()
	s := h.session("%3")
	if s.State != api.ErrorLoop || s.Evidence.Rule != "monitor.error_loop" || s.ErrorCount != 3 {
		t.Fatalf("session = %+v", s)
	}
	if w := h.unacked(api.ReasonErrorLoopDetected); len(w) != 1 {
		t.Fatalf("error loop wakes = %+v", w)
	}
}

func TestRepeatsOutsideWindowAreNotALoop(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.LoopWindow = time.Minute; c.ErrorGrace = time.Hour })
	for i := 0; i < 4; i++ {
		h.tm.show(t, "%4", "claude", "claude/api_error_500.txt")
		h.step()
		if s := h.session("%4"); s.State != api.Error {
			t.Fatalf("repeat %d: state %s", i, s.State)
		}
		h.tm.show(t, "%4", "claude", "claude/idle_after_turn.txt")
		h.step()
		h.clock.Add(2 * time.Minute)
	}
	// Three times within the window is a loop.
	for i := 0; i < 3; i++ {
		h.tm.show(t, "%4", "claude", "claude/api_error_500.txt")
		h.step()
		h.tm.show(t, "%4", "claude", "claude/idle_after_turn.txt")
		h.step()
		h.clock.Add(time.Second)
	}
	h.tm.show(t, "%4", "claude", "claude/api_error_500.txt")
	h.step()
	if s := h.session("%4"); s.State != api.ErrorLoop {
		t.Fatalf("state %s, want error_loop", s.State)
	}
}

func TestIdleAndHeartbeat(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HeartbeatEvery = 5 * time.Minute })
	h.tm.show(t, "%5", "claude", "claude/idle.txt")
	h.step()
	h.clock.Add(5*time.Minute + time.Second)
	h.step()
	hb := h.unacked(api.ReasonHeartbeat)
	if len(hb) != 1 || !strings.Contains(hb[0].SuggestedAction, "1 idle") {
		t.Fatalf("heartbeat = %+v", hb)
	}
	if len(h.unacked(api.ReasonSessionIdle)) != 0 {
		t.Fatal("idle wake before idle_after")
	}
	h.clock.Add(5 * time.Minute)
	h.step()
	idle := h.unacked(api.ReasonSessionIdle)
	if len(idle) != 1 || idle[0].Pane != "%5" {
		t.Fatalf("idle wakes = %+v", idle)
	}
	// The idle wake counts as activity: no heartbeat right after it.
	if n := len(h.unacked(api.ReasonHeartbeat)); n != 1 {
		t.Fatalf("%d heartbeats, want 1", n)
	}
}

func TestAgentExitWakesWorkerFailed(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%6", "claude", "claude/working_spinner_streaming.txt")
	h.step()
	// Killed: its last screen stays, the shell back in front of it.
	h.tm.show(t, "%6", "bash", "claude/working_spinner_streaming.txt")
	h.step()
	s := h.session("%6")
	if s.State != api.Exited || s.Agent != "claude" {
		t.Fatalf("session = %+v", s)
	}
	// It quit without its goodbye: once the exit grace has passed with
	// none, a failed worker.
	h.clock.Add(h.sup.cfg.ExitGrace)
	h.step()
	w := h.unacked(api.ReasonWorkerFailed)
	if len(w) != 1 || w[0].Agent != "claude" {
		t.Fatalf("worker_failed wakes = %+v", w)
	}
	// One that quit clearing its screen (Claude Code leaving a session
	// with no conversation) chose to: exited, no wake.
	h.tm.show(t, "%8", "claude", "claude/working_spinner_streaming.txt")
	h.step()
	h.tm.show(t, "%8", "bash", "shell/prompt.txt")
	h.step()
	h.clock.Add(h.sup.cfg.ExitGrace)
	h.step()
	if s := h.session("%8"); s.State != api.Exited || s.Agent != "claude" || s.Evidence.Rule != ruleAgentLeft {
		t.Fatalf("session = %+v", s)
	}
	for _, w := range h.allWakes(api.ReasonWorkerFailed) {
		if w.Pane == "%8" {
			t.Fatalf("a clean quit raised %+v", w)
		}
	}
	// A plain shell pane that never ran an agent is idle, not failed.
	h.tm.show(t, "%7", "bash", "shell/prompt.txt")
	h.step()
	if s := h.session("%7"); s.State != api.Idle || s.Agent != "shell" {
		t.Fatalf("shell pane = %+v", s)
	}
}

// A shell that prints an agent's screen (cat of a saved screen, a script
// whose first command draws it) never ran that agent: it is a shell, not
// an exited agent, and raises no worker_failed. Once a non-shell program
// shows the agent's screen, the shell coming back is an exit.
func TestShellShowingAgentTextIsNotAnExit(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%9", "bash", "claude/permission_bash.txt")
	h.step()
	if s := h.session("%9"); s.State == api.Exited || s.Agent != "shell" {
		t.Fatalf("a shell showing Claude's prompt = %s/%s %s (%s)", s.State, s.Kind, s.Agent, s.Evidence.Rule)
	}
	if w := h.allWakes(api.ReasonWorkerFailed); len(w) != 0 {
		t.Fatalf("worker_failed raised for a shell: %+v", w)
	}
	// The script goes on to a program whose screen is Claude's.
	h.tm.show(t, "%9", "sleep", "claude/permission_bash.txt")
	h.step()
	if s := h.session("%9"); s.State != api.AwaitingInput || s.Agent != "claude" {
		t.Fatalf("after the program started = %s/%s %s", s.State, s.Kind, s.Agent)
	}
	h.tm.show(t, "%9", "bash", "claude/permission_bash.txt")
	h.step()
	if s := h.session("%9"); s.State != api.Exited || s.Agent != "claude" {
		t.Fatalf("the shell back in front of Claude's screen = %s/%s %s", s.State, s.Kind, s.Agent)
	}
	h.clock.Add(h.sup.cfg.ExitGrace)
	h.step()
	if w := h.allWakes(api.ReasonWorkerFailed); len(w) != 1 {
		t.Fatalf("worker_failed wakes = %+v, want one", w)
	}
}

func TestDeadPaneAndRemoval(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	updates, err := h.sup.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.tm.show(t, "%8", "claude", "claude/permission_bash.txt")
	h.step()
	h.tm.mu.Lock()
	h.tm.panes[0].Dead, h.tm.panes[0].DeadStatus = true, 1
	h.tm.mu.Unlock()
	h.step()
	if s := h.session("%8"); s.State != api.Exited || s.Kind != "dead" || s.Agent != "claude" {
		t.Fatalf("dead pane = %+v", s)
	}
	// The prompt's wake is resolved (the agent moved on, to its death);
	// the exit is a new wake that needs someone.
	if w := h.allWakes(api.ReasonAwaitingInput); len(w) != 1 || !w[0].Resolved || w[0].Resolution != "the agent moved on (now exited)" {
		t.Fatalf("awaiting_input wakes = %+v", w)
	}
	if len(h.unacked(api.ReasonAwaitingInput)) != 0 || len(h.unacked(api.ReasonWorkerFailed)) != 1 {
		t.Fatalf("wakes = %+v", h.store.Unacked())
	}
	h.tm.mu.Lock()
	h.tm.panes = nil
	h.tm.mu.Unlock()
	h.step()
	snap, _ := h.sup.Snapshot(ctx)
	if len(snap.Sessions) != 0 {
		t.Fatalf("removed pane still listed: %+v", snap.Sessions)
	}
	// The registry's status (the server found running) comes first, then
	// the pane's life.
	var kinds []api.UpdateKind
	for len(updates) > 0 {
		kinds = append(kinds, (<-updates).Kind)
	}
	want := []api.UpdateKind{api.StatusChanged, api.SessionAdded, api.SessionChanged, api.SessionChanged, api.SessionRemoved}
	if !slices.Equal(kinds, want) {
		t.Fatalf("updates = %v, want %v", kinds, want)
	}
}

func TestClosedAgentPaneWakesWorkerFailed(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/working_spinner_streaming.txt")
	h.tm.show(t, "%2", "bash", "shell/prompt.txt")
	h.step()
	h.tm.mu.Lock()
	h.tm.panes = nil
	h.tm.mu.Unlock()
	h.step()
	w := h.unacked(api.ReasonWorkerFailed)
	if len(w) != 1 || w[0].Pane != "%1" || w[0].Kind != "closed" || w[0].Agent != "claude" || w[0].Evidence.Rule != "monitor.pane_closed" {
		t.Fatalf("worker_failed wakes = %+v", w)
	}
	// Later refreshes raise nothing more; the wake stays until acknowledged.
	h.step()
	if n := len(h.allWakes(api.ReasonWorkerFailed)); n != 1 {
		t.Fatalf("%d worker_failed wakes, want 1", n)
	}
}

func TestNoServerIsAStateNotACrash(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.err = tmux.ErrNoServer
	h.step()
	snap, _ := h.sup.Snapshot(context.Background())
	if snap.Running || !strings.Contains(snap.Problem, "no tmux server") {
		t.Fatalf("snapshot = %+v", snap)
	}
	h.tm.err = nil
	h.tm.show(t, "%9", "claude", "claude/idle.txt")
	h.step()
	snap, _ = h.sup.Snapshot(context.Background())
	if !snap.Running || snap.Problem != "" || len(snap.Sessions) != 1 {
		t.Fatalf("snapshot after server start = %+v", snap)
	}
}

func TestSlowWatcherGetsResync(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	updates, _ := h.sup.Watch(ctx)
	fixtures := []string{"claude/idle.txt", "claude/working_spinner_start.txt"}
	for i := 0; i < watchBuffer+10; i++ {
		h.tm.show(t, "%1", "claude", fixtures[i%2])
		h.step()
	}
	n, resync := 0, false
	for len(updates) > 0 {
		u := <-updates
		n++
		resync = resync || u.Kind == api.Resync
	}
	if n != watchBuffer {
		t.Fatalf("received %d updates, want the buffer's %d", n, watchBuffer)
	}
	// The next update after draining is the resync notice.
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.step()
	if u := <-updates; u.Kind != api.Resync || u.Missed == 0 {
		t.Fatalf("after overflow got %+v, want a resync with a missed count", u)
	}
	cancel()
	for range updates {
	}
}

func TestCapturesOfOnePaneAreSpaced(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MinCapture = 80 * time.Millisecond })
	ctx := context.Background()
	h.tm.show(t, "%1", "claude", "claude/working_spinner_start.txt")
	h.step()
	// Output again right away: the pane stays dirty and flush says when
	// to come back.
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: "%1"})
	h.clock.Add(30 * time.Millisecond)
	if wait := h.sup.flush(ctx); wait != 50*time.Millisecond {
		t.Fatalf("flush wait = %s, want 50ms", wait)
	}
	if s := h.session("%1"); s.State != api.Working {
		t.Fatalf("captured again too soon: %s", s.State)
	}
	h.clock.Add(50 * time.Millisecond)
	if wait := h.sup.flush(ctx); wait != 0 {
		t.Fatalf("flush wait = %s, want 0", wait)
	}
	if s := h.session("%1"); s.State != api.AwaitingInput {
		t.Fatalf("held-back capture never happened: %s", s.State)
	}
}

func TestPanesWithoutAgentAreCapturedLessOften(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MinCapture, c.OtherCapture = 80*time.Millisecond, time.Second })
	ctx := context.Background()
	h.tm.show(t, "%2", "bash", "shell/prompt.txt")
	h.step()
	h.tm.show(t, "%2", "bash", "shell/prompt.txt")
	h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: "%2"})
	h.clock.Add(100 * time.Millisecond)
	if wait := h.sup.flush(ctx); wait != 900*time.Millisecond {
		t.Fatalf("flush wait for a shell pane = %s, want 900ms", wait)
	}
}

func TestSortSessions(t *testing.T) {
	ss := []api.Session{
		{Session: "b", Pane: "%2", State: api.Idle},
		{Session: "a", Pane: "%1", State: api.Working},
		{Session: "c", Pane: "%3", State: api.AwaitingInput},
		{Session: "a", Pane: "%4", WindowIndex: 1, State: api.Error},
	}
	api.SortSessions(ss)
	var got []string
	for _, s := range ss {
		got = append(got, s.Pane)
	}
	if want := []string{"%4", "%3", "%1", "%2"}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

func TestNormalizeError(t *testing.T) {
	a := normalizeError("Error: open /home/u/proj/a.go:12: no such file (after 3.2s) id 3f2a9c1d77")
	b := normalizeError("Error: open /tmp/x/b.go:99: no such file (after 12s) id 9a8b7c6d5e")
	if a != b {
		t.Fatalf("%q != %q", a, b)
	}
	if normalizeError("permission denied") == normalizeError("connection refused") {
		t.Fatal("different errors share a signature")
	}
}

// Output from an agent's pane is captured after Settle even while another
// pane is held back for much longer.
func TestHeldBackPaneDoesNotDelayOthers(t *testing.T) {
	events := make(chan tmux.Event, 16)
	h := newHarness(t, func(c *Config) {
		c.Clock, c.Events = time.Now, events
		c.MinCapture, c.OtherCapture, c.Settle = 10*time.Millisecond, 10*time.Second, 10*time.Millisecond
	})
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.tm.show(t, "%2", "bash", "shell/prompt.txt")
	h.run()
	h.await("%1 idle", inState("%1", api.Idle))
	h.await("%2 idle", inState("%2", api.Idle))
	// The shell pane prints: held back for 10s. Then the agent prompts.
	events <- tmux.Event{Kind: tmux.EventOutput, PaneID: "%2"}
	time.Sleep(50 * time.Millisecond)
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	events <- tmux.Event{Kind: tmux.EventOutput, PaneID: "%1"}
	h.await("%1 awaiting input", inState("%1", api.AwaitingInput))
}

// The watcher's full listings (tmux.EventListed) stand in for the
// supervisor's own: a new session, the periodic rescan and a changed
// process list nothing again, while a server that went away is listed
// anew, and a listing kept from before it is not used after.
func TestWatcherListingsSpareListing(t *testing.T) {
	events := make(chan tmux.Event, 16)
	h := newHarness(t, func(c *Config) {
		c.Clock, c.Events = time.Now, events
		c.Settle, c.Tick, c.Rescan = 5*time.Millisecond, 20*time.Millisecond, 100*time.Millisecond
	})
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	lists := func() int { h.tm.mu.Lock(); defer h.tm.mu.Unlock(); return h.tm.lists }
	listing := func() []tmux.Pane { h.tm.mu.Lock(); defer h.tm.mu.Unlock(); return slices.Clone(h.tm.panes) }
	h.run()
	h.await("%1 idle", inState("%1", api.Idle))
	base := lists() // Run's first scan

	// A new session: the watcher's listing, then the change it found.
	h.tm.show(t, "%2", "bash", "shell/prompt.txt")
	events <- tmux.Event{Kind: tmux.EventListed, Panes: listing()}
	events <- tmux.Event{Kind: tmux.EventSessionsChanged}
	h.await("%2 idle", inState("%2", api.Idle))
	// The agent quits to its shell: a listing shows the new command.
	h.tm.show(t, "%1", "bash", "shell/prompt.txt")
	events <- tmux.Event{Kind: tmux.EventListed, Panes: listing()}
	h.await("%1 exited", func(snap api.Snapshot) bool {
		for _, s := range snap.Sessions {
			if s.Pane == "%1" {
				return s.Command == "bash" && s.State == api.Exited
			}
		}
		return false
	})
	// Rescans are due every 100ms: with a listing this recent, none lists.
	for range 5 {
		events <- tmux.Event{Kind: tmux.EventListed, Panes: listing()}
		time.Sleep(60 * time.Millisecond)
	}
	if n := lists() - base; n != 0 {
		t.Fatalf("the supervisor listed panes %d times although the watcher sent its listings", n)
	}

	// The server goes away: a listing made now says so, not the one kept.
	h.tm.mu.Lock()
	h.tm.err = &tmux.Error{Op: "list-panes", Msg: "no server", Err: tmux.ErrNoServer}
	h.tm.mu.Unlock()
	events <- tmux.Event{Kind: tmux.EventDisconnected, Reason: "gone"}
	h.await("no server", func(snap api.Snapshot) bool { return strings.Contains(snap.Problem, "no tmux server") })
	time.Sleep(250 * time.Millisecond) // periodic rescans, with no listing to use
	if snap, _ := h.sup.Snapshot(context.Background()); !strings.Contains(snap.Problem, "no tmux server") || len(snap.Sessions) != 0 {
		t.Fatalf("after the server went away: problem %q, sessions %+v", snap.Problem, snap.Sessions)
	}
	if lists() <= base {
		t.Fatal("the supervisor did not list panes when the server went away")
	}
}

// A watcher's listing between two Rescans captures a pane again only when
// its process, size or liveness changed: the watcher reports changed
// screens itself. A scan with signs (every Rescan) also captures panes
// whose activity, cursor or history changed since the last such scan.
func TestListingMarksChangesBySigns(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	dirty := func() bool {
		h.sup.mu.Lock()
		defer h.sup.mu.Unlock()
		return h.sup.panes["%1"].dirty
	}
	apply := func(signs bool) bool {
		h.sup.scanListing(slices.Clone(h.tm.panes), signs)
		d := dirty()
		h.sup.flush(context.Background())
		return d
	}
	h.tm.show(t, "%1", "claude", "claude/idle.txt") // activity moves on
	if apply(false) {
		t.Fatal("a listing without signs marked a pane whose activity changed")
	}
	if !apply(true) {
		t.Fatal("a scan with signs missed the activity changed since the last one")
	}
	if apply(true) {
		t.Fatal("a scan with signs marked a pane that had not changed since the last one")
	}
	h.tm.show(t, "%1", "bash", "shell/prompt.txt")
	if !apply(false) {
		t.Fatal("a listing without signs missed a changed process")
	}
}

func TestSetRulesReclassifiesEveryPane(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "bash", "shell/prompt.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Idle {
		t.Fatalf("state = %s", s.State)
	}
	user := rules.Source{Name: "rules.yaml", Data: []byte("version: 1\ndisable: [shell.prompt]\n")}
	eng, err := rules.New(agents.Builtin(), user)
	if err != nil {
		t.Fatal(err)
	}
	h.sup.SetRules(eng)
	h.sup.SetRulesProblem("rules not reloaded: bad")
	// No new output: the swap alone has the pane classified again.
	h.sup.flush(context.Background())
	// A screen no rule explains keeps its state for UnmatchedAfter, then
	// is unknown.
	h.clock.Add(3 * time.Second)
	h.sup.timeChecks(h.clock.Now())
	if s := h.session("%1"); s.State != api.Unknown || s.Evidence.Rule != api.RuleNoMatch {
		t.Fatalf("state after the rule was disabled = %s by %s", s.State, s.Evidence.Rule)
	}
	if snap, _ := h.sup.Snapshot(context.Background()); !strings.Contains(snap.Problem, "rules not reloaded") {
		t.Fatalf("problem = %q", snap.Problem)
	}
}

func TestSummaryDigest(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SummaryEvery = time.Hour })
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.tm.show(t, "%2", "claude", "claude/idle.txt")
	h.step()
	if len(h.unacked(api.ReasonSummary)) != 0 {
		t.Fatal("summary before its time")
	}
	h.clock.Add(time.Hour)
	h.step()
	w := h.unacked(api.ReasonSummary)
	if len(w) != 1 || !strings.Contains(w[0].SuggestedAction, "2 sessions") || !strings.Contains(w[0].SuggestedAction, "1 need attention") {
		t.Fatalf("summary = %+v", w)
	}
	lines := strings.Split(strings.TrimSpace(w[0].Details), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "awaiting_input/permission Do you want to proceed?") || !strings.Contains(lines[1], "idle") {
		t.Fatalf("digest = %q", w[0].Details)
	}
}

// A pane that printed and went quiet is captured before panes still
// streaming, and among those the one captured longest ago goes first.
func TestCaptureOrderFavoursQuietPanes(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Captures = 1 })
	ctx := context.Background()
	for _, p := range []string{"%1", "%2", "%3", "%4"} {
		h.tm.show(t, p, "claude", "claude/working_spinner_start.txt")
	}
	h.step()
	// %4 was captured again later than the others.
	h.clock.Add(10 * time.Millisecond)
	h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: "%4"})
	h.sup.flush(ctx)
	// %3 printed its prompt first and then nothing; %1, %2 and %4 keep
	// printing, %2 last.
	h.clock.Add(10 * time.Millisecond)
	h.tm.show(t, "%3", "claude", "claude/permission_bash.txt")
	h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: "%3"})
	h.clock.Add(40 * time.Millisecond)
	for _, p := range []string{"%4", "%1"} {
		h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: p})
	}
	h.clock.Add(5 * time.Millisecond)
	h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: "%2"})
	h.tm.mu.Lock()
	h.tm.captured = nil
	h.tm.mu.Unlock()
	h.sup.flush(ctx)
	h.tm.mu.Lock()
	got := slices.Clone(h.tm.captured)
	h.tm.mu.Unlock()
	// %1 and %4 printed at the same moment: %1 was captured longer ago.
	if want := []string{"%3", "%1", "%4", "%2"}; !slices.Equal(got, want) {
		t.Fatalf("capture order = %v, want %v", got, want)
	}
	if s := h.session("%3"); s.State != api.AwaitingInput {
		t.Fatalf("prompting pane = %s", s.State)
	}
}

// flush keeps Captures captures in flight, never more, and classifies
// every pane once they return.
func TestFlushCapturesConcurrently(t *testing.T) {
	const limit, n = 3, 8
	h := newHarness(t, func(c *Config) { c.Captures = limit })
	var inflight, peak atomic.Int32
	gate := make(chan struct{})
	h.tm.onCapture = func(ctx context.Context, pane string) error {
		cur := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i := range n {
		h.tm.show(t, fmt.Sprintf("%%%d", i+1), "claude", "claude/permission_bash.txt")
	}
	ctx := context.Background()
	h.sup.rescan(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.sup.flush(ctx)
	}()
	testkit.WaitForValue(t, 5*time.Second, fmt.Sprintf("%d captures in flight", limit), func() (int32, bool) {
		n := inflight.Load()
		return n, n >= limit
	})
	h.tm.mu.Lock()
	started := len(h.tm.captured)
	h.tm.mu.Unlock()
	if started != limit {
		t.Fatalf("%d captures started while %d were blocked, want %d", started, limit, limit)
	}
	close(gate)
	<-done
	if p := peak.Load(); p != limit {
		t.Fatalf("peak captures in flight = %d, want %d", p, limit)
	}
	for i := range n {
		if s := h.session(fmt.Sprintf("%%%d", i+1)); s.State != api.AwaitingInput {
			t.Fatalf("pane %s = %s after flush", s.Pane, s.State)
		}
	}
}

// Ending the context ends a flush whose captures hang: it starts no new
// capture and returns once those in flight gave up (goleak checks that no
// goroutine is left behind).
func TestFlushStopsWithContext(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Captures = 2 })
	h.tm.onCapture = func(ctx context.Context, pane string) error {
		<-ctx.Done()
		return ctx.Err()
	}
	for i := range 6 {
		h.tm.show(t, fmt.Sprintf("%%%d", i+1), "claude", "claude/idle.txt")
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.sup.rescan(ctx)
	done := make(chan time.Duration)
	go func() { done <- h.sup.flush(ctx) }()
	testkit.WaitForValue(t, 5*time.Second, "2 captures started", func() (int, bool) {
		h.tm.mu.Lock()
		defer h.tm.mu.Unlock()
		return len(h.tm.captured), len(h.tm.captured) == 2
	})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("flush did not return after its context ended")
	}
	h.tm.mu.Lock()
	defer h.tm.mu.Unlock()
	if len(h.tm.captured) != 2 {
		t.Fatalf("captures started after the context ended: %v", h.tm.captured)
	}
}

// TestForegroundIsReadAgainOnlyForShells: who holds a pane's terminal is
// read at every capture of a shell's pane (its job changes), but once
// for a pane whose own process is an agent, until tmux lists another
// foreground command or pid for it.
func TestForegroundIsReadAgainOnlyForShells(t *testing.T) {
	var mu sync.Mutex
	reads := map[int]int{}
	roots := map[int]string{100: "claude", 200: "bash"}
	h := newHarness(t, func(c *Config) {
		c.Foreground = func(pid int) (string, string, bool) {
			mu.Lock()
			defer mu.Unlock()
			reads[pid]++
			return roots[pid], "", true
		}
	})
	h.tm.show(t, "%1", "claude", "claude/working_spinner_start.txt")
	h.tm.show(t, "%2", "bash", "shell/prompt.txt")
	h.tm.mu.Lock()
	h.tm.panes[1].PID = 200
	h.tm.mu.Unlock()
	capture := func() {
		for _, p := range []string{"%1", "%2"} {
			h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: p})
		}
		h.step()
	}
	h.step()
	capture()
	capture()
	mu.Lock()
	agent, shell := reads[100], reads[200]
	mu.Unlock()
	if agent != 1 || shell != 3 {
		t.Fatalf("after 3 captures of each: the agent's process was read %d times (want 1), the shell's %d (want 3)", agent, shell)
	}
	// The agent's process execs a shell: tmux lists another command.
	roots[100] = "bash"
	h.tm.show(t, "%1", "bash", "shell/prompt.txt")
	capture()
	mu.Lock()
	agent = reads[100]
	mu.Unlock()
	if agent != 2 {
		t.Fatalf("after the pane's command changed its process was read %d times in all, want 2", agent)
	}
}

// An agent started from a shell quits to it: the shell holds the terminal
// again (Foreground, read at the capture), and the pane is an exited agent
// at once, although the last listing still names the agent's command.
func TestAgentQuitToShellSeenBeforeTheListing(t *testing.T) {
	job := "claude"
	h := newHarness(t, func(c *Config) {
		c.Foreground = func(int) (string, string, bool) { return "bash", job, true }
	})
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	if s := h.session("%1"); s.Agent != "claude" || s.State != api.Idle {
		t.Fatalf("before: %s %s", s.Agent, s.State)
	}
	job = "" // the agent exited; the shell printed its prompt
	h.tm.mu.Lock()
	h.tm.screens["%1"] += "\nbash-5.2$ "
	h.tm.mu.Unlock()
	h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: "%1"})
	h.sup.flush(context.Background()) // no listing: the command listed is still claude
	if s := h.session("%1"); s.Agent != "claude" || s.State != api.Exited || s.Kind != "process_gone" {
		t.Fatalf("after the agent quit: %s %s/%s by %s %v", s.Agent, s.State, s.Kind, s.Evidence.Rule, s.Evidence.Lines)
	}
}

// An agent started from a shell: the listing (full listings come up to 5 s
// apart while panes write) still names the shell, but the capture its
// first screen brings reads the shell's foreground job and the processes
// below it, and the pane is that agent at once.
func TestAgentStartedFromAShellSeenBeforeTheListing(t *testing.T) {
	var job string
	h := newHarness(t, func(c *Config) {
		c.Foreground = func(int) (string, string, bool) { return "bash", job, true }
		c.Processes = func(int) []string {
			if job == "" {
				return nil
			}
			return []string{job}
		}
	})
	h.tm.show(t, "%1", "bash", "shell/idle_bash.txt")
	h.step()
	if s := h.session("%1"); s.Agent == "claude" {
		t.Fatalf("before: %s %s", s.Agent, s.State)
	}
	job = "claude" // typed at the shell's prompt; it drew its screen
	data, err := os.ReadFile(filepath.Join("testdata", "captures", "claude", "idle.txt"))
	if err != nil {
		t.Fatal(err)
	}
	h.tm.mu.Lock()
	h.tm.screens["%1"] = string(data)
	h.tm.mu.Unlock()
	h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: "%1"})
	h.sup.flush(context.Background()) // no listing: the command listed is still bash
	if s := h.session("%1"); s.Agent != "claude" || s.State != api.Idle {
		t.Fatalf("after the agent started: %s %s by %s %v", s.Agent, s.State, s.Evidence.Rule, s.Evidence.Lines)
	}
}

// Every producer's wakes go through Supervisor.Raise: it fills in what the
// registry knows of the pane and the reason's suggested action, keeps what
// the producer said, raises one wake per condition, and counts the wake as
// activity for the heartbeat.
func TestRaiseFillsInFromTheRegistry(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HeartbeatEvery = 5 * time.Minute })
	h.tm.show(t, "%5", "claude", "claude/idle.txt")
	h.step()
	sess := h.session("%5")
	// Four quiet minutes, then the wakes.
	h.clock.Add(4 * time.Minute)
	h.step()

	ev, created, err := h.sup.Raise(api.Wake{Reason: api.ReasonErrorLoopDetected, Key: "pattern/x/%5/1", Pane: "%5"})
	if err != nil || !created {
		t.Fatalf("Raise = %+v, %v, %v", ev, created, err)
	}
	if ev.Session != sess.Session || ev.Agent != "claude" || !strings.Contains(ev.SuggestedAction, "keeps hitting the same error in "+sess.Target) {
		t.Fatalf("not filled in from the registry: %+v", ev)
	}
	again, created, err := h.sup.Raise(api.Wake{Reason: api.ReasonErrorLoopDetected, Key: "pattern/x/%5/1", Pane: "%5", SuggestedAction: "other"})
	if err != nil || created || again.ID != ev.ID {
		t.Fatalf("the same condition raised twice: %+v, %v, %v", again, created, err)
	}

	own, created, err := h.sup.Raise(api.Wake{Reason: api.ReasonValidationFailed, Key: "validation_failed/L/1", Session: "mine", SuggestedAction: "read the output"})
	if err != nil || !created || own.Session != "mine" || own.SuggestedAction != "read the output" || own.Pane != "" {
		t.Fatalf("a producer's own fields changed: %+v, %v, %v", own, created, err)
	}
	if err := h.sup.Resolve("validation_failed/L/1", "the test ended it"); err != nil {
		t.Fatal(err)
	}
	if _, created, _ := h.sup.Raise(api.Wake{Reason: api.ReasonValidationFailed, Key: "validation_failed/L/1"}); !created {
		t.Fatal("a cleared condition did not raise a new wake")
	}

	// Those wakes were activity: six minutes after the start, but two
	// after them, is no time for a heartbeat.
	h.clock.Add(2 * time.Minute)
	h.step()
	if hb := h.unacked(api.ReasonHeartbeat); len(hb) != 0 {
		t.Fatalf("heartbeat %+v right after the raised wakes", hb)
	}
}

// A working agent whose output streams on is captured once a
// StreamCapture, not at each of the watcher's beats (tmux.Event.Streaming);
// a report that is not a beat (its first pause, a dialog drawn) is
// captured at once, and so is every beat of a pane in any other state.
func TestStreamingBeatsOfAWorkingAgentAreCapturedRarely(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StreamCapture = 5 * time.Second })
	ctx := context.Background()
	h.tm.show(t, "%1", "claude", "claude/working_spinner_streaming.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Working {
		t.Fatalf("the fixture is %s, want working", s.State)
	}
	captures := func() int { h.tm.mu.Lock(); defer h.tm.mu.Unlock(); return len(h.tm.captured) }
	beat := func() int {
		n := captures()
		h.clock.Add(time.Second)
		h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: "%1", Streaming: true})
		h.sup.flush(ctx)
		return captures() - n
	}
	var got []int
	for range 10 {
		got = append(got, beat())
	}
	// Captured at the fifth beat (5 s after the last capture) and the tenth.
	if want := []int{0, 0, 0, 0, 1, 0, 0, 0, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("captures at ten beats a second apart: %v, want %v", got, want)
	}
	// Its first pause shows a permission prompt: captured at once.
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	n := captures()
	h.clock.Add(100 * time.Millisecond)
	h.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: "%1"})
	h.sup.flush(ctx)
	if captures() != n+1 || h.session("%1").State != api.AwaitingInput {
		t.Fatalf("a report that is not a beat: %d captures, state %s; want one capture, awaiting_input", captures()-n, h.session("%1").State)
	}
	// Waiting at a prompt, every beat is looked at (an agent animating
	// beside its dialog).
	for i := range 3 {
		if c := beat(); c != 1 {
			t.Fatalf("beat %d of a pane awaiting input: %d captures, want 1", i, c)
		}
	}
	// StreamCapture negative: every beat of a working pane is captured.
	h2 := newHarness(t, func(c *Config) { c.StreamCapture = -1 })
	h2.tm.show(t, "%1", "claude", "claude/working_spinner_streaming.txt")
	h2.step()
	n = len(h2.tm.captured)
	h2.clock.Add(time.Second)
	h2.sup.handle(tmux.Event{Kind: tmux.EventOutput, PaneID: "%1", Streaming: true})
	h2.sup.flush(ctx)
	if len(h2.tm.captured) != n+1 {
		t.Fatal("with StreamCapture negative a beat was not captured")
	}
}
