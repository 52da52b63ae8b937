package core

import (
	"context"

	"github.com/system3-dev/system3/internal/ipc"
)

// Fallback is what a Client opens when no daemon serves the state dir.
type Fallback int

const (
	// RunMonitors starts monitors in this process, which then serve the
	// state dir's socket.
	RunMonitors Fallback = iota
	// PartsOnly opens the learning store and the coach alone, for a
	// command that uses nothing else: sessions, wakes and actions answer
	// that no monitors run.
	PartsOnly
)

// Client opens the one client of this state dir's service (ipc.Failover),
// for every command, the dashboard and `system3 mcp`: the daemon's service
// over its socket when one runs, else what fallback says. When the daemon
// goes, the client follows a daemon that answers on the socket within
// dashboard.takeover_after (default ipc.DefaultGrace), else opens the
// service anew (with RunMonitors, taking the state dir over). Close it
// once done (Release).
func (a *App) Client(ctx context.Context, fallback Fallback) (*ipc.Failover, error) {
	open := a.openService
	if fallback == PartsOnly {
		open = a.openParts
	}
	f := &ipc.Failover{Open: open, Socket: a.SocketPath(), Grace: a.Settings.File.Dashboard.TakeoverAfter, Logger: a.Log,
		Own: func() string {
			what := "this process now monitors the state dir itself"
			if a.Dashboard {
				what = "this dashboard now monitors the state dir itself"
			}
			if err := a.socketErr; err != nil {
				what += " (" + SocketWarning(err) + ")"
			}
			return what
		}}
	if err := f.Connect(ctx); err != nil {
		return nil, err
	}
	return f, nil
}
