package tmux

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	minBackoff      = 500 * time.Millisecond
	maxBackoff      = time.Second
	recheckInterval = 10 * time.Second
	defaultBuffer   = 4096
	defaultPoll     = 50 * time.Millisecond
	defaultFull     = time.Second
	defaultBusyGap  = time.Second
	defaultSettle   = 200 * time.Millisecond
	defaultLayout   = 250 * time.Millisecond
)

// WatcherOptions configures a Watcher. The zero value is ready to use: it
// polls, with no control-mode client.
type WatcherOptions struct {
	// Control watches through control-mode clients, one per session,
	// instead of polling. tmux servers up to at least 3.7c crash on
	// ordinary commands while a control client is attached (a window
	// selected and its session killed in one command list, tmux/tmux#5243;
	// a session created while a control client identifies, #4980;
	// run-shell output, #5570; popups, #5551), so system3 never sets it;
	// it is kept to measure that exposure.
	Control bool
	// Poll is the default and is kept for callers that set it.
	Poll bool
	// PollInterval is the shortest polling period (default 50ms): at
	// most one list-panes per tick. Listings are spaced further apart,
	// up to 250ms, when one takes more than a twentieth of the period;
	// so are ticks, unless terminal events tell which panes were written
	// to (see NoTTYEvents), when a tick that lists nothing costs the
	// server nothing.
	PollInterval time.Duration
	// FullEvery is how often a tick lists panes in full, with where they
	// are, names, sizes, titles and current commands (default 1s); other
	// ticks list five numbers per pane (see PaneSignal). When a pane
	// appears or disappears, that tick lists in full at once. When
	// terminal events tell every pane's writes, and so when a pane comes,
	// goes or its process exits, a full listing only adds renames, moves
	// and changes no write shows (a mode entered, a title set by tmux):
	// full listings are then spaced further apart when one takes more than
	// a hundredth of the period (many panes), up to 5s, so they never take
	// more than about that share of the tmux server's time, and 5s apart
	// while no pane writes.
	FullEvery time.Duration
	// BusyGap is how often, at most, a pane that keeps changing is
	// reported (default 1s). A pane is reported at once when it changes
	// after a quiet spell of BusyGap, and once it has stopped changing for
	// a tick: a prompt drawn after streaming output is reported one tick
	// after it is drawn. A pane whose output pauses and resumes needs
	// longer quiet spells, doubling up to Settle (default 200ms, longer
	// than a spinner's frame), before it is reported again.
	BusyGap time.Duration
	Settle  time.Duration
	// NoReadGate lists panes at every tick even when the tmux server has
	// read nothing since the last one, and uses no terminal events. By
	// default (on Linux, when the server's /proc/PID/io can be read) such
	// a tick lists nothing: no pane can have written, so an idle fleet
	// costs the server one full listing every 5s (see ioReader, fullGap).
	NoReadGate bool
	// NoTTYEvents lists panes at every tick the server read something,
	// without asking the kernel which panes' terminals were written to.
	// By default (on Linux) the watcher watches every pane's terminal
	// with inotify (see ttyFeed) and lists panes only for what those
	// events cannot tell.
	NoTTYEvents bool
	// LayoutEvery is how often, at most, the watcher lists panes while
	// terminal events show panes being written to (default 250ms): a
	// listing tells a pane's layout (cursor, history size), which shows
	// a dialog drawn over a working screen that keeps being redrawn.
	LayoutEvery time.Duration
	// Buffer is how many events may wait for the consumer before they are
	// replaced by one EventResync (default 4096).
	Buffer int
	// OutputBytes is how much decoded pane output an EventOutput may carry.
	// Zero (the default) carries none and skips decoding: the event only
	// says which pane changed.
	OutputBytes int
	// Logger receives connection changes and errors, each repeated error
	// once; nil discards.
	Logger *slog.Logger
}

// Watcher reports changes on every session of a tmux server, and survives
// the server going away and coming back.
//
// By default it polls: one list-panes -a every PollInterval, comparing each
// pane's signature (window activity, cursor, history size, size, mode,
// title, command, liveness) with the last tick's, and no control-mode
// client is ever attached, because tmux's crashes reachable from ordinary
// commands need one (see WatcherOptions.Control). With Control set it keeps
// one control-mode client per session instead (tmux sends a client %output
// only for its own session's panes) and attaches to sessions as they appear.
//
// Events arrive on Events. EventUnlinkedWindowAdd and ...Close are reported
// as EventWindowAdd and EventWindowClose: "unlinked" only says which of
// the Watcher's clients heard it (tmux 3.3 even reports kill-window as
// %unlinked-window-close to the window's own session). Publishing never blocks the control clients:
// output events are coalesced per pane and an overflowing queue turns into
// one EventResync (see queue). The consumer should re-list panes on
// EventResync and EventSessionsChanged and capture a pane on EventOutput.
//
// When control mode cannot work (the attach command fails for any reason
// other than a missing session or server, e.g. a tmux older than 3.2) or
// Poll is set, the Watcher polls list-panes every PollInterval and sends
// EventOutput for panes whose activity, cursor, size, mode, title or
// history changed. window_activity has one-second resolution, so a change
// that moves nothing else can be reported up to a second late.
type Watcher struct {
	server  Server
	opts    WatcherOptions
	log     *slog.Logger
	q       *queue
	events  chan Event
	kick    chan struct{}
	started atomic.Bool
	// maxSettle is Settle in ticks: the longest quiet spell step asks for.
	maxSettle int
	// beat is when piggyback last added panes (only poll's goroutine
	// uses it).
	beat time.Time
	// full, listed and skipped count full listings, and light listings
	// made and skipped (the server read nothing since the last one).
	full, listed, skipped atomic.Int64

	mu    sync.Mutex
	conns map[string]*Conn // by the session id it was attached to
}

// NewWatcher returns a Watcher for the server. Call Run to start it.
func NewWatcher(s Server, opts WatcherOptions) *Watcher {
	if opts.Buffer <= 0 {
		opts.Buffer = defaultBuffer
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = defaultPoll
	}
	if opts.FullEvery <= 0 {
		opts.FullEvery = defaultFull
	}
	if opts.BusyGap <= 0 {
		opts.BusyGap = defaultBusyGap
	}
	if opts.Settle <= 0 {
		opts.Settle = defaultSettle
	}
	if opts.LayoutEvery <= 0 {
		opts.LayoutEvery = defaultLayout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Watcher{
		maxSettle: max(1, int(opts.Settle/opts.PollInterval)),
		server:    s,
		opts:      opts,
		log:       log.With("tmux", s.String()),
		q:         newQueue(opts.Buffer, max(opts.OutputBytes, 0)),
		events:    make(chan Event),
		kick:      make(chan struct{}, 1),
		conns:     make(map[string]*Conn),
	}
}

// Events delivers the Watcher's events. It is closed when Run returns.
func (w *Watcher) Events() <-chan Event { return w.events }

// Run watches until ctx is cancelled, then detaches every control client,
// waits for them to exit and returns nil. It returns an error only when
// watching cannot work at all (no tmux binary). Run may be called once.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("tmux: Watcher.Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.pump(ctx)
	}()

	var err error
	if w.opts.Control && !w.opts.Poll {
		err = w.control(ctx)
	} else {
		err = w.poll(ctx, "no control-mode client")
	}
	w.closeAll()
	cancel()
	wg.Wait()
	close(w.events)
	return err
}

// pump hands queued events to the consumer, one at a time.
func (w *Watcher) pump(ctx context.Context) {
	for {
		e, ok := w.q.pop(ctx)
		if !ok {
			return
		}
		select {
		case w.events <- e:
		case <-ctx.Done():
			return
		}
	}
}

func (w *Watcher) wakeUp() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// control is the control-mode loop: list sessions, attach to those without
// a client, then sleep until a client reports a change or exits.
func (w *Watcher) control(ctx context.Context) error {
	lister := &Client{Server: w.server, Control: w}
	backoff := minBackoff
	var (
		up       bool // connected and announced
		everUp   bool
		downNews bool // lost every client; not yet announced
		known    map[string]bool
		lastErr  string
	)
	logErr := func(msg string, err error) {
		if s := err.Error(); s != lastErr {
			lastErr = s
			w.log.Info(msg, "err", err)
		}
	}
	for {
		if ctx.Err() != nil {
			return nil
		}
		lost := w.prune()
		if w.count() == 0 && up {
			up, downNews = false, true
		}

		sessions, err := lister.ListSessions(ctx)
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
			if errors.Is(err, ErrNoServer) {
				w.closeAll()
				if up || downNews {
					up, downNews = false, false
					w.q.push(Event{Kind: EventDisconnected, Reason: err.Error()})
				}
			}
			logErr("tmux: waiting for server", err)
			if !wait(ctx, w.kick, backoff) {
				return nil
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		backoff = minBackoff

		var attachErr error
		resync := ""
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
					return nil
				}
				switch {
				case errors.Is(err, ErrNotFound), errors.Is(err, ErrNoServer):
					// The session or server went away meanwhile; the next
					// look will tell.
				case errors.Is(err, context.DeadlineExceeded):
					logErr("tmux: attach timed out", err)
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
		if w.count() == 0 && attachErr != nil {
			w.log.Warn("tmux: control mode unavailable, polling instead", "err", attachErr)
			return w.poll(ctx, attachErr.Error())
		}
		if attachErr != nil {
			logErr("tmux: attach failed", attachErr)
		}

		ids := make(map[string]bool, len(sessions))
		for _, s := range sessions {
			ids[s.ID] = true
		}
		if w.count() > 0 {
			lastErr = ""
			switch {
			case !up:
				up, downNews = true, false
				reason := "watching started"
				if everUp {
					reason = "reconnected to the server"
				}
				everUp = true
				w.log.Info("tmux: watching", "sessions", len(sessions))
				w.q.push(Event{Kind: EventResync, Reason: reason})
			case resync != "":
				w.q.push(Event{Kind: EventResync, Reason: resync})
			case !sameKeys(ids, known):
				// Sent only now, after attaching, so a consumer that
				// re-lists on it cannot miss a new session's output.
				w.q.push(Event{Kind: EventSessionsChanged})
			}
			known = ids
		}
		if !wait(ctx, w.kick, recheckInterval) || !settle(ctx, w.kick, attachSettle, maxSettle) {
			return nil
		}
	}
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

// paneTrack is what polling remembers of a pane between ticks.
type paneTrack struct {
	sig PaneSignal
	// rest is the pane as the last full listing showed it (see FullEvery):
	// where it is, its size, liveness, mode, title and command.
	rest     paneRest
	reported time.Time // last EventOutput for it
	changed  time.Time // last tick that saw it change
	quietAt  time.Time // when it was last reported for going quiet
	layoutAt time.Time // last tick that saw its layout change
	held     bool      // changed since reported, not reported yet
	// streaming: its last report was only its beat while it kept
	// changing (Event.Streaming). fresh: a change after a quiet spell is
	// held, not reported yet; its report is not a beat.
	streaming, fresh bool
	wrote            bool // its terminal was written to since the last listing
	quiet            int  // ticks since it last changed
	settle           int  // quiet ticks that end a burst (adaptive, see step)
}

// paneRest is what only full listings are compared on.
type paneRest struct {
	sessionID, windowID string
	w, h, deadStatus    int
	dead, inMode, alt   bool
	title, command      string
}

func restOf(p Pane) paneRest {
	return paneRest{sessionID: p.SessionID, windowID: p.WindowID, w: p.Width, h: p.Height, deadStatus: p.DeadStatus,
		dead: p.Dead, inMode: p.InMode, alt: p.AlternateOn, title: p.Title, command: p.Command}
}

// step notes one tick of a pane and reports whether to send an
// EventOutput for it. s is what the tick listed, or nil when it listed
// nothing (the server read nothing, or terminal events told which panes
// were written to: see poll); wrote says the kernel saw the pane's
// terminal written to since the last tick.
//
// A pane that changes after a quiet spell of BusyGap is reported at once,
// and so is one whose layout (cursor or history size; not window_activity,
// which only says something was written) changes after a second without
// layout changes: a dialog drawn over an agent's steady working screen.
// Such a pane is reported again once it has been quiet for a tick, in case
// the first look caught the frame half drawn. What only full listings show
// (size, liveness, mode, title, command) counts as a change, not as
// layout. A pane that keeps changing is reported at most every BusyGap, and
// as soon as it has been quiet for settle ticks. settle starts at one
// tick, so a prompt drawn after a stream of output is reported one tick
// after it is drawn. A pane reported for going quiet that changes again
// within Settle of its last change was only pausing: its settle doubles
// (up to Settle), so output with short pauses is not captured at every
// pause. A pane quiet for BusyGap starts again from one tick.
//
// A pane whose terminal is watched changes on the ticks it was written
// to; a listing only adds its layout, and counts as a change only when no
// write explains it (something the terminal events cannot see: see
// ttyFeed). Other panes change when their listed signature does.
func (w *Watcher) step(tr *paneTrack, s *PaneSignal, restChanged, wrote bool, now time.Time) bool {
	changed := restChanged || wrote
	tr.wrote = tr.wrote || wrote
	layout := false
	if s != nil {
		prev := tr.sig
		tr.sig = *s
		if prev != *s && !tr.wrote {
			changed = true
		}
		prev.Activity = s.Activity
		layout = prev != *s
		tr.wrote = false
	}
	stable := now.Sub(tr.layoutAt) >= w.opts.BusyGap
	if layout {
		tr.layoutAt = now
	}
	// A change after a quiet spell of BusyGap starts something new (a
	// dialog drawn over a finished screen): never a beat.
	if changed && now.Sub(tr.changed) >= w.opts.BusyGap {
		tr.fresh = true
	}
	if changed {
		if !tr.quietAt.IsZero() && now.Sub(tr.changed) <= w.opts.Settle {
			// Reported for going quiet, then it changed again within
			// Settle of its last change: that was a pause, not a stop.
			tr.settle = min(tr.settle*2, w.maxSettle)
		}
		tr.quietAt = time.Time{}
		tr.changed, tr.quiet = now, 0
	} else {
		tr.quiet++
		if now.Sub(tr.changed) >= w.opts.BusyGap {
			tr.settle = 1
		}
	}
	switch {
	case layout && stable:
		tr.reported, tr.held, tr.streaming, tr.fresh = now, true, false, false // and again once quiet
		return true
	case tr.held && tr.quiet >= tr.settle:
		tr.reported, tr.held, tr.quietAt, tr.streaming, tr.fresh = now, false, now, false, false
		return true
	case changed && now.Sub(tr.reported) >= w.opts.BusyGap,
		tr.held && now.Sub(tr.reported) >= w.opts.BusyGap:
		// A beat leaves the pane held: it is reported again once quiet,
		// even when it stopped on this very tick, since a consumer may
		// not look at a beat.
		tr.streaming = !tr.fresh
		tr.reported, tr.held, tr.fresh = now, tr.streaming, false
		return true
	case changed:
		tr.held = true
	}
	return false
}

// poll is the polling loop, and no control client is ever attached. Each
// tick is one list-panes of PaneSignals (numbers and ids only); every
// FullEvery (see fullGap), and at once when a pane appears or disappears,
// the tick lists panes in full instead, for where panes are, their names,
// sizes, modes, liveness, titles and commands, and the server's pid, and
// hands that listing to the consumer (EventListed; not the first, whose
// EventResync asks for a listing anew). Ticks never
// overlap: the next waits for this one, PollInterval apart, or more when
// listing is slow and every tick lists (see tickGap). See step for when a
// changed pane is reported.
//
// Most ticks list nothing. The kernel says which panes' terminals were
// written to (ttyFeed) and when a terminal is made or freed (then the tick
// lists in full at once); the tmux server's read count says whether
// anything at all was written (ioReader). A tick lists panes only when
// something was written that no terminal event explains (a pane whose
// terminal is not watched, a terminal's own echo), when events were lost,
// and, while panes are written to, every LayoutEvery for their layout.
func (w *Watcher) poll(ctx context.Context, why string) error {
	lister := &Client{Server: w.server}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var (
		tracks    map[string]*paneTrack
		topo      string // of the last full listing
		ids       string // of the last listing of either kind
		up        bool
		lastErr   string
		serverPID int
		lastFull  time.Time
		lastLight time.Time
		cost      time.Duration // a light listing's wall time, smoothed
		fullCost  time.Duration // a full listing's wall time, smoothed
		// The server's read count at the last tick, and whether it can be
		// read (see ioReader).
		reads uint64
		gate  bool
		io    ioReader
		// feed reports writes to panes' terminals while feedOn; unwatched
		// counts live panes whose terminal it could not watch, and
		// relist asks the next tick to list (panes just watched may have
		// written before their watch was added).
		feed      *ttyFeed
		feedOn    bool
		unwatched int
		relist    bool
		wrote     = map[string]bool{}
		// unexplained is a server read that no terminal event
		// explains, not yet looked at by a listing.
		unexplained bool
		// lastWrite is the last tick that saw a pane write, events
		// lost, or no way to tell writes (see tickGap and fullGap).
		lastWrite time.Time
	)
	defer io.close()
	if !w.opts.NoReadGate && !w.opts.NoTTYEvents {
		var err error
		if feed, err = newTTYFeed(); err != nil {
			w.log.Info("tmux: no terminal write events; listing panes at every tick the server reads", "err", err)
			feed = nil
		}
		defer feed.close()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		start := time.Now()
		evented := feedOn && unwatched == 0
		clear(wrote)
		lost, topology := false, false
		if feedOn {
			var err error
			topology, lost, err = feed.drain(wrote)
			if err != nil {
				w.log.Info("tmux: terminal write events failed; listing panes at every tick the server reads", "err", err)
				feedOn = false
			}
		}
		// A terminal made or freed is not this server's write: any
		// terminal anywhere on the machine makes one, and a new pane of
		// this server writes soon enough.
		if len(wrote) > 0 || lost || !gate {
			lastWrite = start
		}
		quiet := start.Sub(lastWrite) >= quietAfter
		// A terminal made or freed (a pane came or went, or its process
		// exited) lists in full now, not a second later.
		full := !up || topology || start.Sub(lastFull) >= w.fullGap(evented, !lastWrite.After(lastFull), fullCost)
		var (
			sigs  []PaneSignal
			panes []Pane
			err   error
		)
		if !full && !w.opts.NoReadGate {
			moved := true // the server read something since the last tick
			if gate {
				if n, ok := io.read(serverPID); ok {
					moved, reads = n != reads, n
				}
			}
			list := lost || relist
			if evented {
				// A read no event explains waits for its listing
				// rather than being forgotten.
				unexplained = unexplained || (gate && moved && len(wrote) == 0)
				list = list || w.listOnEvents(start.Sub(lastLight), cost, len(wrote) > 0, gate, unexplained)
			} else {
				list = list || moved
			}
			if !list {
				w.skipped.Add(1)
				w.tickEvents(tracks, wrote, time.Now())
				timer.Reset(max(0, w.tickGap(evented, quiet, cost)-time.Since(start)))
				continue
			}
		}
		if !full {
			w.listed.Add(1)
			sigs, err = lister.ListPaneSignals(ctx)
			switch {
			case err != nil:
			case idsOf(sigs) != ids:
				full = true // a pane came, went or moved: names and commands are needed
			default:
				cost = smooth(cost, time.Since(start))
				lastLight, relist, unexplained = start, false, false
			}
		}
		if full {
			w.full.Add(1)
			// Read before listing: what the server reads after this is
			// news for the next tick (a full listing makes it read /proc,
			// so the next tick lists unless terminal events explain it).
			if gate {
				reads, _ = io.read(serverPID)
			}
			began := time.Now()
			if panes, err = lister.ListPanes(ctx); err == nil {
				fullCost = smooth(fullCost, time.Since(began))
				sigs, lastFull, lastLight, unexplained = make([]PaneSignal, len(panes)), time.Now(), start, false
				for i, p := range panes {
					sigs[i] = p.Signal()
				}
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if isExecError(err) || errors.Is(err, ErrTooOld) {
			return err
		}
		now := time.Now()
		if full && err == nil && len(panes) > 0 && up && panes[0].ServerPID != serverPID {
			// The server was killed and another started between two
			// ticks: the same as seeing it gone, then back.
			up, tracks = false, nil
			feed.sync(nil)
			w.q.push(Event{Kind: EventDisconnected, Reason: "the tmux server was restarted"})
			timer.Reset(0)
			continue
		}
		if err == nil && len(sigs) == 0 {
			// A server with no sessions exits; treat the gap as no server.
			err = &Error{Op: "list-panes", Server: w.server.String(), Msg: "no sessions", Err: ErrNoServer}
		}
		switch {
		case err != nil:
			if s := err.Error(); s != lastErr {
				lastErr = s
				w.log.Info("tmux: polling failed", "err", err)
			}
			if errors.Is(err, ErrNoServer) && up {
				up, tracks = false, nil
				feed.sync(nil)
				w.q.push(Event{Kind: EventDisconnected, Reason: err.Error()})
			}
		case !up:
			up, lastErr, serverPID = true, "", panes[0].ServerPID
			gate = isTmuxServer(serverPID)
			feedOn = feed != nil && sameMountNamespace(serverPID)
			tracks = make(map[string]*paneTrack, len(panes))
			for _, p := range panes {
				tracks[p.ID] = &paneTrack{sig: p.Signal(), rest: restOf(p), settle: 1}
			}
			if feedOn {
				_, unwatched = feed.sync(panes)
				relist = true
			}
			topo, ids = topologyOf(panes), idsOf(sigs)
			w.log.Info("tmux: watching", "sessions", countSessions(panes), "panes", len(panes), "terminal_events", feedOn && unwatched == 0)
			w.q.push(Event{Kind: EventResync, Reason: "polling: " + why})
		default:
			if full {
				w.q.push(Event{Kind: EventListed, Panes: panes})
			}
			cur := make(map[string]*paneTrack, len(sigs))
			var reported []string
			for i, s := range sigs {
				tr, ok := tracks[s.ID]
				if !ok {
					tr = &paneTrack{sig: s, settle: 1}
					if full {
						tr.rest = restOf(panes[i])
					}
					cur[s.ID] = tr
					continue
				}
				cur[s.ID] = tr
				rest := false
				if full {
					r := restOf(panes[i])
					rest, tr.rest = r != tr.rest, r
				}
				if w.step(tr, &s, rest, wrote[s.ID], now) {
					reported = append(reported, s.ID)
				}
			}
			reported = w.piggyback(cur, reported, now)
			for _, id := range reported {
				w.q.push(Event{Kind: EventOutput, PaneID: id, Streaming: cur[id].streaming})
			}
			tracks, ids = cur, idsOf(sigs)
			if full && feedOn {
				var added int
				was := unwatched
				added, unwatched = feed.sync(panes)
				relist = relist || added > 0
				if unwatched > 0 && was == 0 {
					w.log.Info("tmux: some panes' terminals cannot be watched; listing panes at every tick the server reads", "panes", unwatched)
				}
			}
			// Sessions, windows and panes come and go, are renamed or
			// moved: the consumer lists panes again.
			if full {
				if t := topologyOf(panes); t != topo {
					topo = t
					w.q.push(Event{Kind: EventSessionsChanged})
				}
			}
		}
		timer.Reset(max(0, w.tickGap(feedOn && unwatched == 0, quiet && up, cost)-time.Since(start)))
	}
}

// Listings returns how many full listings the watcher made, how many
// light ones (five numbers per pane), and how many light ones it skipped
// because the server had read nothing since the last listing.
func (w *Watcher) Listings() (full, light, skipped int64) {
	return w.full.Load(), w.listed.Load(), w.skipped.Load()
}

// tickEvents is a tick that listed nothing: panes in wrote were written
// to, and no other pane changed.
func (w *Watcher) tickEvents(tracks map[string]*paneTrack, wrote map[string]bool, now time.Time) {
	var reported []string
	for id, tr := range tracks {
		if !tr.held && tr.settle == 1 && !wrote[id] {
			// Nothing to report and nothing to count: a pane at rest
			// (its quiet ticks matter only while it is held).
			continue
		}
		if w.step(tr, nil, false, wrote[id], now) {
			reported = append(reported, id)
		}
	}
	for _, id := range w.piggyback(tracks, reported, now) {
		w.q.push(Event{Kind: EventOutput, PaneID: id, Streaming: tracks[id].streaming})
	}
}

// piggyback adds to the panes a tick reports (which the consumer
// captures in one batch, one connection to the server), once every
// BusyGap (the beat), every pane that changed since its last report.
// Panes that keep changing then fall into step with the beat (a pane
// joining is reported once early) and are captured together, once a
// BusyGap, instead of each on its own connection at its own moment; and
// no pane is reported more often than that for it (adding them to every
// tick that reports something would, with many panes, report each one
// every half BusyGap). It only adds reports: a piggybacked pane stays
// held, so it is still reported once it goes quiet (what it shows, or its
// agent's transcript, may not be final yet).
func (w *Watcher) piggyback(tracks map[string]*paneTrack, reported []string, now time.Time) []string {
	if now.Sub(w.beat) < w.opts.BusyGap {
		return reported
	}
	w.beat = now
	in := make(map[string]bool, len(reported))
	for _, id := range reported {
		in[id] = true
	}
	added := false
	for id, tr := range tracks {
		if !in[id] && tr.held {
			tr.reported, tr.streaming = now, !tr.fresh
			tr.fresh = false
			reported = append(reported, id)
			added = true
		}
	}
	if added {
		slices.Sort(reported)
	}
	return reported
}

// listOnEvents reports whether a tick, when terminal events tell every
// live pane's writes, lists panes' signatures: since is the time since the
// last listing, cost a listing's smoothed wall time, wrote whether any
// pane was written to, gate whether the server's read count can be read,
// and unexplained whether it read something no event explains (a
// terminal's echo, a write through /dev/tty) since the last listing.
// While panes are written to, it lists every LayoutEvery for their
// layout; otherwise for an unexplained read, or, without a read count,
// every LayoutEvery for such writes. Never closer than pollGap.
func (w *Watcher) listOnEvents(since, cost time.Duration, wrote, gate, unexplained bool) bool {
	if since < w.pollGap(cost) {
		return false
	}
	if !wrote && gate {
		return unexplained
	}
	return since >= w.opts.LayoutEvery
}

// pollGap is the shortest time between two listings: PollInterval, or
// longer when a listing takes more than 1/pollShare of it (many panes, a
// busy server or machine), up to maxPoll, so polling never takes more
// than about that share of the tmux server's time.
func (w *Watcher) pollGap(cost time.Duration) time.Duration {
	return min(max(w.opts.PollInterval, cost*pollShare), max(w.opts.PollInterval, maxPoll))
}

// tickGap is the time from one tick's start to the next. When terminal
// events tell every pane's writes, a tick that lists nothing costs the
// server nothing (one read of the kernel's queue), so ticks stay
// PollInterval apart and only listings are spaced by pollGap: a pane that
// goes quiet is seen within PollInterval however many panes there are.
// Otherwise every tick may list, and ticks are pollGap apart.
//
// A fleet where no pane has written for quietAfter ticks quietTicks
// times further apart: a prompt follows an agent's output (its spinner,
// its stream), which keeps the ticks PollInterval apart, so only the
// first change after a long quiet spell (someone typing, an agent
// starting) is seen up to that much later.
func (w *Watcher) tickGap(evented, quiet bool, cost time.Duration) time.Duration {
	if evented {
		if quiet {
			return quietTicks * w.opts.PollInterval
		}
		return w.opts.PollInterval
	}
	return w.pollGap(cost)
}

const (
	quietAfter = 5 * time.Second
	quietTicks = 4
)

// fullGap is the shortest time between two full listings: FullEvery,
// or, when terminal events tell every pane's writes (and terminals made
// and freed), longer when a full listing takes more than 1/fullShare of
// it, up to maxFull, and maxFull when no pane has written since the last
// one (quiet): an idle fleet's names, commands and sizes change only by a
// client's command (a rename, a resize), seen up to maxFull late. Without
// terminal events a full listing is how an exited process and a new pane
// are seen, so it stays FullEvery apart.
func (w *Watcher) fullGap(evented, quiet bool, cost time.Duration) time.Duration {
	if !evented {
		return w.opts.FullEvery
	}
	if quiet {
		return max(w.opts.FullEvery, maxFull)
	}
	return min(max(w.opts.FullEvery, cost*fullShare), max(w.opts.FullEvery, maxFull))
}

const (
	pollShare = 20
	maxPoll   = 250 * time.Millisecond
	fullShare = 100
	maxFull   = 5 * time.Second
)

// smooth folds a new sample into a running average (weight 1/4).
func smooth(avg, sample time.Duration) time.Duration {
	if avg == 0 {
		return sample
	}
	return avg + (sample-avg)/4
}

// idsOf sums up which panes exist: a change means a listing in full is
// due. (Panes that move to another window or session are seen by the next
// full listing.)
func idsOf(sigs []PaneSignal) string {
	var b strings.Builder
	for _, s := range sigs {
		b.WriteString(s.ID)
	}
	return b.String()
}

// topologyOf sums up where every pane is: a change means sessions,
// windows or panes were added, removed, renamed or moved.
func topologyOf(panes []Pane) string {
	var b strings.Builder
	for _, p := range panes {
		b.WriteString(p.ID)
		b.WriteByte(0)
		b.WriteString(p.SessionID)
		b.WriteByte(0)
		b.WriteString(p.SessionName)
		b.WriteByte(0)
		b.WriteString(p.WindowID)
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(p.WindowIndex))
		b.WriteByte(0)
		b.WriteString(p.WindowName)
		b.WriteByte(0)
		b.WriteString(strconv.FormatBool(p.WindowActive))
		b.WriteByte(0)
		b.WriteString(strconv.FormatBool(p.Active))
		b.WriteByte(1)
	}
	return b.String()
}

func countSessions(panes []Pane) int {
	seen := map[string]bool{}
	for _, p := range panes {
		seen[p.SessionID] = true
	}
	return len(seen)
}

// wait sleeps for d, or until kicked; false means ctx is done.
func wait(ctx context.Context, kick <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-kick:
	case <-t.C:
	}
	return true
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

// isExecError reports a tmux binary that cannot be run at all: retrying
// will not help, so the Watcher gives up.
func isExecError(err error) bool { return errors.Is(err, ErrNoTmux) }
