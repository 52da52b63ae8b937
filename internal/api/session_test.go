package api

import (
	"slices"
	"testing"
)

func TestSessionCoarse(t *testing.T) {
	done := &TaskProgress{Completed: 2, Total: 2}
	open := &TaskProgress{Completed: 1, Total: 2}
	for _, c := range []struct {
		state      State
		tasks      *TaskProgress
		want       Coarse
		unfinished bool
	}{
		{Working, open, CoarseActive, false},
		{Idle, nil, CoarseActive, false},
		{Unknown, nil, CoarseActive, false},
		{AwaitingInput, open, CoarseBlocked, false},
		{Error, nil, CoarseBlocked, false},
		{ErrorLoop, nil, CoarseBlocked, false},
		{Exited, done, CoarseComplete, false},
		{Exited, open, CoarseFailed, true},
		{Exited, &TaskProgress{}, CoarseFailed, false}, // an empty list says nothing
		{Exited, nil, CoarseFailed, false},
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
