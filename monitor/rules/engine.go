package rules

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
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

// Disabled lists the rules and patterns that rules files switched off, in
// the order they were.
func (e *Engine) Disabled() []Disabled { return slices.Clone(e.disabled) }

// Rules returns the active rules, highest priority first.
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
