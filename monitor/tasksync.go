package monitor

import (
	"context"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tasks"
)

// FollowTasks keeps sessions' task progress current as their task lists
// change, until ctx ends or events closes. Without it a session's progress
// would change only when its pane is captured again, and an idle agent's
// pane may not print anything for hours after its last task file was
// written.
func (s *Supervisor) FollowTasks(ctx context.Context, events <-chan tasks.Event) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if ev.Kind == tasks.EventOverflow {
				s.TasksChanged("") // events were lost: look at every list
				continue
			}
			s.TasksChanged(ev.ListID)
		}
	}
}

// TasksChanged reads the progress of task list listID ("" for every list)
// again for the sessions linked to it, and publishes those that changed.
func (s *Supervisor) TasksChanged(listID string) {
	if s.cfg.TaskProgress == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.panes {
		l := st.sess.TaskList
		if l == "" || (listID != "" && l != listID) {
			continue
		}
		var next *api.TaskProgress
		if tp, ok := s.cfg.TaskProgress(l); ok {
			next = &tp
		}
		if next.Equal(st.sess.Tasks) {
			continue
		}
		st.sess.Tasks = next
		s.publishLocked(api.Update{Kind: api.SessionChanged, Session: st.sess.Clone(), Previous: st.sess.State})
	}
}
