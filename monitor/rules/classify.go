package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// Input is what the engine looks at for one pane.
type Input struct {
	// Screen is the capture, with or without escape sequences.
	Screen string
	// Processes are the names of the processes in the pane: the foreground
	// command first, then its descendants. Empty when unknown (a saved
	// capture).
	Processes []string
	// Cmdlines are the command lines (arguments joined by spaces) of the
	// processes in the pane, matched against agents' args; empty when
	// unknown or not needed.
	Cmdlines []string
	// Dead is set when the pane's process has exited and tmux kept the pane.
	Dead bool
	// DeadStatus is the exit status of a dead pane's process; negative
	// when tmux reports none (yet).
	DeadStatus int
	// Agent forces the agent instead of detecting it.
	Agent string
	// Shell is the name of the pane's own process when it is a shell and
	// whether it holds the terminal's foreground is known; Job is then
	// the command it runs in the foreground ("" while the shell itself is
	// in the foreground, at its prompt). Both empty when not known (a
	// saved capture, a system without /proc): the screen decides.
	Shell, Job string
	// Raw is set when the pane's terminal takes keys one at a time
	// (canonical mode off) while a program other than the pane's shell
	// holds it: a full-screen program, or a menu waiting for a key. False
	// when it does not, or when that is not known.
	Raw bool
}

// Result is a classification with the evidence for it.
type Result struct {
	Agent string `json:"agent"`
	// AgentBy says how the agent was recognised: process, screen or given.
	AgentBy  string    `json:"agent_by,omitempty"`
	State    api.State `json:"state"`
	Kind     string    `json:"kind"`
	Rule     string    `json:"rule"`
	Evidence []string  `json:"evidence"`
	Question string    `json:"question,omitempty"`
	// Detail is what a prompt is about (the command to approve, the file to
	// edit), when the rule extracts it.
	Detail  string   `json:"detail,omitempty"`
	Options []string `json:"options"`
	// Resets is when a usage limit resets, as the screen words it (the
	// rule's extract.resets): ParseReset reads it.
	Resets string `json:"resets,omitempty"`
	// IdentityOptions are the options as the prompt's identity counts
	// them: Options without the parts the agent may still rewrite while
	// the prompt stands (the rule's option_scope). Same as Options when
	// the rule names none.
	IdentityOptions []string `json:"-"`
	// LastLine is the last line of text above the input box.
	LastLine string `json:"last_line,omitempty"`
	// Program is the program in front of the pane when no agent is: the
	// command its shell runs (api.RuleShellJob), or the program no agent
	// package knows (api.RuleUnknownProgram, api.RuleGuessChoice).
	Program string `json:"program,omitempty"`
}

// Classify decides the state of one pane. The process speaks first: a
// dead pane has exited, a program no agent package knows is read as one,
// and a command the pane's shell runs is at work. Otherwise the screen
// decides: the agent's rules, highest priority first, then what is left
// when none matched (an agent's leftovers under a shell, a shell at its
// prompt, a pager or editor, or nothing known).
func (e *Engine) Classify(in Input) Result {
	s := NewScreen(in.Screen)
	res := Result{Evidence: []string{}, Options: []string{}, LastLine: s.LastLine()}
	var agent *Agent
	agent, res.AgentBy = e.detect(in, s)
	if agent != nil {
		res.Agent = agent.Name
	}
	if in.Dead {
		return deadPane(res, in.DeadStatus)
	}
	shell := ""
	if in.Shell != "" {
		shell = e.ShellFor(in.Shell)
	}
	if prog, where := e.unknownProgram(in, agent, shell); prog != "" {
		return e.classifyProgram(res, s, prog, where)
	}
	if e.runsShellJob(in, agent, shell) {
		return shellJob(res, in, shell)
	}
	s = agent.view(s, &res)
	matched := e.matchRule(&res, s)
	e.agentGone(&res, in, agent)
	e.unmatched(&res, in, agent, shell, s)
	clipResult(&res)
	res.IdentityOptions = res.Options
	if matched != nil {
		res.IdentityOptions = matched.Extract.identity(res.Options)
	}
	return res
}

// deadPane is the state of a pane whose process exited and tmux kept.
func deadPane(res Result, status int) Result {
	res.State, res.Kind, res.Rule = api.Exited, "dead", api.RulePaneDead
	res.Evidence = []string{fmt.Sprintf("the pane's process exited with status %d", status)}
	if status < 0 {
		res.Evidence = []string{"the pane's process exited (tmux reports no exit status yet)"}
	}
	return res
}

// runsShellJob reports whether the pane's shell runs a command in the
// foreground that is no agent's and no pager or editor.
func (e *Engine) runsShellJob(in Input, agent *Agent, shell string) bool {
	return shell != "" && in.Job != "" && (agent == nil || agent.Shell) && e.viewer(in.Job) == ""
}

// shellJob is the state of a pane whose shell runs a command in the
// foreground: whatever the screen shows, that command is at work.
func shellJob(res Result, in Input, shell string) Result {
	res.Agent, res.AgentBy = shell, "process"
	res.State, res.Rule = api.Working, api.RuleShellJob
	res.Program = in.Job
	res.Evidence = []string{fmt.Sprintf("%s runs %s in the foreground", in.Shell, in.Job)}
	res.LastLine = clipLine(res.LastLine)
	res.Evidence[0] = clipLine(res.Evidence[0])
	return res
}

// view is the screen as the agent's rules read it: its strip patterns cut
// from every line, its trailer left out, its prompts known; and the last
// line res shows skips its chrome and volatile parts. A nil agent (none
// recognised) reads the screen as it is.
func (a *Agent) view(s *Screen, res *Result) *Screen {
	if a == nil {
		return s
	}
	if a.strip != nil {
		s = s.stripped(a.strip)
	}
	if a.trailer != nil {
		s = s.withoutTrailer(a.trailer)
	}
	if a.prompts != nil {
		s.prompts = a.prompts
	}
	if a.chrome != nil || a.volatile != nil {
		res.LastLine = s.lastLine(a.chrome, a.volatile)
	}
	return s
}

// matchRule tries the rules for res's agent, highest priority first, and
// puts the first that matches in res, with what it extracts; nil when
// none does.
func (e *Engine) matchRule(res *Result, s *Screen) *Rule {
	for _, r := range e.byAgent[res.Agent] {
		lines, ok := r.matches(s)
		if !ok {
			continue
		}
		res.State, res.Kind, res.Rule = r.State, r.Kind, r.ID
		res.Evidence = lines
		if r.Extract != nil {
			res.Question, res.Detail, res.Options = r.Extract.run(s)
			res.Resets = r.Extract.resetsText(s)
			if res.Options == nil {
				res.Options = []string{}
			}
		}
		return r
	}
	return nil
}

// agentGone makes res exited when its agent was recognised only by what it
// left on screen while a shell is in the foreground, whatever its last
// screen says.
func (e *Engine) agentGone(res *Result, in Input, agent *Agent) {
	if agent != nil && !agent.Shell && res.AgentBy == "screen" && len(in.Processes) > 0 && e.isShell(in.Processes[0]) && res.State != api.Exited {
		res.State, res.Kind, res.Rule = api.Exited, "process_gone", api.RuleProcessGone
		res.Evidence = []string{fmt.Sprintf("no %s process in the pane; %s is in the foreground", agent.Name, in.Processes[0])}
		res.Question, res.Detail, res.Options, res.Resets = "", "", []string{}, ""
	}
}

// unmatched decides a state no rule gave: idle when the shell itself holds
// the terminal (no rule knows its prompt, but it waits for a command),
// else unknown, saying so when a pager or editor is in front.
func (e *Engine) unmatched(res *Result, in Input, agent *Agent, shell string, s *Screen) {
	if res.State != "" {
		return
	}
	if shell != "" && in.Job == "" && agent != nil && agent.Shell {
		res.State, res.Rule = api.Idle, api.RuleShellPrompt
		res.Evidence = []string{fmt.Sprintf("%s is in the foreground: it waits at its prompt", in.Shell)}
		return
	}
	res.State, res.Rule = api.Unknown, api.RuleNoMatch
	if n := len(s.nonBlank); n > 0 {
		res.Evidence = []string{s.Lines[s.nonBlank[n-1]]}
	}
	if agent == nil && len(in.Processes) > 0 {
		if v := e.viewer(in.Processes[0]); v != "" {
			res.Kind = v
			res.Evidence = []string{fmt.Sprintf("%s (a pager or editor) is in the foreground: what it shows is not an agent", in.Processes[0])}
		}
	}
}

// clipResult bounds every line res carries (MaxLineRunes).
func clipResult(res *Result) {
	res.LastLine, res.Question, res.Detail = clipLine(res.LastLine), clipLine(res.Question), clipLine(res.Detail)
	for i := range res.Evidence {
		res.Evidence[i] = clipLine(res.Evidence[i])
	}
	for i := range res.Options {
		res.Options[i] = clipLine(res.Options[i])
	}
}

// MaxLineRunes bounds every line a Result carries. A pane can hold one
// line of megabytes (a capture joins wrapped lines); the result goes into
// every snapshot, update and wake, where a few hundred characters say all
// a reader can use.
const MaxLineRunes = 1000

func clipLine(s string) string {
	if len(s) <= MaxLineRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxLineRunes-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// matches checks a rule against a screen and returns the matched lines.
func (r *Rule) matches(s *Screen) ([]string, bool) {
	var lines []string
	for i := range r.Match {
		at := r.Match[i].find(s)
		if at < 0 {
			return nil, false
		}
		if l := strings.TrimSpace(s.Lines[at]); !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	for i := range r.Unless {
		if r.Unless[i].find(s) >= 0 {
			return nil, false
		}
	}
	return lines, true
}
