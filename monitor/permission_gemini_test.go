package monitor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// geminiEvent is a shell command as the Gemini CLI's BeforeTool hook
// delivers it.
func geminiEvent(h *harness, command string) api.HookEvent {
	in, _ := json.Marshal(map[string]string{"command": command, "description": "run it"})
	return api.HookEvent{Name: api.BeforeTool, Pane: "%1", ToolName: "run_shell_command", ToolInput: command, ToolInputJSON: string(in), Received: h.clock.Now()}
}

// The Gemini CLI's BeforeTool goes the one way Claude Code's
// PermissionRequest goes, its run_shell_command decided by the rules for
// Bash, and is answered in Gemini's words: allow, deny with the rule's
// message as the reason, and "ask" (Gemini's own dialog) for what no rule
// decides; every decision audited with Gemini's tool name beside the
// policy's. The monitors never take the event: the screen shows Gemini's
// dialog when there is one.
func TestPermissionsGeminiBeforeTool(t *testing.T) {
	h, svc, auditPath := permissionRig(t)
	ctx := context.Background()
	before := h.session("%1")
	for _, tt := range []struct {
		command, behavior, reason, rule, audited string
	}{
		{"go test ./...", api.Allow, "", "tests", "allow"},
		{"go test ./... && rm -rf /", api.Deny, "Do not delete trees.", "no-rm-rf", "deny"},
		{"make deploy", api.Ask, "", "", ""},
	} {
		r, err := svc.Hook(ctx, geminiEvent(h, tt.command))
		if err != nil {
			t.Fatal(err)
		}
		if r.HookSpecificOutput != nil || r.Decision != tt.behavior || r.Reason != tt.reason {
			t.Fatalf("%q: reply %s, want %s %q", tt.command, r.Output(), tt.behavior, tt.reason)
		}
		e := lastPermission(t, auditPath)
		var req approval.Request
		if err := json.Unmarshal([]byte(e.Args), &req); err != nil {
			t.Fatal(err)
		}
		if e.Decision != tt.audited || e.Rule != tt.rule || e.Tool != "Bash" || req.AgentTool != "run_shell_command" || req.Command() != tt.command {
			t.Fatalf("%q audited as %+v", tt.command, e)
		}
	}
	if s := h.session("%1"); s.State != before.State || s.Evidence.Source == "hook" {
		t.Fatalf("the monitors took a BeforeTool: %s by %s", s.State, s.Evidence.Rule)
	}
	// From the spool, or outside tmux: Gemini's own dialog.
	ev := geminiEvent(h, "go test ./...")
	ev.Sender.Via = api.ViaSpool
	if r, _ := svc.Hook(ctx, ev); r.Decision != api.Ask {
		t.Fatalf("a spooled BeforeTool: %s", r.Output())
	}
	ev = geminiEvent(h, "go test ./...")
	ev.Pane = ""
	if r, _ := svc.Hook(ctx, ev); r.Decision != api.Ask {
		t.Fatalf("a BeforeTool outside tmux: %s", r.Output())
	}
}

// A Gemini ask is held while its wake, naming Gemini's tool and the exact
// command, goes out; the answer is the decision in Gemini's words, and
// without one in time Gemini is told to show its own dialog.
func TestPermissionsGeminiAsk(t *testing.T) {
	h, svc, auditPath := permissionRig(t)
	ctx := context.Background()
	done := make(chan api.HookReply, 1)
	go func() {
		r, err := svc.Hook(ctx, geminiEvent(h, "npm install left-pad"))
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	var w api.Wake
	testkit.WaitFor(t, 3*time.Second, "the ask's wake", func() bool {
		for _, x := range h.unacked(api.ReasonAwaitingInput) {
			if !x.Resolved && x.PolicyAsk() {
				w = x
				return true
			}
		}
		return false
	})
	if !strings.Contains(w.Question, "run_shell_command") || !strings.Contains(w.Details, "npm install left-pad") {
		t.Fatalf("ask wake = %+v", w)
	}
	if _, err := svc.Answer(ctx, api.AnswerRequest{Wake: w.ID, Answer: "use pnpm", Origin: "mcp:lead"}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Decision != api.Deny || r.Reason != "use pnpm" {
		t.Fatalf("answered ask: reply %s", r.Output())
	}
	if e := lastPermission(t, auditPath); e.Decision != "deny" || e.Origin != "mcp:lead" || e.Rule != "installs" {
		t.Fatalf("audited as %+v", e)
	}

	// Nobody answers within ask_timeout (400ms).
	r, err := svc.Hook(ctx, geminiEvent(h, "npm install left-pad"))
	if err != nil || r.Decision != api.Ask {
		t.Fatalf("unanswered ask = %s, %v", r.Output(), err)
	}
	if e := lastPermission(t, auditPath); e.Decision != "" || e.Origin != "nobody" || !strings.Contains(e.Result, "nobody answered in time") {
		t.Fatalf("audited as %+v", e)
	}
}
