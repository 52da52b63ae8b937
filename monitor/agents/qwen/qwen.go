// Package qwen is what system3 knows about Qwen Code: its rules
// (rules.yaml; it runs as node, so it is recognised by its arguments) and
// how a session resumes, and that its hooks (Claude Code's) report to
// system3. Its approvals and questions are numbered menus, which the
// default keys answer.
package qwen

import (
	_ "embed"

	"github.com/system3-dev/system3/monitor/agent"
)

//go:embed rules.yaml
var rules []byte

// Spec is Qwen Code. It starts in a mode that asks before nothing unless
// told otherwise, so system3 starts it asking.
var Spec = agent.Spec{
	Name:   "qwen",
	Rules:  rules,
	Launch: agent.Launch{Command: []string{"qwen", "--approval-mode", "default"}},
	Resume: func(id string) []string {
		if id == "" {
			return []string{"--continue"}
		}
		return []string{"--resume", id}
	},
	// With system3's hooks installed in its settings (system3 hooks
	// install --agent qwen), which are Claude Code's, its events are
	// weighed against its screen, and the approval policy decides its
	// PermissionRequest, its tools named as Claude Code's.
	Hooks: true,
	PolicyTools: map[string]string{
		"run_shell_command": "Bash",
		"write_file":        "Write",
		"edit":              "Edit",
		"read_file":         "Read",
		"web_fetch":         "WebFetch",
		"web_search":        "WebSearch",
	},
	// A quota that names its reset ("Quota exhausted: ... will reset at
	// ..."): it gives up after a few quick retries, ends the turn and
	// waits at its prompt, and never goes on by itself (seen live). A long
	// Retry-After it waits out behind its spinner: working.
	Continue: "continue",
}
