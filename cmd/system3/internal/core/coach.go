package core

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/coach"
	"github.com/system3-dev/system3/internal/learn"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

// DirectiveFiles are the CLAUDE.md files reminders quote: the user's
// (CLAUDE_CONFIG_DIR, else ~/.claude) and the project's in the directory
// system3 runs in (the orchestrator's).
func (a *App) DirectiveFiles() []api.DirectiveFile {
	claudeDir := a.Getenv("CLAUDE_CONFIG_DIR")
	if claudeDir == "" && a.Settings.Home != "" {
		claudeDir = filepath.Join(a.Settings.Home, ".claude")
	}
	project, err := os.Getwd()
	if err != nil {
		project = ""
	}
	return coach.DirectiveFiles(claudeDir, project)
}

// OpenCoach opens the coach on the state dir's learning database. detect
// makes it the detecting coach of the monitoring process (its patterns set
// by SetPatterns, wakes raised into wakes); otherwise it reads the patterns
// of the rules file as it is now whenever asked (a CLI command, an MCP
// server attached to another process's monitors). inject types reminders
// (nil: they are only offered).
func (a *App) OpenCoach(ctx context.Context, patterns []rules.Pattern, inject api.Injector, wakes api.WakeRaiser) (*coach.Coach, func(), error) {
	db, err := learn.OpenDB(filepath.Join(a.Settings.StateDir, learn.FileName))
	if err != nil {
		return nil, nil, err
	}
	cfg := coach.Config{DB: db, Patterns: patterns, Directives: a.DirectiveFiles(), Inject: inject, Wakes: wakes, Logger: a.Log}
	if wakes == nil {
		cfg.Source = a.PatternsNow()
	}
	co, err := coach.New(ctx, cfg)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return co, func() { db.Close() }, nil
}

// PatternsNow returns the patterns of the rules in force, loading the
// rules again only when rules.yaml changed. A rules file that does not
// load keeps the patterns last loaded (the monitors report the problem).
func (a *App) PatternsNow() func() []rules.Pattern {
	var mu sync.Mutex
	var last fileStamp
	var ps []rules.Pattern
	loaded := false
	return func() []rules.Pattern {
		mu.Lock()
		defer mu.Unlock()
		cur := stampOf(a.RulesPath())
		if loaded && cur == last {
			return ps
		}
		e, err := a.LoadRules()
		if err != nil {
			a.Log.Warn("patterns not reloaded", "err", err)
			if !loaded {
				if b, berr := rules.New(agents.Builtin()); berr == nil {
					ps, loaded = b.Patterns(), true
				}
			}
			return ps
		}
		ps, last, loaded = e.Patterns(), cur, true
		return ps
	}
}

// coachedRules hands reloaded rules to the supervisor and their patterns
// to the coach.
type coachedRules struct {
	rulesTarget
	co *coach.Coach
}

func (c coachedRules) SetRules(e *rules.Engine) {
	c.rulesTarget.SetRules(e)
	c.co.SetPatterns(e.Patterns())
}
