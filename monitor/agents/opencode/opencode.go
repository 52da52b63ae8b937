// Package opencode is what system3 knows about opencode: its rules
// (rules.yaml), its keys (its approvals are a row of buttons chosen with
// the arrow keys, its question tool takes digits), how a session
// continues, and that system3's plugin reports its events.
package opencode

import (
	_ "embed"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

//go:embed rules.yaml
var rules []byte

// Spec is opencode.
var Spec = agent.Spec{
	Name:   "opencode",
	Rules:  rules,
	Keys:   keys{},
	Launch: agent.Launch{Command: []string{"opencode"}},
	Resume: func(id string) []string {
		if id == "" {
			return []string{"--continue"}
		}
		return []string{"--session", id}
	},
	// With system3's plugin in its config (system3 hooks install --agent
	// opencode), its events are weighed against its screen: opencode 1.18
	// has no shell hooks, but loads plugins/*.js from its config
	// directories into its own process, which runs in the pane, and
	// gives their event hook every event of its bus. The plugin reports a
	// turn started (session.status busy), ended (session.idle, after an
	// interrupt too) or failed (session.error), and a permission asked
	// (permission.asked, as the dialog draws), each by running system3
	// hook, which inherits opencode's environment ($TMUX_PANE) and runs
	// below the pane's process. The approval policy does not decide its
	// tool calls: 1.18 never calls a plugin's permission.ask, and its
	// tool.execute.before runs before it asks, with no way to skip the
	// asking.
	Hooks: true,
	// No Continue: at a usage limit opencode honours Retry-After, counts
	// down to its next attempt and makes it by itself (rate_limited,
	// auto_resume), so system3 types nothing.
}

// keys: an approval ("Allow once   Allow always   Reject") opens on its
// first button and takes Right to the button and Enter (Left wraps round
// from the first to the last, so only Right is pressed); the question
// tool's options take their digits; Escape, pressed twice, interrupts.
type keys struct{ agent.Menu }

func (keys) Choose(p agent.Prompt, i int) ([]tmux.Key, error) {
	if p.Kind != "permission" {
		return agent.Digit(i)
	}
	out := make([]tmux.Key, 0, i+1)
	for range i {
		out = append(out, tmux.KeyRight)
	}
	return append(out, tmux.KeyEnter), nil
}

// InterruptPresses: the first Escape arms the interrupt ("esc again to
// interrupt"), the second stops the turn.
func (keys) InterruptPresses() int { return 2 }

// No is Reject, else Escape.
func (k keys) No(p agent.Prompt) (string, []tmux.Key, error) {
	for i, o := range p.Options {
		if agent.HasWordPrefix(o, "reject") {
			keys, err := k.Choose(p, i)
			return o, keys, err
		}
	}
	return agent.DeclineMenu(k, p, false)
}
