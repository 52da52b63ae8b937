package api

import (
	"slices"
	"testing"

	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tasks"
)

func TestSessionCoarse(t *testing.T) {
	done := &TaskProgress{Completed: 2, Total: 2}
	open := &TaskProgress{Completed: 1, Total: 2}
	for _, c := range []struct {
		state      rules.State
		tasks      *TaskProgress
		want       Coarse
		unfinished bool
	}{
		{rules.Working, open, CoarseActive, false},
		{rules.Idle, nil, CoarseActive, false},
		{rules.Unknown, nil, CoarseActive, false},
		{rules.AwaitingInput, open, CoarseBlocked, false},
		{rules.Error, nil, CoarseBlocked, false},
		{rules.ErrorLoop, nil, CoarseBlocked, false},
		{rules.Exited, done, CoarseComplete, false},
		{rules.Exited, open, CoarseFailed, true},
		{rules.Exited, &TaskProgress{}, CoarseFailed, false}, // an empty list says nothing
		{rules.Exited, nil, CoarseFailed, false},
	} {
		s := Session{State: c.state, Tasks: c.tasks}
		if got := s.Coarse(); got != c.want {
			t.Errorf("%s with tasks %+v: coarse %s, want %s", c.state, c.tasks, got, c.want)
		}
		if got := s.ExitedUnfinished(); got != c.unfinished {
			t.Errorf("%s with tasks %+v: exited unfinished %v, want %v", c.state, c.tasks, got, c.unfinished)
		}
	}
	if got := CoarseStates(); !slices.Equal(got, []string{"active", "blocked", "complete", "failed"}) {
		t.Errorf("coarse states = %v", got)
	}
}

func TestProgressOf(t *testing.T) {
	l := tasks.List{Progress: tasks.Progress{Completed: 1, Total: 4,
		InProgress: []tasks.TaskRef{{ID: "2", Subject: "Add cookies"}},
		Blocked:    []tasks.TaskRef{{ID: "3"}, {ID: "4"}}}}
	p := ProgressOf(l)
	if p.Completed != 1 || p.Total != 4 || p.Blocked != 2 || !slices.Equal(p.InProgress, []string{"Add cookies"}) {
		t.Fatalf("progress = %+v", p)
	}
	if p := ProgressOf(tasks.List{}); p.InProgress == nil {
		t.Fatal("no tasks in progress is an empty list, not null, in JSON")
	}
}
