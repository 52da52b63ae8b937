package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/ipc"
)

// Failover is a Service: the dashboard uses it as one.
var _ facade.Service = (*Failover)(nil)

// How a dashboard attached to a daemon notices that the daemon is gone:
// a stream of the daemon's ends under it (its registry stream, open all
// along, ends the moment the daemon's socket closes) or cannot be opened
// (ipc.Client.Lost); then it asks the socket every failoverPoll, and once
// nothing has answered for the grace (dashboard.takeover_after, default
// failoverGrace; a restarting daemon gets that long), it takes the state
// dir over. While its streams flow it asks the socket nothing.
const (
	failoverPoll  = 250 * time.Millisecond
	FailoverGrace = 2 * time.Second
)

// failover is the dashboard's service: the daemon it attached to, until
// that daemon goes; then whatever OpenService finds (a daemon that started
// meanwhile, or monitors of its own, since the lock is free). Calls go to
// the current service; the streams of the old one close, and the dashboard
// reconnects them to the new one.
type Failover struct {
	facade.Service // each method forwarded to the current service
	a              *App

	mu      sync.Mutex
	cur     facade.Service
	closeFn func() error
	notice  string
	closed  bool
	pid     int // the daemon's, when attached
}

func NewFailover(a *App, svc facade.Service, closeFn func() error) *Failover {
	f := &Failover{a: a, cur: svc, closeFn: closeFn}
	f.Service = ipc.Forwarding(func(ctx context.Context, m *ipc.Method, args any) (any, error) {
		return m.Call(ctx, f.Current(), args)
	})
	if c, ok := svc.(*ipc.Client); ok {
		f.pid = c.PID()
	}
	return f
}

// Notice says what the last takeover did, for the dashboard's status line;
// empty until one happened.
func (f *Failover) Notice() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.notice
}

// Close stops the current service (monitors of its own, or the client).
func (f *Failover) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return f.closeFn()
}

func (f *Failover) Current() facade.Service {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

// Run watches the daemon while the dashboard is attached to one and takes
// over when it is gone. It returns when ctx ends or when this process runs
// the monitors itself.
func (f *Failover) Run(ctx context.Context) error {
	for {
		c, attached := f.Current().(*ipc.Client)
		if !attached {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.Lost():
		}
		f.check(ctx)
	}
}

// check asks the socket every failoverPoll whether a daemon serves it:
// the one attached to (a stream ended for another reason), or a new one
// (the dashboard follows it), and returns; or none for the grace, and
// this dashboard takes the state dir over.
func (f *Failover) check(ctx context.Context) {
	path := f.a.SocketPath()
	grace := f.a.Settings.File.Dashboard.TakeoverAfter
	if grace <= 0 {
		grace = FailoverGrace
	}
	var goneSince time.Time
	t := time.NewTicker(failoverPoll)
	defer t.Stop()
	for {
		c, err := ipc.Dial(ctx, path)
		if err == nil {
			pid := c.PID()
			c.Close()
			f.mu.Lock()
			if old := f.pid; pid != old {
				// Another daemon serves the socket now; the client, which
				// dials the socket for every call, already reaches it.
				f.pid = pid
				f.notice = fmt.Sprintf("the system3 daemon (pid %d) is gone; now attached to system3 pid %d", old, pid)
				f.a.Log.Info("dashboard attached to a new daemon", "old", old, "pid", pid)
			}
			f.mu.Unlock()
			return
		}
		if ctx.Err() != nil {
			return
		}
		if !errors.Is(err, ipc.ErrNoDaemon) {
			// Something answers but not well (a busy daemon): not gone.
			goneSince = time.Time{}
		} else {
			if goneSince.IsZero() {
				goneSince = time.Now()
				f.a.Log.Warn("the system3 daemon does not answer", "pid", f.daemonPID(), "socket", path)
			}
			if time.Since(goneSince) >= grace {
				f.replace(ctx, f.daemonPID())
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (f *Failover) daemonPID() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pid
}

// replace opens the state dir's service again (a running daemon's, or
// monitors of this process) in place of the one that went.
func (f *Failover) replace(ctx context.Context, oldPID int) {
	svc, closeFn, err := f.a.OpenService(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.a.Log.Warn("take over the state dir", "err", err)
			f.setNotice(fmt.Sprintf("the system3 daemon (pid %d) is gone and this dashboard cannot take over: %v", oldPID, err))
		}
		return
	}
	var text string
	pid := 0
	if c, ok := svc.(*ipc.Client); ok {
		pid = c.PID()
		text = fmt.Sprintf("the system3 daemon (pid %d) is gone; now attached to system3 pid %d", oldPID, pid)
	} else {
		text = fmt.Sprintf("the system3 daemon (pid %d) is gone; this dashboard now monitors the state dir itself", oldPID)
		if err := f.a.socketErr; err != nil {
			text += " (" + SocketWarning(err) + ")"
		}
	}
	f.a.Log.Info("dashboard took over", "what", text)
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		if err := closeFn(); err != nil {
			f.a.Log.Warn("stop the monitors", "err", err)
		}
		return
	}
	oldClose := f.closeFn
	f.cur, f.closeFn, f.notice, f.pid = svc, closeFn, text, pid
	f.mu.Unlock()
	// The old client's streams close now, and the dashboard reconnects
	// them to the new service.
	if err := oldClose(); err != nil {
		f.a.Log.Warn("close the old connection", "err", err)
	}
}

func (f *Failover) setNotice(s string) {
	f.mu.Lock()
	f.notice = s
	f.mu.Unlock()
}
