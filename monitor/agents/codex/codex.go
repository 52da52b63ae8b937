// Package codex is what system3 knows about the OpenAI Codex CLI: its
// rules (rules.yaml), its keys, and how a session resumes.
package codex

import (
	_ "embed"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

//go:embed rules.yaml
var rules []byte

// Spec is the OpenAI Codex CLI.
var Spec = agent.Spec{
	Name:   "codex",
	Rules:  rules,
	Keys:   keys{},
	Launch: agent.Launch{Command: []string{"codex"}},
	Resume: func(id string) []string {
		if id == "" {
			return []string{"resume", "--last"}
		}
		return []string{"resume", id}
	},
	// A usage limit ends the turn; Codex waits at its prompt and never
	// goes on by itself.
	Continue: "continue",
}

// keys: numbered menus, except the folder-trust dialog.
type keys struct{ agent.Menu }

// Choose presses the option's digit; Codex's folder-trust dialog ignores
// digits: it opens on its first option, and Down moves to the others
// (0.169.0), so Down to the option and Enter.
func (keys) Choose(p agent.Prompt, i int) ([]tmux.Key, error) {
	if p.Kind != "trust" {
		return agent.Digit(i)
	}
	keys := make([]tmux.Key, 0, i+1)
	for range i {
		keys = append(keys, tmux.KeyDown)
	}
	return append(keys, tmux.KeyEnter), nil
}

func (k keys) No(p agent.Prompt) (string, []tmux.Key, error) { return agent.DeclineMenu(k, p, false) }
