// Package qwen is what system3 knows about Qwen Code: its rules
// (rules.yaml; it runs as node, so it is recognised by its arguments) and
// how a session resumes. Its approvals and questions are numbered menus,
// which the default keys answer.
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
	// A quota that names its reset ("Quota exhausted: ... will reset at
	// ..."): it gives up after a few quick retries, ends the turn and
	// waits at its prompt, and never goes on by itself (seen live). A long
	// Retry-After it waits out behind its spinner: working.
	Continue: "continue",
}
