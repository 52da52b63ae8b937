package approval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// FileName is the policy file's name, beside the config file.
const FileName = "policy.yaml"

// PathBeside is the policy file beside a config file.
func PathBeside(configPath string) string {
	return filepath.Join(filepath.Dir(configPath), FileName)
}

// document is a policy file, and the config's policy: section.
type document struct {
	Rules []*Rule `yaml:"rules"`
	// AskTimeout is how long an ask holds the agent's hook for an answer.
	AskTimeout time.Duration `yaml:"ask_timeout"`
}

// DefaultAskTimeout is how long a request the policy asks about waits for
// an answer unless ask_timeout says otherwise; MaxAskTimeout is the most
// it may wait: Claude Code gives the PermissionRequest hook a minute
// (hooks.PermissionTimeout), and the hook must answer well inside it.
const (
	DefaultAskTimeout = 45 * time.Second
	MaxAskTimeout     = 50 * time.Second
)

// setAskTimeout takes a document's ask_timeout; a later source's wins.
func (p *Policy) setAskTimeout(source string, d time.Duration) error {
	switch {
	case d == 0:
		return nil
	case d < 0 || d > MaxAskTimeout:
		return fmt.Errorf("policy %s: ask_timeout %s is out of range: give a duration from 1s to %s (the agent's hook has a minute)", source, d, MaxAskTimeout)
	}
	p.askTimeout = d
	return nil
}

// maxFile bounds a policy file.
const maxFile = 1 << 20

// Parse reads a policy document (rules: [...]) from data; source names it
// in errors and in each rule's Source. An error names the file and the
// rule, and says what to fix.
func Parse(source string, data []byte) (*Policy, error) {
	var doc document
	if err := decodeStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("policy %s: %w", source, err)
	}
	p := &Policy{Sources: []string{source}}
	if err := p.add(source, doc.Rules); err != nil {
		return nil, err
	}
	if err := p.setAskTimeout(source, doc.AskTimeout); err != nil {
		return nil, err
	}
	return p, nil
}

func decodeStrict(data []byte, v any) error {
	if len(data) > maxFile {
		return fmt.Errorf("larger than %d bytes", maxFile)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// add checks rules from source and appends them; ids are unique across
// every source.
func (p *Policy) add(source string, rules []*Rule) error {
	seen := map[string]string{}
	for _, r := range p.rules {
		seen[r.ID] = r.Source
	}
	for i, r := range rules {
		if r == nil {
			return fmt.Errorf("policy %s: rule %d is empty", source, i+1)
		}
		name := fmt.Sprintf("rule %d", i+1)
		if r.ID != "" {
			name += fmt.Sprintf(" (%s)", r.ID)
		}
		if err := r.check(); err != nil {
			return fmt.Errorf("policy %s: %s: %w", source, name, err)
		}
		if where, dup := seen[r.ID]; dup {
			return fmt.Errorf("policy %s: %s: the id is used already (in %s); give each rule its own id", source, name, where)
		}
		r.Source = source
		seen[r.ID] = source
		p.rules = append(p.rules, r)
	}
	return nil
}

// Load reads the policy of a config file: its policy: section, then the
// rules of policy.yaml beside it. Neither existing is an empty policy.
func Load(configPath string) (*Policy, error) {
	p := &Policy{}
	if configPath != "" {
		data, err := os.ReadFile(configPath)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("policy: read %s: %w", configPath, err)
		default:
			var cfg struct {
				Policy yaml.Node `yaml:"policy"`
			}
			if err := yaml.Unmarshal(data, &cfg); err != nil {
				return nil, fmt.Errorf("policy %s: %w", configPath, err)
			}
			if cfg.Policy.Kind != 0 {
				var doc document
				b, err := yaml.Marshal(&cfg.Policy)
				if err == nil {
					err = decodeStrict(b, &doc)
				}
				if err != nil {
					return nil, fmt.Errorf("policy %s (policy:): %w", configPath, err)
				}
				if err := p.add(configPath, doc.Rules); err != nil {
					return nil, err
				}
				if err := p.setAskTimeout(configPath, doc.AskTimeout); err != nil {
					return nil, err
				}
				p.Sources = append(p.Sources, configPath)
			}
		}
	}
	file := PathBeside(configPath)
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("policy: read %s: %w", file, err)
	}
	var doc document
	if err := decodeStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("policy %s: %w", file, err)
	}
	if err := p.add(file, doc.Rules); err != nil {
		return nil, err
	}
	if err := p.setAskTimeout(file, doc.AskTimeout); err != nil {
		return nil, err
	}
	p.Sources = append(p.Sources, file)
	return p, nil
}

// Watcher holds the policy in force and loads it again when the config
// file or policy.yaml changes. A file that does not load is refused: the
// rules in force stay, and Problem says why until the file is fixed.
type Watcher struct {
	configPath string
	log        *slog.Logger

	cur atomic.Pointer[Policy]

	mu      sync.Mutex
	problem string
	stamp   stamp
	// seen is the files' stamp at the last look: a change is read only
	// once the files have kept it for a whole interval, so a file caught
	// half-written (an editor's truncate, then write) is never loaded,
	// which could leave an allow rule in force without the deny after it.
	seen stamp
}

// NewWatcher loads the policy of a config file. A policy that does not
// load leaves none in force (system3 decides nothing, as without a
// policy), reported by Problem.
func NewWatcher(configPath string, log *slog.Logger) *Watcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{configPath: configPath, log: log}
	w.cur.Store(&Policy{})
	w.reload()
	return w
}

// Policy is the policy in force; never nil.
func (w *Watcher) Policy() *Policy { return w.cur.Load() }

// Problem says why the policy files were refused, "" when they loaded.
func (w *Watcher) Problem() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.problem
}

// CheckEvery is how often Run looks for a change: two stats.
const CheckEvery = 2 * time.Second

// Run reloads the policy whenever a file changed, until ctx ends. onChange
// is called with the problem after every reload ("" when it loaded).
func (w *Watcher) Run(ctx context.Context, every time.Duration, onChange func(problem string)) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if w.changed() {
			problem := w.reload()
			if onChange != nil {
				onChange(problem)
			}
		}
	}
}

func (w *Watcher) changed() bool {
	st := stampOf(w.configPath, PathBeside(w.configPath))
	w.mu.Lock()
	defer w.mu.Unlock()
	if st == w.stamp {
		w.seen = st
		return false
	}
	settled := st == w.seen
	w.seen = st
	return settled
}

// reload loads the files (their stamp taken first, so no change in
// between is missed) and returns the problem.
func (w *Watcher) reload() string {
	st := stampOf(w.configPath, PathBeside(w.configPath))
	p, err := Load(w.configPath)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stamp = st
	if err != nil {
		w.problem = fmt.Sprintf("approval policy not loaded: %v; the previous rules stay in force", err)
		w.log.Warn("approval policy not loaded", "err", err)
		return w.problem
	}
	w.problem = ""
	w.cur.Store(p)
	w.log.Info("approval policy loaded", "rules", len(p.rules), "files", p.Sources)
	return ""
}

type fileStamp struct {
	exists bool
	mod    time.Time
	size   int64
}

type stamp [2]fileStamp

func stampOf(paths ...string) stamp {
	var s stamp
	for i, p := range paths[:2] {
		if fi, err := os.Stat(p); err == nil {
			s[i] = fileStamp{exists: true, mod: fi.ModTime(), size: fi.Size()}
		}
	}
	return s
}
