package ipc

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/system3-dev/system3/internal/facade"
)

// Failover is a facade.Service that uses the service Open returns: the
// monitors of the system3 that serves a state dir (a Client), or a
// process's own. When the daemon it uses goes away (the dashboard that ran
// the monitors is closed), it opens the service again, once per failure,
// so a client that launched system3 once keeps working. Reads are run
// again on the new service; actions only when the old one could not be
// reached at all, since a lost connection may have lost the reply of an
// action that happened.
type Failover struct {
	forward // the service's methods, each through invoke
	// Open opens the service and returns what closes it.
	Open func(ctx context.Context) (facade.Service, func() error, error)
	// Logger says when the service is opened again; nil discards.
	Logger *slog.Logger

	mu      sync.Mutex
	svc     facade.Service
	closeFn func() error
}

var _ facade.Service = (*Failover)(nil)

// Connect opens the service the first time; call it before any method.
func (f *Failover) Connect(ctx context.Context) error {
	f.forward = forward{f.invoke}
	svc, closeFn, err := f.Open(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.svc, f.closeFn = svc, closeFn
	f.mu.Unlock()
	return nil
}

func (f *Failover) current() facade.Service {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.svc
}

// Close closes the service in use, if any.
func (f *Failover) Close() {
	f.mu.Lock()
	closeFn := f.closeFn
	f.svc, f.closeFn = nil, nil
	f.mu.Unlock()
	if closeFn != nil {
		if err := closeFn(); err != nil {
			f.log().Warn("stop the monitors", "err", err)
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

// reopen replaces a vanished daemon's service, once per failure.
func (f *Failover) reopen(ctx context.Context, failed facade.Service) (facade.Service, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.svc != failed && f.svc != nil {
		return f.svc, nil // another call has reopened it
	}
	f.log().Info("the system3 serving this state dir went away; opening the service again")
	if f.closeFn != nil {
		_ = f.closeFn()
	}
	svc, closeFn, err := f.Open(ctx)
	if err != nil {
		f.svc, f.closeFn = nil, nil
		return nil, err
	}
	f.svc, f.closeFn = svc, closeFn
	return svc, nil
}

// invoke runs m on the service in use. A read (or a change that is the
// same made twice) runs once more on a reopened service when the daemon
// went away; an action only when it found the daemon gone before it could
// be sent (no connection at all), since a lost connection may have lost
// the reply of an action that happened.
func (f *Failover) invoke(ctx context.Context, m *Method, args any) (any, error) {
	again := DaemonGone
	if m.sentAtMostOnce() {
		again = func(err error) bool { return errors.Is(err, ErrNoDaemon) }
	}
	return retrying(f, ctx, again, func(s facade.Service) (any, error) { return m.call(ctx, s, args) })
}

// retrying runs call, and runs it again on a reopened service when its
// error passes again.
func retrying[T any](f *Failover, ctx context.Context, again func(error) bool, call func(facade.Service) (T, error)) (T, error) {
	svc := f.current()
	if svc == nil {
		var err error
		if svc, err = f.reopen(ctx, nil); err != nil {
			var zero T
			return zero, err
		}
	}
	v, err := call(svc)
	if again(err) && ctx.Err() == nil {
		if svc, rerr := f.reopen(ctx, svc); rerr == nil {
			return call(svc)
		}
	}
	return v, err
}
