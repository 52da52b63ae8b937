// Package cline is what system3 knows about the Cline CLI: its rules
// (rules.yaml) and its keys: approvals take y and n, its question tool the
// arrow keys. It resumes a session by id (cline --id ID), an id system3
// does not learn, so a restored Cline starts afresh.
package cline

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

//go:embed rules.yaml
var rules []byte

// Spec is the Cline CLI. It approves every tool unless started with
// --auto-approve false, so system3 starts it that way.
var Spec = agent.Spec{
	Name:   "cline",
	Rules:  rules,
	Keys:   keys{},
	Launch: agent.Launch{Command: []string{"cline", "--auto-approve", "false"}},
}

// keys: an approval ("[y] Approve   [n] Deny") takes the option's letter;
// the question tool's list opens on its first option and takes Down to
// the option and Enter; Escape stops a turn (Ctrl-C quits).
type keys struct{}

func (keys) Choose(p agent.Prompt, i int) ([]tmux.Key, error) {
	if i < 0 || i >= max(len(p.Options), 1) {
		return nil, fmt.Errorf("option %d is not on screen", i+1)
	}
	if p.Kind == "permission" {
		label := strings.ToLower(strings.TrimSpace(p.Options[i]))
		switch {
		case strings.HasPrefix(label, "approve"):
			return []tmux.Key{tmux.Key("y")}, nil
		case strings.HasPrefix(label, "deny"):
			return []tmux.Key{tmux.Key("n")}, nil
		}
		return nil, fmt.Errorf("cline's option %q has no key system3 may press", p.Options[i])
	}
	out := make([]tmux.Key, 0, i+1)
	for range i {
		out = append(out, tmux.KeyDown)
	}
	return append(out, tmux.KeyEnter), nil
}

// Yes is Approve.
func (keys) Yes(p agent.Prompt) int {
	for i, o := range p.Options {
		if agent.HasWordPrefix(o, "approve") {
			return i
		}
	}
	return agent.YesOption(p.Options)
}

// No is Deny, else Escape.
func (k keys) No(p agent.Prompt) (string, []tmux.Key, error) {
	for i, o := range p.Options {
		if agent.HasWordPrefix(o, "deny") {
			keys, err := k.Choose(p, i)
			return o, keys, err
		}
	}
	return agent.DeclineMenu(k, p, false)
}

func (keys) Interrupt() tmux.Key { return tmux.KeyEscape }
