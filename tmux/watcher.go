package tmux

import (
	"context"
	"errors"
	"log/slog"
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
	// and changes no write shows (a mode entered, a title set by tmux, a
	// resize): full listings are then 5s apart (or FullEvery, if longer).
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

// Listings returns how many full listings the watcher made, how many
// light ones (five numbers per pane), and how many light ones it skipped
// because the server had read nothing since the last listing.
func (w *Watcher) Listings() (full, light, skipped int64) {
	return w.full.Load(), w.listed.Load(), w.skipped.Load()
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

// isExecError reports a tmux binary that cannot be run at all: retrying
// will not help, so the Watcher gives up.
func isExecError(err error) bool { return errors.Is(err, ErrNoTmux) }
