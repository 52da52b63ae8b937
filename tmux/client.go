package tmux

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Commander runs one tmux command over an existing connection and returns
// its output lines. *Conn and *Watcher implement it. It must return an error
// matching ErrNoControl when it cannot carry the command at all, so the
// Client can fall back to forking tmux.
type Commander interface {
	Command(ctx context.Context, args ...string) ([]string, error)
}

// Client runs tmux commands against one server: listing, capturing,
// sending text and keys, creating and killing sessions. It is safe for
// concurrent use; sends to the same pane are serialised.
type Client struct {
	Server Server
	// Control, when set, carries commands that need no stdin over a
	// control-mode connection (a *Watcher or *Conn): well under a
	// millisecond each. Whenever it reports ErrNoControl the Client runs
	// the command itself (the native client, or a fork), so that path
	// always works.
	Control Commander
	// EnterDelay is the pause between delivering text and pressing Enter;
	// an Enter that follows a paste too closely can be swallowed. Default
	// 100ms.
	EnterDelay time.Duration
	// VerifyTimeout is how long SendText watches the pane for the input to
	// clear after each Enter. Default 1s.
	VerifyTimeout time.Duration

	mu    sync.Mutex
	locks map[string]*paneLock
}

// NewClient returns a Client for the server.
func NewClient(s Server) *Client { return &Client{Server: s} }

type paneLock struct {
	sem  chan struct{}
	refs int
}

// lockPane serialises operations on one pane. Waiting honours ctx, and the
// entry is dropped when nobody holds or waits for it, so the map does not
// grow with every pane id the server ever had.
func (c *Client) lockPane(ctx context.Context, pane string) (func(), error) {
	c.mu.Lock()
	if c.locks == nil {
		c.locks = make(map[string]*paneLock)
	}
	l := c.locks[pane]
	if l == nil {
		l = &paneLock{sem: make(chan struct{}, 1)}
		c.locks[pane] = l
	}
	l.refs++
	c.mu.Unlock()
	release := func() {
		c.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(c.locks, pane)
		}
		c.mu.Unlock()
	}
	select {
	case l.sem <- struct{}{}:
		return func() { <-l.sem; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// run sends a command over Control when possible and forks tmux otherwise.
// op and target label errors.
func (c *Client) run(ctx context.Context, op, target string, args ...string) ([]byte, error) {
	if c.Control != nil {
		lines, err := c.Control.Command(ctx, args...)
		if err == nil {
			if len(lines) == 0 {
				return nil, nil
			}
			return []byte(strings.Join(lines, "\n") + "\n"), nil
		}
		if !errors.Is(err, ErrNoControl) {
			var e *Error
			if errors.As(err, &e) {
				e.Op, e.Target = op, target
			}
			return nil, err
		}
	}
	return c.Server.run(ctx, op, target, nil, args...)
}

// ListPanes lists every pane on the server in one list-panes -a call. When
// no server is running it returns an empty list and an error matching
// ErrNoServer.
func (c *Client) ListPanes(ctx context.Context) ([]Pane, error) {
	return c.listPanes(ctx, "list-panes", "", "list-panes", "-a", "-F", paneFormat)
}

// listPanes runs a listing in paneFormat and reads it, a second time when
// the first was torn by a pane's value changing while tmux formatted it
// (a process changing directory, or a shell exec'ing its command: see
// parseRecords).
func (c *Client) listPanes(ctx context.Context, op, target string, args ...string) ([]Pane, error) {
	var err error
	for range 2 {
		var out []byte
		if out, err = c.run(ctx, op, target, args...); err != nil {
			return nil, err
		}
		var panes []Pane
		if panes, err = parsePanes(out); err == nil {
			return panes, nil
		}
	}
	return nil, &Error{Op: op, Target: target, Server: c.Server.String(), Msg: "unreadable output: " + err.Error()}
}

// ListPaneSignals lists every pane's PaneSignal: the cheap listing a
// watcher repeats many times a second.
func (c *Client) ListPaneSignals(ctx context.Context) ([]PaneSignal, error) {
	out, err := c.run(ctx, "list-panes", "", "list-panes", "-a", "-F", signalFormat)
	if err != nil {
		return nil, err
	}
	sigs, err := parseSignals(out)
	if err != nil {
		return nil, &Error{Op: "list-panes", Server: c.Server.String(), Msg: "unreadable output: " + err.Error()}
	}
	return sigs, nil
}

// PaneInfo reports one pane, given by id ("%3"); the error matches
// ErrNotFound when it does not exist.
func (c *Client) PaneInfo(ctx context.Context, pane string) (Pane, error) {
	if !isID(pane, '%') {
		return Pane{}, &Error{Op: "inspect", Target: pane, Server: c.Server.String(), Msg: "not a pane id (such as %3)", Err: ErrNotFound}
	}
	// list-panes -t lists the pane's window; display-message -t would not
	// fail on a missing pane.
	panes, err := c.listPanes(ctx, "inspect", pane, "list-panes", "-t", pane, "-F", paneFormat)
	if err != nil {
		return Pane{}, err
	}
	for _, p := range panes {
		if p.ID == pane {
			return p, nil
		}
	}
	return Pane{}, &Error{Op: "inspect", Target: pane, Server: c.Server.String(), Msg: "can't find pane: " + pane, Err: ErrNotFound}
}

// ListSessions lists the server's sessions. When no server is running it
// returns an empty list and an error matching ErrNoServer.
func (c *Client) ListSessions(ctx context.Context) ([]Session, error) {
	out, err := c.run(ctx, "list-sessions", "", "list-sessions", "-F", sessionFormat)
	if err != nil {
		return nil, err
	}
	sessions, err := parseSessions(out)
	if err != nil {
		return nil, &Error{Op: "list-sessions", Server: c.Server.String(), Msg: "unreadable output: " + err.Error()}
	}
	return sessions, nil
}

// CaptureOptions selects what Capture returns.
type CaptureOptions struct {
	// History is how many lines of scrollback to include above the visible
	// screen; 0 captures the visible screen only, a negative value all of it.
	History int
	// Escapes keeps colour and attribute escape sequences (capture-pane -e),
	// for previews.
	Escapes bool
	// KeepTrailing returns tmux's output untouched. By default trailing
	// whitespace is cut from each line and the blank lines at the bottom of
	// the screen (below the last text) are dropped, so the last line is the
	// last one with text; a blank pane captures as "".
	KeepTrailing bool
}

// Capture returns the text of a pane, wrapped lines joined (capture-pane
// -J), lines separated by "\n" with no final newline.
func (c *Client) Capture(ctx context.Context, pane string, opt CaptureOptions) (string, error) {
	out, err := c.run(ctx, "capture", pane, captureArgs(pane, opt)...)
	if err != nil {
		return "", err
	}
	return finishCapture(string(out), opt), nil
}

func trimCapture(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// screen is the visible rows of a pane (not joined, so row numbers match
// the cursor) and the cursor position.
type screen struct {
	rows   []string
	cx, cy int
}

func (c *Client) screen(ctx context.Context, pane string) (screen, error) {
	out, err := c.run(ctx, "inspect", pane, "list-panes", "-t", pane, "-F", "#{pane_id} #{cursor_x} #{cursor_y}")
	if err != nil {
		return screen{}, err
	}
	var sc screen
	found := false
	for _, l := range strings.Split(string(out), "\n") {
		var id string
		if _, err := fmt.Sscanf(l, "%s %d %d", &id, &sc.cx, &sc.cy); err == nil && id == pane {
			found = true
			break
		}
	}
	if !found {
		return screen{}, &Error{Op: "inspect", Target: pane, Server: c.Server.String(), Msg: "can't find pane: " + pane, Err: ErrNotFound}
	}
	out, err = c.run(ctx, "capture", pane, "capture-pane", "-p", "-t", pane)
	if err != nil {
		return screen{}, err
	}
	sc.rows = strings.Split(expandTabs(strings.TrimSuffix(string(out), "\n")), "\n")
	return sc, nil
}

// NewSessionOptions describes a detached session to create.
type NewSessionOptions struct {
	Name       string // empty lets tmux pick
	WindowName string
	Dir        string            // working directory
	Env        map[string]string // set in the session's environment (-e; tmux 3.2+)
	// Command is what the first pane runs: one element is a shell command
	// line run by the default shell; several are an argv run directly; none
	// runs the default shell.
	Command []string
	// Width and Height size the detached session (-x, -y); zero leaves
	// tmux's default-size.
	Width, Height int
	// KeepDeadPane keeps the pane, dead, when its command exits, so its
	// exit status and last output can still be read (remain-on-exit on the
	// new session's window only, set in the same command list so even a
	// command that exits at once is kept). Needs Name. SetRemainOnExit
	// undoes it.
	KeepDeadPane bool
}

// NewSession creates a detached session, starting the server if needed
// (with Server.Config), and returns the id of its first pane.
func (c *Client) NewSession(ctx context.Context, opt NewSessionOptions) (string, error) {
	args := []string{"new-session", "-d", "-P", "-F", "#{pane_id}"}
	if opt.Name != "" {
		args = append(args, "-s", opt.Name)
	}
	if opt.WindowName != "" {
		args = append(args, "-n", opt.WindowName)
	}
	if opt.Width > 0 {
		args = append(args, "-x", fmt.Sprint(opt.Width))
	}
	if opt.Height > 0 {
		args = append(args, "-y", fmt.Sprint(opt.Height))
	}
	args, err := spawnArgs(args, opt.Dir, opt.Env, opt.Command)
	if err != nil {
		return "", &Error{Op: "new-session", Target: opt.Name, Server: c.Server.String(), Msg: err.Error()}
	}
	if opt.KeepDeadPane {
		if opt.Name == "" {
			return "", &Error{Op: "new-session", Server: c.Server.String(), Msg: "keeping a dead pane needs a session name"}
		}
		args = append(args, ";", "set-option", "-w", "-t", exactSession(opt.Name)+":", "remain-on-exit", "on")
	}
	if c.Server.Config != "" {
		args = append([]string{"-f", c.Server.Config}, args...)
	}
	// Always forked: it may have to start the server.
	out, err := c.Server.run(ctx, "new-session", opt.Name, nil, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// SetRemainOnExit sets (on) or unsets (off: back to the inherited value)
// remain-on-exit for the window holding pane.
func (c *Client) SetRemainOnExit(ctx context.Context, pane string, on bool) error {
	args := []string{"set-option", "-w", "-t", pane, "remain-on-exit", "on"}
	if !on {
		args = []string{"set-option", "-w", "-u", "-t", pane, "remain-on-exit"}
	}
	_, err := c.run(ctx, "set-option", pane, args...)
	return err
}

// ResizeWindow sets the size of the window holding pane (resize-window -x
// -y, which also makes that window's size manual).
func (c *Client) ResizeWindow(ctx context.Context, pane string, width, height int) error {
	if width <= 0 || height <= 0 {
		return &Error{Op: "resize-window", Target: pane, Server: c.Server.String(), Msg: fmt.Sprintf("size %dx%d: width and height must be positive", width, height)}
	}
	_, err := c.run(ctx, "resize-window", pane, "resize-window", "-t", pane, "-x", fmt.Sprint(width), "-y", fmt.Sprint(height))
	return err
}

// NewWindowOptions describes a window to add to a session.
type NewWindowOptions struct {
	Session string // name or id ("$1") of the session; required
	Name    string
	Dir     string
	Env     map[string]string
	Command []string // as in NewSessionOptions
	// Select makes the new window the session's current window. By default
	// it is created in the background so the user's view does not change.
	Select bool
}

// NewWindow creates a window and returns the id of its pane.
func (c *Client) NewWindow(ctx context.Context, opt NewWindowOptions) (string, error) {
	if opt.Session == "" {
		return "", &Error{Op: "new-window", Server: c.Server.String(), Msg: "no session given"}
	}
	args := []string{"new-window", "-P", "-F", "#{pane_id}", "-t", exactSession(opt.Session) + ":"}
	if !opt.Select {
		args = append(args, "-d")
	}
	if opt.Name != "" {
		args = append(args, "-n", opt.Name)
	}
	args, err := spawnArgs(args, opt.Dir, opt.Env, opt.Command)
	if err != nil {
		return "", &Error{Op: "new-window", Target: opt.Session, Server: c.Server.String(), Msg: err.Error()}
	}
	out, err := c.run(ctx, "new-window", opt.Session, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func spawnArgs(args []string, dir string, env map[string]string, command []string) ([]string, error) {
	if dir != "" {
		args = append(args, "-c", dir)
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("bad environment variable name %q", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-e", k+"="+env[k])
	}
	if len(command) > 0 {
		args = append(args, "--")
		args = append(args, command...)
	}
	return args, nil
}

// exactSession turns a session name into a target that matches only that
// name: tmux otherwise falls back to prefix and pattern matching.
func exactSession(s string) string {
	if isID(s, '$') || strings.HasPrefix(s, "=") {
		return s
	}
	return "=" + s
}

// HasSession reports whether a session with exactly this name (or id)
// exists. No server means false, not an error.
func (c *Client) HasSession(ctx context.Context, session string) (bool, error) {
	_, err := c.run(ctx, "has-session", session, "has-session", "-t", exactSession(session))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrNoServer):
		return false, nil
	}
	return false, err
}

// KillSession kills a session by exact name or id.
func (c *Client) KillSession(ctx context.Context, session string) error {
	_, err := c.run(ctx, "kill-session", session, "kill-session", "-t", exactSession(session))
	return err
}

// KillPane kills one pane.
func (c *Client) KillPane(ctx context.Context, pane string) error {
	_, err := c.run(ctx, "kill-pane", pane, "kill-pane", "-t", pane)
	return err
}

// KillServer kills the server and every session on it. A server that is
// not running is not an error. It always forks: the control connection
// dies with the server.
func (c *Client) KillServer(ctx context.Context) error {
	_, err := c.Server.run(ctx, "kill-server", "", nil, "kill-server")
	if errors.Is(err, ErrNoServer) {
		return nil
	}
	return err
}
