// Package monitortest provides a fake api.Service for unit tests of the
// code built on the service (the CLI, the socket layer, the dashboard):
// real wake handling over an in-memory store, and a registry the test sets
// and changes by hand.
package monitortest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/wake"
)

// watchBuffer is each Watch channel's buffer; Publish drops updates for a
// watcher whose buffer is full rather than block the test.
const watchBuffer = 64

// Service is a api.Service for tests. Its wakes live in Store, a real
// in-memory wake store, so raise, ack, wait and subscribe behave as in
// production.
type Service struct {
	Store *wake.Store

	inflight atomic.Int64
	mu       sync.Mutex
	snap     api.Snapshot
	errs     map[string]error // method name → error to return
	reads    map[string]int   // method name → calls
	watchers map[chan api.Update]struct{}
	screens  map[*screenWatch]struct{} // WatchPreview's streams

	calls      []Call
	audits     []api.AuditEntry
	hooks      []api.HookEvent
	previews   map[string][]string
	lists      []api.TaskListDoc
	unverified string
	policy     *api.Policy
	allows     []api.AllowRequest
	linked     func(context.Context, api.LinkRequest, api.Session)
}

var _ api.Service = (*Service)(nil)

// NewService returns a fake service whose store uses clock (nil: time.Now).
// The store is closed when the test ends.
func NewService(t testing.TB, clock func() time.Time) *Service {
	t.Helper()
	st, _, err := wake.Open(wake.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &Service{Store: st, errs: map[string]error{}, reads: map[string]int{}, watchers: map[chan api.Update]struct{}{}, screens: map[*screenWatch]struct{}{}}
}

// Ticking returns a clock that starts at start and advances one second per
// reading, so wakes get distinct, predictable times.
func Ticking(start time.Time) func() time.Time {
	var mu sync.Mutex
	now := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
}

// Fail makes method ("snapshot", "watch", "wakes", "wait_wake",
// "subscribe_wakes", "ack", "ack_all", "inject", "keys", "answer",
// "interrupt", "preview", "watch_preview", "task_lists", "audit", "hook",
// "link") return err; nil restores it. Ack fails after acknowledging, as
// a failing journal does. A failing "preview" also makes the screens
// WatchPreview sends carry err.
func (f *Service) Fail(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[method] = err
}

func (f *Service) err(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads[method]++
	return f.errs[method]
}

// Reads counts the calls of method (a name as Fail takes it) so far.
func (f *Service) Reads(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[method]
}

// InFlight counts calls that are waiting (WaitWake, and Watch and
// SubscribeWakes until their ctx ends), so tests can see them freed.
func (f *Service) InFlight() int64 { return f.inflight.Load() }

// SetSnapshot sets what Snapshot returns.
func (f *Service) SetSnapshot(s api.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap = s
}

// Raise raises a wake in the store, failing the test on error.
func (f *Service) Raise(t testing.TB, ev api.Wake) api.Wake {
	t.Helper()
	got, _, err := f.Store.Raise(ev)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Publish sends an update to every Watch channel.
func (f *Service) Publish(u api.Update) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.watchers {
		select {
		case ch <- u:
		default:
		}
	}
}

// EndWatches closes every Watch and WatchPreview channel, as a service
// that stops does.
func (f *Service) EndWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.watchers {
		delete(f.watchers, ch)
		close(ch)
	}
	for w := range f.screens {
		delete(f.screens, w)
		close(w.end)
	}
}

func (f *Service) Snapshot(ctx context.Context) (api.Snapshot, error) {
	if err := f.err("snapshot"); err != nil {
		return api.Snapshot{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap, nil
}

func (f *Service) Watch(ctx context.Context) (<-chan api.Update, error) {
	if err := f.err("watch"); err != nil {
		return nil, err
	}
	ch := make(chan api.Update, watchBuffer)
	f.mu.Lock()
	f.watchers[ch] = struct{}{}
	f.mu.Unlock()
	f.inflight.Add(1)
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		if _, ok := f.watchers[ch]; ok {
			delete(f.watchers, ch)
			close(ch)
		}
		f.mu.Unlock()
		f.inflight.Add(-1)
	})
	return ch, nil
}

func (f *Service) Wakes(ctx context.Context, fl api.WakeFilter) ([]api.Wake, error) {
	if err := f.err("wakes"); err != nil {
		return nil, err
	}
	return f.Store.List(fl)
}

func (f *Service) WaitWake(ctx context.Context, fl api.WakeFilter) (api.Wake, error) {
	if err := f.err("wait_wake"); err != nil {
		return api.Wake{}, err
	}
	f.inflight.Add(1)
	defer f.inflight.Add(-1)
	return f.Store.Wait(ctx, fl)
}

func (f *Service) SubscribeWakes(ctx context.Context, fl api.WakeFilter) (<-chan api.WakeMessage, error) {
	if err := f.err("subscribe_wakes"); err != nil {
		return nil, err
	}
	sub, err := f.Store.Subscribe(ctx, fl)
	if err != nil {
		return nil, err
	}
	f.inflight.Add(1)
	context.AfterFunc(ctx, func() { f.inflight.Add(-1) })
	return sub.C, nil
}

func (f *Service) Ack(ctx context.Context, id, by string) (api.Wake, error) {
	f.mu.Lock()
	p := f.policy
	f.mu.Unlock()
	if err := p.CheckWrite(by, "acknowledge wakes"); err != nil {
		return api.Wake{}, err
	}
	ev, err := f.Store.Ack(id, by)
	if err == nil {
		err = f.err("ack")
	}
	return ev, err
}

func (f *Service) AckAll(ctx context.Context, by string) ([]api.Wake, error) {
	if err := f.err("ack_all"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	p := f.policy
	f.mu.Unlock()
	if err := p.CheckWrite(by, "acknowledge wakes"); err != nil {
		return nil, err
	}
	return f.Store.AckAll(by)
}
