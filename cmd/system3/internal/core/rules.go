package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

// RulesPath is the user's rules file, beside the config file.
func (a *App) RulesPath() string {
	return filepath.Join(filepath.Dir(a.Settings.ConfigPath), "rules.yaml")
}

// LoadRules builds the engine from the built-in rules and the user's file.
func (a *App) LoadRules() (*rules.Engine, error) {
	srcs := []rules.Source{agents.Builtin()}
	user, ok, err := rules.LoadFile(a.RulesPath())
	if err != nil {
		return nil, err
	}
	if ok {
		srcs = append(srcs, user)
	}
	e, err := rules.New(srcs...)
	if err != nil {
		return nil, fmt.Errorf("%w (fix the rules file, or move it aside to use the built-in rules)", err)
	}
	return e, nil
}

// rulesCheckEvery is how often the user's rules file is checked for a
// change: one stat, so cheap enough, and it sees a file created, edited,
// replaced or removed, even where its directory did not exist at start.
const rulesCheckEvery = 2 * time.Second

// rulesTarget is what reloaded rules are handed to (the supervisor).
type rulesTarget interface {
	SetRules(*rules.Engine)
	SetRulesProblem(string)
}

// watchRules reloads the rules whenever rules.yaml differs from last (its
// stamp when the rules in force were loaded: taken before loading them, so
// no change in between is missed). A file that does not load keeps the
// previous rules in force and is reported as a problem until it is fixed.
func (a *App) watchRules(ctx context.Context, t rulesTarget, every time.Duration, last fileStamp) error {
	path := a.RulesPath()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cur := stampOf(path)
		if cur == last {
			continue
		}
		last = cur
		e, err := a.LoadRules()
		if err != nil {
			a.Log.Warn("rules not reloaded", "path", path, "err", err)
			t.SetRulesProblem(fmt.Sprintf("rules not reloaded: %v; the previous rules stay in force", err))
			continue
		}
		t.SetRulesProblem("")
		t.SetRules(e)
		a.Log.Info("rules reloaded", "path", path, "rules", len(e.Rules()))
	}
}

// fileStamp tells whether a file changed between two looks.
type fileStamp struct {
	exists bool
	mod    time.Time
	size   int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{exists: true, mod: fi.ModTime(), size: fi.Size()}
}
