package main

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/system3-dev/system3/monitor/api"
	"github.com/system3-dev/system3/monitor/ipc"
	"github.com/system3-dev/system3/wake"
)

// startMonitorsHook replaces startMonitors in tests, which give it a fake
// service. It is nil in the program.
var startMonitorsHook func(a *app, ctx context.Context) (api.Service, func() error, error)

// socketPath is where the process that runs the monitors for the state dir
// serves them.
func (a *app) socketPath() string {
	return filepath.Join(a.Settings.StateDir, ipc.SocketFile)
}

// openService returns the monitors of the system3 process that runs them
// for this state dir (the dashboard or `system3 serve`), over its socket.
// When none runs, it starts monitors in this process. closeFn releases
// either; call it once the command is done.
func (a *app) openService(ctx context.Context) (svc api.Service, closeFn func() error, err error) {
	path := a.socketPath()
	// Another system3 holding the state dir's lock without answering on
	// its socket is starting up or shutting down: ask again shortly.
	for range lockRetries {
		c, dialErr := ipc.Dial(ctx, path)
		if dialErr == nil {
			a.log.Debug("using the running system3", "socket", path, "pid", c.PID())
			return c, c.Close, nil
		}
		if !errors.Is(dialErr, ipc.ErrNoDaemon) {
			return nil, nil, dialErr
		}
		a.log.Debug("no running system3; starting monitors in this process", "socket", path)
		start := a.startMonitors
		if startMonitorsHook != nil {
			start = func(ctx context.Context) (api.Service, func() error, error) { return startMonitorsHook(a, ctx) }
		}
		svc, closeFn, err = start(ctx)
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

// release calls a closeFn from openService. The command's work is done by
// then, so a failure is logged, not reported.
func (a *app) release(closeFn func() error) {
	if err := closeFn(); err != nil {
		a.log.Warn("stop the monitors", "err", err)
	}
}
