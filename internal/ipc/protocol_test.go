package ipc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// rawConn talks the protocol by hand.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

func rawDial(t *testing.T, path string) *rawConn {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := &rawConn{t: t, conn: conn, br: bufio.NewReader(conn)}
	var h hello
	if err := json.Unmarshal(r.line(), &h); err != nil || h.Hello != "system3" || h.V != Version {
		t.Fatalf("hello = %+v, %v", h, err)
	}
	return r
}

func (r *rawConn) line() []byte {
	r.t.Helper()
	line, err := readLine(r.br, maxReplyLine)
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	return line
}

func (r *rawConn) reply() replyIn {
	r.t.Helper()
	var rep replyIn
	if err := json.Unmarshal(r.line(), &rep); err != nil {
		r.t.Fatal(err)
	}
	return rep
}

// eof checks that the server closed the connection.
func (r *rawConn) eof() {
	r.t.Helper()
	if b, err := r.br.ReadByte(); err == nil {
		r.t.Fatalf("read %q after the reply, want the connection closed", b)
	}
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name     string
		send     string
		wantCode string
		wantMsg  string
	}{
		{"garbage", "GET / HTTP/1.1\n", codeBadRequest, "not one JSON object"},
		{"not an object", "[1,2]\n", codeBadRequest, "not one JSON object"},
		{"no version", `{"method":"ping"}` + "\n", codeBadRequest, `no protocol version`},
		{"wrong version", `{"v":99,"method":"ping"}` + "\n", codeVersion, "client speaks v99"},
		{"wrong version, other shape", `{"v":9,"method":{"name":"ping"}}` + "\n", codeVersion, "speaks protocol v2"},
		{"no method", `{"v":2}` + "\n", codeBadRequest, `no "method"`},
		{"unknown method", `{"v":2,"method":"shutdown"}` + "\n", codeBadRequest, `unknown method "shutdown"`},
		{"null", "null\n", codeBadRequest, "not one JSON object"},
		{"version not a number", `{"v":"1","method":"ping"}` + "\n", codeBadRequest, `("v") "1" is not an integer`},
		{"bad field type", `{"v":2,"method":"ack","id":7}` + "\n", codeBadRequest, "malformed request"},
		{"trailing data", `{"v":2,"method":"ping"} {}` + "\n", codeBadRequest, "not one JSON object"},
		{"oversized", strings.Repeat("x", 2*MaxRequestLine), codeBadRequest, "too long"},
	}
	f := newFake(t)
	srv := serve(t, f)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawDial(t, srv.path)
			// The server stops reading an oversized line, so write it
			// from a goroutine that may fail.
			written := make(chan struct{})
			go func() {
				defer close(written)
				r.conn.Write([]byte(tt.send))
			}()
			rep := r.reply()
			if rep.Error == nil || rep.Error.Code != tt.wantCode || !strings.Contains(rep.Error.Message, tt.wantMsg) {
				t.Fatalf("reply %+v, want %s containing %q", rep.Error, tt.wantCode, tt.wantMsg)
			}
			r.eof()
			<-written
		})
	}
	// The server keeps serving.
	if _, err := dial(t, srv.path).Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "every connection to be freed", func() bool { return srv.active.Load() == 0 })
}

func TestRequestTimeout(t *testing.T) {
	srv := serve(t, newFake(t), func(s *Server) { s.requestTimeout = 50 * time.Millisecond })
	r := rawDial(t, srv.path)
	r.conn.Write([]byte(`{"v":2,`)) // and then nothing
	rep := r.reply()
	if rep.Error == nil || !strings.Contains(rep.Error.Message, "no complete request line") {
		t.Fatalf("reply %+v", rep)
	}
	r.eof()
}

func TestProbeIsQuiet(t *testing.T) {
	srv := serve(t, newFake(t))
	conn, err := net.Dial("unix", srv.path)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	testkit.WaitFor(t, 5*time.Second, "the probe's connection to be freed", func() bool { return srv.active.Load() == 0 })
	if _, err := dial(t, srv.path).Wakes(context.Background(), api.WakeFilter{}); err != nil {
		t.Fatal(err)
	}
}

func TestRawCloseMidWait(t *testing.T) {
	f := newFake(t)
	srv := serve(t, f)
	r := rawDial(t, srv.path)
	r.conn.Write([]byte(`{"v":2,"method":"wait_wake","filter":{"reasons":["summary"]}}` + "\n"))
	testkit.WaitFor(t, 5*time.Second, "the wait to reach the service", func() bool { return f.InFlight() == 1 })
	r.conn.Close()
	testkit.WaitFor(t, 5*time.Second, "the server to free the wait", func() bool { return f.InFlight() == 0 && srv.active.Load() == 0 })
}

// fakePeer answers every connection on a fresh socket with greeting.
func fakePeer(t *testing.T, greeting string) string {
	t.Helper()
	path := filepath.Join(testkit.ShortDir(t), SocketFile)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte(greeting))
			bufio.NewReader(conn).ReadString('\n')
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return path
}

func TestClientChecksServer(t *testing.T) {
	tests := []struct {
		name     string
		greeting string
		wantIs   error
		wantMsg  string
	}{
		{"newer server", `{"hello":"system3","v":9,"pid":42}` + "\n", ErrVersion, "(pid 42)"},
		{"not system3", "SSH-2.0-OpenSSH_9.6\r\n", nil, "does not answer like a system3 daemon"},
		{"closes at once", "", ErrConnLost, "closed the connection"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Dial(context.Background(), fakePeer(t, tt.greeting))
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Fatalf("Dial = %v, want %v containing %q", err, tt.wantIs, tt.wantMsg)
			}
			if errors.Is(err, ErrNoDaemon) {
				t.Errorf("%v matches ErrNoDaemon: the CLI would start monitors beside a live server", err)
			}
		})
	}
}

func TestErrorMapping(t *testing.T) {
	for _, s := range sentinels {
		in := errors.Join(errors.New("context"), s.err)
		got := toWireError(in).err()
		if !errors.Is(got, s.err) || got.Error() != in.Error() {
			t.Errorf("%v crossed as %v", in, got)
		}
	}
	if err := toWireError(errors.New("boom")).err(); err.Error() != "boom" || errors.Unwrap(err) != nil {
		t.Errorf("plain error crossed as %#v", err)
	}
}

func TestReadLine(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"abc\nrest", "abc", nil},
		{"\n", "", nil},
		{"12345\n", "12345", nil},
		{"123456\n", "", errLineTooLong},
		{"1234567", "", errLineTooLong},
		{"abc", "", io.ErrUnexpectedEOF},
		{"", "", io.EOF},
	}
	for _, tt := range tests {
		got, err := readLine(bufio.NewReaderSize(bytes.NewReader([]byte(tt.in)), 16), 5)
		if string(got) != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("readLine(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	// Lines longer than the reader's buffer are put together.
	long := strings.Repeat("y", 100)
	got, err := readLine(bufio.NewReaderSize(strings.NewReader(long+"\n"), 16), 100)
	if string(got) != long || err != nil {
		t.Errorf("long line: %d bytes, %v", len(got), err)
	}
}
