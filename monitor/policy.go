package monitor

import (
	"context"
	"fmt"
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// Allow applies the policy to an action on a whole session; an allowed
// action counts toward the session's rate.
// recordWrites are the writes that touch no pane, and how a refusal names
// them.
var recordWrites = map[string]string{
	"report_outcome":      "report outcomes to the learning store",
	"report_intervention": "report what a reminder did",
	"delete_learnings":    "delete learnings from the learning store",
}

func (s *Supervisor) Allow(ctx context.Context, req api.AllowRequest) error {
	name := strings.TrimSpace(req.Session)
	if req.Action == "" {
		return fmt.Errorf("%w: name the action", api.ErrBadRequest)
	}
	if name == "" {
		if w, ok := recordWrites[req.Action]; ok {
			return s.cfg.Policy.CheckWrite(req.Origin, w)
		}
		return fmt.Errorf("%w: name the session %s acts on", api.ErrBadRequest, req.Action)
	}
	return s.cfg.Policy.Check(req.Origin, req.Action, api.Session{Session: name})
}
