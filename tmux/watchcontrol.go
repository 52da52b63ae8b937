package tmux

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"
)

// control is the control-mode loop: list sessions, attach to those without
// a client, then sleep until a client reports a change or exits.
func (w *Watcher) control(ctx context.Context) error {
	c := &controller{w: w, lister: &Client{Server: w.server, Control: w}, backoff: minBackoff}
	for {
		if ctx.Err() != nil {
			return nil
		}
		lost := w.prune()
		if w.count() == 0 && c.up {
			c.up, c.downNews = false, true
		}

		sessions, err := c.lister.ListSessions(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if isExecError(err) {
			return err
		}
		if err == nil && len(sessions) == 0 {
			err = &Error{Op: "list-sessions", Server: w.server.String(), Msg: "no sessions", Err: ErrNoServer}
		}
		if err != nil {
			if !c.waitForServer(ctx, err) {
				return nil
			}
			continue
		}
		c.backoff = minBackoff

		resync, attachErr, stop := c.attachNew(ctx, sessions, lost)
		if stop {
			return nil
		}
		if w.count() == 0 && attachErr != nil {
			w.log.Warn("tmux: control mode unavailable, polling instead", "err", attachErr)
			return w.poll(ctx, attachErr.Error())
		}
		if attachErr != nil {
			c.logErr("tmux: attach failed", attachErr)
		}
		c.announce(sessions, resync)
		if !wait(ctx, w.kick, recheckInterval) || !settle(ctx, w.kick, attachSettle, maxSettle) {
			return nil
		}
	}
}

// controller is what the control-mode loop remembers between its rounds.
type controller struct {
	w       *Watcher
	lister  *Client
	backoff time.Duration
	up      bool // connected and announced
	everUp  bool
	// downNews: lost every client; not yet announced.
	downNews bool
	known    map[string]bool
	lastErr  string
}

// logErr logs an error once, until another one comes.
func (c *controller) logErr(msg string, err error) {
	if s := err.Error(); s != c.lastErr {
		c.lastErr = s
		c.w.log.Info(msg, "err", err)
	}
}

// waitForServer follows a failed listing of sessions: with no server, it
// detaches every client and says the server is gone, once; then it waits,
// backing off. false means ctx ended.
func (c *controller) waitForServer(ctx context.Context, err error) bool {
	w := c.w
	if errors.Is(err, ErrNoServer) {
		w.closeAll()
		if c.up || c.downNews {
			c.up, c.downNews = false, false
			w.q.push(Event{Kind: EventDisconnected, Reason: err.Error()})
		}
	}
	c.logErr("tmux: waiting for server", err)
	if !wait(ctx, w.kick, c.backoff) {
		return false
	}
	c.backoff = min(c.backoff*2, maxBackoff)
	return true
}

// attachNew attaches a control client to every session without one. resync
// says why the consumer should list anew (a session whose client exited, in
// lost, has one again); attachErr is tmux refusing control mode; stop means
// ctx ended.
func (c *controller) attachNew(ctx context.Context, sessions []Session, lost map[string]bool) (resync string, attachErr error, stop bool) {
	w := c.w
	for _, s := range sessions {
		if w.has(s.ID) {
			continue
		}
		conn, err := Attach(ctx, w.server, s.ID, ConnOptions{
			OnEvent: w.handler(s.ID),
			Output:  w.opts.OutputBytes > 0,
			Logger:  w.log,
		})
		if err != nil {
			if ctx.Err() != nil {
				return resync, attachErr, true
			}
			switch {
			case errors.Is(err, ErrNotFound), errors.Is(err, ErrNoServer):
				// The session or server went away meanwhile; the next
				// look will tell.
			case errors.Is(err, context.DeadlineExceeded):
				c.logErr("tmux: attach timed out", err)
			default:
				attachErr = err // tmux refused: control mode does not work here
			}
			continue
		}
		w.add(s.ID, conn)
		if lost[s.ID] {
			resync = "control client for session " + s.ID + " was detached"
		}
	}
	return resync, attachErr, false
}

// announce tells the consumer, once clients are attached, that watching
// started or resumed, that it should list anew (resync), or that sessions
// came or went since the last round.
func (c *controller) announce(sessions []Session, resync string) {
	w := c.w
	ids := make(map[string]bool, len(sessions))
	for _, s := range sessions {
		ids[s.ID] = true
	}
	if w.count() == 0 {
		return
	}
	c.lastErr = ""
	switch {
	case !c.up:
		c.up, c.downNews = true, false
		reason := "watching started"
		if c.everUp {
			reason = "reconnected to the server"
		}
		c.everUp = true
		w.log.Info("tmux: watching", "sessions", len(sessions))
		w.q.push(Event{Kind: EventResync, Reason: reason})
	case resync != "":
		w.q.push(Event{Kind: EventResync, Reason: resync})
	case !sameKeys(ids, c.known):
		// Sent only now, after attaching, so a consumer that
		// re-lists on it cannot miss a new session's output.
		w.q.push(Event{Kind: EventSessionsChanged})
	}
	c.known = ids
}

// handler turns a control client's events into queued events, and the
// events that change which clients we need into a wake-up of the loop.
func (w *Watcher) handler(sessionID string) func(Event) {
	return func(e Event) {
		switch e.Kind {
		case EventSessionsChanged, EventExit:
			w.wakeUp()
			return
		case EventSessionChanged:
			if e.SessionID != sessionID {
				w.wakeUp() // tmux moved the client to another session
			}
			return
		case EventUnlinkedWindowAdd:
			// "Unlinked" only says the window is not in this client's
			// session; server-wide, it is a window being added.
			e.Kind = EventWindowAdd
		case EventUnlinkedWindowClose:
			e.Kind = EventWindowClose
		}
		w.q.push(e)
	}
}

// prune drops clients that have exited, and clients that tmux moved to a
// session another client already covers. It returns the sessions whose
// client exited.
func (w *Watcher) prune() map[string]bool {
	w.mu.Lock()
	lost := make(map[string]bool)
	var dups []*Conn
	moved := make(map[string]*Conn)
	for id, c := range w.conns {
		select {
		case <-c.Done():
			delete(w.conns, id)
			lost[id] = true
			continue
		default:
		}
		if sid := c.SessionID(); sid != "" && sid != id {
			delete(w.conns, id)
			moved[sid] = c
		}
	}
	for sid, c := range moved {
		if _, dup := w.conns[sid]; dup {
			dups = append(dups, c)
		} else {
			w.conns[sid] = c
		}
	}
	w.mu.Unlock()
	for _, c := range dups {
		c.Close()
	}
	return lost
}

func (w *Watcher) has(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.conns[id]
	return ok
}

func (w *Watcher) add(id string, c *Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conns[id] = c
}

func (w *Watcher) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.conns)
}

// Clients reports how many control clients the Watcher has attached.
func (w *Watcher) Clients() int { return w.count() }

// closeAll detaches every control client and waits for them to exit.
func (w *Watcher) closeAll() {
	w.mu.Lock()
	conns := make([]*Conn, 0, len(w.conns))
	for id, c := range w.conns {
		conns = append(conns, c)
		delete(w.conns, id)
	}
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Close()
		}()
	}
	wg.Wait()
}

// Command runs a tmux command over one of the Watcher's control clients
// (see Conn.Command). With no client attached it returns an error matching
// ErrNoControl, so a Client using the Watcher as its Control forks instead.
func (w *Watcher) Command(ctx context.Context, args ...string) ([]string, error) {
	w.mu.Lock()
	ids := make([]string, 0, len(w.conns))
	for id := range w.conns {
		ids = append(ids, id)
	}
	sort.Strings(ids) // the same client each time keeps replies in order for one caller
	var conn *Conn
	for _, id := range ids {
		if c := w.conns[id]; c.Err() == nil {
			conn = c
			break
		}
	}
	w.mu.Unlock()
	if conn == nil {
		op := ""
		if len(args) > 0 {
			op = args[0]
		}
		return nil, &Error{Op: op, Target: targetOf(args), Server: w.server.String(), Msg: "no control client attached", Err: ErrNoControl}
	}
	return conn.Command(ctx, args...)
}

// attachSettle is how long sessions must stop changing before the watcher
// attaches control clients to new ones (at most maxSettle). tmux up to at
// least 3.5 crashes when a control client is sent a notification while it
// identifies itself, and creating a session sends one to every control
// client: attaching while a script is still creating sessions is exactly
// that. Waiting for a quiet moment keeps attaches out of such bursts.
const (
	attachSettle = 150 * time.Millisecond
	maxSettle    = time.Second
)

// settle waits until kick has been quiet for quiet, or for max in all. It
// returns false when ctx ends.
func settle(ctx context.Context, kick <-chan struct{}, quiet, max time.Duration) bool {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return true
		case <-t.C:
			return true
		case <-kick:
			t.Reset(quiet)
		}
	}
}

func sameKeys(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
