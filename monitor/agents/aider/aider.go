// Package aider is what system3 knows about aider: its rules (rules.yaml)
// and its keys, letters typed on the question line. It has no resume
// system3 knows.
package aider

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

//go:embed rules.yaml
var rules []byte

// Spec is aider.
var Spec = agent.Spec{
	Name:   "aider",
	Rules:  rules,
	Keys:   keys{},
	Launch: agent.Launch{Command: []string{"aider"}},
}

// keys: "(Y)es/(N)o/(D)on't ask again" takes the option's letter and
// Enter; Ctrl-C interrupts.
type keys struct{}

func (keys) Choose(p agent.Prompt, i int) ([]tmux.Key, error) {
	label := ""
	if i < len(p.Options) {
		label = p.Options[i]
	}
	letter := "y"
	if label != "" {
		letter = strings.ToLower(label[:1])
	}
	k, err := tmux.ParseKey(letter)
	if err != nil {
		return nil, fmt.Errorf("aider's option %q has no key system3 may press", label)
	}
	return []tmux.Key{k, tmux.KeyEnter}, nil
}

// Yes is the Yes option, else the first.
func (keys) Yes(p agent.Prompt) int {
	if i := agent.YesOption(p.Options); i >= 0 {
		return i
	}
	return 0
}

// No is always the letter n.
func (keys) No(agent.Prompt) (string, []tmux.Key, error) {
	return "No", []tmux.Key{tmux.Key("n"), tmux.KeyEnter}, nil
}

func (keys) Interrupt() tmux.Key { return tmux.Key("C-c") }
