package hooks

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/api"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		event   string // the command's --event
		want    api.HookEvent
		wantErr string
	}{
		{name: "permission request", in: `{"session_id":"abc","transcript_path":"/h/.claude/projects/p/abc.jsonl","cwd":"/p",
			"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf ./build &&\nmake deploy","description":"Deploy"},
			"permission_suggestions":[{"type":"addRules"}]}`,
			want: api.HookEvent{Name: api.PermissionRequest, SessionID: "abc", TranscriptPath: "/h/.claude/projects/p/abc.jsonl", Cwd: "/p",
				ToolName: "Bash", ToolInput: "rm -rf ./build && · make deploy",
				ToolInputJSON: `{"command":"rm -rf ./build &&\nmake deploy","description":"Deploy"}`}},
		{name: "permission request with an input too large to keep", in: `{"hook_event_name":"PermissionRequest","tool_name":"Write","tool_input":{"file_path":"/x","content":"` + strings.Repeat("a", MaxToolInput) + `"}}`,
			want: api.HookEvent{Name: api.PermissionRequest, ToolName: "Write", ToolInput: "/x"}},
		// Gemini CLI 0.61's BeforeTool (as its hook got it on stdin).
		{name: "gemini before tool", in: `{"session_id":"68a059f1","transcript_path":"/h/.gemini/tmp/p/chats/session-68a059f1.jsonl","cwd":"/p",
			"hook_event_name":"BeforeTool","timestamp":"2026-11-29T00:18:34.085Z","tool_name":"run_shell_command","tool_input":{"command":"touch made.txt","description":"do it"}}`,
			want: api.HookEvent{Name: api.BeforeTool, SessionID: "68a059f1", TranscriptPath: "/h/.gemini/tmp/p/chats/session-68a059f1.jsonl", Cwd: "/p",
				ToolName: "run_shell_command", ToolInput: "touch made.txt", ToolInputJSON: `{"command":"touch made.txt","description":"do it"}`}},
		{name: "gemini MCP tool", in: `{"hook_event_name":"BeforeTool","tool_name":"mcp_my_srv_get","tool_input":{"id":1},
			"mcp_context":{"server_name":"my_srv","tool_name":"get","command":"srv","args":["--x"]}}`,
			want: api.HookEvent{Name: api.BeforeTool, ToolName: "mcp_my_srv_get", ToolInput: `{"id":1}`, ToolInputJSON: `{"id":1}`, MCPServer: "my_srv", MCPTool: "get"}},
		// GitHub Copilot CLI 1.0.102's, as its hooks got them on stdin.
		{name: "copilot permission request", in: `{"hookName":"permissionRequest","sessionId":"ab86b9f0","timestamp":1795931071609,
			"cwd":"/p","toolName":"bash","toolInput":{"command":"./deploy.sh --staging"},"permissionSuggestions":[]}`,
			want: api.HookEvent{Name: api.CopilotPermissionRequest, SessionID: "ab86b9f0", Cwd: "/p", ToolName: "bash",
				ToolInput: "./deploy.sh --staging", ToolInputJSON: `{"command":"./deploy.sh --staging"}`}},
		{name: "copilot permission request of an edit", in: `{"hookName":"permissionRequest","sessionId":"s","cwd":"/p","toolName":"edit",
			"toolInput":{"file_path":"/p/a.txt","diff":"\n--- a/p/a.txt\n+++ b/p/a.txt\n"},"permissionSuggestions":[]}`,
			want: api.HookEvent{Name: api.CopilotPermissionRequest, SessionID: "s", Cwd: "/p", ToolName: "edit",
				ToolInput: "/p/a.txt", ToolInputJSON: `{"file_path":"/p/a.txt","diff":"\n--- a/p/a.txt\n+++ b/p/a.txt\n"}`}},
		{name: "copilot notification", in: `{"sessionId":"s","timestamp":1795931112521,"cwd":"/p",
			"message":"Run command: ./deploy.sh --other","title":"Permission needed","hook_event_name":"Notification","notification_type":"permission_prompt"}`,
			want: api.HookEvent{Name: api.Notification, SessionID: "s", Cwd: "/p", NotificationType: "permission_prompt", Message: "Run command: ./deploy.sh --other"}},
		{name: "copilot agent stop, named by its command", event: "agentStop", in: `{"sessionId":"s","timestamp":1795931072184,"cwd":"/p",
			"transcriptPath":"/h/.copilot/session-state/s/events.jsonl","stopReason":"end_turn","stop_hook_active":false}`,
			want: api.HookEvent{Name: api.Stop, SessionID: "s", Cwd: "/p", TranscriptPath: "/h/.copilot/session-state/s/events.jsonl"}},
		{name: "copilot pre tool use", event: "preToolUse", in: `{"sessionId":"s","cwd":"/p","toolName":"bash","toolArgs":{"command":"ls","description":"List"}}`,
			want: api.HookEvent{Name: "preToolUse", SessionID: "s", Cwd: "/p", ToolName: "bash", ToolInput: "ls"}},
		{name: "the payload's name wins over the command's", event: "agentStop", in: `{"hook_event_name":"Notification","notification_type":"idle_prompt"}`,
			want: api.HookEvent{Name: api.Notification, NotificationType: "idle_prompt"}},
		{name: "notification", in: `{"hook_event_name":"Notification","message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`,
			want: api.HookEvent{Name: api.Notification, NotificationType: "permission_prompt", Message: "Claude needs your permission to use Bash"}},
		{name: "stop failure", in: `{"hook_event_name":"StopFailure","error":"rate_limit","error_details":"429 too many requests","last_assistant_message":"x"}`,
			want: api.HookEvent{Name: api.StopFailure, Error: "rate_limit", ErrorDetails: "429 too many requests", LastMessage: "x"}},
		// Claude Code 2.1.330 at a subscription's spent allowance.
		{name: "usage limit", in: `{"session_id":"64fe8574","hook_event_name":"StopFailure","error":"rate_limit","last_assistant_message":"You've hit your 5-hour limit · resets 11:53pm (UTC)"}`,
			want: api.HookEvent{Name: api.StopFailure, SessionID: "64fe8574", Error: "rate_limit", LastMessage: "You've hit your 5-hour limit · resets 11:53pm (UTC)"}},
		{name: "stop failure with an object error", in: `{"hook_event_name":"StopFailure","error":{"type":"server_error"}}`,
			want: api.HookEvent{Name: api.StopFailure, Error: `{"type":"server_error"}`}},
		{name: "tool failure", in: `{"hook_event_name":"PostToolUseFailure","tool_name":"Read","tool_input":{"file_path":"/x"},"error":"File does not exist.","is_interrupt":false,"tool_use_id":"toolu_01"}`,
			want: api.HookEvent{Name: api.PostToolUseFailure, ToolName: "Read", ToolInput: "/x", Error: "File does not exist.", ToolUseID: "toolu_01"}},
		{name: "tool success", in: `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a\nb","stderr":""}}`,
			want: api.HookEvent{Name: api.PostToolUse, ToolName: "Bash", ToolInput: "ls", ToolResponse: `{"stdout":"a\nb","stderr":""}`}},
		{name: "unknown tool input", in: `{"hook_event_name":"PreToolUse","tool_name":"mcp__x__y","tool_input":{"a":1}}`,
			want: api.HookEvent{Name: api.PreToolUse, ToolName: "mcp__x__y", ToolInput: `{"a":1}`}},
		{name: "task created", in: `{"hook_event_name":"TaskCreated","task_id":"3","task_subject":"Write tests","task_description":"..."}`,
			want: api.HookEvent{Name: api.TaskCreated, TaskID: "3", TaskSubject: "Write tests"}},
		{name: "numeric task id", in: `{"hook_event_name":"TaskCompleted","task_id":3}`, want: api.HookEvent{Name: api.TaskCompleted, TaskID: "3"}},
		{name: "session end", in: `{"hook_event_name":"SessionEnd","reason":"prompt_input_exit"}`, want: api.HookEvent{Name: api.SessionEnd, Reason: "prompt_input_exit"}},
		{name: "unknown fields and events pass", in: `{"hook_event_name":"PreCompact","trigger":"auto","extra":[1,2]}`, want: api.HookEvent{Name: "PreCompact"}},
		{name: "empty", in: "  \n", wantErr: "empty hook payload"},
		{name: "not an object", in: `["x"]`, wantErr: "not a JSON object"},
		{name: "garbage", in: "hello", wantErr: "not a JSON object"},
		{name: "truncated", in: `{"hook_event_name":"Stop"`, wantErr: "not valid JSON"},
		{name: "no event name", in: `{"session_id":"x"}`, wantErr: "no \"hook_event_name\""},
		{name: "copilot's agent stop without its command's name", in: `{"sessionId":"s","stopReason":"end_turn"}`, wantErr: "names no event"},
		{name: "wrong type", in: `{"hook_event_name":3}`, wantErr: "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAs([]byte(tt.in), tt.event)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseBounds(t *testing.T) {
	big := make([]byte, MaxPayload+1)
	if _, err := Parse(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
	long := strings.Repeat("é", 10000)
	ev, err := Parse([]byte(`{"hook_event_name":"PostToolUseFailure","tool_input":{"command":"` + long + `"},"error":"` + long + `","tool_response":"` + long + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ev.ToolInput, ev.Error, ev.ToolResponse} {
		if len(f) > maxField || !utf8.ValidString(f) || !strings.HasSuffix(f, "…") {
			t.Fatalf("field not clipped on a rune boundary: %d bytes, valid %v", len(f), utf8.ValidString(f))
		}
	}
}

func TestToolCall(t *testing.T) {
	ev := api.HookEvent{Name: api.PostToolUseFailure, Pane: "%1", SessionID: "s", ToolName: "Bash", ToolInput: "ls", Error: "boom"}
	tc, ok := ev.ToolCall()
	if !ok || !tc.Failed || tc.Error != "boom" || tc.Tool != "Bash" || tc.Input != "ls" || tc.Pane != "%1" {
		t.Fatalf("ToolCall = %+v, %v", tc, ok)
	}
	if _, ok := (api.HookEvent{Name: api.PreToolUse}).ToolCall(); ok {
		t.Fatal("PreToolUse reported as a finished call")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"hook_event_name":"Stop"}`, `{"hook_event_name":"PreToolUse","tool_input":{"command":"ls"}}`,
		`{"hook_event_name":"StopFailure","error":{"a":[1]}}`, `{"hookName":"permissionRequest","toolInput":{"command":"ls"},"toolArgs":[]}`, `[]`, ``, `{"hook_event_name":"\u00e9\ud800"}`,
		`{"hookName":"tool_call","tool_call":{"id":"c1","name":"run_commands","input":{"commands":["ls"]}},"sessionContext":{"rootSessionId":"1_abcde"}}`,
		`{"hookName":"tool_result","tool_result":{"name":"editor","input":{"path":"/p"},"output":[1],"error":"e"}}`, `{"hookName":"agent_end","workspaceRoots":["/p"],"taskId":"conv_1"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Parse(data)
		if err != nil {
			return
		}
		if ev.Name == "" {
			t.Fatal("parsed an event without a name")
		}
		for _, s := range []string{ev.Name, ev.SessionID, ev.ToolInput, ev.ToolResponse, ev.Error, ev.Message} {
			if !utf8.ValidString(s) || len(s) > maxField {
				t.Fatalf("field %q is not valid UTF-8 or too long", s)
			}
		}
	})
}
