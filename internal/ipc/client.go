package ipc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/wake"
)

// streamBuffer is how many items a stream's channel holds before the client
// stops reading the socket; past that the server's subscription buffers and,
// when full, drops and sends a resync.
const streamBuffer = 16

// Client is a api.Service served by another process. Each call is one
// connection; streams hold theirs until their ctx ends or the server goes.
type Client struct {
	forward // the service's methods, each one call over invoke
	// path names the daemon in messages: the socket's path, or what
	// NewClient was given.
	path string
	pid  int
	// dial opens one call's connection; nil dials the Unix socket at path.
	dial func(ctx context.Context) (io.ReadWriteCloser, error)

	mu     sync.Mutex
	conns  map[io.ReadWriteCloser]struct{}
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup // stream readers
	// lost is told (never blocking) when a stream's connection ended under
	// it, or one could not reach the daemon: see Lost.
	lost chan struct{}
}

var _ api.Service = (*Client)(nil)

// Dial checks that a system3 server of this protocol version answers on the
// socket at path and returns a client for it. When nothing serves the path
// (no socket, or a stale one) the error matches ErrNoDaemon; the caller may
// then run its own monitors.
func Dial(ctx context.Context, path string) (*Client, error) {
	if err := checkPathLen(path); err != nil {
		// No server can listen there either.
		return nil, fmt.Errorf("%w: %w", ErrNoDaemon, err)
	}
	c := newClient(path, nil)
	// A wedged server must not wedge the CLI that only wanted to find it.
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := c.call(hctx, request{Method: methodPing}, nil); err != nil {
		c.Close()
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("the system3 daemon on %s did not answer within %v; it may be stuck (its pid is in %s)", path, handshakeTimeout, wake.LockFile)
		}
		return nil, err
	}
	return c, nil
}

// NewClient returns a client whose calls each run over a connection dial
// opens, such as the standard input and output of `ssh HOST system3 attach
// --stdio`. where names the daemon in messages ("host web1"). Unlike Dial it
// does not check the server first: the first call does. A read or write
// error of such a connection that is a [*TransportError] is returned as it
// is, since it already says what happened.
func NewClient(where string, dial func(ctx context.Context) (io.ReadWriteCloser, error)) *Client {
	return newClient(where, dial)
}

func newClient(path string, dial func(ctx context.Context) (io.ReadWriteCloser, error)) *Client {
	c := &Client{path: path, dial: dial, conns: map[io.ReadWriteCloser]struct{}{}, done: make(chan struct{}), lost: make(chan struct{}, 1)}
	c.forward = forward{c.invoke}
	return c
}

// TransportError is a failure of the transport under a [NewClient]
// connection (the ssh link to another host), explained in one sentence.
type TransportError struct {
	Err error
}

func (e *TransportError) Error() string { return e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// Lost receives when a stream of this client ended while its caller still
// read it (its connection closed: the daemon stopped, or ended the
// stream), or a stream could not be opened because nothing serves the
// socket. A process that holds a stream open (a dashboard's registry
// updates) learns from it at once that its daemon may be gone, and need
// not ask the socket meanwhile. Signals that come while none is read are
// one.
func (c *Client) Lost() <-chan struct{} { return c.lost }

func (c *Client) signalLost() {
	select {
	case c.lost <- struct{}{}:
	default:
	}
}

// PID returns the server's process id, as it said when dialled.
func (c *Client) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// Close ends every call in progress (their streams close) and waits for the
// client's goroutines. Calls after Close fail with ErrClientClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	conns := c.conns
	c.conns = nil
	c.mu.Unlock()
	for conn := range conns {
		conn.Close()
	}
	c.wg.Wait()
	return nil
}

// invoke makes one call of the service over the socket.
func (c *Client) invoke(ctx context.Context, m *Method, args any) (any, error) {
	if m.local != nil {
		var err error
		if args, err = m.local(args); err != nil {
			v, _ := m.result(nil)
			return v, err
		}
	}
	req, err := m.encode(args)
	if err != nil {
		return nil, err
	}
	if m.kind == stream {
		v, err := m.open(c, ctx, req)
		if err != nil && ctx.Err() == nil && DaemonGone(err) {
			c.signalLost()
		}
		return v, c.olderDaemon(m, err)
	}
	var progress func(step, message string)
	if m.progressOf != nil {
		progress = m.progressOf(args)
	}
	raw, err := c.callProgress(ctx, req, progress)
	err = c.olderDaemon(m, err)
	if len(raw) == 0 {
		v, _ := m.result(nil)
		return v, err
	}
	v, derr := m.result(raw)
	if derr != nil {
		return v, fmt.Errorf("bad reply from the system3 daemon on %s: %w", c.path, derr)
	}
	return v, err
}

// olderDaemon says so when the daemon does not know m: it runs an older
// system3 (the methods of the orchestrators, the learning store and the
// coach came within v2). Such a part is unavailable until it restarts.
func (c *Client) olderDaemon(m *Method, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Code != codeBadRequest || e.Message != fmt.Sprintf("unknown method %q", m.Name) {
		return err
	}
	return fmt.Errorf("%w: the system3 daemon (pid %d) on %s is older than this system3 and has no %q: restart it (system3 serve, or its dashboard) after an upgrade",
		facade.ErrUnavailable, c.PID(), c.path, m.Name)
}

// call makes one unary call and decodes its result into out. Like the
// service, it can return a result and an error together.
func (c *Client) call(ctx context.Context, req request, out any) error {
	raw, err := c.callRaw(ctx, req)
	if out != nil && len(raw) > 0 {
		if derr := json.Unmarshal(raw, out); derr != nil {
			return fmt.Errorf("bad reply from the system3 daemon on %s: %w", c.path, derr)
		}
	}
	return err
}

// callRaw makes one unary call and returns its result undecoded, with the
// server's error.
func (c *Client) callRaw(ctx context.Context, req request) (json.RawMessage, error) {
	return c.callProgress(ctx, req, nil)
}

// callProgress is callRaw that hands the progress lines before the reply
// to progress (nil: they are read and dropped).
func (c *Client) callProgress(ctx context.Context, req request, progress func(step, message string)) (json.RawMessage, error) {
	cc, err := c.start(ctx, req, false)
	if err != nil {
		return nil, err
	}
	defer cc.close()
	for {
		r, err := cc.readReply(ctx)
		if err != nil {
			return nil, err
		}
		if p := r.Progress; p != nil && r.Result == nil && r.Error == nil {
			if progress != nil {
				progress(p.Step, p.Message)
			}
			continue
		}
		return r.Result, r.Error.err()
	}
}

// openStream starts a streaming call and relays its items to the returned
// channel from one goroutine, until ctx ends, the client closes or the
// server ends the stream.
func openStream[T any](c *Client, ctx context.Context, req request) (<-chan T, error) {
	cc, err := c.start(ctx, req, true)
	if err != nil {
		return nil, err
	}
	r, err := cc.readReply(ctx)
	if err == nil && r.Error != nil {
		err = r.Error.err()
	}
	if err == nil && !r.OK {
		err = fmt.Errorf("bad reply from the system3 daemon on %s: stream not started", c.path)
	}
	if err != nil {
		cc.close()
		c.wg.Done()
		return nil, err
	}
	out := make(chan T, streamBuffer)
	go func() {
		defer c.wg.Done()
		defer close(out)
		defer cc.close()
		for {
			line, err := readLine(cc.br, maxReplyLine)
			if err != nil {
				if ctx.Err() == nil && !c.isClosed() {
					c.signalLost()
				}
				return
			}
			var item struct {
				Result T          `json:"result"`
				Error  *wireError `json:"error"`
			}
			if json.Unmarshal(line, &item) != nil || item.Error != nil {
				return
			}
			select {
			case out <- item.Result:
			case <-ctx.Done():
				return
			case <-c.done:
				return
			}
		}
	}()
	return out, nil
}

// clientConn is one call's connection.
type clientConn struct {
	c    *Client
	conn io.ReadWriteCloser
	br   *bufio.Reader
	stop func() bool
}

// start dials, sends req and checks the server's hello. For a stream it
// also counts the reader goroutine in c.wg, under the same lock as Close, so
// Close never waits while one is being added.
func (c *Client) start(ctx context.Context, req request, streaming bool) (*clientConn, error) {
	if c.isClosed() {
		return nil, ErrClientClosed
	}
	conn, err := c.open(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		conn.Close()
		return nil, ErrClientClosed
	}
	c.conns[conn] = struct{}{}
	if streaming {
		c.wg.Add(1)
	}
	c.mu.Unlock()

	cc := &clientConn{c: c, conn: conn, br: bufio.NewReader(conn)}
	cc.stop = context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(err error) (*clientConn, error) {
		cc.close()
		if streaming {
			c.wg.Done()
		}
		return nil, err
	}

	req.V = Version
	b, err := json.Marshal(req)
	if err != nil {
		return fail(fmt.Errorf("encode request: %w", err))
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return fail(cc.connErr(ctx, err))
	}
	line, err := readLine(cc.br, maxReplyLine)
	if err != nil {
		return fail(cc.connErr(ctx, err))
	}
	var h hello
	if json.Unmarshal(line, &h) != nil || h.Hello != helloName {
		return fail(fmt.Errorf("%s does not answer like a system3 daemon; move it away, or use another --state-dir", c.path))
	}
	if h.V != Version {
		return fail(fmt.Errorf("%w: the system3 daemon (pid %d) on %s speaks protocol v%d, this system3 speaks v%d; run the same version for both (restart the daemon after an upgrade)",
			ErrVersion, h.PID, c.path, h.V, Version))
	}
	c.mu.Lock()
	c.pid = h.PID
	c.mu.Unlock()
	return cc, nil
}

// open opens one call's connection.
func (c *Client) open(ctx context.Context) (io.ReadWriteCloser, error) {
	if c.dial != nil {
		return c.dial(ctx)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.path)
	if err != nil {
		return nil, dialError(c.path, err)
	}
	return conn, nil
}

func (cc *clientConn) readReply(ctx context.Context) (replyIn, error) {
	var r replyIn
	line, err := readLine(cc.br, maxReplyLine)
	if err != nil {
		return r, cc.connErr(ctx, err)
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("bad reply from the system3 daemon on %s: %w", cc.c.path, err)
	}
	return r, nil
}

func (cc *clientConn) close() {
	cc.stop()
	cc.conn.Close()
	c := cc.c
	c.mu.Lock()
	delete(c.conns, cc.conn)
	c.mu.Unlock()
}

// connErr explains a failed read or write: our ctx ended (the conn was
// closed for it), the client was closed, or the server went away.
func (cc *clientConn) connErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if cc.c.isClosed() {
		return ErrClientClosed
	}
	var te *TransportError
	if errors.As(err, &te) {
		return te
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("%w (%s); is it still running?", ErrConnLost, cc.c.path)
	}
	return fmt.Errorf("talk to the system3 daemon on %s: %w", cc.c.path, err)
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func dialError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w on %s", ErrNoDaemon, path)
	}
	if errors.Is(err, fs.ErrPermission) {
		// The state dir, not the daemon: this user cannot enter it.
		return fmt.Errorf("the state dir %s cannot be used by this user (%w); give system3 a writable one with --state-dir or SYSTEM3_STATE_DIR", filepath.Dir(path), fs.ErrPermission)
	}
	return fmt.Errorf("connect to the system3 daemon on %s: %w", path, err)
}

// Connect opens a raw connection to the daemon's socket at path, for a
// relay that carries the protocol elsewhere (`system3 attach --stdio`).
// When nothing serves the path the error matches ErrNoDaemon.
func Connect(ctx context.Context, path string) (net.Conn, error) {
	if err := checkPathLen(path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDaemon, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, dialError(path, err)
	}
	return conn, nil
}

// Hosts decodes into out what the daemon knows of the other hosts it
// follows (see Server.Hosts). A daemon that follows none, or predates the
// method, answers with an error matching api.ErrBadRequest.
func (c *Client) Hosts(ctx context.Context, out any) error {
	return c.call(ctx, request{Method: methodHosts}, out)
}

// Ping checks that the daemon answers.
func (c *Client) Ping(ctx context.Context) error {
	return c.call(ctx, request{Method: methodPing}, nil)
}
