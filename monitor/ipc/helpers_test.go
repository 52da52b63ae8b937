package ipc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/wake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeService is a monitor.Service over an in-memory wake store, with a
// registry the test sets and updates it publishes by hand. It counts the
// calls that wait (WaitWake, Watch, SubscribeWakes) until their ctx ends, so
// tests can see the server free them.
type fakeService struct {
	store    *wake.Store
	inflight atomic.Int64

	mu       sync.Mutex
	snap     monitor.Snapshot
	errs     map[string]error // method name → error to return
	watchers map[chan monitor.Update]struct{}
}

var testEpoch = time.Date(2025, 11, 21, 9, 0, 0, 0, time.UTC)

func newFake(t testing.TB) *fakeService {
	t.Helper()
	var mu sync.Mutex
	now := testEpoch
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	st, _, err := wake.Open(wake.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &fakeService{store: st, errs: map[string]error{}, watchers: map[chan monitor.Update]struct{}{}}
}

func (f *fakeService) fail(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[method] = err
}

func (f *fakeService) err(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errs[method]
}

func (f *fakeService) setSnapshot(s monitor.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap = s
}

func (f *fakeService) raise(t testing.TB, ev wake.Event) wake.Event {
	t.Helper()
	got, _, err := f.store.Raise(ev)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (f *fakeService) Snapshot(ctx context.Context) (monitor.Snapshot, error) {
	if err := f.err("snapshot"); err != nil {
		return monitor.Snapshot{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap, nil
}

func (f *fakeService) Watch(ctx context.Context) (<-chan monitor.Update, error) {
	if err := f.err("watch"); err != nil {
		return nil, err
	}
	ch := make(chan monitor.Update, 16)
	f.mu.Lock()
	f.watchers[ch] = struct{}{}
	f.mu.Unlock()
	f.inflight.Add(1)
	context.AfterFunc(ctx, func() {
		f.endWatch(ch)
		f.inflight.Add(-1)
	})
	return ch, nil
}

func (f *fakeService) endWatch(ch chan monitor.Update) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.watchers[ch]; ok {
		delete(f.watchers, ch)
		close(ch)
	}
}

// endWatches closes every Watch channel, as a service that shuts down does.
func (f *fakeService) endWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.watchers {
		delete(f.watchers, ch)
		close(ch)
	}
}

func (f *fakeService) publish(u monitor.Update) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.watchers {
		select {
		case ch <- u:
		default:
		}
	}
}

func (f *fakeService) Wakes(ctx context.Context, fl wake.Filter) ([]wake.Event, error) {
	if err := f.err("wakes"); err != nil {
		return nil, err
	}
	return f.store.List(fl)
}

func (f *fakeService) WaitWake(ctx context.Context, fl wake.Filter) (wake.Event, error) {
	if err := f.err("wait_wake"); err != nil {
		return wake.Event{}, err
	}
	f.inflight.Add(1)
	defer f.inflight.Add(-1)
	return f.store.Wait(ctx, fl)
}

func (f *fakeService) SubscribeWakes(ctx context.Context, fl wake.Filter) (<-chan wake.Message, error) {
	if err := f.err("subscribe_wakes"); err != nil {
		return nil, err
	}
	sub, err := f.store.Subscribe(ctx, fl)
	if err != nil {
		return nil, err
	}
	f.inflight.Add(1)
	context.AfterFunc(ctx, func() { f.inflight.Add(-1) })
	return sub.C, nil
}

func (f *fakeService) Ack(ctx context.Context, id, by string) (wake.Event, error) {
	ev, err := f.store.Ack(id, by)
	if err == nil {
		err = f.err("ack") // after the change, as a failing journal does
	}
	return ev, err
}

func (f *fakeService) AckAll(ctx context.Context, by string) ([]wake.Event, error) {
	if err := f.err("ack_all"); err != nil {
		return nil, err
	}
	return f.store.AckAll(by)
}

// shortDir is a temp dir short enough for a socket path; t.TempDir can be
// too long once the test name is in it.
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "s3i")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

type testServer struct {
	*Server
	path string
	stop func() // stops the server and checks Run's result
}

// serve runs a server for svc on a fresh socket until the test ends; opts
// adjust it before it starts.
func serve(t *testing.T, svc monitor.Service, opts ...func(*Server)) *testServer {
	t.Helper()
	path := filepath.Join(shortDir(t), SocketFile)
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ln, svc, nil)
	for _, o := range opts {
		o(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &testServer{Server: srv, path: path, stop: stop}
}

func dial(t *testing.T, path string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// recv reads one item or fails after a few seconds.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatal("channel closed early")
		}
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for an item")
	}
	panic("unreachable")
}

// closed waits for ch to close, discarding items.
func closed[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("channel not closed")
		}
	}
}
