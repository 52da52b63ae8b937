// Package gemini is what system3 knows about the Gemini CLI: its rules
// (rules.yaml; it runs as node, so it is recognised by its arguments) and
// how a session resumes. Its approvals start "Allow once", which the
// default keys take as yes.
package gemini

import (
	_ "embed"

	"github.com/system3-dev/system3/monitor/agent"
)

//go:embed rules.yaml
var rules []byte

// Spec is the Gemini CLI.
var Spec = agent.Spec{
	Name:   "gemini",
	Rules:  rules,
	Launch: agent.Launch{Command: []string{"gemini"}},
	Resume: func(id string) []string {
		if id == "" {
			return []string{"--resume", "latest"}
		}
		return []string{"--resume", id}
	},
	// A spent quota whose retry is more than five minutes away: once its
	// usage-limit dialog is answered Stop, the turn ends on the quota's
	// error and Gemini waits at its prompt; it never goes on by itself.
	// (A nearer retry it waits out behind its spinner: working.)
	Continue: "continue",
}
