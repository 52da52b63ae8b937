package monitor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
)

// clineEvent is a shell command as the Cline CLI's PreToolUse hook
// delivers it (tool_call, run_commands).
func clineEvent(h *harness, command string) api.HookEvent {
	in, _ := json.Marshal(map[string][]string{"commands": {command}})
	return api.HookEvent{Name: api.ClineToolCall, Pane: "%1", ToolName: "run_commands", ToolInput: string(in), ToolInputJSON: string(in), Received: h.clock.Now()}
}

// The Cline CLI's tool_call is decided by the rules for Bash, but its
// reply can only cancel: a deny is a cancel with the rule's message, and
// an allow or an ask (never held: a yes could not be given), like what no
// rule decides, is the empty reply, which leaves the call to Cline's
// dialog, audited as undecided with why. The
// monitors never take the event: the screen shows Cline's dialog.
func TestPermissionsClineToolCall(t *testing.T) {
	h, svc, auditPath := permissionRig(t)
	h.shows("%1", ".cline", "cline/working_streaming.txt", "cline", api.Working)
	ctx := context.Background()
	for _, tt := range []struct {
		command, message, rule, why string
		cancel                      bool
	}{
		{"go test ./...", "", "tests", "can only refuse", false},
		{"go test ./... && rm -rf /", "Do not delete trees.", "no-rm-rf", "", true},
		{"npm install left-pad", "", "installs", "says ask", false}, // not held: a yes could not be given
		{"make deploy", "", "", "no rule decides", false},
	} {
		r, err := svc.Hook(ctx, clineEvent(h, tt.command))
		if err != nil {
			t.Fatal(err)
		}
		if r.Cancel != tt.cancel || r.ErrorMessage != tt.message || r.HookSpecificOutput != nil || r.Behavior != "" || r.Decision != "" {
			t.Fatalf("%q: reply %s", tt.command, r.Output())
		}
		e := lastPermission(t, auditPath)
		var req approval.Request
		if err := json.Unmarshal([]byte(e.Args), &req); err != nil {
			t.Fatal(err)
		}
		want := ""
		if tt.cancel {
			want = api.Deny
		}
		if e.Decision != want || e.Rule != tt.rule || e.Tool != "Bash" || req.AgentTool != "run_commands" || req.Agent != "cline" ||
			req.Command() != tt.command || !strings.Contains(e.Result, tt.why) {
			t.Fatalf("%q audited as %+v", tt.command, e)
		}
	}
	if s := h.session("%1"); s.State != api.Working || s.Evidence.Source == "hook" || len(h.unacked(api.ReasonAwaitingInput)) != 0 {
		t.Fatalf("the monitors took a tool_call: %s by %s", s.State, s.Evidence.Rule)
	}
}

// A deny cancels Cline's whole turn, and Cline fires no hook at the
// cancel: the turn start's working (TaskStart, taken as UserPromptSubmit)
// ends with the deny, and the screen decides again. Without that, a turn
// cancelled before any capture showed it working (the screen idle before
// and after, only its text changed) stayed working by the hook for
// hookUnconfirmed.
func TestPermissionsClineDenyEndsTheHookedTurn(t *testing.T) {
	h, svc, _ := permissionRig(t)
	h.shows("%1", ".cline", "cline/idle.txt", "cline", api.Idle)
	h.hook(api.HookEvent{Name: api.UserPromptSubmit, Pane: "%1"})
	h.clock.Add(time.Second)
	h.tm.show(t, "%1", ".cline", "cline/idle_after_turn.txt")
	h.step()
	if s := h.session("%1"); s.State != api.Working || s.Evidence.Rule != "hook.user_prompt_submit" {
		t.Fatalf("the turn's start: %s by %s", s.State, s.Evidence.Rule)
	}
	r, err := svc.Hook(context.Background(), clineEvent(h, "rm -rf ./build"))
	if err != nil || !r.Cancel {
		t.Fatalf("the deny: %s, %v", r.Output(), err)
	}
	h.clock.Add(100 * time.Millisecond)
	h.step()
	if s := h.session("%1"); s.State != api.Idle || s.Evidence.Source == "hook" {
		t.Fatalf("after the cancel: %s by %s %s", s.State, s.Evidence.Source, s.Evidence.Rule)
	}
}
