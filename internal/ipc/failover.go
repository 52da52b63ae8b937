package ipc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/facade"
)

// Failover is the one client of a state dir's service, for every process
// that uses it (the dashboard, `system3 mcp`): the service Open returns,
// the monitors of the system3 that serves the state dir (a Client) or the
// process's own, kept working when the daemon it uses goes.
//
// When the daemon is gone (a call finds it gone, or, while Run watches, a
// stream of it ends), Failover asks the socket every 250 ms: a daemon
// that answers (the one it used, or one that started meanwhile) is
// followed, since the Client dials the socket for each call; when none
// has answered for the grace (a restarting daemon gets that long), it
// opens the service anew, which takes the state dir over when nothing
// serves it. Reads are run again on the service followed or opened;
// actions only when the old daemon could not be reached at all, since a
// lost connection may have lost the reply of an action that happened.
type Failover struct {
	forward // the service's methods, each through invoke
	// Open opens the service and returns what closes it.
	Open func(ctx context.Context) (facade.Service, func() error, error)
	// Socket is the state dir's socket, asked while the daemon is gone;
	// "": the service is opened anew at once.
	Socket string
	// Grace is how long nothing may answer on Socket before the service
	// is opened anew; 0: DefaultGrace.
	Grace time.Duration
	// Own says, for Notice, what this process does once it runs the
	// monitors itself ("this dashboard now monitors the state dir
	// itself"); nil: a sentence saying that.
	Own func() string
	// Logger says what happened to the daemon; nil discards.
	Logger *slog.Logger

	// replacing serialises takeOver.
	replacing sync.Mutex

	mu      sync.Mutex
	svc     facade.Service
	closeFn func() error
	pid     int // the daemon's, while attached to one
	notice  string
	closed  bool
}

var _ facade.Service = (*Failover)(nil)

// DefaultGrace is how long a daemon that stopped answering gets before a
// Failover opens the service anew.
const DefaultGrace = 2 * time.Second

// failoverPoll is how often a Failover asks the socket while the daemon
// is gone.
const failoverPoll = 250 * time.Millisecond

// Connect opens the service the first time; call it before any method.
func (f *Failover) Connect(ctx context.Context) error {
	f.forward = forward{f.invoke}
	svc, closeFn, err := f.Open(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.svc, f.closeFn, f.pid = svc, closeFn, pidOf(svc)
	f.mu.Unlock()
	return nil
}

// Current is the service in use: a Client while attached to a daemon.
func (f *Failover) Current() facade.Service {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.svc
}

// Notice says what the last takeover did (which daemon is followed, or
// that this process runs the monitors), for a status line; empty until
// one happened.
func (f *Failover) Notice() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.notice
}

// Close closes the service in use, if any: the client, or the monitors of
// this process.
func (f *Failover) Close() error {
	f.mu.Lock()
	closeFn := f.closeFn
	f.svc, f.closeFn, f.closed = nil, nil, true
	f.mu.Unlock()
	if closeFn == nil {
		return nil
	}
	return closeFn()
}

// Run watches the daemon while the service is one (a Client), and takes
// over when it is gone, at once rather than at the next call: the streams
// of the old service close, and their users open them again on the new
// one. It returns when ctx ends or when this process runs the monitors
// itself.
func (f *Failover) Run(ctx context.Context) error {
	for {
		c, attached := f.Current().(*Client)
		if !attached {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.Lost():
		}
		if _, err := f.takeOver(ctx, c); err != nil && ctx.Err() == nil {
			f.log().Warn("the system3 daemon is gone and the service cannot be opened again", "err", err)
		}
	}
}

func (f *Failover) log() *slog.Logger {
	if f.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return f.Logger
}

// DaemonGone reports an error that means the daemon a call used is no
// more: its connection was lost, or nothing serves the socket.
func DaemonGone(err error) bool {
	return errors.Is(err, ErrConnLost) || errors.Is(err, ErrNoDaemon)
}

// pidOf is the daemon's pid when svc is a Client, else 0.
func pidOf(svc facade.Service) int {
	if c, ok := svc.(*Client); ok {
		return c.PID()
	}
	return 0
}

// takeOver replaces failed, the service that found its daemon gone, once
// per failure: it follows a daemon that answers on the socket within the
// grace, else opens the service anew. It returns the service to use.
func (f *Failover) takeOver(ctx context.Context, failed facade.Service) (facade.Service, error) {
	f.replacing.Lock()
	defer f.replacing.Unlock()
	f.mu.Lock()
	svc, oldPID := f.svc, f.pid
	f.mu.Unlock()
	if svc != failed && svc != nil {
		return svc, nil // another call has replaced it
	}
	if f.Socket != "" {
		pid, err := f.awaitDaemon(ctx, oldPID)
		if err != nil {
			return nil, err
		}
		if pid != 0 {
			return f.follow(ctx, svc, oldPID, pid)
		}
	}
	return f.reopen(ctx, oldPID)
}

// awaitDaemon asks the socket every failoverPoll until a daemon answers
// (its pid) or none has for the grace (0).
func (f *Failover) awaitDaemon(ctx context.Context, oldPID int) (int, error) {
	grace := f.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	var goneSince time.Time
	t := time.NewTicker(failoverPoll)
	defer t.Stop()
	for {
		c, err := Dial(ctx, f.Socket)
		switch {
		case err == nil:
			pid := c.PID()
			c.Close()
			return pid, nil
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case !errors.Is(err, ErrNoDaemon):
			// Something answers, but not well (a busy daemon): not gone.
			goneSince = time.Time{}
		case goneSince.IsZero():
			goneSince = time.Now()
			f.log().Warn("the system3 daemon does not answer", "pid", oldPID, "socket", f.Socket)
		case time.Since(goneSince) >= grace:
			return 0, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
}

// follow goes on with the daemon pid that answers the socket: the Client
// in use reaches it (it dials for each call); without one, a new Client.
func (f *Failover) follow(ctx context.Context, svc facade.Service, oldPID, pid int) (facade.Service, error) {
	if _, ok := svc.(*Client); !ok {
		return f.reopen(ctx, oldPID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if pid != oldPID {
		f.pid = pid
		f.notice = fmt.Sprintf("the system3 daemon (pid %d) is gone; now attached to system3 pid %d", oldPID, pid)
		f.log().Info("attached to a new system3 daemon", "old", oldPID, "pid", pid)
	}
	return svc, nil
}

// reopen opens the service anew in place of the one in use, and closes
// that one (its streams end, and their users open them again).
func (f *Failover) reopen(ctx context.Context, oldPID int) (facade.Service, error) {
	f.log().Info("the system3 serving this state dir went away; opening the service again", "pid", oldPID)
	svc, closeFn, err := f.Open(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.setNotice(fmt.Sprintf("the system3 daemon (pid %d) is gone and the service cannot be opened again: %v", oldPID, err))
		}
		return nil, err
	}
	pid := pidOf(svc)
	text := fmt.Sprintf("the system3 daemon (pid %d) is gone; now attached to system3 pid %d", oldPID, pid)
	if pid == 0 {
		own := "this process now monitors the state dir itself"
		if f.Own != nil {
			own = f.Own()
		}
		text = fmt.Sprintf("the system3 daemon (pid %d) is gone; %s", oldPID, own)
	}
	f.log().Info("took over", "what", text)
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		if err := closeFn(); err != nil {
			f.log().Warn("stop the service opened after Close", "err", err)
		}
		return nil, errors.New("the service is closed")
	}
	oldClose := f.closeFn
	f.svc, f.closeFn, f.pid, f.notice = svc, closeFn, pid, text
	f.mu.Unlock()
	if oldClose != nil {
		if err := oldClose(); err != nil {
			f.log().Warn("close the old service", "err", err)
		}
	}
	return svc, nil
}

func (f *Failover) setNotice(s string) {
	f.mu.Lock()
	f.notice = s
	f.mu.Unlock()
}

// invoke runs m on the service in use. A read (or a change that is the
// same made twice) runs once more on the service that replaced it when
// the daemon went away; an action only when it found the daemon gone
// before it could be sent (no connection at all), since a lost connection
// may have lost the reply of an action that happened.
func (f *Failover) invoke(ctx context.Context, m *Method, args any) (any, error) {
	again := DaemonGone
	if m.sentAtMostOnce() {
		again = func(err error) bool { return errors.Is(err, ErrNoDaemon) }
	}
	return retrying(f, ctx, again, func(s facade.Service) (any, error) { return m.call(ctx, s, args) })
}

// retrying runs call, and runs it again on the service that replaced the
// one in use when its error passes again.
func retrying[T any](f *Failover, ctx context.Context, again func(error) bool, call func(facade.Service) (T, error)) (T, error) {
	svc := f.Current()
	if svc == nil {
		var err error
		if svc, err = f.takeOver(ctx, nil); err != nil {
			var zero T
			return zero, err
		}
	}
	v, err := call(svc)
	if again(err) && ctx.Err() == nil {
		svc, rerr := f.takeOver(ctx, svc)
		if rerr != nil {
			return v, fmt.Errorf("%w; opening the service again failed: %w", err, rerr)
		}
		return call(svc)
	}
	return v, err
}
