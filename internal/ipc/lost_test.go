package ipc

import (
	"context"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// Lost tells a client's owner that a stream ended under it (the daemon
// stopped) or could not reach the daemon, and says nothing when a stream
// ends because its caller left.
func TestClientLostWhenTheDaemonGoes(t *testing.T) {
	ts := serve(t, newFake(t))
	c := dial(t, ts.path)
	silent := func(what string) {
		t.Helper()
		select {
		case <-c.Lost():
			t.Fatalf("%s: Lost received", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
	lost := func(what string) {
		t.Helper()
		select {
		case <-c.Lost():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Lost never received", what)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := c.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range ch {
	}
	silent("a stream its caller ended")

	ch, err = c.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ts.stop()
	for range ch {
	}
	lost("the daemon stopped")
	if _, err := c.SubscribeWakes(context.Background(), api.WakeFilter{}); err == nil {
		t.Fatal("a stream opened on a stopped daemon")
	}
	lost("a stream that could not be opened")
}
