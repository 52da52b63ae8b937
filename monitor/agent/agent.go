// Package agent describes what system3 knows about one agent CLI (or one
// kind of program that is no agent: a shell, a pager): how it is
// recognised and classified (its rules file), the keys that answer,
// decline and interrupt it, how it is started and resumed, and whether it
// has hooks and a transcript system3 follows. Each agent is a Spec in its
// own package under monitor/agents/<name>/; monitor/agents lists them.
//
// A Spec is data plus a few functions, with defaults for everything but
// the name and the rules, so a simple agent is mostly its rules.yaml.
package agent

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/system3-dev/system3/tmux"
)

// Kind says what sort of program a Spec describes.
type Kind int

const (
	// Coding is an agent: a program that works on its own and asks.
	Coding Kind = iota
	// Shell is a plain shell: what runs in it is work, its prompt is idle.
	Shell
	// Viewer is a pager or editor: it shows text and is never an agent.
	Viewer
)

// Spec is everything system3 knows about one agent CLI.
type Spec struct {
	// Name is the agent's name in rules, sessions and the CLI ("claude").
	Name string
	// Kind is Coding unless the Spec is a shell or a viewer; it agrees
	// with the shell: and viewer: marks of the agent in Rules.
	Kind Kind
	// Rules is the agent's rules file (rules.yaml beside its package):
	// the agent entry (processes, arguments, signatures) and its rules.
	Rules []byte
	// Keys answer its prompts and interrupt it; nil: Menu{}.
	Keys Keys
	// Launch is how `system3 spawn` starts it by name; a zero Launch
	// (no command): spawn does not know it without configuration.
	Launch Launch
	// Resume is how the agent's program (Launch.Command[0]) resumes its
	// conversation id, or its latest conversation in the working
	// directory when id is ""; nil when it has no resume system3 knows.
	// It returns nil for "" when the agent resumes by id only.
	Resume func(id string) []string
	// History is the agent's command that lists its saved conversations
	// with their ids and directories ("cline history --json"), for a
	// person to find the one a restore could not resume without its id;
	// nil: none known.
	History []string
	// HookArgs are the arguments that make the agent report to system3 by
	// hook, given the hook settings (JSON); nil: it has no hooks.
	HookArgs func(settings []byte) []string
	// Hooks: its hook events are weighed against its screen.
	Hooks bool
	// Hub is the argument that marks the agent's background process
	// that runs the sessions of any pane (the Cline CLI's hub daemon,
	// --cline-hub-daemon), "" when it has none. A hook run below it
	// cannot be tied to a pane, whatever the environment it inherited
	// and its parent processes say, and is refused.
	Hub string
	// PolicyTools are its tools, as its PermissionRequest hook names
	// them, by the names the approval policy knows the like by (Claude
	// Code's: Bash, Write, Edit...), so that a rule decides them; nil
	// when its hooks name them so already.
	PolicyTools map[string]string
	// Probe, when set, says how its process and transcript are found.
	Probe *Probe
	// TaskLists: it writes the task list it is linked to, so a spawned
	// one is asked to plan its work there.
	TaskLists bool
	// Continue is what system3 types at the agent's prompt to go on with
	// its work once a usage limit that stopped it has reset
	// (monitor.resume_after_limit); "": system3 never continues it.
	Continue string
	// Cursor is the label of the option under a menu's cursor on a
	// screen, "" when none shows; nil: CaretCursor. Spawn reads it while
	// it answers a folder-trust dialog.
	Cursor func(lines []string) string
}

// Launch is how an agent is started: its argv and extra environment.
type Launch struct {
	Command []string
	Env     map[string]string
}

// Probe is how system3 finds an agent's process, its task list and its
// transcript.
type Probe struct {
	// Processes are the names the agent's process may have below the
	// pane's, tried in order.
	Processes []string
	// TaskListVar names the environment variable that holds the task
	// list the agent writes.
	TaskListVar string
	// TranscriptDir is the directory holding the agent's transcripts
	// (newest .jsonl wins) for a process with environment env working in
	// cwd, "" when unknown.
	TranscriptDir func(env map[string]string, cwd string) string
	// SessionID, for an agent whose transcript does not name its
	// conversation, is the id of the conversation the pane's agent holds,
	// "" when unknown.
	SessionID func(p Process) string
}

// Process is what a probe reads of an agent's process in a pane.
type Process struct {
	// Env is its environment; the pane's process's when no process of
	// the Probe's names was found.
	Env map[string]string
	// Args is its command line, nil when no process of the Probe's names
	// was found.
	Args []string
	// Holds reports whether process pid runs in the pane (is the pane's
	// process or below it) and had started by t: a process that took the
	// id of one that died after t did not.
	Holds func(pid int, t time.Time) bool
}

// IsAgent reports whether the Spec describes an agent (not a shell or a
// pager).
func (s Spec) IsAgent() bool { return s.Kind == Coding }

// KeysOrDefault is the Spec's keys, Menu{} when it sets none.
func (s Spec) KeysOrDefault() Keys {
	if s.Keys == nil {
		return Menu{}
	}
	return s.Keys
}

// CursorLabel is the label under the menu cursor on lines.
func (s Spec) CursorLabel(lines []string) string {
	if s.Cursor == nil {
		return CaretCursor(lines)
	}
	return s.Cursor(lines)
}

// caretRE matches the line of a menu option under a ❯ cursor.
var caretRE = regexp.MustCompile(`^\s*❯\s*(?:\d+\.\s*)?(\S.*)$`)

// CaretCursor is the label of the first menu option under a ❯ cursor
// (Claude Code's menus), or "".
func CaretCursor(lines []string) string {
	for _, l := range lines {
		if m := caretRE.FindStringSubmatch(l); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	return ""
}

// Prompt is what an agent's prompt shows: the rule's kind ("permission",
// "trust"...) and the options in screen order.
type Prompt struct {
	Kind    string
	Options []string
}

// Keys say how an agent is answered and interrupted. Errors say, in one
// sentence, why the agent cannot be answered that way.
type Keys interface {
	// Choose is the keys that pick option i (from 0) of p.
	Choose(p Prompt, i int) ([]tmux.Key, error)
	// Yes is the option that accepts p, -1 when none does.
	Yes(p Prompt) int
	// No is the option that declines p (its label, or "Escape") and the
	// keys that choose it.
	No(p Prompt) (label string, keys []tmux.Key, err error)
	// Interrupt is the key that stops a turn.
	Interrupt() tmux.Key
}

// Repeater is implemented by keys whose interrupt key must be pressed more
// than once, apart: opencode's first Escape only arms its interrupt ("esc
// again to interrupt"), and two Escapes sent at once read as neither.
type Repeater interface {
	// InterruptPresses is how many times the interrupt key is pressed.
	InterruptPresses() int
}

// InterruptPresses is how many times k's interrupt key is pressed to stop
// a turn: 1 unless k says otherwise.
func InterruptPresses(k Keys) int {
	if r, ok := k.(Repeater); ok {
		return max(1, r.InterruptPresses())
	}
	return 1
}

// Menu is the keys of an agent with numbered menus: the option's digit
// picks it, "yes" is the first option starting with Yes (else Allow), "no"
// the first starting with No unless it says Escape does it ("(esc)") or
// there is none, and Escape interrupts.
type Menu struct{}

// Choose presses the option's digit.
func (Menu) Choose(_ Prompt, i int) ([]tmux.Key, error) { return Digit(i) }

// Yes is the first option starting with Yes, else with Allow.
func (Menu) Yes(p Prompt) int { return YesOption(p.Options) }

// No is the No option, or Escape.
func (m Menu) No(p Prompt) (string, []tmux.Key, error) { return DeclineMenu(m, p, false) }

// Interrupt is Escape.
func (Menu) Interrupt() tmux.Key { return tmux.KeyEscape }

// Digit is the key of option i (from 0) in a numbered menu.
func Digit(i int) ([]tmux.Key, error) {
	if i < 0 || i > 8 {
		return nil, fmt.Errorf("option %d has no digit key", i+1)
	}
	return []tmux.Key{tmux.Key(strconv.Itoa(i + 1))}, nil
}

// YesOption is the first option starting with the word Yes, else with
// Allow (the Gemini CLI's approvals start "Allow once"), -1 when none does.
func YesOption(opts []string) int {
	for _, w := range []string{"yes", "allow"} {
		for i, o := range opts {
			if HasWordPrefix(o, w) {
				return i
			}
		}
	}
	return -1
}

// DeclineMenu declines p with k: the first option starting with No,
// chosen with k, unless escape is set, there is none, or it says Escape
// does it ("(esc)"): then Escape.
func DeclineMenu(k Keys, p Prompt, escape bool) (string, []tmux.Key, error) {
	opts := p.Options
	no := -1
	for i, o := range opts {
		if HasWordPrefix(o, "no") {
			no = i
			break
		}
	}
	if escape || no < 0 || strings.Contains(strings.ToLower(opts[no]), "(esc)") {
		label := "Escape"
		if no >= 0 {
			label = opts[no]
		}
		return label, []tmux.Key{tmux.KeyEscape}, nil
	}
	keys, err := k.Choose(p, no)
	if err != nil {
		return "", nil, err
	}
	return opts[no], keys, nil
}

// HasWordPrefix reports whether s starts with the word w
// (case-insensitive): "Yes, and..." and "No" do; "Nothing" does not.
func HasWordPrefix(s, w string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	if !strings.HasPrefix(s, w) {
		return false
	}
	rest := s[len(w):]
	return rest == "" || !isLetter(rest[0])
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// Unknown is the Spec of an agent no package describes (one a user's
// rules file defines): the defaults.
func Unknown(name string) Spec { return Spec{Name: name} }

// None is the Spec of a pane where no agent was recognised: Ctrl-C
// interrupts whatever runs there.
func None() Spec { return Spec{Kind: Shell, Keys: InterruptOnly{Key: tmux.Key("C-c")}} }

// InterruptOnly is Menu with another interrupt key.
type InterruptOnly struct {
	Menu
	Key tmux.Key
}

// Interrupt is the key.
func (k InterruptOnly) Interrupt() tmux.Key { return k.Key }

// No declines with k's own Choose.
func (k InterruptOnly) No(p Prompt) (string, []tmux.Key, error) { return DeclineMenu(k, p, false) }
