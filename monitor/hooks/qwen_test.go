package hooks

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// Qwen Code's hooks are Claude Code's: matcher groups in its settings.json,
// the timeout in seconds, every event of Claude Code's but the task events
// it does not have (it names them as invalid), merged beside a user's own.
func TestQwenSettingsMerge(t *testing.T) {
	if slices.Contains(QwenEvents, api.TaskCreated) || slices.Contains(QwenEvents, api.TaskCompleted) || len(QwenEvents) != len(Events)-2 {
		t.Fatalf("QwenEvents = %v", QwenEvents)
	}
	for _, e := range []string{api.PermissionRequest, api.UserPromptSubmit, api.PreToolUse, api.Stop, api.StopFailure, api.Notification} {
		if !slices.Contains(QwenEvents, e) {
			t.Fatalf("QwenEvents lacks %s", e)
		}
	}
	old := []byte(`{"security": {"auth": {"selectedType": "openai"}}, "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "say done"}]}]}}`)
	merged, added, err := MergeFor(old, testCmd, QwenEvents)
	if err != nil || !slices.Equal(added, QwenEvents) {
		t.Fatalf("added %v, %v", added, err)
	}
	var doc struct {
		Security json.RawMessage    `json:"security"`
		Hooks    map[string][]group `json:"hooks"`
	}
	if err := json.Unmarshal(merged, &doc); err != nil || len(doc.Security) == 0 || len(doc.Hooks) != len(QwenEvents) {
		t.Fatalf("merged: %v\n%s", err, merged)
	}
	if g := doc.Hooks[api.Stop]; len(g) != 2 || g[0].Hooks[0].Command != "say done" || g[1].Hooks[0].Command != testCmd {
		t.Fatalf("Stop: %+v", g)
	}
	if g := doc.Hooks[api.PermissionRequest]; len(g) != 1 || g[0].Matcher != "" || g[0].Hooks[0].Timeout != PermissionTimeout {
		t.Fatalf("PermissionRequest: %+v", g)
	}
	if again, added, err := MergeFor(merged, testCmd, QwenEvents); err != nil || len(added) != 0 || string(again) != string(merged) {
		t.Fatalf("again: added %v, %v", added, err)
	}
}

// Qwen Code 0.24's PermissionRequest, as it builds it (createBaseInput and
// the tool's name and arguments), is read as Claude Code's, and answered
// in Claude Code's words, which it reads.
func TestQwenPermissionRequest(t *testing.T) {
	in := `{"session_id":"5d0f","transcript_path":"/h/.qwen/projects/-p/chats/5d0f.jsonl","cwd":"/p","hook_event_name":"PermissionRequest",
		"timestamp":"2026-11-29T07:00:00.000Z","permission_mode":"default","tool_name":"run_shell_command",
		"tool_input":{"command":"./deploy.sh --staging","description":"Deploy","is_background":false}}`
	ev, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Name != api.PermissionRequest || !ev.AsksPermission() || ev.PolicyOnly() || ev.ToolName != "run_shell_command" ||
		ev.ToolInput != "./deploy.sh --staging" || !strings.Contains(ev.ToolInputJSON, `"command":"./deploy.sh --staging"`) || ev.SessionID != "5d0f" {
		t.Fatalf("event: %+v", ev)
	}
	out := string(DecisionReply(ev.Name, api.Deny, "No.").Output())
	if out != `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"No."}}}`+"\n" {
		t.Fatalf("reply: %s", out)
	}
}
