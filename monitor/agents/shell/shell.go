// Package shell is what system3 knows about plain shells (bash, zsh,
// fish...): its rules (rules.yaml). A shell is no agent: a command it runs
// is work, its prompt is idle, and Ctrl-C interrupts.
package shell

import (
	_ "embed"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

//go:embed rules.yaml
var rules []byte

// Spec is a plain shell.
var Spec = agent.Spec{
	Name:  "shell",
	Kind:  agent.Shell,
	Rules: rules,
	Keys:  agent.InterruptOnly{Key: tmux.Key("C-c")},
}
