package ipc

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/system3-dev/system3/monitor/api"
)

// A client over connections its caller opens (as the ssh link of a remote
// host does) makes the same calls as one that dials the socket.
func TestNewClientOverOwnConnections(t *testing.T) {
	svc := newFake(t)
	srv := serve(t, svc)
	ev := svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Session: "orch-a", Pane: "%1"})
	dials := 0
	c := NewClient("host test", func(ctx context.Context) (io.ReadWriteCloser, error) {
		dials++
		var d net.Dialer
		return d.DialContext(ctx, "unix", srv.path)
	})
	defer c.Close()
	got, err := c.WaitWake(context.Background(), api.WakeFilter{})
	if err != nil || got.ID != ev.ID {
		t.Fatalf("WaitWake = %+v, %v; want wake %s", got, err, ev.ID)
	}
	// The cursor skips what was seen.
	evs, err := c.Wakes(context.Background(), api.WakeFilter{SinceSeq: got.Seq})
	if err != nil || len(evs) != 0 {
		t.Fatalf("Wakes since %d = %+v, %v; want none", got.Seq, evs, err)
	}
	if dials != 2 {
		t.Fatalf("%d connections opened for two calls; want one per call", dials)
	}
}

// A transport failure that explains itself reaches the caller as it is, not
// as "the daemon closed the connection".
func TestNewClientKeepsTransportErrors(t *testing.T) {
	why := errors.New("the host key of web1 changed")
	c := NewClient("host web1", func(ctx context.Context) (io.ReadWriteCloser, error) {
		return failingConn{err: &TransportError{Err: why}}, nil
	})
	defer c.Close()
	_, err := c.Snapshot(context.Background())
	var te *TransportError
	if !errors.As(err, &te) || !errors.Is(err, why) || err.Error() != why.Error() {
		t.Fatalf("Snapshot error = %v; want the transport's own %q", err, why)
	}
}

type failingConn struct{ err error }

func (f failingConn) Read([]byte) (int, error)    { return 0, f.err }
func (f failingConn) Write(p []byte) (int, error) { return len(p), nil }
func (f failingConn) Close() error                { return nil }
