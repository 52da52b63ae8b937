package tmux

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Sentinel errors, checkable with errors.Is on any error this package returns.
var (
	// ErrNoServer means no tmux server is running on the selected socket.
	ErrNoServer = errors.New("no tmux server is running")
	// ErrNotFound means the target pane, window or session does not exist.
	ErrNotFound = errors.New("tmux target not found")
	// ErrPaneDead means the target pane's process has exited (remain-on-exit).
	ErrPaneDead = errors.New("tmux pane is dead")
	// ErrNoControl means no control-mode connection is available (never
	// attached, or it has gone away). Callers holding an alternative, such as
	// forking a tmux client, should fall back to it.
	ErrNoControl = errors.New("no tmux control-mode connection")
	// ErrNoTmux means the tmux binary could not be run at all (not
	// installed, not executable). Retrying will not help.
	ErrNoTmux = errors.New("cannot run tmux")
	// ErrInvalidKey means a Key outside the allowed set was passed to SendKeys.
	ErrInvalidKey = errors.New("key not allowed")
)

// Error is a failed tmux operation. Its message names the operation, the
// target and the server, then gives tmux's own words:
//
//	capture %3 on tmux server -L x: can't find pane: %3
type Error struct {
	Op     string // what we were doing: "capture", "list-panes", "send-keys"...
	Target string // pane, window or session; may be empty
	Server string // Server.String()
	Msg    string // tmux's message, or our description of the failure
	Err    error  // a sentinel above, context.DeadlineExceeded, or an exec error; may be nil
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Target != "" {
		b.WriteString(" ")
		b.WriteString(e.Target)
	}
	b.WriteString(" on ")
	b.WriteString(e.Server)
	b.WriteString(": ")
	switch {
	case e.Msg != "":
		b.WriteString(e.Msg)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		b.WriteString("failed")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// classify maps tmux's stderr text onto a sentinel so callers can branch on
// errors.Is rather than on message text.
func classify(msg string) error {
	switch {
	case strings.HasPrefix(msg, "no server running"),
		strings.HasPrefix(msg, "error connecting to"),
		strings.Contains(msg, "server exited unexpectedly"):
		return ErrNoServer
	case strings.HasPrefix(msg, "can't find"),
		strings.HasPrefix(msg, "session not found"),
		strings.HasPrefix(msg, "window not found"),
		strings.HasPrefix(msg, "pane not found"):
		return ErrNotFound
	}
	return nil
}

// execError builds the Error for a failed fork of the tmux binary.
func (s Server) execError(ctx context.Context, op, target string, err error, stderr []byte) error {
	e := &Error{Op: op, Target: target, Server: s.String()}
	msg := strings.TrimSpace(string(stderr))
	var exit *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil:
		e.Msg = fmt.Sprintf("tmux exited but its output stayed open for %s; try again", waitDelay)
		e.Err = err
	case err != nil && !errors.As(err, &exit) && ctx.Err() == nil:
		// The process never ran: exec.Error for a name not in $PATH,
		// *fs.PathError for a missing or non-executable path.
		cause := err
		var ee *exec.Error
		if errors.As(err, &ee) {
			cause = ee.Err
		}
		e.Msg = fmt.Sprintf("cannot run tmux binary %q: %v; install tmux 3.2 or newer or set the path to it", s.bin(), cause)
		e.Err = errors.Join(ErrNoTmux, err)
	case ctx.Err() == context.DeadlineExceeded:
		e.Msg = fmt.Sprintf("tmux did not answer within %s (is the server wedged?)", s.timeout())
		e.Err = context.DeadlineExceeded
	case ctx.Err() != nil:
		e.Msg = "cancelled"
		e.Err = ctx.Err()
	case msg != "":
		e.Msg = firstLine(msg)
		e.Err = classify(e.Msg)
	default:
		e.Err = err
	}
	return e
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
