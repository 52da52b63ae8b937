package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/tasks"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// SessionStates returns the states of the running system3's monitors when
// one serves this state dir (with what they remember: error loops, agents
// that exited), else classifies every pane once; and how many wakes need a
// person (api.NeedingPerson).
func (a *App) SessionStates(ctx context.Context) (snap api.Snapshot, unacked int, source string, err error) {
	if c, err := ipc.Dial(ctx, a.SocketPath()); err == nil {
		defer c.Close()
		snap, err := c.Snapshot(ctx)
		if err != nil {
			return snap, 0, "", err
		}
		wakes, err := c.Wakes(ctx, api.WakeFilter{})
		return snap, api.NeedingPerson(wakes), "daemon", err
	} else if !errors.Is(err, ipc.ErrNoDaemon) {
		return snap, 0, "", err
	}
	// What the daemon would find in the journal: status must not show a
	// clean state dir that serve and wait refuse to start on.
	evs, _, writeErr, jerr := wake.Inspect(a.Settings.StateDir)
	if jerr != nil {
		return snap, 0, "", fmt.Errorf("%w; serve, wait and the dashboard refuse to start until it can be read: fix its permissions, or move it aside", jerr)
	}
	if snap, err = a.classifyOnce(ctx); err != nil {
		return snap, 0, "", err
	}
	unacked = api.NeedingPerson(evs)
	if writeErr != nil {
		snap.Problem = joinProblem(snap.Problem, writeErr.Error())
	}
	return snap, unacked, "snapshot", nil
}

// classifyOnce lists, captures and classifies every pane once with the
// supervisor the monitors run, configured as they are (supervisorConfig),
// keeping its wakes in memory only.
func (a *App) classifyOnce(ctx context.Context) (api.Snapshot, error) {
	eng, err := a.LoadRules()
	if err != nil {
		return api.Snapshot{}, err
	}
	store, _, err := wake.Open(wake.Config{})
	if err != nil {
		return api.Snapshot{}, err
	}
	defer store.Close()
	progress := loadedProgress(a.Settings.TasksDir, a.Settings.TodosDir)
	sup, err := monitor.New(a.supervisorConfig(eng, store, tmux.NewClient(a.TmuxServer()), progress))
	if err != nil {
		return api.Snapshot{}, err
	}
	sup.Refresh(ctx)
	return sup.Snapshot(ctx)
}

// loadedProgress reads the task lists once and looks progress up in them.
func loadedProgress(root, todos string) func(string) (api.TaskProgress, bool) {
	lists, _ := tasks.Load(root, todos) // a missing root just means no lists
	return func(id string) (api.TaskProgress, bool) {
		l, ok := tasks.Find(lists, id)
		return progressOf(l), ok
	}
}

func joinProblem(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// progressOf is a task list's progress as sessions show it.
func progressOf(l tasks.List) api.TaskProgress {
	tp := api.TaskProgress{Completed: l.Progress.Completed, Total: l.Progress.Total, Blocked: len(l.Progress.Blocked), InProgress: []string{}}
	for _, t := range l.Progress.InProgress {
		tp.InProgress = append(tp.InProgress, t.Subject)
	}
	return tp
}
