package api

import "slices"

// State is what a session is doing. The values are a contract shared by the
// CLI, the dashboard and the MCP server.
type State string

// The states, from most to least in need of a person. RateLimited is no
// error: a usage limit (a subscription's 5-hour or weekly allowance) holds
// the agent until it resets, at a time the screen says, and it never
// counts towards an error loop.
const (
	AwaitingInput State = "awaiting_input"
	ErrorLoop     State = "error_loop"
	Error         State = "error"
	RateLimited   State = "rate_limited"
	Exited        State = "exited"
	Working       State = "working"
	Idle          State = "idle"
	Unknown       State = "unknown"
)

// stateOrder is every state in display order.
var stateOrder = []State{AwaitingInput, ErrorLoop, Error, RateLimited, Exited, Working, Idle, Unknown}

// AllStates lists every state in display order.
func AllStates() []State { return slices.Clone(stateOrder) }

// Valid reports whether s is one of the contract states.
func (s State) Valid() bool { return slices.Contains(stateOrder, s) }

// KindAutoResume is the rate_limited kind of an agent whose CLI continues
// by itself when its usage limit resets.
const KindAutoResume = "auto_resume"

// Built-in rule ids, for evidence that comes from the process, not the
// screen.
const (
	RulePaneDead    = "builtin.pane_dead"
	RuleProcessGone = "builtin.process_gone"
	RuleNoMatch     = "builtin.no_match"
	// RuleShellJob: a shell runs a command in the foreground (working).
	RuleShellJob = "builtin.shell_job"
	// RuleShellPrompt: a shell holds the foreground, so it waits at its
	// prompt (idle), though no screen rule recognised the prompt.
	RuleShellPrompt = "builtin.shell_prompt"
	// RuleUnknownProgram: a program no agent package knows holds the
	// pane's terminal and takes keys one at a time: what it is doing
	// cannot be told, so the state is unknown, saying why.
	RuleUnknownProgram = "builtin.unknown_program"
	// RuleGuessChoice: such a program shows a numbered choice list with a
	// selection marker at the bottom of its screen and its output stopped:
	// awaiting_input, as a guess, not a rule of the program's.
	RuleGuessChoice = "guess:numbered-choice"
)
