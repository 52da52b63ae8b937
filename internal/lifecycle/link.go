package lifecycle

import (
	"context"

	"github.com/system3-dev/system3/internal/api"
)

// Link is the one path of a task-list link, from the CLI, the dashboard
// and the MCP server alike: svc links the session (svc may route a
// HOST:NAME target to that host's daemon), then lc, when there is one,
// keeps its orchestrator records in step with the link (see
// Manager.Linked), so an orchestrator adopted by a link from any of them
// is one restore brings back. Only the link's own failure fails it.
func Link(ctx context.Context, svc Linker, lc Orchestrators, req api.LinkRequest) (api.Session, error) {
	sess, err := svc.Link(ctx, req)
	if err != nil || lc == nil {
		return sess, err
	}
	lc.Linked(ctx, req, sess)
	return sess, nil
}

// Linker is the part of the service Link uses.
type Linker interface {
	Link(ctx context.Context, req api.LinkRequest) (api.Session, error)
}

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
