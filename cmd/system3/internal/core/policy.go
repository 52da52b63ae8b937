package core

import (
	"fmt"

	"github.com/system3-dev/system3/internal/api"
)

// Policy is what MCP clients may do, for monitors this process runs:
// mcp.allow_sessions, mcp.read_only (or --read-only) and
// mcp.inject_per_minute, checked by the service on every action, whichever
// process the client reached.
func (a *App) Policy() (*api.Policy, error) {
	c := a.Settings.File.MCP
	cfg := api.PolicyConfig{AllowSessions: c.AllowSessions, ReadOnly: c.ReadOnly, PerMinute: c.InjectPerMinute}
	if a.ReadOnly != nil {
		cfg.ReadOnly = *a.ReadOnly
	}
	p, err := api.NewPolicy(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", a.Settings.ConfigPath, err)
	}
	return p, nil
}
