package core

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/wake"
)

// TestStartMonitors, when set, replaces the monitors StartMonitors starts:
// tests of the commands give it a fake service. It is nil in the program.
var TestStartMonitors func(a *App, ctx context.Context) (api.Service, func() error, error)

// SocketPath is where the process that runs the monitors for the state dir
// serves them.
func (a *App) SocketPath() string {
	return filepath.Join(a.Settings.StateDir, ipc.SocketFile)
}

// openService returns the one service (facade.Service) of the system3
// process that runs the monitors for this state dir (the dashboard or
// `system3 serve`), over its socket: sessions, wakes and actions, and its
// orchestrators, learning store and coach. When none runs, it starts
// monitors in this process. closeFn releases either. It is how Client
// opens the service (RunMonitors).
func (a *App) openService(ctx context.Context) (svc facade.Service, closeFn func() error, err error) {
	path := a.SocketPath()
	// Another system3 holding the state dir's lock without answering on
	// its socket is starting up or shutting down: ask again shortly.
	for range lockRetries {
		c, dialErr := ipc.Dial(ctx, path)
		if dialErr == nil {
			a.Log.Debug("using the running system3", "socket", path, "pid", c.PID())
			return c, c.Close, nil
		}
		if !errors.Is(dialErr, ipc.ErrNoDaemon) {
			return nil, nil, dialErr
		}
		a.Log.Debug("no running system3; starting monitors in this process", "socket", path)
		svc, closeFn, err = a.StartMonitors(ctx)
		if !errors.Is(err, wake.ErrLocked) {
			return svc, closeFn, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(lockRetryDelay):
		}
	}
	return nil, nil, err
}

// How long openService keeps asking while another process holds the lock.
const (
	lockRetries    = 30
	lockRetryDelay = 100 * time.Millisecond
)

// Release calls a closeFn (a Client's Close). The command's work is done by
// then, so a failure is logged, not reported.
func (a *App) Release(closeFn func() error) {
	if err := closeFn(); err != nil {
		a.Log.Warn("stop the monitors", "err", err)
	}
}

// SocketWarning says that monitors run in this process but cannot be
// shared over the state dir's socket.
func SocketWarning(err error) string {
	return fmt.Sprintf("%v; other system3 commands cannot share these monitors", err)
}
