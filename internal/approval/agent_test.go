package approval

import (
	"encoding/json"
	"testing"
)

func TestFromAgent(t *testing.T) {
	names := map[string]string{"run_shell_command": "Bash", "write_file": "Write"}
	in := json.RawMessage(`{"command":"./deploy.sh --staging"}`)
	r := FromAgent(Request{Agent: "qwen", Tool: "run_shell_command", Input: in}, names)
	if r.Tool != "Bash" || r.AgentTool != "run_shell_command" || r.Command() != "./deploy.sh --staging" {
		t.Fatalf("shell: %+v", r)
	}
	for _, tool := range []string{"ask_user_question", "Bash"} {
		if r := FromAgent(Request{Tool: tool, Input: in}, names); r.Tool != tool || r.AgentTool != "" {
			t.Fatalf("%s: %+v", tool, r)
		}
	}
	if r := FromAgent(Request{Tool: "write_file"}, nil); r.Tool != "write_file" || r.AgentTool != "" {
		t.Fatalf("no names: %+v", r)
	}
}
