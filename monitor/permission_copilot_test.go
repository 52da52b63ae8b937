package monitor

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
)

// copilotEvent is a shell command as GitHub Copilot CLI's
// permissionRequest hook delivers it.
func copilotEvent(h *harness, command string) api.HookEvent {
	in, _ := json.Marshal(map[string]string{"command": command})
	return api.HookEvent{Name: api.CopilotPermissionRequest, Pane: "%1", ToolName: "bash", ToolInput: command, ToolInputJSON: string(in), Received: h.clock.Now()}
}

// GitHub Copilot CLI's permissionRequest goes the one way Claude Code's
// PermissionRequest goes, its bash decided by the rules for Bash, and is
// answered in Copilot's words: a top-level behavior, allow or deny with
// the rule's message, and nothing for what no rule decides, so Copilot
// shows its dialog; every decision audited with Copilot's tool name
// beside the policy's. The monitors never take the event: the screen
// shows Copilot's dialog, with the prompt an answer checks, and raises
// its one wake.
func TestPermissionsCopilotRequest(t *testing.T) {
	h, svc, auditPath := permissionRig(t)
	h.shows("%1", "MainThread", "copilot/working_streaming.txt", "copilot", api.Working)
	ctx := context.Background()
	for _, tt := range []struct {
		command, behavior, message, rule string
	}{
		{"go test ./...", api.Allow, "", "tests"},
		{"go test ./... && rm -rf /", api.Deny, "Do not delete trees.", "no-rm-rf"},
		{"make deploy", "", "", ""},
	} {
		r, err := svc.Hook(ctx, copilotEvent(h, tt.command))
		if err != nil {
			t.Fatal(err)
		}
		if r.HookSpecificOutput != nil || r.Decision != "" || r.Behavior != tt.behavior || r.Message != tt.message {
			t.Fatalf("%q: reply %s, want %s %q", tt.command, r.Output(), tt.behavior, tt.message)
		}
		e := lastPermission(t, auditPath)
		var req approval.Request
		if err := json.Unmarshal([]byte(e.Args), &req); err != nil {
			t.Fatal(err)
		}
		if e.Decision != tt.behavior || e.Rule != tt.rule || e.Tool != "Bash" || req.AgentTool != "bash" || req.Agent != "copilot" || req.Command() != tt.command {
			t.Fatalf("%q audited as %+v", tt.command, e)
		}
	}
	if s := h.session("%1"); s.State != api.Working || s.Evidence.Source == "hook" || len(h.unacked(api.ReasonAwaitingInput)) != 0 {
		t.Fatalf("the monitors took a permissionRequest: %s by %s", s.State, s.Evidence.Rule)
	}
	// From the spool, or outside tmux: never decided (no hook waits for
	// it), and not taken.
	ev := copilotEvent(h, "go test ./...")
	ev.Sender.Via = api.ViaSpool
	if r, _ := svc.Hook(ctx, ev); !r.Empty() {
		t.Fatalf("a spooled request was answered: %s", r.Output())
	}
	ev = copilotEvent(h, "go test ./...")
	ev.Pane = ""
	if r, _ := svc.Hook(ctx, ev); !r.Empty() {
		t.Fatalf("a request outside tmux was answered: %s", r.Output())
	}
	if s := h.session("%1"); s.State != api.Working {
		t.Fatalf("the monitors took a permissionRequest: %s by %s", s.State, s.Evidence.Rule)
	}
}
