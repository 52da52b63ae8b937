package core

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/learn"
	"github.com/system3-dev/system3/internal/lifecycle"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/tmux"
)

// LifecycleConfig is how this system3 spawns: the agents of the config
// file, the tmux server it watches, system3's hooks for Claude Code, and
// wisdom from the learning store.
func (a *App) LifecycleConfig(svc lifecycle.Service) lifecycle.Config {
	configured := map[string]lifecycle.Agent{}
	for name, ag := range a.Settings.File.Agents {
		configured[name] = lifecycle.Agent{Command: ag.Command, Env: ag.Env}
	}
	cfg := lifecycle.Config{
		Service: svc,
		Tmux:    tmux.NewClient(a.TmuxServer()),
		Agents:  configured,
		Logger:  a.Log,
		// An agent with hooks (Claude Code) reports its state by hook
		// from its first second, for this process only: the user's
		// settings are left alone.
		AgentArgs: func(agent string) ([]string, error) {
			hookArgs := agents.Lookup(agent).HookArgs
			if hookArgs == nil {
				return nil, nil
			}
			settings, err := a.HookSettings("")
			if err != nil {
				return nil, fmt.Errorf("hook settings: %w", err)
			}
			return hookArgs(settings), nil
		},
		HookToken: func(session string) (string, error) {
			key, err := hooks.LoadKey(a.Settings.StateDir, true)
			if err != nil {
				return "", err
			}
			return hooks.SessionToken(key, session), nil
		},
	}
	a.orchestratorConfig(&cfg)
	if ls := a.LearnStore(); ls != nil {
		cfg.Outcome = outcomeFunc(ls)
		cfg.Wisdom = func(ctx context.Context, goal string) ([]api.WisdomItem, error) {
			items, err := ls.Wisdom(ctx, goal, 5)
			if err != nil {
				return nil, err
			}
			out := make([]api.WisdomItem, len(items))
			for i, it := range items {
				out[i] = api.WisdomItem{ID: it.ID, Text: it.Text, Kind: it.Kind, ReportedBy: it.ReportedBy, Reported: it.Created}
			}
			return out, nil
		}
		cfg.Injected = ls.RecordInjected
	}
	return cfg
}

// Lifecycle returns the spawn/stop manager over svc.
func (a *App) Lifecycle(svc lifecycle.Service) (*lifecycle.Manager, error) {
	m, err := lifecycle.New(a.LifecycleConfig(svc))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", a.Settings.ConfigPath, err)
	}
	return m, nil
}

// orchestratorConfig adds the orchestrator records, auto-restore and the
// worktree set-up of the config file to a lifecycle config.
func (a *App) orchestratorConfig(cfg *lifecycle.Config) {
	dir := a.Settings.StateDir
	recs := lifecycle.OpenRecords(filepath.Join(dir, lifecycle.RecordsFile))
	recs.Moved = func(bad string, err error) {
		a.Log.Warn("orchestrator records damaged; moved aside", "path", bad, "err", err)
	}
	cfg.Records = recs
	lc := a.Settings.File.Lifecycle
	cfg.AutoRestore = lc.AutoRestore
	cfg.Setup = lifecycle.Setup{Copy: lc.Setup.Copy, Link: lc.Setup.Link, Command: lc.Setup.Command, Timeout: lc.Setup.Timeout,
		LogDir: filepath.Join(dir, "setup")}
}

// outcomeFunc records a finished initiative in the learning store.
func outcomeFunc(ls *learn.Store) func(context.Context, lifecycle.Outcome) error {
	return func(ctx context.Context, o lifecycle.Outcome) error {
		_, err := ls.ReportOutcome(ctx, api.Outcome{Initiative: o.Initiative, Outcome: o.Result, ReasoningPath: o.Summary, ReportedBy: "auto"})
		return err
	}
}
