package agents

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

// AnswerKeys returns the option an answer chooses at sess's prompt and the
// keys that choose it, as the agent's keys (monitor/agents/<name>) say:
// numbered menus (Claude Code, Codex, Gemini) take the option's digit,
// except Codex's folder-trust dialog, which takes Down to the option and
// Enter; aider takes the option's letter and Enter. "no" declines with
// Escape where the agent's No option says so (Claude Code always takes
// Escape).
func AnswerKeys(sess api.Session, answer string) (option string, keys []tmux.Key, err error) {
	a := strings.ToLower(strings.TrimSpace(answer))
	opts := sess.Options
	k := Lookup(sess.Agent).KeysOrDefault()
	p := agent.Prompt{Kind: sess.Kind, Options: opts}
	choose := func(i int) (string, []tmux.Key, error) {
		label := ""
		if i < len(opts) {
			label = opts[i]
		}
		keys, err := k.Choose(p, i)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %v", api.ErrBadAnswer, err)
		}
		return label, keys, nil
	}
	list := func() string {
		if len(opts) == 0 {
			return "the screen shows no options"
		}
		parts := make([]string, len(opts))
		for i, o := range opts {
			parts[i] = fmt.Sprintf("%d=%q", i+1, o)
		}
		return "options: " + strings.Join(parts, ", ")
	}
	if a == "" {
		return "", nil, fmt.Errorf("%w: the answer is empty; send a number, an option's label, yes or no (%s)", api.ErrBadAnswer, list())
	}
	if n, cerr := strconv.Atoi(a); cerr == nil {
		if n < 1 || (len(opts) > 0 && n > len(opts)) || (len(opts) == 0 && n > 9) {
			return "", nil, fmt.Errorf("%w: there is no option %d (%s)", api.ErrBadAnswer, n, list())
		}
		return choose(n - 1)
	}
	switch a {
	case "y", "yes":
		if i := k.Yes(p); i >= 0 {
			return choose(i)
		}
		return "", nil, fmt.Errorf("%w: no option starts with Yes or Allow (%s)", api.ErrBadAnswer, list())
	case "n", "no":
		label, keys, err := k.No(p)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %v", api.ErrBadAnswer, err)
		}
		return label, keys, nil
	}
	// A label: exact, then unique prefix, then unique substring.
	for _, match := range []func(string) bool{
		func(o string) bool { return strings.ToLower(o) == a },
		func(o string) bool { return strings.HasPrefix(strings.ToLower(o), a) },
		func(o string) bool { return strings.Contains(strings.ToLower(o), a) },
	} {
		found := -1
		for i, o := range opts {
			if match(o) {
				if found >= 0 {
					return "", nil, fmt.Errorf("%w: %q matches several options (%s); send the number", api.ErrBadAnswer, answer, list())
				}
				found = i
			}
		}
		if found >= 0 {
			return choose(found)
		}
	}
	return "", nil, fmt.Errorf("%w: %q (%s)", api.ErrBadAnswer, answer, list())
}
