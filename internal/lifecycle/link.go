package lifecycle

import (
	"context"

	"github.com/system3-dev/system3/internal/api"
)

// Linked keeps the orchestrator records in step with a link made through
// the service: a session of this machine linked by name to a task list is
// recorded as adopted (Adopt), so restore can bring it back, and the
// adopted record of one whose link was removed is forgotten. A link of one
// pane, or of another host's session, changes no record here. A record
// that cannot be kept (no agent system3 can resume, a record file that
// cannot be written) never fails the link: it is logged.
func (m *Manager) Linked(ctx context.Context, req api.LinkRequest, sess api.Session) {
	if m.cfg.Records == nil || req.Target.Pane != "" || sess.Session == "" || sess.Host != "" {
		return
	}
	if req.TaskList == "" {
		rec, ok, err := m.cfg.Records.Get(sess.Session)
		if err == nil && ok && rec.Adopted {
			if _, err := m.cfg.Records.Remove(rec.Name); err != nil {
				m.cfg.Logger.Warn("unlinked session's record not forgotten", "session", sess.Session, "err", err)
			}
		}
		return
	}
	rec, err := m.Adopt(ctx, sess.Session, sess.TaskList)
	if err != nil {
		m.cfg.Logger.Info("linked session not recorded for restore", "session", sess.Session, "why", err)
		return
	}
	m.cfg.Logger.Info("linked session recorded for restore", "session", rec.Session, "agent_session_id", rec.AgentSessionID)
}
