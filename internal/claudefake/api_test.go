package claudefake

import (
	"encoding/json"
	"testing"
)

func TestLatestUserTurn(t *testing.T) {
	for _, tc := range []struct {
		name, body, text, toolID string
	}{
		{"plain string", `[{"role":"user","content":"hello"}]`, "hello", ""},
		{"reminders skipped", `[{"role":"user","content":[{"type":"text","text":"<system-reminder>\nrun the tests\n</system-reminder>\n"},{"type":"text","text":"fix it"}]}]`, "fix it", ""},
		{"merged prompts: last wins", `[{"role":"user","content":[{"type":"text","text":"first\n"},{"type":"text","text":"second"}]}]`, "second", ""},
		{"system turn after the user", `[{"role":"user","content":"hi"},{"role":"system","content":"# Environment"}]`, "hi", ""},
		{"tool result", `[{"role":"user","content":"go"},{"role":"assistant","content":"…"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"Exit code 1"}],"is_error":true}]}]`, "Exit code 1", "toolu_1"},
		{"tool result as a string", `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"done"}]}]`, "done", "toolu_2"},
		{"a background task's notification", `[{"role":"user","content":"go"},{"role":"assistant","content":"Waiting."},{"role":"user","content":[{"type":"text","text":"<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>\n</system-reminder>"}]}]`, "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>", ""},
		{"no user turn", `[{"role":"assistant","content":"hi"}]`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var msgs []message
			if err := json.Unmarshal([]byte(tc.body), &msgs); err != nil {
				t.Fatal(err)
			}
			text, id := latestUserTurn(msgs)
			if text != tc.text || id != tc.toolID {
				t.Errorf("got (%q, %q), want (%q, %q)", text, id, tc.text, tc.toolID)
			}
		})
	}
}

func FuzzLatestUserTurn(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"hi"}]}`)
	f.Add(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"<system-reminder>"}]}]}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var req messagesRequest
		if json.Unmarshal([]byte(body), &req) != nil {
			return
		}
		latestUserTurn(req.Messages)
		stripReminders(body)
	})
}
