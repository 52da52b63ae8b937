package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/rules"
)

type recordedRules struct {
	mu       sync.Mutex
	engines  []*rules.Engine
	problems []string
}

func (r *recordedRules) SetRules(e *rules.Engine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.engines = append(r.engines, e)
}

func (r *recordedRules) SetRulesProblem(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, p)
}

func (r *recordedRules) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, what, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return cond()
	}, func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		return fmt.Sprintf("engines %d, problems %q", len(r.engines), r.problems)
	})
}

func TestRulesReloadOnChange(t *testing.T) {
	base := t.TempDir()
	cfgDir := filepath.Join(base, "system3") // does not exist yet
	env := map[string]string{"XDG_CONFIG_HOME": base, "HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.StateDir(t)}
	a := &App{Getenv: func(k string) string { return env[k] }, Stderr: os.Stderr}
	defer a.Close()
	if err := a.Setup(config.Overrides{}); err != nil {
		t.Fatal(err)
	}
	rec := &recordedRules{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	initial := stampOf(a.RulesPath())
	go func() { done <- a.watchRules(ctx, rec, 10*time.Millisecond, initial) }()
	defer func() { cancel(); <-done }()

	hasRule := func(e *rules.Engine, id string) bool {
		return slices.ContainsFunc(e.Rules(), func(r rules.Rule) bool { return r.ID == id })
	}
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	good := "version: 1\nrules:\n  - {id: my.building, agents: [shell], state: working, priority: 99, match: [{contains: BUILDING}]}\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "rules.yaml"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "the new rule", func() bool { return len(rec.engines) == 1 && hasRule(rec.engines[0], "my.building") })

	if err := os.WriteFile(filepath.Join(cfgDir, "rules.yaml"), []byte("version: 1\nrules:\n  - id: broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "the problem", func() bool {
		n := len(rec.problems)
		return n > 0 && strings.Contains(rec.problems[n-1], "previous rules stay in force")
	})
	rec.mu.Lock()
	if len(rec.engines) != 1 {
		t.Errorf("a broken file replaced the rules")
	}
	rec.mu.Unlock()

	if err := os.Remove(filepath.Join(cfgDir, "rules.yaml")); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "the built-in rules back", func() bool {
		n := len(rec.engines)
		return n == 2 && !hasRule(rec.engines[1], "my.building") && rec.problems[len(rec.problems)-1] == ""
	})
}
