package codextest

import "encoding/json"

// Exec is a call to Codex's exec_command tool that asks to run cmd outside
// the sandbox ("require_escalated"), so the CLI asks for approval first,
// showing justification as the question's reason.
func Exec(cmd, justification string) *ToolCall {
	return tool("exec_command", map[string]any{
		"cmd":                 cmd,
		"sandbox_permissions": "require_escalated",
		"justification":       justification,
		"yield_time_ms":       10000,
	})
}

// ExecSandboxed is a call to exec_command that runs cmd inside the sandbox,
// without asking (read-only commands in a read-only sandbox).
func ExecSandboxed(cmd string) *ToolCall {
	return tool("exec_command", map[string]any{"cmd": cmd, "yield_time_ms": 10000})
}

// ApplyPatch is an exec_command running Codex's apply_patch with patch, an
// edit the CLI intercepts and asks to approve as a file change in a
// read-only sandbox.
func ApplyPatch(patch string) *ToolCall {
	return tool("exec_command", map[string]any{
		"cmd":           "apply_patch <<'PATCH'\n" + patch + "PATCH\n",
		"yield_time_ms": 10000,
	})
}

func tool(name string, args map[string]any) *ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return &ToolCall{Name: name, Arguments: b}
}

// Question is one question of a request_user_input call.
type Question struct {
	ID       string   `json:"id"`
	Header   string   `json:"header"`
	Question string   `json:"question"`
	Options  []Option `json:"options"`
}

// Option is a choice of a Question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// RequestUserInput is a call to Codex's request_user_input tool, which the
// CLI offers in Plan mode only: it shows the questions with their options.
func RequestUserInput(qs ...Question) *ToolCall {
	return tool("request_user_input", map[string]any{"questions": qs})
}
