package core

import (
	"context"
	"fmt"
	"sync"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/learn"
)

// OpenLearn opens the learning store of the state dir once per process;
// the app closes it.
func (a *App) OpenLearn() (*learn.Store, error) {
	a.learnMu.Lock()
	defer a.learnMu.Unlock()
	if a.learn != nil || a.learnErr != nil {
		return a.learn, a.learnErr
	}
	c := a.Settings.File.Learn
	a.learn, a.learnErr = learn.OpenOptions(a.Settings.StateDir, learn.Options{ReflectCommand: c.ReflectCommand, ReflectTimeout: c.ReflectTimeout})
	if a.learnErr != nil {
		a.learnErr = fmt.Errorf("learning store: %w", a.learnErr)
	}
	return a.learn, a.learnErr
}

// LearnStore is the learning store for the parts that work without it
// (the MCP server, the dashboard, idle work): a store that cannot be
// opened is logged and left out.
func (a *App) LearnStore() *learn.Store {
	ls, err := a.OpenLearn()
	if err != nil {
		a.Log.Warn("learning store unavailable; the learning tools are off", "err", err)
		return nil
	}
	return ls
}

// runLearnIdle runs the learning store's idle work beside the monitors:
// every change the monitors report is real work that postpones it, and
// its health check looks at the orchestrators.
func (a *App) runLearnIdle(ctx context.Context, svc api.Service, ls *learn.Store) error {
	m := learn.NewMaintainer(ls)
	m.Log = a.Log
	m.Health = orchestratorHealth(svc, a)
	updates, err := svc.Watch(ctx)
	if err != nil {
		a.Log.Warn("learning idle work off", "err", err)
		return nil
	}
	go func() {
		for u := range updates {
			if u.Kind != api.StatusChanged {
				m.Touch()
			}
		}
	}()
	return m.Run(ctx)
}

// orchestratorHealth is the idle health check: an agent pane that exited
// while its task list is unfinished is logged once (the monitors wake
// someone for it; the log keeps the record for later reading).
func orchestratorHealth(svc api.Service, a *App) func(context.Context) error {
	var mu sync.Mutex
	reported := map[string]bool{}
	return func(ctx context.Context) error {
		snap, err := svc.Snapshot(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		live := map[string]bool{}
		for _, s := range snap.Sessions {
			if !s.ExitedUnfinished() {
				continue
			}
			key := s.Pane + "/" + s.TaskList
			live[key] = true
			if !reported[key] {
				a.Log.Warn("orchestrator exited with unfinished tasks", "target", s.Target, "list", s.TaskList,
					"done", s.Tasks.Completed, "total", s.Tasks.Total)
			}
		}
		reported = live
		return nil
	}
}
