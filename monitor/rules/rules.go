// Package rules classifies what an agent in a terminal is doing from a
// capture of its screen and the processes in its pane. Rules are data:
// versioned YAML files, one per agent, embedded as defaults (each agent's
// rules.yaml under monitor/agents/<name>/, bundled by monitor/agents.Builtin),
// extended or overridden by the user's rules.yaml, so new agent versions
// need a rule, not a release.
package rules

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/api"
)

// States lists every state in display order.
var States = api.AllStates()

// Kinds refine a state. Each state accepts only its own kinds, so a typo in
// a rules file is caught when the file loads.
var Kinds = map[api.State][]string{
	api.AwaitingInput: {"permission", "question", "plan", "trust", "other"},
	api.Error:         {"api_error", "rate_limited", "auth", "command"},
	api.RateLimited:   {"", api.KindAutoResume}, // none: nothing continues it by itself
	api.Idle:          {"", "interrupted"},
	api.Working:       {"", "tool", "compacting"},
	api.Exited:        {"", "dead", "process_gone", "closed"},
	api.ErrorLoop:     {""},
	api.Unknown:       {"", "viewer"}, // viewer: a pager or editor in front, never an agent
}

// Rule is one detection rule. All Match conditions must hold and no Unless
// condition may hold; among matching rules the highest Priority wins, then
// the one defined first.
type Rule struct {
	ID       string    `yaml:"id" json:"id"`
	Agents   []string  `yaml:"agents" json:"agents"`
	State    api.State `yaml:"state" json:"state"`
	Kind     string    `yaml:"kind" json:"kind,omitempty"`
	Priority int       `yaml:"priority" json:"priority"`
	// Region is where conditions look unless they name their own.
	Region      string   `yaml:"region" json:"region,omitempty"`
	Match       []Cond   `yaml:"match" json:"match"`
	Unless      []Cond   `yaml:"unless" json:"unless,omitempty"`
	Extract     *Extract `yaml:"extract" json:"extract,omitempty"`
	Description string   `yaml:"description" json:"description,omitempty"`
	// Source says which file defined the rule ("builtin" or a path).
	Source string `yaml:"-" json:"source"`

	region region
}

// Cond is one condition: a literal or a regular expression that must be
// found on some line of a region of the screen.
type Cond struct {
	Region   string `yaml:"region" json:"region,omitempty"`
	Contains string `yaml:"contains" json:"contains,omitempty"`
	Regexp   string `yaml:"regexp" json:"regexp,omitempty"`

	region region
	re     *regexp.Regexp
	pre    *prefilter
}

// Extract pulls the question, what it is about, and its options out of a
// prompt.
type Extract struct {
	// Question is a regexp; group "question" (or group 1, or the whole
	// match) of the lowest line it matches is the question.
	Question string `yaml:"question" json:"question,omitempty"`
	// Detail is a regexp for the heading of what the prompt is about (e.g.
	// "Bash command"); the heading and up to three lines after it, before
	// the question, make the detail. When the options are written on a
	// line below the question (OptionInline), the lines between them are
	// searched first: Cline and opencode name the tool and its command
	// below their question.
	Detail string `yaml:"detail" json:"detail,omitempty"`
	// DetailSkip is a regexp for lines left out of the detail (tips,
	// separators).
	DetailSkip string `yaml:"detail_skip" json:"detail_skip,omitempty"`
	// Option matches one option line below the question; group "label"
	// (or group 1) is the option as shown.
	Option string `yaml:"option" json:"option,omitempty"`
	// OptionScope is a regexp for the part of an option's label the agent
	// may still rewrite while the prompt stands: Claude Code shows "Yes,
	// and don't ask again for: ./migrate.sh --env staging" and, once it has
	// worked out the command's prefix, "… for: ./migrate.sh *". That part
	// is left out of the prompt's identity, so the redraw is not a new
	// prompt; an answer that chooses the option still types only while the
	// label is the one its answerer saw.
	OptionScope string `yaml:"option_scope" json:"option_scope,omitempty"`
	// OptionInline matches every option written on the question line
	// itself, as in "(Y)es/(N)o", or else on the first line below it that
	// has any ("[y] Approve   [n] Deny"); the label is all its groups
	// joined.
	OptionInline string `yaml:"option_inline" json:"option_inline,omitempty"`
	// Resets is a regexp for when a usage limit resets, as the screen
	// words it: group "resets" (or group 1) of the lowest line it matches
	// ("8:10pm (UTC)", "Nov 30th, 2026 12:53 AM", "in 2h 5m"), which
	// ParseReset reads.
	Resets string `yaml:"resets" json:"resets,omitempty"`
	// Region bounds the search; default the rule's region.
	Region string `yaml:"region" json:"region,omitempty"`

	region                                             region
	question, detail, skip, opt, inline, scope, resets *regexp.Regexp
}

// region is a parsed region name.
type region struct {
	kind  string // whole, bottom, footer, above_input, input
	lines int
}

var regionKinds = map[string]int{
	"whole":       0,
	"bottom":      15,
	"footer":      3,
	"above_input": 8,
	"input":       0,
	"turn":        40,
}

func parseRegion(s string) (region, error) {
	if s == "" {
		return region{kind: "bottom", lines: regionKinds["bottom"]}, nil
	}
	name, num, hasNum := strings.Cut(s, ":")
	def, ok := regionKinds[name]
	if !ok {
		return region{}, fmt.Errorf("unknown region %q (use whole, bottom:N, footer, above_input:N, turn:N or input)", s)
	}
	r := region{kind: name, lines: def}
	if hasNum {
		n, err := strconv.Atoi(num)
		if err != nil || n <= 0 || n > 10000 {
			return region{}, fmt.Errorf("region %q: the line count must be a number from 1 to 10000", s)
		}
		r.lines = n
	}
	return r, nil
}

func (r region) String() string {
	if r.lines == 0 {
		return r.kind
	}
	return r.kind + ":" + strconv.Itoa(r.lines)
}

// compile checks the rule and prepares its regions and expressions.
func (r *Rule) compile() error {
	if r.ID == "" {
		return fmt.Errorf("a rule has no id")
	}
	if !r.State.Valid() {
		return fmt.Errorf("rule %s: unknown state %q", r.ID, r.State)
	}
	if !validKind(r.State, r.Kind) {
		return fmt.Errorf("rule %s: kind %q is not one of %s's kinds %q", r.ID, r.Kind, r.State, Kinds[r.State])
	}
	if r.State == api.ErrorLoop {
		return fmt.Errorf("rule %s: error_loop comes from repeated errors over time, not from one screen; match the error with an error rule instead", r.ID)
	}
	if len(r.Match) == 0 {
		return fmt.Errorf("rule %s: no match conditions", r.ID)
	}
	var err error
	if r.region, err = parseRegion(r.Region); err != nil {
		return fmt.Errorf("rule %s: %w", r.ID, err)
	}
	for i := range r.Match {
		if err := r.Match[i].compile(r.region); err != nil {
			return fmt.Errorf("rule %s: match %d: %w", r.ID, i+1, err)
		}
	}
	for i := range r.Unless {
		if err := r.Unless[i].compile(r.region); err != nil {
			return fmt.Errorf("rule %s: unless %d: %w", r.ID, i+1, err)
		}
	}
	if r.Extract != nil {
		if err := r.Extract.compile(r.region); err != nil {
			return fmt.Errorf("rule %s: extract: %w", r.ID, err)
		}
	}
	return nil
}

func validKind(s api.State, k string) bool {
	for _, v := range Kinds[s] {
		if v == k {
			return true
		}
	}
	return false
}

func (c *Cond) compile(def region) error {
	c.region = def
	if c.Region != "" {
		var err error
		if c.region, err = parseRegion(c.Region); err != nil {
			return err
		}
	}
	switch {
	case c.Contains != "" && c.Regexp != "":
		return fmt.Errorf("set contains or regexp, not both")
	case c.Contains != "":
		return nil
	case c.Regexp != "":
		re, err := regexp.Compile(c.Regexp)
		if err != nil {
			return fmt.Errorf("regexp %q: %w", c.Regexp, err)
		}
		c.re, c.pre = re, newPrefilter(c.Regexp)
		return nil
	}
	return fmt.Errorf("a condition needs contains or regexp")
}

// find returns the index of the last line in the region that satisfies the
// condition, or -1.
func (c *Cond) find(s *Screen) int {
	lo, hi := s.bounds(c.region)
	for i := hi - 1; i >= lo; i-- {
		line := s.Lines[i]
		if c.re != nil {
			if c.pre != nil && !c.pre.may(s, i) {
				continue
			}
			if c.re.MatchString(line) {
				return i
			}
		} else if strings.Contains(line, c.Contains) {
			return i
		}
	}
	return -1
}

func (e *Extract) compile(def region) error {
	e.region = def
	if e.Region != "" {
		var err error
		if e.region, err = parseRegion(e.Region); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		src  string
		dst  **regexp.Regexp
	}{
		{"question", e.Question, &e.question},
		{"detail", e.Detail, &e.detail},
		{"detail_skip", e.DetailSkip, &e.skip},
		{"option", e.Option, &e.opt},
		{"option_inline", e.OptionInline, &e.inline},
		{"option_scope", e.OptionScope, &e.scope},
		{"resets", e.Resets, &e.resets},
	} {
		if f.src == "" {
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

// maxDetailLines bounds the detail so a long diff does not become one.
const maxDetailLines = 3

// run extracts question, detail and options. Options are read from the
// lines after the question (or from the whole region when there is no
// question pattern) in screen order.
func (e *Extract) run(s *Screen) (question, detail string, options []string) {
	lo, hi := s.bounds(e.region)
	start, qline := lo, hi
	if e.question != nil {
		for i := hi - 1; i >= lo; i-- {
			if m := e.question.FindStringSubmatch(s.Lines[i]); m != nil {
				question = strings.TrimSpace(group(m, e.question, "question"))
				start, qline = i+1, i
				break
			}
		}
	}
	// Options written on one line: the question's, else the first line
	// below it that has any.
	inlineAt := -1
	if e.inline != nil && qline < hi {
		for i := qline; i < hi && inlineAt < 0; i++ {
			for _, m := range e.inline.FindAllStringSubmatch(s.Lines[i], -1) {
				if label := strings.TrimSpace(strings.Join(m[1:], "")); label != "" {
					options = append(options, label)
					inlineAt = i
				}
			}
		}
	}
	if e.detail != nil {
		if inlineAt > qline {
			detail = e.detailIn(s, qline+1, inlineAt)
		}
		if detail == "" {
			detail = e.detailIn(s, lo, qline)
		}
	}
	if e.opt != nil {
		for i := start; i < hi; i++ {
			if label, _ := e.option(s.Lines[i]); label != "" {
				options = append(options, label)
			}
		}
	}
	return question, detail, options
}

// option reads one line as an option line: its label (group "label", or
// group 1) and the pattern's groups, or "" and nil when the line is none.
func (e *Extract) option(line string) (label string, m []string) {
	if m = e.opt.FindStringSubmatch(line); m == nil {
		return "", nil
	}
	return strings.TrimSpace(group(m, e.opt, "label")), m
}

// resetsText is when a usage limit resets as the lowest line of the
// region that the resets pattern matches says it, "" when none does.
func (e *Extract) resetsText(s *Screen) string {
	if e.resets == nil {
		return ""
	}
	lo, hi := s.bounds(e.region)
	for i := hi - 1; i >= lo; i-- {
		if m := e.resets.FindStringSubmatch(s.Lines[i]); m != nil {
			return strings.TrimSpace(group(m, e.resets, "resets"))
		}
	}
	return ""
}

// detailIn is the detail found in lines [lo, hi): the first heading the
// detail pattern matches and up to maxDetailLines lines after it.
func (e *Extract) detailIn(s *Screen, lo, hi int) string {
	for i := lo; i < hi; i++ {
		m := e.detail.FindStringSubmatch(s.Lines[i])
		if m == nil {
			continue
		}
		parts := []string{strings.TrimSpace(group(m, e.detail, "detail"))}
		width := s.width()
		for j := i + 1; j < hi && len(parts) <= maxDetailLines; j++ {
			// A dialog's left border ("┃", opencode) is not its text.
			t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s.Lines[j]), "┃"))
			if t == "" || isRule(t) || strings.Trim(t, "╌┄┈-") == "" {
				continue
			}
			if e.skip != nil && e.skip.MatchString(t) {
				// A skipped line the terminal wrapped goes with its
				// continuation ("Tip: … choose "switch to auto mode"
				// / below" on a narrow pane).
				for j+1 < hi && wrapsInto(s.Lines[j], s.Lines[j+1], width) {
					j++
				}
				continue
			}
			parts = append(parts, t)
		}
		return strings.Join(parts, " · ")
	}
	return ""
}

// identity is options as a prompt's identity counts them: without the
// part each label's agent may still rewrite (OptionScope).
func (e *Extract) identity(options []string) []string {
	if e == nil || e.scope == nil {
		return options
	}
	out := make([]string, len(options))
	for i, o := range options {
		out[i] = strings.TrimSpace(e.scope.ReplaceAllString(o, ""))
	}
	return out
}

// wrapsInto reports whether next is the continuation of line, wrapped by
// a terminal width columns wide: line's text reaches so near the edge
// that next's first word would not have fitted after it.
func wrapsInto(line, next string, width int) bool {
	text := strings.TrimRight(line, " ")
	first, _, _ := strings.Cut(strings.TrimSpace(next), " ")
	if first == "" || width <= 0 {
		return false
	}
	return utf8.RuneCountInString(text)+1+utf8.RuneCountInString(first) > width
}

// group returns the named group, else group 1, else the whole match.
func group(m []string, re *regexp.Regexp, name string) string {
	if i := re.SubexpIndex(name); i > 0 && i < len(m) {
		return m[i]
	}
	if len(m) > 1 {
		return m[1]
	}
	return m[0]
}
