package monitor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/tmux"
)

func (h *harness) hook(ev api.HookEvent) {
	h.t.Helper()
	if ev.Received.IsZero() {
		ev.Received = h.clock.Now()
	}
	if _, err := h.sup.Hook(context.Background(), ev); err != nil {
		h.t.Fatal(err)
	}
}

// TestHookPermissionRequestBeforeTheScreen: the hook sets awaiting_input
// at once, over a screen that still shows work; the next capture that
// shows the prompt fills its question and options, and the hook stays the
// evidence.
func TestHookPermissionRequestBeforeTheScreen(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Working {
		t.Fatalf("before: %+v", s)
	}
	h.hook(api.HookEvent{Name: api.PermissionRequest, Pane: "%1", ToolName: "Bash", ToolInput: "./deploy.sh --prod"})
	s := h.session("%1")
	if s.State != api.AwaitingInput || s.Kind != "permission" || s.Evidence.Source != "hook" || s.Evidence.Rule != "hook.permission_request" ||
		s.Question != "" || !strings.Contains(s.Evidence.Lines[0], "./deploy.sh --prod") {
		t.Fatalf("after the hook: %+v", s)
	}
	// Its wake waits for the screen to say what the prompt asks.
	if w := h.unacked(api.ReasonAwaitingInput); len(w) != 0 {
		t.Fatalf("wakes after the hook, before the prompt drew = %+v", w)
	}

	// A capture taken before the prompt drew (the same screen) does not
	// override the fresh hook.
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Source != "hook" {
		t.Fatalf("stale capture overrode the hook: %+v", s)
	}

	// The prompt draws: question and options come from the screen.
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.step()
	s = h.session("%1")
	if s.State != api.AwaitingInput || s.Evidence.Source != "hook" || s.Question != "Do you want to proceed?" || len(s.Options) != 4 || s.Kind != "permission" {
		t.Fatalf("prompt drawn: %+v", s)
	}
	// One wake for the prompt, saying what it asks: the hook's early word
	// raised none of its own.
	if w := h.allWakes(api.ReasonAwaitingInput); len(w) != 1 || w[0].Question != "Do you want to proceed?" || len(w[0].Options) != 4 || w[0].Prompt != s.Prompt {
		t.Fatalf("wakes once the prompt drew = %+v", w)
	}

	// The prompt is answered: the screen changed after the hook, so the
	// screen decides again.
	h.tm.show(t, "%1", "claude", "claude/working_tool_running.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Working || s.Evidence.Source != "screen" {
		t.Fatalf("after the answer: %+v", s)
	}
}

// TestHookPromptNeverDrawn: a prompt a hook announced that the screen does
// not draw (no rule knows the dialog) still wakes someone, after
// promptWait, without a question to show.
func TestHookPromptNeverDrawn(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	h.hook(api.HookEvent{Name: api.PermissionRequest, Pane: "%1", ToolName: "Bash", ToolInput: "./deploy.sh --prod"})
	h.clock.Add(promptWait / 2)
	h.step()
	if w := h.unacked(api.ReasonAwaitingInput); len(w) != 0 {
		t.Fatalf("wakes %s after the hook = %+v", promptWait/2, w)
	}
	h.clock.Add(promptWait)
	h.step()
	w := h.unacked(api.ReasonAwaitingInput)
	if len(w) != 1 || w[0].Prompt != "" || w[0].Evidence.Rule != "hook.permission_request" {
		t.Fatalf("wakes once the prompt went undrawn for %s = %+v", promptWait, w)
	}
}

// TestHookStaleDoesNotOverrideFreshScreen: an interrupt fires no hook;
// the screen changing after the last hook decides.
func TestHookStaleDoesNotOverrideFreshScreen(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	h.hook(api.HookEvent{Name: api.UserPromptSubmit, Pane: "%1"})
	if s := h.session("%1"); s.State != api.Working || s.Evidence.Rule != "hook.user_prompt_submit" {
		t.Fatalf("after UserPromptSubmit: %+v", s)
	}
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Working || s.Evidence.Source != "hook" {
		t.Fatalf("confirmed: %+v", s)
	}
	h.tm.show(t, "%1", "claude", "claude/interrupted.txt")
	h.step()
	if s := h.session("%1"); s.Evidence.Source != "screen" || s.State == api.Working {
		t.Fatalf("after an interrupt: %+v", s)
	}
}

// TestHookUnconfirmedExpires: a hook state the screen never shows gives way
// after hookUnconfirmed.
func TestHookUnconfirmedExpires(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	h.hook(api.HookEvent{Name: api.UserPromptSubmit, Pane: "%1"})
	h.clock.Add(hookUnconfirmed + time.Second)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Idle || s.Evidence.Source != "screen" {
		t.Fatalf("unconfirmed hook held: %+v", s)
	}
}

func TestHookEventsSetStates(t *testing.T) {
	tests := []struct {
		ev    api.HookEvent
		state api.State
		kind  string
		rule  string
	}{
		{api.HookEvent{Name: api.Notification, NotificationType: "permission_prompt", Message: "Claude needs your permission to use Bash"},
			api.AwaitingInput, "permission", "hook.notification.permission_prompt"},
		{api.HookEvent{Name: api.Stop}, api.Idle, "", "hook.stop"},
		{api.HookEvent{Name: api.StopFailure, Error: "rate_limit"}, api.Error, "rate_limit", "hook.stop_failure"},
		{api.HookEvent{Name: api.PreToolUse, ToolName: "Bash"}, api.Working, "", "hook.pre_tool_use"},
		{api.HookEvent{Name: api.SessionEnd, Reason: "prompt_input_exit"}, api.Exited, "session_end", "hook.session_end"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			h := newHarness(t, nil)
			screen := "claude/working_spinner.ansi.txt"
			if tt.state == api.Working {
				screen = "claude/idle.txt"
			}
			h.tm.show(t, "%1", "claude", screen)
			h.step()
			tt.ev.Pane = "%1"
			h.hook(tt.ev)
			s := h.session("%1")
			if s.State != tt.state || s.Kind != tt.kind || s.Evidence.Source != "hook" || s.Evidence.Rule != tt.rule {
				t.Fatalf("session = %+v", s)
			}
		})
	}
}

// TestHookOldEventsOnlyAddHistory: replayed events older than HookFresh
// set no state.
func TestHookOldEventsOnlyAddHistory(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	h.hook(api.HookEvent{Name: api.PermissionRequest, Pane: "%1", Received: h.clock.Now().Add(-HookFresh - time.Minute)})
	if s := h.session("%1"); s.State != api.Idle || s.Evidence.Source != "screen" {
		t.Fatalf("an old hook set the state: %+v", s)
	}
}

// TestHookFailuresMakeAnErrorLoop: LoopThreshold failing tool calls with
// the same error are an error loop; a successful call ends it.
func TestHookFailuresMakeAnErrorLoop(t *testing.T) {
	var mu sync.Mutex
	var calls []api.ToolCall
	h := newHarness(t, func(c *Config) {
		c.OnToolCall = func(tc api.ToolCall) { mu.Lock(); calls = append(calls, tc); mu.Unlock() }
	})
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	for i := range 3 {
		h.clock.Add(time.Second)
		h.hook(api.HookEvent{Name: api.PostToolUseFailure, Pane: "%1", ToolName: "Bash", ToolInput: "ls /nope", ToolUseID: fmt.Sprintf("toolu_%d", i),
			Error: "Exit code 2\nls: cannot access '/nope': No such file or directory"})
		if s := h.session("%1"); (i < 2) != (s.State != api.ErrorLoop) {
			t.Fatalf("after %d failures: %+v", i+1, s)
		}
	}
	s := h.session("%1")
	if s.Evidence.Source != "hook" || s.Evidence.Rule != "hook.failing_tools" || s.ErrorCount != 3 || !strings.Contains(s.Evidence.Lines[0], "cannot access") {
		t.Fatalf("error loop: %+v", s)
	}
	if w := h.unacked(api.ReasonErrorLoopDetected); len(w) != 1 {
		t.Fatalf("error loop wakes = %+v", w)
	}
	h.hook(api.HookEvent{Name: api.PostToolUse, Pane: "%1", ToolName: "Bash", ToolInput: "ls /", ToolResponse: "bin etc"})
	if s := h.session("%1"); s.State != api.Working {
		t.Fatalf("after a success: %+v", s)
	}
	mu.Lock()
	defer mu.Unlock()
	// Handed on as transcripts give them: the command, the pane's session and
	// agent, the tool_use id.
	if len(calls) != 4 || !calls[0].Failed || calls[0].Tool != "Bash" || calls[0].Command != "ls /nope" || calls[0].ID != "toolu_0" ||
		calls[0].Pane != "%1" || calls[0].Agent != "claude" || calls[0].Source != "hook" || calls[3].Failed || calls[3].Command != "ls /" {
		t.Fatalf("tool calls = %+v", calls)
	}
}

func TestHookProcessGoneWins(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	h.hook(api.HookEvent{Name: api.UserPromptSubmit, Pane: "%1"})
	h.tm.show(t, "%1", "bash", "shell/prompt.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Exited || s.Evidence.Source != "process" {
		t.Fatalf("session = %+v", s)
	}
}

func TestHookRefusesNamelessEvent(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := h.sup.Hook(context.Background(), api.HookEvent{Pane: "%1"}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("err = %v", err)
	}
}

// TestHookTranscriptReplacesTheGuess: the transcript a hook names is
// followed instead of the probe's guess.
func TestHookTranscriptReplacesTheGuess(t *testing.T) {
	dir := t.TempDir()
	guess := filepath.Join(dir, "guess.jsonl")
	h := newHarness(t, func(c *Config) {
		c.Probe = func(tmux.Pane, *agent.Probe) AgentInfo { return AgentInfo{Transcript: guess} }
	})
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	if pp := h.sup.probes.panes["%1"]; pp == nil || pp.tail == nil || pp.tail.path != guess {
		t.Fatalf("probe before the hook: %+v", pp)
	}
	real := filepath.Join(dir, "session.jsonl")
	h.hook(api.HookEvent{Name: api.SessionStart, Pane: "%1", TranscriptPath: real, SessionID: "abc"})
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	if pp := h.sup.probes.panes["%1"]; pp == nil || pp.tail == nil || pp.tail.path != real {
		t.Fatalf("probe after the hook: %+v", pp)
	}
}

// TestReplaySpool: spooled events are fed in order and the spool emptied.
func TestReplaySpool(t *testing.T) {
	key, err := hooks.LoadKey(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.HookKey = key })
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	sp := hooks.Spool{Path: filepath.Join(t.TempDir(), hooks.SpoolFile)}
	now := h.clock.Now()
	for _, ev := range []api.HookEvent{
		{Name: api.PreToolUse, Pane: "%1", Received: now.Add(-time.Hour)},
		{Name: api.PermissionRequest, Pane: "%1", Received: now.Add(-time.Second)},
	} {
		if err := sp.Append(hooks.Sign(ev, hooks.SessionToken(key, "orch-1"))); err != nil {
			t.Fatal(err)
		}
	}
	n, err := h.sup.ReplaySpool(context.Background(), sp)
	if err != nil || n != 2 {
		t.Fatalf("ReplaySpool = %d, %v", n, err)
	}
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Rule != "hook.permission_request" {
		t.Fatalf("after replay: %+v", s)
	}
	if evs, _, _ := sp.Drain(); len(evs) != 0 {
		t.Fatalf("spool not emptied: %+v", evs)
	}
}

// TestHookSessionLinksTaskList: without CLAUDE_CODE_TASK_LIST_ID, Claude
// Code names the task list after its session; a hook's session id links it.
func TestHookSessionLinksTaskList(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.TaskProgress = func(id string) (api.TaskProgress, bool) {
			if id == "sess-abc" {
				return api.TaskProgress{Completed: 1, Total: 2, InProgress: []string{}}, true
			}
			return api.TaskProgress{}, false
		}
	})
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	if s := h.session("%1"); s.TaskList != "" {
		t.Fatalf("linked before any hook: %+v", s)
	}
	h.hook(api.HookEvent{Name: api.TaskCreated, Pane: "%1", SessionID: "sess-abc", TaskID: "1", TaskSubject: "Write tests"})
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	if s := h.session("%1"); s.TaskList != "sess-abc" || s.Tasks == nil || s.Tasks.Total != 2 {
		t.Fatalf("session = %+v", s)
	}
}

// TestHookIdleNotificationLeavesAQuestion: Claude Code's idle_prompt
// notification may come while a question waits; it sets no state.
func TestHookIdleNotificationLeavesAQuestion(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/question_multiple_choice.txt")
	h.step()
	h.hook(api.HookEvent{Name: api.Notification, Pane: "%1", NotificationType: "idle_prompt", Message: "Claude is waiting for your input"})
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Source != "screen" {
		t.Fatalf("session = %+v", s)
	}
}

// TestHookStopFailureKindHolds: the screen confirms the error; the kind
// stays the hook's.
func TestHookStopFailureKindHolds(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	h.hook(api.HookEvent{Name: api.StopFailure, Pane: "%1", Error: "server_error", ErrorDetails: "500 Internal Server Error"})
	h.tm.show(t, "%1", "claude", "claude/api_error_500.txt")
	h.step()
	s := h.session("%1")
	if s.State != api.Error || s.Kind != "server_error" || s.Evidence.Source != "hook" || s.Evidence.Rule != "hook.stop_failure" {
		t.Fatalf("session = %+v", s)
	}
	h.clock.Add(31 * time.Second)
	h.step()
	if w := h.unacked(api.ReasonAPIError); len(w) != 1 || w[0].Kind != "server_error" {
		t.Fatalf("wakes = %+v", w)
	}
}

// TestHookOlderEventDoesNotReplaceNewer: a spooled event replayed after a
// later one was delivered does not set the state.
func TestHookOlderEventDoesNotReplaceNewer(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	now := h.clock.Now()
	h.hook(api.HookEvent{Name: api.PermissionRequest, Pane: "%1", Received: now})
	h.hook(api.HookEvent{Name: api.PreToolUse, Pane: "%1", Received: now.Add(-time.Second)})
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Rule != "hook.permission_request" {
		t.Fatalf("session = %+v", s)
	}
}

// TestHookDeliveredLateDoesNotUndoTheScreen: opencode's plugin sends its
// events one at a time, so a turn's start may reach system3 after the
// permission dialog that followed it was captured. The event says when
// it happened: before the screen showed the dialog, so the dialog stands
// with its one wake; the permission's own event then confirms it. An
// event that happened after the dialog was captured (the dialog answered)
// still sets the state.
func TestHookDeliveredLateDoesNotUndoTheScreen(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "opencode", "opencode/idle.txt")
	h.step()
	started := h.clock.Now()
	h.clock.Add(300 * time.Millisecond)
	h.tm.show(t, "%1", "opencode", "opencode/permission_exec.txt")
	h.step()
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Source != "screen" {
		t.Fatalf("the dialog: %+v", s)
	}
	h.clock.Add(100 * time.Millisecond)
	h.hook(api.HookEvent{Name: api.UserPromptSubmit, Pane: "%1", Received: started})
	if s := h.session("%1"); s.State != api.AwaitingInput {
		t.Fatalf("a turn start that happened before the dialog undid it: %+v", s)
	}
	h.hook(api.HookEvent{Name: api.Notification, NotificationType: "permission_prompt", Pane: "%1", Message: "opencode asks to run bash: ls"})
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Source != "hook" {
		t.Fatalf("the permission's event: %+v", s)
	}
	if w := h.allWakes(api.ReasonAwaitingInput); len(w) != 1 || w[0].Resolved {
		t.Fatalf("wakes = %+v, want one, unresolved", w)
	}
	h.clock.Add(time.Second)
	h.hook(api.HookEvent{Name: api.UserPromptSubmit, Pane: "%1"})
	if s := h.session("%1"); s.State != api.Working || s.Evidence.Rule != "hook.user_prompt_submit" {
		t.Fatalf("a turn start after the dialog was captured: %+v", s)
	}
}
