package rules

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// Pattern is a behaviour pattern: a sequence of tool calls that shows an
// agent going round in circles (the same failing test, the same file
// re-edited for a formatter), with what to tell it. Patterns are data, in
// the rules file's `patterns:` section; internal/coach detects them.
type Pattern struct {
	ID          string `yaml:"id" json:"id"`
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description,omitempty"`
	// Trigger says which tool calls count as one occurrence.
	Trigger Trigger `yaml:"trigger" json:"trigger"`
	// When limits the pattern to some repos, agents or languages.
	When PatternContext `yaml:"when" json:"when,omitzero"`
	// Threshold is N: the pattern holds after N occurrences (default 3).
	Threshold int `yaml:"threshold" json:"threshold"`
	// Window is how far back occurrences count ("10m"; default 10m), and
	// how long after a reminder system3 watches whether it worked.
	Window string `yaml:"window" json:"window"`
	// Preventive fires the reminder at N-1 occurrences, before the Nth.
	Preventive bool `yaml:"preventive" json:"preventive"`
	// AutoSend types the reminder into the agent's pane without asking.
	AutoSend bool `yaml:"auto_send" json:"auto_send"`
	// Directive is the id of the CLAUDE.md directive the reminder quotes;
	// empty: the best text match is used.
	Directive string `yaml:"directive" json:"directive,omitempty"`
	// Keywords help match the pattern to a directive by text.
	Keywords []string `yaml:"keywords" json:"keywords,omitempty"`
	// Interventions are the reminders system3 can send; the most effective
	// one (as measured) is chosen.
	Interventions []Intervention `yaml:"interventions" json:"interventions"`
	// Source is the file that defined the pattern and Line where.
	Source string `yaml:"-" json:"source"`
	Line   int    `yaml:"-" json:"line,omitempty"`

	window time.Duration
}

// Trigger says what one occurrence of a pattern is.
type Trigger struct {
	// Match is what the tool call itself must look like.
	Match ToolCond `yaml:"match" json:"match"`
	// After, when set, must have been seen since the previous occurrence
	// (before the first: within the window) for a call to count: edit,
	// lint, edit, lint is a loop; edit, edit is work.
	After *ToolCond `yaml:"after" json:"after,omitempty"`
	// Reset is a call that ends the run (the test passed): occurrences
	// before it no longer count. It applies to calls with the same subject,
	// and to calls that have none (a formatter run over the tree).
	Reset *ToolCond `yaml:"reset" json:"reset,omitempty"`
	// Same is what occurrences must share: command, file, error, tool, or
	// "" (any call in the session).
	Same string `yaml:"same" json:"same,omitempty"`
}

// ToolCond matches one tool call; every field set must hold. Text fields
// are regular expressions.
type ToolCond struct {
	Tool    string `yaml:"tool" json:"tool,omitempty"`
	Command string `yaml:"command" json:"command,omitempty"`
	File    string `yaml:"file" json:"file,omitempty"`
	Error   string `yaml:"error" json:"error,omitempty"`
	Failed  *bool  `yaml:"failed" json:"failed,omitempty"`

	tool, command, file, errText *regexp.Regexp
}

// PatternContext limits where a pattern applies; an empty list allows all.
type PatternContext struct {
	// Repos are path.Match globs against the session's directory or its
	// last element ("system3", "/src/*").
	Repos     []string `yaml:"repos" json:"repos,omitempty"`
	Agents    []string `yaml:"agents" json:"agents,omitempty"`
	Languages []string `yaml:"languages" json:"languages,omitempty"`
}

// Intervention is one reminder: a concrete suggestion and the outcome it
// should bring. Both are text/templates over [TemplateData].
type Intervention struct {
	ID         string `yaml:"id" json:"id"`
	Suggestion string `yaml:"suggestion" json:"suggestion"`
	Expected   string `yaml:"expected" json:"expected"`

	suggestion, expected *template.Template
}

// TemplateData is what intervention templates can use.
type TemplateData struct {
	Pattern   string // the pattern's name
	Subject   string // what repeats: the command, file, error or tool
	Count     int    // occurrences so far
	Threshold int
	Window    string
	Agent     string
	Repo      string
}

// SameValues are the values Trigger.Same accepts.
var SameValues = []string{"", "command", "file", "error", "tool"}

// Defaults of a pattern.
const (
	DefaultPatternThreshold = 3
	DefaultPatternWindow    = 10 * time.Minute
	// MaxPatternWindow is as far back as the coach keeps tool calls.
	MaxPatternWindow = 24 * time.Hour
)

// WindowDuration is the pattern's window, parsed.
func (p *Pattern) WindowDuration() time.Duration {
	if p.window == 0 {
		return DefaultPatternWindow
	}
	return p.window
}

// FireAt is the occurrence count at which the reminder is raised: N, or
// N-1 for a preventive pattern.
func (p *Pattern) FireAt() int {
	if p.Preventive && p.Threshold > 1 {
		return p.Threshold - 1
	}
	return p.Threshold
}

// Intervention returns the intervention with that id.
func (p *Pattern) Intervention(id string) (Intervention, bool) {
	i := slices.IndexFunc(p.Interventions, func(x Intervention) bool { return x.ID == id })
	if i < 0 {
		return Intervention{}, false
	}
	return p.Interventions[i], true
}

// Render fills an intervention's templates.
func (iv Intervention) Render(d TemplateData) (suggestion, expected string, err error) {
	if iv.suggestion == nil {
		if err := iv.compile(); err != nil {
			return "", "", err
		}
	}
	var s, e strings.Builder
	if err := iv.suggestion.Execute(&s, d); err != nil {
		return "", "", fmt.Errorf("intervention %s: suggestion: %w", iv.ID, err)
	}
	if err := iv.expected.Execute(&e, d); err != nil {
		return "", "", fmt.Errorf("intervention %s: expected: %w", iv.ID, err)
	}
	return strings.TrimSpace(s.String()), strings.TrimSpace(e.String()), nil
}

func (iv *Intervention) compile() error {
	var err error
	if iv.suggestion, err = template.New(iv.ID).Option("missingkey=error").Parse(iv.Suggestion); err != nil {
		return fmt.Errorf("suggestion: %w", err)
	}
	if iv.expected, err = template.New(iv.ID).Option("missingkey=error").Parse(iv.Expected); err != nil {
		return fmt.Errorf("expected: %w", err)
	}
	return nil
}

// ToolCall is what a condition looks at: one tool call, and how it ended.
type ToolCall struct {
	Tool, Command, File, Error string
	Failed                     bool
}

// Matches reports whether the call satisfies every field of c.
func (c *ToolCond) Matches(tc ToolCall) bool {
	if c == nil {
		return false
	}
	if c.Failed != nil && *c.Failed != tc.Failed {
		return false
	}
	for _, f := range []struct {
		re *regexp.Regexp
		s  string
	}{{c.tool, tc.Tool}, {c.command, tc.Command}, {c.file, tc.File}, {c.errText, tc.Error}} {
		if f.re != nil && !f.re.MatchString(f.s) {
			return false
		}
	}
	return true
}

// Applies reports whether the pattern applies to a session of agent in
// repo working in language.
func (c PatternContext) Applies(repo, agent, language string) bool {
	if len(c.Agents) > 0 && !slices.Contains(c.Agents, agent) {
		return false
	}
	if len(c.Languages) > 0 && !slices.Contains(c.Languages, language) {
		return false
	}
	if len(c.Repos) > 0 {
		for _, g := range c.Repos {
			if ok, _ := path.Match(g, repo); ok {
				return true
			}
			if ok, _ := path.Match(g, path.Base(repo)); ok && repo != "" {
				return true
			}
		}
		return false
	}
	return true
}

// compile checks a pattern and prepares its expressions and templates.
// at names the line of a field (by its path under the pattern) for errors.
func (p *Pattern) compile(at func(fields ...string) int) error {
	if p.ID == "" {
		return p.fail(at(), "a pattern has no id; give it one, like id: formatter_loop")
	}
	if p.Name == "" {
		return p.fail(at(), "no name; give it a short name like \"Formatter loop\"")
	}
	if err := p.compileCount(at); err != nil {
		return err
	}
	if err := p.compileTrigger(at); err != nil {
		return err
	}
	for _, g := range p.When.Repos {
		if _, err := path.Match(g, ""); err != nil {
			return p.fail(at("when", "repos"), "repo glob %q is not valid (use *, ? and [a-z])", g)
		}
	}
	return p.compileInterventions(at)
}

// fail is an error in the pattern, at a line.
func (p *Pattern) fail(line int, format string, a ...any) error {
	id := p.ID
	if id == "" {
		id = "(no id)"
	}
	return fmt.Errorf("line %d: pattern %s: %s", line, id, fmt.Sprintf(format, a...))
}

// compileCount checks the threshold and the window, and fills in their
// defaults.
func (p *Pattern) compileCount(at func(fields ...string) int) error {
	if p.Threshold == 0 {
		p.Threshold = DefaultPatternThreshold
	}
	if p.Threshold < 2 || p.Threshold > 100 {
		return p.fail(at("threshold"), "threshold %d must be from 2 to 100", p.Threshold)
	}
	p.window = DefaultPatternWindow
	if p.Window != "" {
		d, err := time.ParseDuration(p.Window)
		if err != nil || d < time.Second || d > MaxPatternWindow {
			return p.fail(at("window"), "window %q is not a duration from 1s to 24h (write it like 10m or 1h)", p.Window)
		}
		p.window = d
	} else {
		p.Window = shortDuration(DefaultPatternWindow)
	}
	return nil
}

// compileTrigger checks the trigger and compiles its conditions.
func (p *Pattern) compileTrigger(at func(fields ...string) int) error {
	if !slices.Contains(SameValues, p.Trigger.Same) {
		return p.fail(at("trigger", "same"), "same %q is not one of command, file, error, tool (or leave it out for any call)", p.Trigger.Same)
	}
	if err := p.Trigger.Match.compile(); err != nil {
		return p.fail(at("trigger", "match"), "match: %v", err)
	}
	if p.Trigger.After != nil {
		if err := p.Trigger.After.compile(); err != nil {
			return p.fail(at("trigger", "after"), "after: %v", err)
		}
	}
	if p.Trigger.Reset != nil {
		if err := p.Trigger.Reset.compile(); err != nil {
			return p.fail(at("trigger", "reset"), "reset: %v", err)
		}
	}
	return nil
}

// compileInterventions checks the interventions and compiles their
// templates, rendering each once with sample data.
func (p *Pattern) compileInterventions(at func(fields ...string) int) error {
	if len(p.Interventions) == 0 {
		return p.fail(at(), "no interventions; add at least one with an id, a suggestion and the expected outcome")
	}
	seen := map[string]bool{}
	sample := TemplateData{Pattern: p.Name, Subject: "go test ./...", Count: p.Threshold, Threshold: p.Threshold, Window: p.Window, Agent: "claude", Repo: "/src/app"}
	for i := range p.Interventions {
		iv := &p.Interventions[i]
		line := at("interventions")
		if iv.ID == "" {
			return p.fail(line, "intervention %d has no id", i+1)
		}
		if seen[iv.ID] {
			return p.fail(line, "intervention id %s is used twice", iv.ID)
		}
		seen[iv.ID] = true
		if strings.TrimSpace(iv.Suggestion) == "" || strings.TrimSpace(iv.Expected) == "" {
			return p.fail(line, "intervention %s needs both a suggestion and an expected outcome", iv.ID)
		}
		if err := iv.compile(); err != nil {
			return p.fail(line, "intervention %s: %v", iv.ID, err)
		}
		if _, _, err := iv.Render(sample); err != nil {
			return p.fail(line, "%v (templates can use .Pattern, .Subject, .Count, .Threshold, .Window, .Agent and .Repo)", err)
		}
	}
	return nil
}

// shortDuration writes d without zero units: "10m", "1h", "1h30m".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (c *ToolCond) compile() error {
	if c.Tool == "" && c.Command == "" && c.File == "" && c.Error == "" && c.Failed == nil {
		return fmt.Errorf("no condition; set at least one of tool, command, file, error or failed")
	}
	for _, f := range []struct {
		name string
		src  string
		dst  **regexp.Regexp
	}{{"tool", c.Tool, &c.tool}, {"command", c.Command, &c.command}, {"file", c.File, &c.file}, {"error", c.Error, &c.errText}} {
		if f.src == "" {
			*f.dst = nil
			continue
		}
		re, err := regexp.Compile(f.src)
		if err != nil {
			return fmt.Errorf("%s regexp %q: %w", f.name, f.src, err)
		}
		*f.dst = re
	}
	return nil
}

// patternLines finds, in a rules file, the line of each pattern and of
// the fields under it, so errors can point at them.
type patternLines struct {
	items []*yaml.Node
}

func newPatternLines(data []byte) patternLines {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return patternLines{}
	}
	seq := mapValue(doc.Content[0], "patterns")
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return patternLines{}
	}
	return patternLines{items: seq.Content}
}

// at returns the line of field path under pattern i, or of the pattern
// itself when the field is not written there.
func (pl patternLines) at(i int) func(fields ...string) int {
	return func(fields ...string) int {
		if i >= len(pl.items) {
			return 0
		}
		n := pl.items[i]
		line := n.Line
		for _, f := range fields {
			k, v := mapKeyValue(n, f)
			if v == nil {
				break
			}
			line, n = k.Line, v
		}
		return line
	}
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	_, v := mapKeyValue(n, key)
	return v
}

func mapKeyValue(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}
