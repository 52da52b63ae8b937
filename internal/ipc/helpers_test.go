package ipc

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeService is the shared fake, its wakes timed by a ticking clock.
type fakeService = monitortest.Service

var testEpoch = time.Date(2025, 11, 21, 9, 0, 0, 0, time.UTC)

func newFake(t testing.TB) *fakeService {
	t.Helper()
	return monitortest.NewService(t, monitortest.Ticking(testEpoch))
}

type testServer struct {
	*Server
	path string
	stop func() // stops the server and checks Run's result
}

// serve runs a server for svc on a fresh socket until the test ends; opts
// adjust it before it starts.
func serve(t testing.TB, svc api.Service, opts ...func(*Server)) *testServer {
	t.Helper()
	path := filepath.Join(testkit.ShortDir(t), SocketFile)
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	fs, ok := svc.(facade.Service)
	if !ok {
		fs = backend.New(svc, backend.Parts{})
	}
	srv := NewServer(ln, fs, nil)
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
