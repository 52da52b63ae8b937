package monitor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/wakebrief"
	"github.com/system3-dev/system3/tmux"
)

// supervisorPane is the pane the delivery tests type wakes into, in
// session "sup".
const supervisorPane = "%9"

// deliveryRig is a supervisor pane and a Delivery to it, over the fake
// tmux harness with a recording sender.
type deliveryRig struct {
	t        *testing.T
	h        *harness
	snd      *recordingSender
	dir      string
	cfg      DeliveryConfig
	d        *Delivery
	keyCount int
}

func newDeliveryRig(t *testing.T, mod func(*DeliveryConfig)) *deliveryRig {
	t.Helper()
	dir := testkit.StateDir(t)
	snd := &recordingSender{}
	h := newHarness(t, func(c *Config) { c.Send = snd; c.Audit = audit.Open(dir) })
	r := &deliveryRig{t: t, h: h, snd: snd, dir: dir}
	r.show("claude/idle.txt")
	r.cfg = DeliveryConfig{Target: api.Target{Session: "sup"}, MinInterval: 10 * time.Second, CursorPath: DeliveryCursorPath(dir), Clock: h.clock.Now}
	if mod != nil {
		mod(&r.cfg)
	}
	r.restart()
	return r
}

// restart makes a new Delivery, as monitors started again would.
func (r *deliveryRig) restart() {
	r.t.Helper()
	d, err := NewDelivery(r.h.sup, r.cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.d = d
}

// show puts a fixture on the supervisor pane's screen and lets the
// monitors see it a second later.
func (r *deliveryRig) show(fixture string) {
	r.t.Helper()
	r.h.tm.show(r.t, supervisorPane, "claude", fixture)
	r.h.tm.mu.Lock()
	for i := range r.h.tm.panes {
		if r.h.tm.panes[i].ID == supervisorPane {
			r.h.tm.panes[i].SessionName = "sup"
		}
	}
	r.h.tm.mu.Unlock()
	r.h.clock.Add(time.Second)
	r.h.step()
}

// raise raises a wake from an orchestrator's pane.
func (r *deliveryRig) raise(reason api.Reason, pane string) api.Wake {
	r.t.Helper()
	r.keyCount++
	ev, _, err := r.h.store.Raise(api.Wake{Reason: reason, Key: string(reason) + "/" + pane + "/" + string(rune('a'+r.keyCount)),
		Session: "orch-" + strings.TrimPrefix(pane, "%"), Pane: pane, Agent: "claude", Question: "Deploy?", SuggestedAction: "look"})
	if err != nil {
		r.t.Fatal(err)
	}
	return ev
}

// typed is the wake ids typed into the supervisor pane, in order.
func (r *deliveryRig) typed() []string {
	r.snd.mu.Lock()
	defer r.snd.mu.Unlock()
	var ids []string
	for _, c := range r.snd.calls {
		rest, ok := strings.CutPrefix(c, "text "+supervisorPane+" system3 wake ")
		if !ok {
			r.t.Fatalf("something else was sent: %q", c)
		}
		id, _, _ := strings.Cut(rest, ":")
		ids = append(ids, id)
	}
	return ids
}

func (r *deliveryRig) wantTyped(what string, ids ...string) {
	r.t.Helper()
	if got := r.typed(); !slices.Equal(got, ids) {
		r.t.Fatalf("%s: typed %q, want %q", what, got, ids)
	}
}

// turn has the supervisor work on what it was given and go idle again.
func (r *deliveryRig) turn() {
	r.show("claude/working_spinner.ansi.txt")
	r.show("claude/idle_after_turn.txt")
}

func (r *deliveryRig) try() { r.d.try(context.Background()) }

func (r *deliveryRig) problem() string {
	snap, _ := r.h.sup.Snapshot(context.Background())
	return snap.Problem
}

// An idle supervisor pane is typed the wake's brief, through Inject (the
// policy, the audit log, the text rules) as the supervisor-delivery origin.
func TestDeliveryTypesIntoIdlePane(t *testing.T) {
	r := newDeliveryRig(t, nil)
	a := r.raise(api.ReasonAwaitingInput, "%1")
	r.try()
	r.wantTyped("idle pane", a.ID)
	want := wakebrief.Write(a, wakebrief.Options{Now: r.h.clock.Now()})
	if r.snd.calls[0] != "text "+supervisorPane+" "+want || !strings.HasSuffix(want, "system3 types the next wake here once you are idle.\n") {
		t.Fatalf("typed %q\nwant %q", r.snd.calls[0], want)
	}
	entries, err := audit.Read(filepath.Join(r.dir, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Origin != api.DeliveryOrigin || entries[0].Action != "inject" || entries[0].Pane != supervisorPane ||
		entries[0].Text != want || !entries[0].Sent || !entries[0].Checked {
		t.Fatalf("audit = %+v", entries)
	}
	var c cursorDoc
	b, _ := os.ReadFile(DeliveryCursorPath(r.dir))
	if err := json.Unmarshal(b, &c); err != nil || c.Seq != a.Seq || c.Wake != a.ID || c.How != "typed" {
		t.Fatalf("cursor file %s: %v", b, err)
	}
	if fi, _ := os.Stat(DeliveryCursorPath(r.dir)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("cursor file mode %v", fi.Mode())
	}
}

// The delivery is the operator's configuration, like the dashboard's
// actions: an MCP policy that is read-only and allows only orchestrators
// holds back MCP clients, not the wakes given to the supervisor pane.
func TestDeliveryIsTheOperators(t *testing.T) {
	dir := testkit.StateDir(t)
	snd := &recordingSender{}
	h := newHarness(t, func(c *Config) {
		c.Send, c.Audit = snd, audit.Open(dir)
		p, err := api.NewPolicy(api.PolicyConfig{ReadOnly: true, AllowSessions: []string{"orch-*"}}, c.Clock)
		if err != nil {
			t.Fatal(err)
		}
		c.Policy = p
	})
	r := &deliveryRig{t: t, h: h, snd: snd, dir: dir}
	r.show("claude/idle.txt")
	if _, err := h.sup.Inject(context.Background(), api.InjectRequest{Target: api.Target{Pane: supervisorPane}, Text: "hello", Origin: "mcp:claude-code"}); err == nil {
		t.Fatal("a read-only policy let an MCP client type")
	}
	r.cfg = DeliveryConfig{Target: api.Target{Session: "sup"}, Clock: h.clock.Now}
	r.restart()
	a := r.raise(api.ReasonAwaitingInput, "%1")
	r.try()
	r.snd.calls = slices.DeleteFunc(r.snd.calls, func(c string) bool { return !strings.HasPrefix(c, "text "+supervisorPane+" system3 wake ") })
	r.wantTyped("under a read-only policy", a.ID)
}

// A busy supervisor is typed nothing; once idle it gets the wake.
func TestDeliveryHeldWhileWorkingOrAtAPrompt(t *testing.T) {
	for _, busy := range []string{"claude/working_spinner.ansi.txt", "claude/permission_bash.txt", "claude/question_multiple_choice.txt"} {
		t.Run(busy, func(t *testing.T) {
			r := newDeliveryRig(t, nil)
			r.show(busy)
			a := r.raise(api.ReasonAwaitingInput, "%1")
			for range 3 {
				r.h.clock.Add(20 * time.Second)
				r.try()
			}
			r.wantTyped("busy pane", nil...)
			r.show("claude/idle_after_turn.txt")
			r.try()
			r.wantTyped("idle again", a.ID)
		})
	}
}

// The registry may be a capture behind: a pane whose screen left its
// prompt since is read again and typed nothing.
func TestDeliveryRereadsThePaneBeforeTyping(t *testing.T) {
	r := newDeliveryRig(t, nil)
	r.raise(api.ReasonAwaitingInput, "%1")
	// The screen changes without the monitors capturing it.
	r.h.tm.mu.Lock()
	data, err := os.ReadFile(filepath.Join("testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r.h.tm.screens[supervisorPane] = string(data)
	r.h.tm.mu.Unlock()
	r.try()
	r.wantTyped("pane at a prompt it was not captured at", nil...)
	entries, _ := audit.Read(filepath.Join(r.dir, audit.File))
	if len(entries) != 1 || entries[0].Phase != audit.PhaseRefused || !strings.Contains(entries[0].Error, api.ErrNotIdle.Error()) {
		t.Fatalf("audit = %+v", entries)
	}
}

// Wakes raised together are given once each, oldest first, one per idle
// turn, at most one per MinInterval.
func TestDeliveryOncePerTurnInOrderRateLimited(t *testing.T) {
	r := newDeliveryRig(t, nil)
	a := r.raise(api.ReasonAwaitingInput, "%1")
	b := r.raise(api.ReasonErrorLoopDetected, "%2")
	c := r.raise(api.ReasonWorkerFailed, "%3")
	r.try()
	r.try()
	r.wantTyped("first", a.ID)
	if !strings.Contains(r.snd.calls[0], "(2 more wakes wait after it)") {
		t.Fatalf("the brief does not say how many wait: %q", r.snd.calls[0])
	}
	// Worked and went idle again within the interval: held until it
	// passes.
	r.turn()
	r.try()
	r.wantTyped("within min_interval", a.ID)
	r.h.clock.Add(10 * time.Second)
	r.try()
	r.wantTyped("second", a.ID, b.ID)
	// Past the interval, but still idle from before it was typed: not
	// idle again yet.
	r.h.clock.Add(10 * time.Second)
	r.try()
	r.wantTyped("not idle again", a.ID, b.ID)
	r.turn()
	r.try()
	r.wantTyped("each once, in order", a.ID, b.ID, c.ID)
	// A pane that never looked busy after a wake is typed the next one
	// after IdleAgain.
	d := r.raise(api.ReasonAPIError, "%4")
	r.h.clock.Add(30 * time.Second)
	r.try()
	r.wantTyped("idle all along, within IdleAgain", a.ID, b.ID, c.ID)
	r.h.clock.Add(31 * time.Second)
	r.try()
	r.wantTyped("idle all along, after IdleAgain", a.ID, b.ID, c.ID, d.ID)
}

// A wake resolved or acknowledged before its turn is skipped; so are
// information, the supervisor pane's own wakes, and what the config
// leaves out.
func TestDeliverySkips(t *testing.T) {
	r := newDeliveryRig(t, func(c *DeliveryConfig) { c.Sessions = []string{"orch-*"}; c.MinInterval = time.Second })
	a := r.raise(api.ReasonAwaitingInput, "%1")
	b := r.raise(api.ReasonAwaitingInput, "%2")
	c := r.raise(api.ReasonAwaitingInput, "%3")
	if _, _, err := r.h.store.Raise(api.Wake{Reason: api.ReasonHeartbeat}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.h.store.Raise(api.Wake{Reason: api.ReasonAPIError, Key: "own", Session: "sup", Pane: supervisorPane}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.h.store.Raise(api.Wake{Reason: api.ReasonAPIError, Key: "other", Session: "build", Pane: "%7"}); err != nil {
		t.Fatal(err)
	}
	if err := r.h.store.Resolve(a.Key, "answered by cli: Yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.h.store.Ack(b.ID, "tui"); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		r.turn()
		r.h.clock.Add(2 * time.Second)
		r.try()
	}
	r.wantTyped("only the open one", c.ID)
}

// Monitors started again carry on from the cursor: what was given is not
// given again, what was raised since is.
func TestDeliveryRestartNeitherRepeatsNorLoses(t *testing.T) {
	r := newDeliveryRig(t, nil)
	a := r.raise(api.ReasonAwaitingInput, "%1")
	b := r.raise(api.ReasonAwaitingInput, "%2")
	r.try()
	r.wantTyped("before the restart", a.ID)
	r.restart()
	r.turn()
	r.h.clock.Add(10 * time.Second)
	r.try()
	r.try()
	r.wantTyped("after the restart", a.ID, b.ID)
	// The interval holds across the restart too.
	r.restart()
	c := r.raise(api.ReasonAwaitingInput, "%3")
	r.turn()
	r.try()
	r.wantTyped("within the interval after a restart", a.ID, b.ID)
	r.h.clock.Add(10 * time.Second)
	r.try()
	r.wantTyped("last", a.ID, b.ID, c.ID)
}

// A supervisor pane that is missing, stuck or cannot be typed into is
// reported in the snapshot's problem, and the wake waits for it.
func TestDeliveryProblems(t *testing.T) {
	r := newDeliveryRig(t, func(c *DeliveryConfig) { c.Target = api.Target{Session: "nope"} })
	a := r.raise(api.ReasonAwaitingInput, "%1")
	r.try()
	if p := r.problem(); !strings.Contains(p, "supervisor pane") || !strings.Contains(p, `"nope"`) || !strings.Contains(p, "1 wake waits for it") {
		t.Fatalf("problem = %q", p)
	}
	r.cfg.Target = api.Target{Session: "sup"}
	r.restart()
	r.show("claude/working_spinner.ansi.txt")
	r.try()
	if p := r.problem(); p != "" {
		t.Fatalf("problem while busy for a moment = %q", p)
	}
	r.h.clock.Add(11 * time.Minute)
	r.try()
	if p := r.problem(); !strings.Contains(p, "has not been idle at its prompt for 11m") || !strings.Contains(p, "working now") {
		t.Fatalf("problem when stuck = %q", p)
	}
	r.show("claude/idle_after_turn.txt")
	r.snd.fail = tmux.ErrPaneDead
	r.try()
	if p := r.problem(); !strings.Contains(p, "could not be typed") || !strings.Contains(p, a.ID) {
		t.Fatalf("problem after a failed injection = %q", p)
	}
	r.snd.fail = nil
	r.try()
	if n := len(r.snd.calls); n != 1 {
		t.Fatalf("tried again before min_interval: %q", r.snd.calls)
	}
	r.h.clock.Add(10 * time.Second)
	r.try()
	r.snd.calls = r.snd.calls[1:] // the failed attempt
	r.wantTyped("after the failure", a.ID)
	if p := r.problem(); p != "" {
		t.Fatalf("problem after delivery = %q", p)
	}
}

// stop is a Stop hook event from pane, as `system3 hook` delivers it.
func stop(pane string, active bool, at time.Time) api.HookEvent {
	return api.HookEvent{Name: api.Stop, Pane: pane, StopHookActive: active, Received: at}
}

// A Claude Code supervisor's Stop hook is handed the waiting wake instead
// of going idle: that is its delivery, never typed again.
func TestDeliveryStopHook(t *testing.T) {
	r := newDeliveryRig(t, func(c *DeliveryConfig) { c.MinInterval = time.Second })
	r.h.sup.UseDelivery(r.d)
	svc := r.h.sup
	ctx := context.Background()
	r.show("claude/working_spinner.ansi.txt")
	reply, err := svc.Hook(ctx, stop(supervisorPane, false, r.h.clock.Now()))
	if err != nil || !reply.Empty() {
		t.Fatalf("Stop with nothing waiting = %+v, %v", reply, err)
	}
	evs := []api.Wake{r.raise(api.ReasonAwaitingInput, "%1"), r.raise(api.ReasonAwaitingInput, "%2"), r.raise(api.ReasonAwaitingInput, "%3"),
		r.raise(api.ReasonAwaitingInput, "%4"), r.raise(api.ReasonAwaitingInput, "%5")}
	if reply, _ := svc.Hook(ctx, stop("%1", false, r.h.clock.Now())); !reply.Empty() {
		t.Fatalf("another pane's Stop was answered: %+v", reply)
	}
	spooled := stop(supervisorPane, false, r.h.clock.Now())
	spooled.Sender.Via = api.ViaSpool
	if reply := r.d.Stop(ctx, spooled); !reply.Empty() {
		t.Fatalf("a spooled Stop was answered: %+v", reply)
	}
	at := r.h.clock.Now()
	reply, err = svc.Hook(ctx, stop(supervisorPane, false, at))
	want := wakebrief.Write(evs[0], wakebrief.Options{Now: at, More: 4})
	if err != nil || reply.Decision != api.Block || reply.Reason != want {
		t.Fatalf("Stop with a wake waiting = %+v, %v", reply, err)
	}
	// The turn goes on: the monitors do not take that Stop for idle.
	if s := r.h.session(supervisorPane); s.State != api.Working || s.Evidence.Rule != "hook.stop_blocked" {
		t.Fatalf("supervisor after a blocked Stop: %s by %s", s.State, s.Evidence.Rule)
	}
	// The same event again (its reply lost on the way) gets the same wake.
	if again, _ := svc.Hook(ctx, stop(supervisorPane, false, at)); again != reply {
		t.Fatalf("the same Stop again = %+v", again)
	}
	// The next Stop of the turn it made go on, within MinInterval: none.
	r.h.clock.Add(100 * time.Millisecond)
	if reply, _ := svc.Hook(ctx, stop(supervisorPane, true, r.h.clock.Now())); !reply.Empty() {
		t.Fatalf("Stop within min_interval = %+v", reply)
	}
	var handed []string
	handed = append(handed, evs[0].ID)
	for i := range 4 {
		// The turn goes on: the screen moves on from where the Stop came.
		r.show([]string{"claude/working_tool_running.txt", "claude/working_spinner.ansi.txt"}[i%2])
		reply, _ := svc.Hook(ctx, stop(supervisorPane, true, r.h.clock.Now()))
		if reply.Empty() {
			break
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(reply.Reason, "system3 wake "), ":")
		handed = append(handed, id)
	}
	if !slices.Equal(handed, []string{evs[0].ID, evs[1].ID, evs[2].ID}) {
		t.Fatalf("handed %q in one turn; want the first %d", handed, maxHookChain)
	}
	// The idle supervisor is typed the rest, none of those handed over.
	r.turn()
	r.try()
	r.turn()
	r.try()
	r.wantTyped("after the Stop hook", evs[3].ID, evs[4].ID)
	// A new turn's first Stop hands over again.
	f := r.raise(api.ReasonAwaitingInput, "%6")
	r.h.clock.Add(time.Second)
	if reply, _ := svc.Hook(ctx, stop(supervisorPane, false, r.h.clock.Now())); !strings.HasPrefix(reply.Reason, "system3 wake "+f.ID+":") {
		t.Fatalf("a new turn's Stop = %+v", reply)
	}
	entries, _ := audit.Read(filepath.Join(r.dir, audit.File))
	hooked := 0
	for _, e := range entries {
		if e.Action == "stop_hook" && e.Sent && e.Origin == api.DeliveryOrigin && e.Pane == supervisorPane && strings.HasPrefix(e.Text, "system3 wake ") {
			hooked++
		}
	}
	if hooked != 4 {
		t.Fatalf("%d stop_hook hand-overs audited, want 4: %+v", hooked, entries)
	}
}

// Run delivers as the changes come: a wake raised, the pane going idle.
func TestDeliveryRun(t *testing.T) {
	r := newDeliveryRig(t, func(c *DeliveryConfig) { c.Tick = time.Hour })
	r.h.run()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.d.Run(ctx) })
	defer wg.Wait()
	defer cancel()
	a := r.raise(api.ReasonAwaitingInput, "%1")
	testkit.WaitFor(t, 3*time.Second, "the wake typed", func() bool { return len(r.typed()) == 1 })
	r.wantTyped("raised", a.ID)
	r.h.tm.show(t, supervisorPane, "claude", "claude/working_spinner.ansi.txt")
	r.h.clock.Add(time.Second)
	r.h.sup.markDirty(supervisorPane)
	r.h.await("supervisor working", inState(supervisorPane, "working"))
	b := r.raise(api.ReasonAwaitingInput, "%2")
	r.h.clock.Add(11 * time.Second)
	time.Sleep(50 * time.Millisecond)
	r.wantTyped("while working", a.ID)
	r.h.tm.show(t, supervisorPane, "claude", "claude/idle_after_turn.txt")
	r.h.clock.Add(time.Second)
	r.h.sup.markDirty(supervisorPane)
	testkit.WaitFor(t, 3*time.Second, "the second wake typed once idle", func() bool { return len(r.typed()) == 2 })
	r.wantTyped("idle", a.ID, b.ID)
}
