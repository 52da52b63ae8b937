package ipc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
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

// A daemon older than the client, which does not know a method, is said
// to be so, and the method's part is unavailable, not failing.
func TestOlderDaemonSaysSo(t *testing.T) {
	c := NewClient("old", func(ctx context.Context) (io.ReadWriteCloser, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			// A pipe has no buffer: the client writes its request first.
			br := bufio.NewReader(server)
			line, _ := br.ReadString('\n')
			fmt.Fprintf(server, "{\"hello\":\"system3\",\"v\":%d,\"pid\":4242}\n", Version)
			var req request
			json.Unmarshal([]byte(line), &req)
			fmt.Fprintf(server, "{\"error\":{\"code\":\"bad_request\",\"message\":%q}}\n", fmt.Sprintf("unknown method %q", req.Method))
		}()
		return client, nil
	})
	defer c.Close()
	_, err := c.Features(context.Background())
	if !errors.Is(err, facade.ErrUnavailable) || !strings.Contains(err.Error(), "pid 4242") || !strings.Contains(err.Error(), `no "features"`) {
		t.Fatalf("features on an older daemon: %v", err)
	}
}
