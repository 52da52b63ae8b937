package monitor

import (
	"context"
	"fmt"
	"strings"

	"github.com/system3-dev/system3/monitor/api"
)

// Allow applies the policy to an action on a whole session; an allowed
// action counts toward the session's rate.
func (s *Supervisor) Allow(ctx context.Context, req api.AllowRequest) error {
	name := strings.TrimSpace(req.Session)
	if name == "" || req.Action == "" {
		return fmt.Errorf("%w: name the action and the session", api.ErrBadRequest)
	}
	return s.cfg.Policy.Check(req.Origin, req.Action, api.Session{Session: name})
}
