package core

import (
	"context"

	"github.com/system3-dev/system3/internal/ipc"
)

// Client opens the one client of this state dir's service (ipc.Failover),
// for the dashboard and `system3 mcp`: the daemon's service over its
// socket when one runs, else monitors of this process (OpenService). When
// the daemon goes, the client follows a daemon that answers on the socket
// within dashboard.takeover_after (default ipc.DefaultGrace), else takes
// the state dir over. Close it once done.
func (a *App) Client(ctx context.Context) (*ipc.Failover, error) {
	f := &ipc.Failover{Open: a.OpenService, Socket: a.SocketPath(), Grace: a.Settings.File.Dashboard.TakeoverAfter, Logger: a.Log,
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
