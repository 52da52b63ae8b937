// Package copilot is what system3 knows about GitHub Copilot CLI: its
// rules (rules.yaml), its keys (numbered approvals whose No is a text field
// Escape leaves, a question tool chosen with the arrow keys, Escape twice
// to interrupt), how a session resumes, and that its hooks report to
// system3.
package copilot

import (
	_ "embed"
	"fmt"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

//go:embed rules.yaml
var rules []byte

// Spec is GitHub Copilot CLI.
var Spec = agent.Spec{
	Name:   "copilot",
	Rules:  rules,
	Keys:   keys{},
	Launch: agent.Launch{Command: []string{"copilot"}},
	Resume: func(id string) []string {
		if id == "" {
			return []string{"--continue"}
		}
		return []string{"--resume=" + id}
	},
	// With system3's hooks installed in its settings (system3 hooks
	// install --agent copilot), its agentStop (the end of a turn) is
	// weighed against its screen.
	Hooks: true,
	// A provider's limit whose Retry-After is a few minutes or more (two
	// minutes it waits out behind its Working footer, five it does not)
	// ends the turn at once with the provider's message; Copilot then
	// waits at its prompt and never goes on by itself.
	Continue: "continue",
}

// keys: approvals and the folder-trust dialog take the option's digit; the
// question tool's list opens on its first option and takes Down to the
// option and Enter. An approval's last option ("No, and tell Copilot what
// to do differently (Esc to stop)") is a text field its digit only moves
// to, so no is Escape. Escape, pressed twice, interrupts ("esc esc
// interrupt").
type keys struct{ agent.Menu }

func (keys) Choose(p agent.Prompt, i int) ([]tmux.Key, error) {
	if p.Kind != "question" {
		return agent.Digit(i)
	}
	if i < 0 || i >= max(len(p.Options), 1) {
		return nil, fmt.Errorf("option %d is not on screen", i+1)
	}
	out := make([]tmux.Key, 0, i+1)
	for range i {
		out = append(out, tmux.KeyDown)
	}
	return append(out, tmux.KeyEnter), nil
}

// No is Escape, which declines an approval ("Esc to stop"), the
// folder-trust dialog ("No (Esc)") and a question.
func (k keys) No(p agent.Prompt) (string, []tmux.Key, error) {
	return agent.DeclineMenu(k, p, true)
}

// InterruptPresses: the first Escape arms the interrupt ("esc again to
// interrupt"), the second stops the turn.
func (keys) InterruptPresses() int { return 2 }
