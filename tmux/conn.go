package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// closeGrace is how long Close lets the control client exit by itself after
// its stdin closes before killing it.
const closeGrace = 500 * time.Millisecond

// ConnOptions configures Attach.
type ConnOptions struct {
	// OnEvent receives every known notification, in order, on the Conn's
	// reader goroutine. It must not block: hand the event off and return.
	// The last event is always EventExit, sent after Done is closed.
	OnEvent func(Event)
	// Output decodes %output payloads into Event.Data. Without it the
	// payload is not even decoded: "pane X changed" is all most callers need.
	Output bool
	// Logger receives debug messages about unexpected lines; nil discards.
	Logger *slog.Logger
}

// Conn is one control-mode client (tmux -C attach-session) attached to a
// session. It delivers that session's notifications to OnEvent and carries
// commands with Command, each answered in well under a millisecond instead
// of the few milliseconds of CPU a forked tmux client costs.
//
// The client process lives until Close is called, the ctx given to Attach
// is cancelled, the session or server goes away, or tmux detaches it. It
// never resizes windows because it never gives the client a size (do not
// send refresh-client -C over it; see the package doc).
type Conn struct {
	server  Server
	target  string
	cmd     *exec.Cmd
	stdin   *os.File
	stderr  bytes.Buffer // written by exec's copier; read only after Wait
	onEvent func(Event)
	log     *slog.Logger

	// writeMu is held while a call is queued and its line written, so the
	// pending queue is in the order tmux reads the commands. The reader
	// never takes it: a blocked writer cannot stop replies being read.
	writeMu sync.Mutex

	mu        sync.Mutex
	pending   []*call
	closed    bool   // no new commands: the client exited or is closing
	sessionID string // from %session-changed

	handshake chan error    // result of the attach command; buffered
	exited    chan struct{} // closed when the client has exited and err is set
	finished  chan struct{} // closed when the reader goroutine returns
	err       error
	closeOnce sync.Once
}

type call struct {
	reply chan ctlBlock // buffered; closed if the Conn ends first
}

// Attach starts a control-mode client attached to session (its exact name
// or its id, such as "$1") and waits, at most the
// server's Timeout, for tmux to accept it. ctx bounds the client's whole
// life: when it is cancelled the client is terminated. Call Close when done.
func Attach(ctx context.Context, s Server, session string, opts ConnOptions) (*Conn, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Conn{
		server:    s,
		target:    session,
		onEvent:   opts.OnEvent,
		log:       log,
		handshake: make(chan error, 1),
		exited:    make(chan struct{}),
		finished:  make(chan struct{}),
	}
	op := "attach control client to session"
	if err := s.CheckVersion(ctx); err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, &Error{Op: op, Target: session, Server: s.String(), Err: err}
	}
	// -N: attach-session starts a server when none is running (one that
	// loads the user's configuration, which may create sessions); a watcher
	// must never do that.
	c.cmd = exec.CommandContext(ctx, s.bin(), s.clientArgv("-N", "-C",
		"attach-session", "-f", "ignore-size", "-t", exactSession(session))...)
	c.cmd.Env = controlEnv(os.Environ())
	c.cmd.Stdin = pr
	c.cmd.Stderr = &c.stderr
	c.cmd.Cancel = func() error { return c.cmd.Process.Signal(syscall.SIGTERM) }
	c.cmd.WaitDelay = waitDelay
	out := &output{c: c, p: ctlParser{decode: opts.Output}}
	c.cmd.Stdout = out
	if err := c.cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, s.execError(ctx, op, session, err, nil)
	}
	pr.Close()
	c.stdin = pw
	go c.wait(out)

	timer := time.NewTimer(s.timeout())
	defer timer.Stop()
	select {
	case err := <-c.handshake:
		if err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	case <-timer.C:
		c.Close()
		return nil, &Error{Op: op, Target: session, Server: s.String(),
			Msg: fmt.Sprintf("tmux did not answer within %s (is the server wedged?)", s.timeout()),
			Err: context.DeadlineExceeded}
	case <-ctx.Done():
		c.Close()
		return nil, &Error{Op: op, Target: session, Server: s.String(), Msg: "cancelled", Err: ctx.Err()}
	}
}

// output receives the control client's stdout from exec's copying
// goroutine (the Conn's reader) and acts on it line by line.
type output struct {
	c          *Conn
	p          ctlParser
	partial    []byte
	handshaken bool
	exitReason string
}

func (o *output) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			o.partial = append(o.partial, b...)
			break
		}
		if len(o.partial) > 0 {
			o.partial = append(o.partial, b[:i]...)
			o.line(string(o.partial))
			o.partial = o.partial[:0]
		} else {
			o.line(string(b[:i]))
		}
		b = b[i+1:]
	}
	return n, nil
}

func (o *output) line(line string) {
	c := o.c
	block, ev := o.p.feed(line)
	switch {
	case block != nil && block.Flags == 0:
		// The attach command's reply comes first; later flags-0 blocks
		// are hooks and other commands tmux ran for this client.
		if !o.handshaken {
			o.handshaken = true
			if block.Err {
				msg := strings.Join(block.Lines, "; ")
				c.handshake <- &Error{Op: "attach control client to session", Target: c.target,
					Server: c.server.String(), Msg: msg, Err: classify(msg)}
			} else {
				c.handshake <- nil
			}
		} else {
			c.log.Debug("tmux control: block not caused by our command", "number", block.Number, "lines", len(block.Lines))
		}
	case block != nil:
		c.mu.Lock()
		var cl *call
		if len(c.pending) > 0 {
			cl = c.pending[0]
			c.pending = c.pending[1:]
		}
		c.mu.Unlock()
		if cl == nil {
			c.log.Debug("tmux control: reply with no command waiting", "number", block.Number)
		} else {
			cl.reply <- *block // buffered: an abandoned call does not block us
		}
	case ev != nil && ev.Kind == EventExit:
		o.exitReason = ev.Reason
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	case ev != nil:
		if ev.Kind == EventSessionChanged {
			c.mu.Lock()
			c.sessionID = ev.SessionID
			c.mu.Unlock()
		}
		if c.onEvent != nil {
			c.onEvent(*ev)
		}
	}
}

// wait reaps the client. exec copies stdout into output until the client
// exits (and at most waitDelay longer, should something else hold the pipe
// open), so when Wait returns every line has been handled. Then it fails
// whatever is still pending and reports the exit.
func (c *Conn) wait(o *output) {
	defer close(c.finished)
	werr := c.cmd.Wait()

	msg := strings.TrimSpace(c.stderr.String())
	reason := o.exitReason
	if reason == "" {
		reason = firstLine(msg)
	}
	if reason == "" && werr != nil {
		reason = werr.Error()
	}
	if reason == "" {
		reason = "control client exited"
	}
	c.mu.Lock()
	c.closed = true
	c.err = &Error{Op: "control client for session", Target: c.target, Server: c.server.String(),
		Msg: reason, Err: ErrNoControl}
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	// No command can be written any more (closed is set): release our end
	// of the client's stdin now, so a client that died by itself (server
	// killed, client killed) leaves no descriptor behind for its owner.
	_ = c.stdin.Close()
	for _, cl := range pending {
		close(cl.reply)
	}
	if !o.handshaken {
		c.handshake <- &Error{Op: "attach control client to session", Target: c.target,
			Server: c.server.String(), Msg: reason, Err: classify(firstLine(msg))}
	}
	close(c.exited)
	if c.onEvent != nil {
		c.onEvent(Event{Kind: EventExit, Reason: reason})
	}
}

// Command sends one tmux command (name and arguments, quoted here so each
// argument arrives byte for byte) and returns its output lines. The call is
// bounded by ctx and the server's Timeout. A failing command returns an
// *Error carrying tmux's message; a Conn that has gone away returns an error
// matching ErrNoControl, so callers can fall back to forking tmux.
func (c *Conn) Command(ctx context.Context, args ...string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New("tmux control: empty command")
	}
	op, target := args[0], targetOf(args)
	ctx, cancel := context.WithTimeout(ctx, c.server.timeout())
	defer cancel()
	line := commandLine(args) + "\n"
	cl := &call{reply: make(chan ctlBlock, 1)}

	c.writeMu.Lock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.writeMu.Unlock()
		return nil, &Error{Op: op, Target: target, Server: c.server.String(), Msg: "control client has exited", Err: ErrNoControl}
	}
	c.pending = append(c.pending, cl)
	c.mu.Unlock()
	deadline, _ := ctx.Deadline()
	_ = c.stdin.SetWriteDeadline(deadline)
	_, err := io.WriteString(c.stdin, line)
	c.writeMu.Unlock()
	sent := time.Now()
	if err != nil {
		// A half-written line would garble every later command: give up on
		// this client. The reader fails the pending calls when it exits.
		c.kill()
		return nil, &Error{Op: op, Target: target, Server: c.server.String(),
			Msg: "writing to control client: " + err.Error(), Err: ErrNoControl}
	}
	select {
	case b, ok := <-cl.reply:
		if !ok {
			return nil, &Error{Op: op, Target: target, Server: c.server.String(), Msg: "control client exited", Err: ErrNoControl}
		}
		if b.Err {
			msg := strings.Join(b.Lines, "; ")
			return nil, &Error{Op: op, Target: target, Server: c.server.String(), Msg: msg, Err: classify(msg)}
		}
		return b.Lines, nil
	case <-ctx.Done():
		// The call stays queued so its late reply is matched to it and
		// dropped, keeping later replies in step.
		e := &Error{Op: op, Target: target, Server: c.server.String(), Err: ctx.Err()}
		if ctx.Err() == context.DeadlineExceeded {
			e.Msg = "tmux did not answer in time over the control client"
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && time.Since(sent) >= c.server.timeout()*9/10 {
			// No reply for (about) the server's whole timeout, whoever's
			// deadline ended the wait: tmux is wedged, or the stream is
			// out of step (a stray %begin would swallow every later reply
			// and notification). Either way this client is no use any
			// more; end it, so its owner attaches a new one and later
			// commands fork tmux meanwhile. A caller's shorter deadline
			// says nothing about the client and ends only its call.
			c.log.Warn("tmux control: no reply in time; ending the control client", "command", op, "timeout", c.server.timeout())
			c.kill()
		}
		return nil, e
	}
}

// targetOf finds the -t argument, for error messages.
func targetOf(args []string) string {
	for i := 1; i+1 < len(args); i++ {
		if args[i] == "--" {
			break
		}
		if args[i] == "-t" {
			return args[i+1]
		}
	}
	return ""
}

// SessionID is the id of the session the client shows ("$1"), as last
// reported by tmux; empty until tmux reports it.
func (c *Conn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// Done is closed when the control client has exited; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.exited }

// Err is nil while the client runs and afterwards says why it ended. It
// matches ErrNoControl.
func (c *Conn) Err() error {
	select {
	case <-c.exited:
		return c.err
	default:
		return nil
	}
}

func (c *Conn) kill() {
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
	}
}

// Close detaches the control client (closing its stdin, which makes tmux
// detach it cleanly), kills it if it has not exited within half a second, and
// waits until the process is reaped and the reader goroutine has returned.
// It is safe to call more than once and from any goroutine except OnEvent.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		_ = c.stdin.Close()
		t := time.NewTimer(closeGrace)
		defer t.Stop()
		select {
		case <-c.finished:
		case <-t.C:
			c.kill()
		}
	})
	<-c.finished
	return nil
}

// controlEnv is the environment a control client runs with: only what
// tmux needs to find the server and speak UTF-8.
//
// A tmux client sends its whole environment to the server while it
// identifies, one message per variable, and tmux up to at least 3.5 crashes
// (a NULL control_state in control_write) when it sends a control client a
// notification, such as another client creating a session, in the middle of
// that identification. A large environment takes several writes and opens
// that window wide; a handful of variables leaves it almost shut.
func controlEnv(environ []string) []string {
	keep := []string{"PATH", "HOME", "USER", "LOGNAME", "TERM", "TMUX", "TMUX_TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(keep, name) {
			env = append(env, kv)
		}
	}
	return env
}
