package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Agent tells how to recognise one kind of agent.
type Agent struct {
	Name string `yaml:"name" json:"name"`
	// Processes are regexps matched against the names of the processes in
	// the pane (the foreground command and its descendants).
	Processes []string `yaml:"processes" json:"processes"`
	// Args are regexps matched against the command lines (arguments
	// joined by spaces) of the processes in the pane, for agents whose
	// process is an interpreter: the Gemini CLI runs as `node …/gemini`.
	Args []string `yaml:"args" json:"args,omitempty"`
	// Signatures are regexps; one found on screen identifies the agent when
	// no process did (an agent run through node, a wrapper, or a rename).
	Signatures []string `yaml:"signatures" json:"signatures,omitempty"`
	// Trailer are regexps for lines the agent may draw below everything
	// else (a task panel under a dialog); a run of them at the bottom of
	// the screen is left out before its rules are tried.
	Trailer []string `yaml:"trailer" json:"trailer,omitempty"`
	// Chrome are regexps for lines the agent draws that never say what it
	// is doing (its logo, an effort indicator, a passing notice, its task
	// panel): the last line a session shows skips them.
	Chrome []string `yaml:"chrome" json:"chrome,omitempty"`
	// Volatile are regexps for parts of a line that change on every frame
	// (a spinner's elapsed time and token count): they are cut from the
	// last line a session shows, which would otherwise be stale at once.
	Volatile []string `yaml:"volatile" json:"volatile,omitempty"`
	// Shell marks a plain shell: when a shell is in the foreground, an agent
	// recognised only by its leftovers on screen is no longer running.
	Shell bool `yaml:"shell" json:"shell,omitempty"`
	// Viewer marks a pager or editor: in the foreground it shows text,
	// and an agent's screen it shows (a saved transcript, a log) is not
	// that agent. It is never an agent itself.
	Viewer bool `yaml:"viewer" json:"viewer,omitempty"`
	// Strip are regexps for parts of lines that are never text (a scroll
	// bar drawn in the last column): they are cut from every line before
	// the agent's rules are tried.
	Strip []string `yaml:"strip" json:"strip,omitempty"`
	// Prompts are regexps for the lines where the agent shows a prompt the
	// user submitted (Qwen Code's "  > text"), which start a turn (region
	// turn); without them, "❯ text" and "› text" do.
	Prompts []string `yaml:"prompts" json:"prompts,omitempty"`
	// Version is a regexp whose first group, on the lowest line it
	// matches, is the agent's version as its screen shows it (a start-up
	// banner), for evidence and bug reports.
	Version string `yaml:"version" json:"version,omitempty"`
	Source  string `yaml:"-" json:"source"`

	procs []*regexp.Regexp
	args  []*regexp.Regexp
	// sig is all signatures in one alternation: one pass per line.
	sig *regexp.Regexp
	// trailer is all trailer patterns in one alternation; chrome and
	// volatile likewise.
	trailer, chrome, volatile, prompts, strip *regexp.Regexp
	version                                   *regexp.Regexp
}

func (a *Agent) compile() error {
	if a.Name == "" {
		return fmt.Errorf("an agent has no name")
	}
	a.procs, a.args, a.sig, a.trailer, a.chrome, a.volatile, a.prompts, a.strip, a.version = nil, nil, nil, nil, nil, nil, nil, nil, nil
	for _, p := range a.Processes {
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("agent %s: process pattern %q: %w", a.Name, p, err)
		}
		a.procs = append(a.procs, re)
	}
	if len(a.Args) > 0 && (a.Shell || a.Viewer) {
		return fmt.Errorf("agent %s: args recognise agents; a shell or viewer is recognised by its process name only", a.Name)
	}
	for _, p := range a.Args {
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("agent %s: args pattern %q: %w", a.Name, p, err)
		}
		a.args = append(a.args, re)
	}
	var err error
	if a.sig, err = alternation(a.Signatures); err != nil {
		return fmt.Errorf("agent %s: signature %w", a.Name, err)
	}
	if a.trailer, err = alternation(a.Trailer); err != nil {
		return fmt.Errorf("agent %s: trailer %w", a.Name, err)
	}
	if a.chrome, err = alternation(a.Chrome); err != nil {
		return fmt.Errorf("agent %s: chrome %w", a.Name, err)
	}
	if a.volatile, err = alternation(a.Volatile); err != nil {
		return fmt.Errorf("agent %s: volatile %w", a.Name, err)
	}
	if a.strip, err = alternation(a.Strip); err != nil {
		return fmt.Errorf("agent %s: strip %w", a.Name, err)
	}
	if a.prompts, err = alternation(a.Prompts); err != nil {
		return fmt.Errorf("agent %s: prompts %w", a.Name, err)
	}
	if a.Version != "" {
		if a.version, err = regexp.Compile(a.Version); err != nil {
			return fmt.Errorf("agent %s: version pattern %q: %w", a.Name, a.Version, err)
		}
		if a.version.NumSubexp() < 1 {
			return fmt.Errorf("agent %s: version pattern %q needs a group around the version, e.g. 'v(\\d+\\.\\d+\\.\\d+)'", a.Name, a.Version)
		}
	}
	return nil
}

// ScreenVersion is the version of agent as its screen shows it (the
// group of its version pattern on the lowest line that has it), or "".
func (e *Engine) ScreenVersion(agent, screen string) string {
	var a *Agent
	for _, x := range e.agents {
		if x.Name == agent {
			a = x
		}
	}
	if a == nil || a.version == nil {
		return ""
	}
	lines := NewScreen(screen).Lines
	for i := len(lines) - 1; i >= 0; i-- {
		if m := a.version.FindStringSubmatch(lines[i]); m != nil && m[1] != "" {
			return clipLine(m[1])
		}
	}
	return ""
}

// alternation compiles patterns into one regexp matching any of them, or
// nil when there are none.
func alternation(patterns []string) (*regexp.Regexp, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	alts := make([]string, len(patterns))
	for i, p := range patterns {
		if _, err := regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		alts[i] = "(?:" + p + ")"
	}
	return regexp.Compile(strings.Join(alts, "|"))
}

func (a *Agent) matchesProcess(name string) bool {
	for _, re := range a.procs {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

func (a *Agent) matchesArgs(cmdline string) bool {
	for _, re := range a.args {
		if re.MatchString(cmdline) {
			return true
		}
	}
	return false
}

// HasAgent reports whether name is a known agent.
func (e *Engine) HasAgent(name string) bool {
	return slices.ContainsFunc(e.agents, func(a *Agent) bool { return a.Name == name })
}

// IsShellAgent reports whether name is an agent marked shell or viewer:
// a program that is no coding agent.
func (e *Engine) IsShellAgent(name string) bool {
	return slices.ContainsFunc(e.agents, func(a *Agent) bool { return a.Name == name && (a.Shell || a.Viewer) })
}

// IsProcessOf reports whether a process name is one of agent's processes.
func (e *Engine) IsProcessOf(agent, name string) bool {
	for _, a := range e.agents {
		if a.Name == agent && a.matchesProcess(name) {
			return true
		}
	}
	return false
}

// IsAgentProcess reports whether a process name is an agent's (not a
// shell's), so the caller need not look at its children.
func (e *Engine) IsAgentProcess(name string) bool {
	for _, a := range e.agents {
		if !a.Shell && !a.Viewer && a.matchesProcess(name) {
			return true
		}
	}
	return false
}

// WantsArgs reports whether recognising the agent in a pane whose
// processes are named procs needs their command lines: no agent is known by
// those names, and some agent is known by its arguments.
func (e *Engine) WantsArgs(procs []string) bool {
	has := false
	for _, a := range e.agents {
		if len(a.args) > 0 {
			has = true
		}
	}
	if !has {
		return false
	}
	for _, p := range procs {
		if e.IsAgentProcess(p) {
			return false
		}
	}
	return true
}

func (e *Engine) isShell(proc string) bool { return e.ShellFor(proc) != "" }

// viewer names the viewer whose processes match proc ("" when proc is no
// pager or editor).
func (e *Engine) viewer(proc string) string {
	for _, a := range e.agents {
		if a.Viewer && a.matchesProcess(proc) {
			return a.Name
		}
	}
	return ""
}

// ShellFor names the shell agent whose processes match proc ("" when proc
// is no shell).
func (e *Engine) ShellFor(proc string) string {
	for _, a := range e.agents {
		if a.Shell && a.matchesProcess(proc) {
			return a.Name
		}
	}
	return ""
}

// detect finds the agent: given, else by process (any non-shell agent
// process in the pane, by name or else by its arguments, wins over a
// shell), else by screen signature (the one
// lowest on screen, i.e. most recent), else a shell by process.
func (e *Engine) detect(in Input, s *Screen) (*Agent, string) {
	if in.Agent != "" {
		for _, a := range e.agents {
			if a.Name == in.Agent {
				return a, "given"
			}
		}
		return &Agent{Name: in.Agent}, "given"
	}
	var shell *Agent
	for _, p := range in.Processes {
		for _, a := range e.agents {
			if a.Viewer || !a.matchesProcess(p) {
				continue
			}
			if !a.Shell {
				return a, "process"
			}
			if shell == nil {
				shell = a
			}
		}
	}
	for _, c := range in.Cmdlines {
		for _, a := range e.agents {
			if !a.Shell && !a.Viewer && a.matchesArgs(c) {
				return a, "process"
			}
		}
	}
	if len(in.Processes) > 0 && e.viewer(in.Processes[0]) != "" {
		// A pager or editor in front, and no agent process: what it shows
		// is text, whatever agent's screen that text looks like.
		return nil, ""
	}
	// The agent whose signature is lowest on screen (most recent) wins;
	// scanning from the bottom stops at the first line that has one.
	for i := len(s.Lines) - 1; i >= 0; i-- {
		for _, a := range e.agents {
			if a.sig != nil && !a.Shell && a.sig.MatchString(s.Lines[i]) {
				return a, "screen"
			}
		}
	}
	if shell != nil {
		return shell, "process"
	}
	return nil, ""
}
