package ipc

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/audit"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/tasks"
	"github.com/system3-dev/system3/wake"
)

// Failover is a monitor.Service that uses the service Open returns: the
// monitors of the system3 that serves a state dir (a Client), or a
// process's own. When the daemon it uses goes away (the dashboard that ran
// the monitors is closed), it opens the service again, once per failure,
// so a client that launched system3 once keeps working. Reads are run
// again on the new service; actions only when the old one could not be
// reached at all, since a lost connection may have lost the reply of an
// action that happened.
type Failover struct {
	// Open opens the service and returns what closes it.
	Open func(ctx context.Context) (monitor.Service, func() error, error)
	// Logger says when the service is opened again; nil discards.
	Logger *slog.Logger

	mu      sync.Mutex
	svc     monitor.Service
	closeFn func() error
}

var _ monitor.Service = (*Failover)(nil)

// Connect opens the service the first time.
func (f *Failover) Connect(ctx context.Context) error {
	svc, closeFn, err := f.Open(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.svc, f.closeFn = svc, closeFn
	f.mu.Unlock()
	return nil
}

func (f *Failover) current() monitor.Service {
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
func (f *Failover) reopen(ctx context.Context, failed monitor.Service) (monitor.Service, error) {
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

// do runs call on the service, once more on a reopened one if the daemon
// went away.
func do[T any](f *Failover, ctx context.Context, call func(monitor.Service) (T, error)) (T, error) {
	return retrying(f, ctx, DaemonGone, call)
}

// doOnce runs an action; when the daemon is found gone before the action
// could be sent (no connection at all), it reopens and sends it there.
func doOnce[T any](f *Failover, ctx context.Context, call func(monitor.Service) (T, error)) (T, error) {
	return retrying(f, ctx, func(err error) bool { return errors.Is(err, ErrNoDaemon) }, call)
}

// retrying runs call, and runs it again on a reopened service when its
// error passes again.
func retrying[T any](f *Failover, ctx context.Context, again func(error) bool, call func(monitor.Service) (T, error)) (T, error) {
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

func (f *Failover) Snapshot(ctx context.Context) (monitor.Snapshot, error) {
	return do(f, ctx, func(s monitor.Service) (monitor.Snapshot, error) { return s.Snapshot(ctx) })
}

func (f *Failover) Watch(ctx context.Context) (<-chan monitor.Update, error) {
	return do(f, ctx, func(s monitor.Service) (<-chan monitor.Update, error) { return s.Watch(ctx) })
}

func (f *Failover) SubscribeWakes(ctx context.Context, fl wake.Filter) (<-chan wake.Message, error) {
	return do(f, ctx, func(s monitor.Service) (<-chan wake.Message, error) { return s.SubscribeWakes(ctx, fl) })
}

func (f *Failover) Hook(ctx context.Context, ev hooks.Event) error {
	_, err := do(f, ctx, func(s monitor.Service) (struct{}, error) { return struct{}{}, s.Hook(ctx, ev) })
	return err
}

func (f *Failover) Wakes(ctx context.Context, fl wake.Filter) ([]wake.Event, error) {
	return do(f, ctx, func(s monitor.Service) ([]wake.Event, error) { return s.Wakes(ctx, fl) })
}

func (f *Failover) WaitWake(ctx context.Context, fl wake.Filter) (wake.Event, error) {
	return do(f, ctx, func(s monitor.Service) (wake.Event, error) { return s.WaitWake(ctx, fl) })
}

func (f *Failover) Ack(ctx context.Context, id, by string) (wake.Event, error) {
	return do(f, ctx, func(s monitor.Service) (wake.Event, error) { return s.Ack(ctx, id, by) })
}

func (f *Failover) AckAll(ctx context.Context, by string) ([]wake.Event, error) {
	return do(f, ctx, func(s monitor.Service) ([]wake.Event, error) { return s.AckAll(ctx, by) })
}

func (f *Failover) Preview(ctx context.Context, req monitor.PreviewRequest) (monitor.Preview, error) {
	return do(f, ctx, func(s monitor.Service) (monitor.Preview, error) { return s.Preview(ctx, req) })
}

func (f *Failover) TaskLists(ctx context.Context, id string) ([]tasks.ListDoc, error) {
	return do(f, ctx, func(s monitor.Service) ([]tasks.ListDoc, error) { return s.TaskLists(ctx, id) })
}

func (f *Failover) Task(ctx context.Context, req monitor.TaskRequest) (tasks.TaskDoc, error) {
	return do(f, ctx, func(s monitor.Service) (tasks.TaskDoc, error) { return s.Task(ctx, req) })
}

// The actions are not run again: a lost connection may have lost the
// reply of an action that happened.

func (f *Failover) Inject(ctx context.Context, req monitor.InjectRequest) (monitor.ActionResult, error) {
	return doOnce(f, ctx, func(s monitor.Service) (monitor.ActionResult, error) { return s.Inject(ctx, req) })
}

func (f *Failover) Answer(ctx context.Context, req monitor.AnswerRequest) (monitor.ActionResult, error) {
	return doOnce(f, ctx, func(s monitor.Service) (monitor.ActionResult, error) { return s.Answer(ctx, req) })
}

func (f *Failover) Interrupt(ctx context.Context, req monitor.InterruptRequest) (monitor.ActionResult, error) {
	return doOnce(f, ctx, func(s monitor.Service) (monitor.ActionResult, error) { return s.Interrupt(ctx, req) })
}

func (f *Failover) SendKeys(ctx context.Context, req monitor.KeysRequest) (monitor.ActionResult, error) {
	return doOnce(f, ctx, func(s monitor.Service) (monitor.ActionResult, error) { return s.SendKeys(ctx, req) })
}

// Link is idempotent: the same link made twice is one link.
func (f *Failover) Link(ctx context.Context, req monitor.LinkRequest) (monitor.Session, error) {
	return do(f, ctx, func(s monitor.Service) (monitor.Session, error) { return s.Link(ctx, req) })
}

// Allow asks the policy of the process that runs the monitors; an action
// that follows goes there too, so it is run again like a read.
func (f *Failover) Allow(ctx context.Context, req monitor.AllowRequest) error {
	_, err := do(f, ctx, func(s monitor.Service) (struct{}, error) { return struct{}{}, s.Allow(ctx, req) })
	return err
}

func (f *Failover) Audit(ctx context.Context, e audit.Entry) error {
	_, err := do(f, ctx, func(s monitor.Service) (struct{}, error) { return struct{}{}, s.Audit(ctx, e) })
	return err
}
