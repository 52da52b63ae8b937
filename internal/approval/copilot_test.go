package approval

import "testing"

// copilot is a tool call as GitHub Copilot CLI's permissionRequest hook
// delivers it (1.0.102).
func copilot(name string, input map[string]any) Request { return agentCall("copilot", name, input) }

// Copilot's tools take the names the policy knows them by, their inputs
// are kept as the agent sent them, and the rules written for Claude Code
// decide them.
func TestFromCopilot(t *testing.T) {
	checkFrom(t, "FromCopilot", FromCopilot, []fromCase{
		{"shell command allowed", copilot("bash", map[string]any{"command": "go test ./..."}),
			"Bash", "bash", "go test ./...", Allow, "tests"},
		{"shell command denied by a part", copilot("bash", map[string]any{"command": "go vet ./... && rm -rf build"}),
			"Bash", "bash", "go vet ./... && rm -rf build", Deny, "no-rm-rf"},
		{"edit inside the worktree", copilot("edit", map[string]any{"file_path": "/w/main.go", "diff": "\n--- a/w/main.go\n+++ b/w/main.go\n"}),
			"Edit", "edit", "/w/main.go", Allow, "edit-inside"},
		{"a new file outside", copilot("edit", map[string]any{"file_path": "/etc/hosts", "diff": "create file mode 100644"}),
			"Edit", "edit", "/etc/hosts", Deny, "edit-outside"},
		{"a tool the policy has no name for", copilot("write_bash", map[string]any{"input": "y"}),
			"write_bash", "", `{"input":"y"}`, None, ""},
	})
}
