package rules

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"

	"github.com/system3-dev/system3/internal/api"
)

// FileVersion is the rules file format version this build reads.
const FileVersion = 1

// File is the content of a rules file.
type File struct {
	Version int     `yaml:"version"`
	Agents  []Agent `yaml:"agents"`
	Rules   []Rule  `yaml:"rules"`
	// Patterns are behaviour patterns over tool calls (see Pattern).
	Patterns []Pattern `yaml:"patterns"`
	// Disable lists rule and pattern ids (from earlier files) to switch off.
	Disable []string `yaml:"disable"`
}

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

// Engine classifies screens with a fixed set of agents and rules. It is
// immutable after construction and safe for concurrent use.
type Engine struct {
	agents   []*Agent
	rules    []*Rule
	byAgent  map[string][]*Rule
	patterns []*Pattern
	disabled []Disabled
}

// Disabled is a rule or pattern a rules file switched off.
type Disabled struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // "rule" or "pattern"
	// Source is the file that defined it; By, the file that disabled it.
	Source string `json:"source"`
	By     string `json:"disabled_by"`
}

// Source is one rules file to load: a name for messages and its content,
// or a bundle of files (see Bundle).
type Source struct {
	Name string
	Data []byte

	bundle *bundle
}

// bundle is several rules files loaded as one, compiled once.
type bundle struct {
	parts []Source
	once  sync.Once
	e     *Engine
	err   error
}

// Bundle joins rules files into one source, loaded in order as if they
// were one file (so an id defined twice is an error only within one
// part, and a later part's agent or rule of the same name replaces an
// earlier one). When a bundle is the first source of New, its files are
// parsed and compiled once, the first time, and shared after: the
// built-in rules (monitor/agents.Builtin) are one. The parts must not
// change afterwards.
func Bundle(name string, parts ...Source) Source {
	return Source{Name: name, bundle: &bundle{parts: slices.Clone(parts)}}
}

// Parts are the files of a bundle, or the source itself.
func (s Source) Parts() []Source {
	if s.bundle == nil {
		return []Source{s}
	}
	return slices.Clone(s.bundle.parts)
}

// LoadFile reads a user rules file. A missing file yields ok=false and no
// error: user rules are optional.
func LoadFile(path string) (src Source, ok bool, err error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return Source{}, false, nil
	}
	if err != nil {
		return Source{}, false, fmt.Errorf("read rules %s: %w", path, err)
	}
	return Source{Name: path, Data: data}, true, nil
}

// New builds an engine from rules files, later ones extending earlier ones:
// an agent or rule with an existing name or id replaces it in place, new
// ones are added, and `disable` removes rules by id.
func New(sources ...Source) (*Engine, error) {
	e := &Engine{byAgent: map[string][]*Rule{}}
	if len(sources) > 0 && sources[0].bundle != nil {
		// A bundle is the same every time: parse and compile it once (its
		// compiled rules are immutable and shared), so building an engine
		// costs the user's files only.
		b, err := sources[0].bundle.engine()
		if err != nil {
			return nil, err
		}
		e.agents, e.rules, e.patterns = slices.Clone(b.agents), slices.Clone(b.rules), slices.Clone(b.patterns)
		sources = sources[1:]
	}
	return e.add(sources)
}

// engine is the bundle's files loaded alone, before sorting.
func (b *bundle) engine() (*Engine, error) {
	b.once.Do(func() {
		e := &Engine{byAgent: map[string][]*Rule{}}
		b.err = e.load(b.parts)
		b.e = e
	})
	return b.e, b.err
}

// add loads sources over what e holds and finishes the engine.
func (e *Engine) add(sources []Source) (*Engine, error) {
	if err := e.load(sources); err != nil {
		return nil, err
	}
	return e.finish()
}

// load merges rules files into e's agents, rules and patterns.
func (e *Engine) load(sources []Source) error {
	for _, src := range sources {
		if src.bundle != nil {
			if err := e.load(src.bundle.parts); err != nil {
				return err
			}
			continue
		}
		var f File
		dec := yaml.NewDecoder(strings.NewReader(string(src.Data)))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			return fmt.Errorf("rules %s: %w", src.Name, err)
		}
		if f.Version != FileVersion {
			return fmt.Errorf("rules %s: version %d is not supported (this system3 reads version %d)", src.Name, f.Version, FileVersion)
		}
		for i := range f.Agents {
			a := f.Agents[i]
			a.Source = src.Name
			if err := a.compile(); err != nil {
				return fmt.Errorf("rules %s: %w", src.Name, err)
			}
			if j := slices.IndexFunc(e.agents, func(x *Agent) bool { return x.Name == a.Name }); j >= 0 {
				e.agents[j] = &a
			} else {
				e.agents = append(e.agents, &a)
			}
		}
		seen := map[string]bool{}
		for i := range f.Rules {
			r := f.Rules[i]
			r.Source = src.Name
			if seen[r.ID] {
				return fmt.Errorf("rules %s: rule id %s is defined twice", src.Name, r.ID)
			}
			seen[r.ID] = true
			if err := r.compile(); err != nil {
				return fmt.Errorf("rules %s: %w", src.Name, err)
			}
			if j := slices.IndexFunc(e.rules, func(x *Rule) bool { return x.ID == r.ID }); j >= 0 {
				e.rules[j] = &r
			} else {
				e.rules = append(e.rules, &r)
			}
		}
		if err := e.addPatterns(src, f.Patterns); err != nil {
			return err
		}
		for _, id := range f.Disable {
			j := slices.IndexFunc(e.rules, func(x *Rule) bool { return x.ID == id })
			if j >= 0 {
				e.disabled = append(e.disabled, Disabled{ID: id, Kind: "rule", Source: e.rules[j].Source, By: src.Name})
				e.rules = slices.Delete(e.rules, j, j+1)
				continue
			}
			j = slices.IndexFunc(e.patterns, func(x *Pattern) bool { return x.ID == id })
			if j < 0 {
				return fmt.Errorf("rules %s: disable: no rule with id %s, and no pattern either", src.Name, id)
			}
			e.disabled = append(e.disabled, Disabled{ID: id, Kind: "pattern", Source: e.patterns[j].Source, By: src.Name})
			e.patterns = slices.Delete(e.patterns, j, j+1)
		}
	}
	return nil
}

// finish checks the merged agents, rules and patterns and indexes them.
func (e *Engine) finish() (*Engine, error) {
	for _, p := range e.patterns {
		for _, name := range p.When.Agents {
			if !slices.ContainsFunc(e.agents, func(a *Agent) bool { return a.Name == name }) {
				return nil, fmt.Errorf("rules %s: line %d: pattern %s names agent %q, which no rules file defines", p.Source, p.Line, p.ID, name)
			}
		}
	}
	for _, r := range e.rules {
		for _, name := range r.Agents {
			if !slices.ContainsFunc(e.agents, func(a *Agent) bool { return a.Name == name }) {
				return nil, fmt.Errorf("rules %s: rule %s names agent %q, which no rules file defines", r.Source, r.ID, name)
			}
		}
	}
	// Highest priority first; the stable sort keeps file order for ties.
	slices.SortStableFunc(e.rules, func(a, b *Rule) int { return b.Priority - a.Priority })
	for _, a := range e.agents {
		for _, r := range e.rules {
			if len(r.Agents) == 0 || slices.Contains(r.Agents, a.Name) {
				e.byAgent[a.Name] = append(e.byAgent[a.Name], r)
			}
		}
	}
	for _, r := range e.rules {
		if len(r.Agents) == 0 {
			e.byAgent[""] = append(e.byAgent[""], r)
		}
	}
	return e, nil
}

// addPatterns checks one file's patterns and merges them: a pattern with
// an existing id replaces it in place.
func (e *Engine) addPatterns(src Source, ps []Pattern) error {
	if len(ps) == 0 {
		return nil
	}
	lines := newPatternLines(src.Data)
	seen := map[string]bool{}
	for i := range ps {
		p := ps[i]
		p.Source = src.Name
		at := lines.at(i)
		p.Line = at()
		if err := p.compile(at); err != nil {
			return fmt.Errorf("rules %s: %w", src.Name, err)
		}
		if seen[p.ID] {
			return fmt.Errorf("rules %s: line %d: pattern id %s is defined twice", src.Name, p.Line, p.ID)
		}
		seen[p.ID] = true
		if j := slices.IndexFunc(e.patterns, func(x *Pattern) bool { return x.ID == p.ID }); j >= 0 {
			e.patterns[j] = &p
		} else {
			e.patterns = append(e.patterns, &p)
		}
	}
	return nil
}

// Patterns returns the active behaviour patterns in file order.
func (e *Engine) Patterns() []Pattern {
	out := make([]Pattern, len(e.patterns))
	for i, p := range e.patterns {
		out[i] = *p
	}
	return out
}

// Pattern returns the pattern with that id.
func (e *Engine) Pattern(id string) (Pattern, bool) {
	for _, p := range e.patterns {
		if p.ID == id {
			return *p, true
		}
	}
	return Pattern{}, false
}

// Rules returns the active rules, highest priority first.
// Disabled lists the rules and patterns that rules files switched off, in
// the order they were.
func (e *Engine) Disabled() []Disabled { return slices.Clone(e.disabled) }

func (e *Engine) Rules() []Rule {
	out := make([]Rule, len(e.rules))
	for i, r := range e.rules {
		out[i] = *r
	}
	return out
}

// Agents returns the known agents in detection order.
func (e *Engine) Agents() []Agent {
	out := make([]Agent, len(e.agents))
	for i, a := range e.agents {
		out[i] = *a
	}
	return out
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
	AgentBy  string   `json:"agent_by,omitempty"`
	State    State    `json:"state"`
	Kind     string   `json:"kind"`
	Rule     string   `json:"rule"`
	Evidence []string `json:"evidence"`
	Question string   `json:"question,omitempty"`
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
	// command its shell runs (RuleShellJob), or the program no agent
	// package knows (RuleUnknownProgram, RuleGuessChoice).
	Program string `json:"program,omitempty"`
}

// Built-in rule ids for decisions that come from the process, not the
// screen (see api.RulePaneDead).
const (
	RulePaneDead    = api.RulePaneDead
	RuleProcessGone = api.RuleProcessGone
	RuleNoMatch     = api.RuleNoMatch
	RuleShellJob    = api.RuleShellJob
	RuleShellPrompt = api.RuleShellPrompt
)

// Classify decides the state of one pane.
func (e *Engine) Classify(in Input) Result {
	s := NewScreen(in.Screen)
	res := Result{Evidence: []string{}, Options: []string{}, LastLine: s.LastLine()}
	var agent *Agent
	agent, res.AgentBy = e.detect(in, s)
	if agent != nil {
		res.Agent = agent.Name
	}
	if in.Dead {
		res.State, res.Kind, res.Rule = Exited, "dead", RulePaneDead
		res.Evidence = []string{fmt.Sprintf("the pane's process exited with status %d", in.DeadStatus)}
		if in.DeadStatus < 0 {
			res.Evidence = []string{"the pane's process exited (tmux reports no exit status yet)"}
		}
		return res
	}
	shell := ""
	if in.Shell != "" {
		shell = e.ShellFor(in.Shell)
	}
	if prog, where := e.unknownProgram(in, agent, shell); prog != "" {
		return e.classifyProgram(res, s, prog, where)
	}
	if shell != "" && in.Job != "" && (agent == nil || agent.Shell) && e.viewer(in.Job) == "" {
		// The pane's shell runs a command in the foreground: whatever the
		// screen shows, that command is at work.
		res.Agent, res.AgentBy = shell, "process"
		res.State, res.Rule = Working, RuleShellJob
		res.Program = in.Job
		res.Evidence = []string{fmt.Sprintf("%s runs %s in the foreground", in.Shell, in.Job)}
		res.LastLine = clipLine(res.LastLine)
		res.Evidence[0] = clipLine(res.Evidence[0])
		return res
	}
	if agent != nil && agent.strip != nil {
		s = s.stripped(agent.strip)
	}
	if agent != nil && agent.trailer != nil {
		s = s.withoutTrailer(agent.trailer)
	}
	if agent != nil && agent.prompts != nil {
		s.prompts = agent.prompts
	}
	if agent != nil && (agent.chrome != nil || agent.volatile != nil) {
		res.LastLine = s.lastLine(agent.chrome, agent.volatile)
	}
	candidates := e.byAgent[res.Agent]
	var matched *Rule
	for _, r := range candidates {
		lines, ok := r.matches(s)
		if !ok {
			continue
		}
		res.State, res.Kind, res.Rule = r.State, r.Kind, r.ID
		res.Evidence = lines
		matched = r
		if r.Extract != nil {
			res.Question, res.Detail, res.Options = r.Extract.run(s)
			res.Resets = r.Extract.resetsText(s)
			if res.Options == nil {
				res.Options = []string{}
			}
		}
		break
	}
	// An agent recognised only by what it left on screen while a shell is
	// in the foreground has exited, whatever its last screen says.
	if agent != nil && !agent.Shell && res.AgentBy == "screen" && len(in.Processes) > 0 && e.isShell(in.Processes[0]) && res.State != Exited {
		res.State, res.Kind, res.Rule = Exited, "process_gone", RuleProcessGone
		res.Evidence = []string{fmt.Sprintf("no %s process in the pane; %s is in the foreground", agent.Name, in.Processes[0])}
		res.Question, res.Detail, res.Options, res.Resets = "", "", []string{}, ""
	}
	if res.State == "" && shell != "" && in.Job == "" && agent != nil && agent.Shell {
		// No rule knows this prompt, but the shell itself holds the
		// terminal: it waits for a command.
		res.State, res.Rule = Idle, RuleShellPrompt
		res.Evidence = []string{fmt.Sprintf("%s is in the foreground: it waits at its prompt", in.Shell)}
	}
	if res.State == "" {
		res.State, res.Rule = Unknown, RuleNoMatch
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
	res.LastLine, res.Question, res.Detail = clipLine(res.LastLine), clipLine(res.Question), clipLine(res.Detail)
	for i := range res.Evidence {
		res.Evidence[i] = clipLine(res.Evidence[i])
	}
	for i := range res.Options {
		res.Options[i] = clipLine(res.Options[i])
	}
	res.IdentityOptions = res.Options
	if matched != nil {
		res.IdentityOptions = matched.Extract.identity(res.Options)
	}
	return res
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
