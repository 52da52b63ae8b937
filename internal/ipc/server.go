package ipc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// Listen creates the socket at path, usable by this user only. A socket file
// left by a process that died is replaced; one a live process answers on is
// never taken (ErrInUse). Call it while holding the state dir's lock
// ([wake.AcquireLock]): the lock decides who serves, the socket only
// carries the calls.
func Listen(path string) (net.Listener, error) {
	if err := checkPathLen(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if errors.Is(err, syscall.EADDRINUSE) {
		if err := removeStale(path); err != nil {
			return nil, err
		}
		ln, err = net.Listen("unix", path)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The socket is created with the umask's mode. The state dir is 0700, so
	// nobody else can reach it in the moment before the chmod.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict %s to this user: %w", path, err)
	}
	return ln, nil
}

func checkPathLen(path string) error {
	if len(path) > maxPathLen {
		return fmt.Errorf("the socket path %s is %d bytes, more than the %d a Unix socket allows; use a shorter --state-dir", path, len(path), maxPathLen)
	}
	return nil
}

// removeStale removes the socket at path if nothing answers on it.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed meanwhile
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; move it away, or use another --state-dir", path)
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		conn.Close()
		return fmt.Errorf("%w: another process is serving on %s; stop it, or use another --state-dir", ErrInUse, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("cannot tell whether %s is still in use: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the stale socket %s: %w", path, err)
	}
	return nil
}

// Server serves a api.Service on a listener, one call per connection.
type Server struct {
	ln  net.Listener
	svc facade.Service
	log *slog.Logger

	// Hosts, when set before Run, answers the hosts method: what this
	// daemon knows of the other hosts it follows, as a JSON value.
	Hosts func(ctx context.Context) (any, error)

	requestTimeout time.Duration // tests shorten it
	maxConns       int64         // tests lower it
	active         atomic.Int64  // connections being served
}

// maxConns bounds the connections served at once. Watchers (dashboards,
// MCP proxies) hold one each for as long as they run; a client that opens
// connections in a loop gets a clear "busy" error instead of exhausting the
// daemon's memory or descriptors.
const maxConns = 512

// NewServer returns a server for svc on ln. Run takes ln over and closes it.
// A nil logger discards.
func NewServer(ln net.Listener, svc facade.Service, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{ln: ln, svc: svc, log: log, requestTimeout: requestTimeout, maxConns: maxConns}
}

// Run accepts connections until ctx ends, then closes the listener (which
// removes the socket file), ends every call in progress and returns once
// their goroutines have. It returns nil when stopped by ctx.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	defer s.ln.Close()
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()

	backoff := api.Backoff{First: 5 * time.Millisecond, Max: time.Second}
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !temporary(err) {
				return fmt.Errorf("accept on %s: %w", s.ln.Addr(), err)
			}
			// Out of descriptors, say: back off as net/http does, and
			// say so once per episode.
			if backoff.Failed() == 0 {
				s.log.Warn("ipc accept failing; retrying", "err", err)
			}
			if !backoff.Wait(ctx) {
				return nil
			}
			continue
		}
		backoff.Reset()
		peer, err := checkPeer(conn)
		if err != nil {
			s.log.Warn("ipc connection refused", "err", err)
			conn.Close()
			continue
		}
		if s.active.Add(1) > s.maxConns {
			s.active.Add(-1)
			wg.Go(func() { s.refuseBusy(conn) })
			continue
		}
		wg.Go(func() {
			defer s.active.Add(-1)
			s.serveConn(ctx, conn, peer)
		})
	}
}

// refuseBusy tells a client over the connection limit why it is refused.
func (s *Server) refuseBusy(conn net.Conn) {
	defer conn.Close()
	s.log.Warn("ipc connection limit reached; refusing a connection", "limit", s.maxConns)
	w := &connWriter{conn: conn}
	if err := w.write(hello{Hello: helloName, V: Version, PID: os.Getpid()}, writeTimeout); err != nil {
		return
	}
	// Take the request first, so the client reads the answer rather than
	// a reset connection.
	conn.SetReadDeadline(time.Now().Add(time.Second))
	readLine(bufio.NewReader(conn), MaxRequestLine)
	w.write(reply{Error: &wireError{Code: codeBusy, Message: fmt.Sprintf(
		"the system3 daemon (pid %d) already serves %d connections; close some dashboards or MCP proxies, or look for a client stuck reconnecting", os.Getpid(), s.maxConns)}}, writeTimeout)
}

func temporary(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// serveConn serves the one call of conn. The call's context ends when the
// server stops or the client closes its end, whichever comes first.
func (s *Server) serveConn(ctx context.Context, conn net.Conn, peer Peer) {
	ctx, cancel := context.WithCancel(ctx)
	var watcher sync.WaitGroup
	defer watcher.Wait()
	defer conn.Close()
	defer cancel()
	// Closing unblocks any read or write in progress when the server stops.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	w := &connWriter{conn: conn}
	if err := w.write(hello{Hello: helloName, V: Version, PID: os.Getpid()}, writeTimeout); err != nil {
		return
	}
	br := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(s.requestTimeout))
	req, err := readRequest(br)
	if err != nil {
		var e *Error
		switch {
		case errors.As(err, &e):
			s.log.Warn("ipc bad request", "code", e.Code, "err", e.Message)
			w.write(reply{Error: toWireError(err)}, writeTimeout)
		case errors.Is(err, io.EOF):
			// A probe (Listen checking for a live server) or a client
			// that gave up: nothing to answer.
		default:
			s.log.Debug("ipc read request", "err", err)
			w.write(reply{Error: &wireError{Code: codeBadRequest, Message: "no complete request line within " + s.requestTimeout.String()}}, writeTimeout)
		}
		return
	}
	conn.SetReadDeadline(time.Time{})

	// One call per connection, so the client sends nothing more: any read
	// returning means it closed (or broke the protocol), and the call ends.
	watcher.Go(func() {
		br.ReadByte()
		cancel()
	})

	start := time.Now()
	err = s.dispatch(ctx, w, req, peer)
	s.log.Debug("ipc call", "method", req.Method, "took", time.Since(start), "err", err)
}

// readRequest reads the request line and checks it. Problems with the
// request are *Error; io.EOF means the peer sent nothing and closed.
func readRequest(br *bufio.Reader) (request, error) {
	line, err := readLine(br, MaxRequestLine)
	if errors.Is(err, errLineTooLong) {
		return request{}, &Error{Code: codeBadRequest, Message: "request " + err.Error()}
	}
	if err != nil {
		return request{}, err
	}
	return decodeRequest(line)
}

// decodeRequest checks the version before the rest, so a client of another
// version is told so even if its request no longer decodes.
func decodeRequest(line []byte) (request, error) {
	bad := func(format string, args ...any) (request, error) {
		return request{}, &Error{Code: codeBadRequest, Message: fmt.Sprintf(format, args...)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil || fields == nil {
		return bad("request is not one JSON object")
	}
	raw, ok := fields["v"]
	if !ok {
		return bad(`request has no protocol version ("v")`)
	}
	var v int
	if err := json.Unmarshal(raw, &v); err != nil {
		return bad(`protocol version ("v") %s is not an integer`, raw)
	}
	if v != Version {
		return request{}, &Error{Code: codeVersion, Message: fmt.Sprintf(
			"this system3 daemon (pid %d) speaks protocol v%d but the client speaks v%d; run the same system3 version for both (restart the daemon after an upgrade)",
			os.Getpid(), Version, v)}
	}
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return bad("malformed request: %v", err)
	}
	req.V = v // "v" exactly, even if a "V" came after it
	switch m := methods[req.Method]; {
	case req.Method == methodPing || req.Method == methodHosts:
		return req, nil
	case m != nil:
		if m.body && len(req.Body) == 0 {
			return bad("method %q needs a request body", req.Method)
		}
		return req, nil
	case req.Method == "":
		return bad(`request has no "method"`)
	default:
		return bad("unknown method %q", req.Method)
	}
}

// dispatch runs one call and writes its reply. The error is the service's,
// for the log. Every origin the service records is derived from peer: what
// the client put in a request's origin is kept only as its claim.
func (s *Server) dispatch(ctx context.Context, w *connWriter, req request, peer Peer) error {
	switch req.Method {
	case methodPing:
		return reply1[any](ctx, w, struct{}{}, nil)
	case methodHosts:
		if s.Hosts == nil {
			return reply1[any](ctx, w, nil, fmt.Errorf("%w: this daemon follows no other hosts (its config has no hosts: section)", api.ErrBadRequest))
		}
		v, err := s.Hosts(ctx)
		return reply1(ctx, w, v, err)
	}
	m := methods[req.Method]
	if m == nil {
		return fmt.Errorf("unknown method %q", req.Method) // decodeRequest lets none through
	}
	args, err := m.decode(req)
	if err == nil && m.peer != nil {
		args, err = m.peer(args, peer)
	}
	if err != nil {
		return reply1[any](ctx, w, nil, err)
	}
	if m.withProgress != nil {
		// Each step as a line before the reply; a client that left only
		// ends the writes, and the call ends with its context.
		args = m.withProgress(args, func(step, message string) {
			w.write(reply{Progress: &wireProgress{Step: step, Message: message}}, writeTimeout)
		})
	}
	v, err := m.call(ctx, s.svc, args)
	if m.kind == stream {
		return m.serve(ctx, w, v, err)
	}
	return reply1(ctx, w, v, err)
}

// relay relays ch until ctx ends or the service closes ch. Item writes have
// no deadline: a client that reads slowly only makes the service drop and
// count, as it does for any slow subscriber, and closing ends the call.
func relay[T any](ctx context.Context, w *connWriter, ch <-chan T, err error) error {
	if err != nil {
		return reply1(ctx, w, struct{}{}, err)
	}
	if err := w.write(reply{OK: true}, writeTimeout); err != nil {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case v, ok := <-ch:
			if !ok {
				return nil
			}
			if w.write(reply{Result: v}, 0) != nil {
				return nil
			}
		}
	}
}

// connWriter writes a connection's lines, one at a time (progress comes
// from the service's goroutines).
type connWriter struct {
	mu   sync.Mutex
	conn net.Conn
}

// reply1 writes a unary reply. With an error, a non-zero result is sent
// too: Ack can apply a change and still fail to journal it. An error caused
// by the call's own cancellation (the client left, the server is stopping)
// is not sent: the client did not cancel, so it should see the connection
// close rather than "context canceled".
func reply1[T any](ctx context.Context, w *connWriter, v T, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	r := reply{Error: toWireError(err)}
	if err == nil || !isZero(v) {
		r.Result = v
	}
	w.write(r, writeTimeout)
	return err
}

// isZero reports whether v is nil or its type's zero value.
func isZero(v any) bool {
	rv := reflect.ValueOf(v)
	return !rv.IsValid() || rv.IsZero()
}

// write sends one line; timeout 0 means no deadline.
func (w *connWriter) write(v any, timeout time.Duration) error {
	b, err := json.Marshal(v)
	if err != nil {
		// A value JSON cannot encode (a time past year 9999): tell the
		// client instead of leaving it waiting.
		b, _ = json.Marshal(reply{Error: &wireError{Code: codeInternal, Message: "system3 daemon could not encode its reply: " + err.Error()}})
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	w.conn.SetWriteDeadline(deadline)
	_, err = w.conn.Write(b)
	return err
}
