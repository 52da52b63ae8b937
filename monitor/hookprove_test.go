//go:build linux

package monitor

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/hooks"
)

func (f *fakeTmux) setPID(pane string, pid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.panes {
		if f.panes[i].ID == pane {
			f.panes[i].PID = pid
		}
	}
}

// child starts a process below this test's process and returns its pid.
func child(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

func auditEntries(t *testing.T, dir string) []api.AuditEntry {
	t.Helper()
	es, err := audit.Read(filepath.Join(dir, audit.File))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return es
}

// A hook event delivered by a process that does not run in the pane it
// names changes nothing: not the state, not the wakes. It is logged and
// audited with why. This is the forged `TMUX_PANE=%0 system3 hook` of an
// outside process.
func TestHookFromOutsideThePaneIsRefused(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Audit = audit.Open(dir) })
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.tm.show(t, "%2", "claude", "claude/working_spinner.ansi.txt")
	// The panes' processes are below this test; the sender is this test
	// itself, above them.
	h.tm.setPID("%1", child(t))
	h.tm.setPID("%2", child(t))
	h.step()
	outsider := api.HookSender{Via: api.ViaSocket, PID: os.Getpid(), Exe: "/forger"}

	for _, ev := range []api.HookEvent{
		{Name: api.PermissionRequest, Pane: "%1", ToolName: "Bash", Sender: outsider},
		{Name: api.SessionEnd, Pane: "%2", Reason: "other", Sender: outsider},
		{Name: api.SessionEnd, Pane: "%2", Sender: api.HookSender{Via: api.ViaSocket}},                // no peer pid
		{Name: api.SessionEnd, Pane: "%2", Sender: outsider, Proof: strings.Repeat("0", 64)},          // a made-up proof
		{Name: api.PermissionRequest, Pane: "%9", Sender: api.HookSender{Via: api.ViaSocket, PID: 1}}, // an unknown pane
		{Name: api.PermissionRequest, Sender: outsider},                                               // no pane
	} {
		ev.Received = h.clock.Now()
		_, err := h.sup.Hook(context.Background(), ev)
		if !errors.Is(err, api.ErrHookRefused) {
			t.Fatalf("%s for %q from %+v: err = %v, want refused", ev.Name, ev.Pane, ev.Sender, err)
		}
		t.Logf("refused: %v", err)
	}
	if s := h.session("%1"); s.State != api.Idle || s.Evidence.Source != "screen" {
		t.Fatalf("forged PermissionRequest changed %%1: %+v", s)
	}
	if s := h.session("%2"); s.State != api.Working || s.Evidence.Source != "screen" {
		t.Fatalf("forged SessionEnd changed %%2: %+v", s)
	}
	h.step()
	if w := h.unacked(api.ReasonAwaitingInput); len(w) != 0 {
		t.Fatalf("wakes after forged events: %+v", w)
	}
	if w := h.allWakes(api.ReasonWorkerFailed); len(w) != 0 {
		t.Fatalf("worker_failed after a forged SessionEnd: %+v", w)
	}
	es := auditEntries(t, dir)
	if len(es) != 6 {
		t.Fatalf("audit has %d entries, want 6 refusals: %+v", len(es), es)
	}
	if e := es[0]; e.Action != "hook" || e.Pane != "%1" || e.Tool != api.PermissionRequest || e.Sent ||
		!strings.Contains(e.Error, "does not run in pane %1") || !strings.Contains(e.Origin, "exe=/forger") {
		t.Fatalf("audit of a refusal: %+v", e)
	}
}

// The same events from a process that runs in the pane (the pane's
// process or one below it) are taken.
func TestHookFromInsideThePaneIsTaken(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.tm.show(t, "%2", "claude", "claude/working_spinner.ansi.txt")
	// This test is the panes' process; its child runs in them.
	h.tm.setPID("%1", os.Getpid())
	h.tm.setPID("%2", os.Getpid())
	h.step()
	inside := api.HookSender{Via: api.ViaSocket, PID: child(t)}
	if _, err := h.sup.Hook(context.Background(), api.HookEvent{Name: api.PermissionRequest, Pane: "%1", ToolName: "Bash", Received: h.clock.Now(), Sender: inside}); err != nil {
		t.Fatal(err)
	}
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Rule != "hook.permission_request" {
		t.Fatalf("after PermissionRequest from the pane: %+v", s)
	}
	self := api.HookSender{Via: api.ViaSocket, PID: os.Getpid()}
	if _, err := h.sup.Hook(context.Background(), api.HookEvent{Name: api.SessionEnd, Pane: "%2", Received: h.clock.Now(), Sender: self}); err != nil {
		t.Fatal(err)
	}
	if s := h.session("%2"); s.State != api.Exited || s.Evidence.Rule != "hook.session_end" {
		t.Fatalf("after SessionEnd from the pane: %+v", s)
	}
}

// An event signed with its session's hook token is taken where ancestry
// cannot tell (the spool); one signed with another session's token, changed
// after signing, sent by a live process outside the pane, or sent before the
// pane's process started, is not.
func TestHookTokenProvesTheSession(t *testing.T) {
	key, err := hooks.LoadKey(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.HookKey = key })
	h.tm.show(t, "%1", "claude", "claude/idle.txt") // session orch-1
	h.tm.setPID("%1", child(t))
	h.clock.now = time.Now() // the pane's process starts on the wall clock
	h.step()
	outsider := api.HookSender{Via: api.ViaSocket, PID: os.Getpid()}
	// The token stands in where ancestry cannot be read (the spool).
	spooled := api.HookSender{Via: api.ViaSpool}
	ev := api.HookEvent{Name: api.PermissionRequest, Pane: "%1", ToolName: "Bash", Received: h.clock.Now()}

	// The token is the session's for every run of it: an event sent
	// before the pane's process started (an earlier run's SessionEnd,
	// spooled while the tmux server was down) is not this run's.
	stale := hooks.Sign(api.HookEvent{Name: api.SessionEnd, Pane: "%1", Received: time.Now().Add(-time.Minute)}, hooks.SessionToken(key, "orch-1"))
	stale.Sender = api.HookSender{Via: api.ViaSpool}
	if _, err := h.sup.Hook(context.Background(), stale); !errors.Is(err, api.ErrHookRefused) || !strings.Contains(err.Error(), "earlier run of session orch-1") {
		t.Fatalf("an event from before the pane's process: %v", err)
	}

	wrong := hooks.Sign(ev, hooks.SessionToken(key, "orch-2"))
	wrong.Sender = spooled
	if _, err := h.sup.Hook(context.Background(), wrong); !errors.Is(err, api.ErrHookRefused) || !strings.Contains(err.Error(), "not signed with the hook token of session orch-1") {
		t.Fatalf("another session's token: %v", err)
	}
	changed := hooks.Sign(ev, hooks.SessionToken(key, "orch-1"))
	changed.Name, changed.Sender = api.SessionEnd, spooled
	if _, err := h.sup.Hook(context.Background(), changed); !errors.Is(err, api.ErrHookRefused) {
		t.Fatalf("an event changed after signing: %v", err)
	}
	if s := h.session("%1"); s.State != api.Idle {
		t.Fatalf("refused events changed the state: %+v", s)
	}
	// A live process that verifiably runs elsewhere is refused whatever
	// token it holds: an agent orphaned by an earlier run still has it.
	elsewhere := hooks.Sign(ev, hooks.SessionToken(key, "orch-1"))
	elsewhere.Sender = outsider
	if _, err := h.sup.Hook(context.Background(), elsewhere); !errors.Is(err, api.ErrHookRefused) || !strings.Contains(err.Error(), "does not run in pane %1") {
		t.Fatalf("a signed event from a process outside the pane: %v", err)
	}
	good := hooks.Sign(ev, hooks.SessionToken(key, "orch-1"))
	good.Sender = spooled
	if _, err := h.sup.Hook(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	if s := h.session("%1"); s.State != api.AwaitingInput {
		t.Fatalf("signed event not taken: %+v", s)
	}
}

// Spooled events are written by whoever can write the state dir, and the
// process that wrote them is gone: only those signed with their session's
// token are replayed; the others are dropped with a log line.
func TestReplaySpoolNeedsTheToken(t *testing.T) {
	key, err := hooks.LoadKey(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	var log testkit.SyncBuffer
	h := newHarness(t, func(c *Config) { c.HookKey = key; c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.tm.show(t, "%2", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	sp := hooks.Spool{Path: filepath.Join(t.TempDir(), hooks.SpoolFile)}
	now := h.clock.Now()
	for _, ev := range []api.HookEvent{
		hooks.Sign(api.HookEvent{Name: api.PermissionRequest, Pane: "%1", Received: now.Add(-time.Second)}, hooks.SessionToken(key, "orch-1")),
		{Name: api.SessionEnd, Pane: "%2", Received: now.Add(-time.Second)},
	} {
		if err := sp.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := h.sup.ReplaySpool(context.Background(), sp); err != nil || n != 2 {
		t.Fatalf("ReplaySpool = %d, %v", n, err)
	}
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Rule != "hook.permission_request" {
		t.Fatalf("signed spooled event: %+v", s)
	}
	if s := h.session("%2"); s.State != api.Working {
		t.Fatalf("unsigned spooled SessionEnd was taken: %+v", s)
	}
	if !strings.Contains(log.String(), "hook event refused") || !strings.Contains(log.String(), "spooled without a hook token") {
		t.Fatalf("log:\n%s", log.String())
	}
}

// A hook state the screen never shows ends on time although the pane
// prints nothing and is never captured again: the clock ends it, with its
// wake.
func TestHookStateExpiresOnASilentPane(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	h.hook(api.HookEvent{Name: api.PermissionRequest, Pane: "%1", ToolName: "Bash"})
	h.sup.flush(context.Background()) // the capture the hook asks for: the screen still idle
	if s := h.session("%1"); s.State != api.AwaitingInput {
		t.Fatalf("after the hook: %+v", s)
	}
	// The prompt never draws: its wake comes after promptWait.
	h.clock.Add(promptWait)
	h.sup.timeChecks(h.clock.Now())
	if w := h.unacked(api.ReasonAwaitingInput); len(w) != 1 {
		t.Fatalf("wakes = %+v", w)
	}
	h.tm.mu.Lock()
	captures := len(h.tm.captured)
	h.tm.mu.Unlock()

	h.clock.Add(hookUnconfirmed - promptWait - time.Second)
	h.sup.timeChecks(h.clock.Now())
	if s := h.session("%1"); s.State != api.AwaitingInput {
		t.Fatalf("expired early: %+v", s)
	}
	h.clock.Add(time.Second)
	h.sup.timeChecks(h.clock.Now())
	s := h.session("%1")
	if s.State != api.Idle || s.Evidence.Source != "screen" {
		t.Fatalf("hook state held past %s on a silent pane: %+v", hookUnconfirmed, s)
	}
	h.tm.mu.Lock()
	n := len(h.tm.captured)
	h.tm.mu.Unlock()
	if n != captures {
		t.Fatalf("expiry captured the pane (%d captures, %d before): the clock alone must end it", n, captures)
	}
	// The wake's condition ended with the state: the next prompt is a
	// new wake, not the old one held.
	h.hook(api.HookEvent{Name: api.PermissionRequest, Pane: "%1", ToolName: "Bash"})
	h.clock.Add(promptWait)
	h.sup.timeChecks(h.clock.Now())
	if w := h.allWakes(api.ReasonAwaitingInput); len(w) != 2 {
		t.Fatalf("the expired state's wake was not cleared: %+v", w)
	}
}
