package tasks

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Config configures a Watcher. Only Root is required.
type Config struct {
	// Root is the directory holding one directory per task list
	// (~/.claude/tasks). It may not exist yet: the watcher then watches its
	// nearest existing ancestor and picks the root up when it appears.
	Root string
	// TodosDir is the legacy TodoWrite directory (~/.claude/todos), or "" to
	// ignore legacy lists.
	TodosDir string

	// Debounce is how long after the first change to a file it is read, so a
	// burst of writes costs one read. Default 25ms.
	Debounce time.Duration
	// RetryDelay is how long a file that failed to read or parse is given
	// before it is read again and, if still bad, reported: a writer may have
	// been caught half-way. Default 250ms.
	RetryDelay time.Duration
	// PollInterval is how often everything is rescanned when fsnotify cannot
	// watch something (no inotify instances or watches left). Default 2s.
	PollInterval time.Duration
	// Buffer is the default subscription buffer. Default 256.
	Buffer int

	// Now stamps events and errors. Default time.Now.
	Now func() time.Time
	// Logger receives what the user cannot act on in the model (watch
	// failures, lost kernel events). Default: discard.
	Logger *slog.Logger
}

// Watcher keeps the task model of a root up to date and publishes
// transitions. Create it with NewWatcher, start Run, subscribe with Subscribe
// and read the state with Snapshot.
type Watcher struct {
	cfg       Config
	log       *slog.Logger
	ready     chan struct{}
	readyOnce sync.Once
	ran       atomic.Bool

	mu     sync.Mutex
	snap   map[string]List // by list path; never mutated, cloned on the way out
	subs   map[*Subscription]struct{}
	closed bool

	// Owned by Run's goroutine.
	eng       *engine
	fw        *fsnotify.Watcher
	pending   map[string]pendingRead
	next      time.Time // earliest pending deadline
	ancestors map[string]string
	poll      bool
	warned    map[string]bool

	pollOnly bool // tests: behave as if fsnotify were unavailable
}

type pendingRead struct {
	at    time.Time
	retry bool // a timed retry, not caused by an event
}

// NewWatcher returns a watcher for cfg.Root and cfg.TodosDir; nothing happens
// until Run.
func NewWatcher(cfg Config) *Watcher {
	if cfg.Debounce <= 0 {
		cfg.Debounce = 25 * time.Millisecond
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 250 * time.Millisecond
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 256
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := newEngine(cleanPath(cfg.Root), cleanPath(cfg.TodosDir))
	e.now = cfg.Now
	e.retryDelay = cfg.RetryDelay
	w := &Watcher{
		cfg:       cfg,
		log:       log,
		ready:     make(chan struct{}),
		snap:      make(map[string]List),
		subs:      make(map[*Subscription]struct{}),
		eng:       e,
		pending:   make(map[string]pendingRead),
		ancestors: make(map[string]string),
		warned:    make(map[string]bool),
	}
	e.hooks = (*watchHooks)(w)
	return w
}

// Ready is closed once Run has loaded the initial state (or has failed).
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Snapshot returns a deep copy of every list, sorted by id. Before Ready it
// is empty.
func (w *Watcher) Snapshot() []List {
	w.mu.Lock()
	out := make([]List, 0, len(w.snap))
	for _, l := range w.snap {
		out = append(out, l.Clone())
	}
	w.mu.Unlock()
	sortLists(out)
	return out
}

// Lookup returns a deep copy of the list at path (List.Path, as in
// Event.ListPath), without copying every other list as Snapshot does.
func (w *Watcher) Lookup(path string) (List, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.snap[path]
	if !ok {
		return List{}, false
	}
	return l.Clone(), true
}

// Subscribe returns a subscription with room for buffer events (Config.Buffer
// if buffer <= 0). Subscribe before Run, or before reading Snapshot, to miss
// nothing. After Run has returned, the subscription's channel is closed.
func (w *Watcher) Subscribe(buffer int) *Subscription {
	if buffer <= 0 {
		buffer = w.cfg.Buffer
	}
	// One more slot, kept for EventOverflow.
	s := &Subscription{w: w, ch: make(chan Event, buffer+1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		close(s.ch)
		return s
	}
	w.subs[s] = struct{}{}
	return s
}

// Run loads the initial state, then follows changes until ctx is done, and
// returns nil then. It fails only when misused (called twice, no Config.Root).
// When fsnotify cannot be used at all, it polls instead, and says so in the
// log. When Run returns, subscription channels are closed.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.ran.CompareAndSwap(false, true) {
		return errors.New("tasks: Watcher.Run called twice")
	}
	if w.eng.root == "" {
		w.shutdown()
		return errors.New("tasks: Watcher needs Config.Root")
	}
	defer w.shutdown()

	var fw *fsnotify.Watcher
	err := errors.New("polling forced by a test")
	if !w.pollOnly {
		fw, err = fsnotify.NewWatcher()
	}
	if err != nil {
		w.log.Warn("cannot watch task files; polling instead", "err", err, "interval", w.cfg.PollInterval)
		w.poll = true
	} else {
		w.fw = fw
		defer fw.Close()
	}

	e := w.eng
	e.quiet = true
	e.syncAll(false)
	w.publish(e.finish())
	e.quiet = false
	w.readyOnce.Do(func() { close(w.ready) })
	if e.rootErr != nil {
		w.log.Info("task root not readable yet; waiting for it", "root", e.root, "err", e.rootErr)
	}

	var fsEvents <-chan fsnotify.Event
	var fsErrors <-chan error
	if w.fw != nil {
		fsEvents, fsErrors = w.fw.Events, w.fw.Errors
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var ticker *time.Ticker
	var tick <-chan time.Time
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		if w.next.IsZero() {
			timer.Stop()
		} else {
			timer.Reset(time.Until(w.next))
		}
		if w.poll && ticker == nil {
			ticker = time.NewTicker(w.cfg.PollInterval)
			tick = ticker.C
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fsEvents:
			if !ok {
				fsEvents, fsErrors = nil, nil
				w.poll = true
				continue
			}
			w.onEvent(ev)
		case err, ok := <-fsErrors:
			if !ok {
				fsEvents, fsErrors = nil, nil
				w.poll = true
				continue
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.log.Warn("the kernel dropped file events; rescanning task files")
				w.rescan()
			} else {
				w.log.Warn("file watcher error", "err", err)
			}
		case <-timer.C:
			w.flush()
		case <-tick:
			w.rescan()
		}
	}
}

func (w *Watcher) shutdown() {
	w.readyOnce.Do(func() { close(w.ready) }) // nobody waits forever on a failed Run
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for s := range w.subs {
		close(s.ch)
	}
	clear(w.subs)
}

func (w *Watcher) onEvent(ev fsnotify.Event) {
	p := filepath.Clean(ev.Name)
	if w.eng.classify(p) == kindNone {
		return
	}
	w.schedule(p, time.Now().Add(w.cfg.Debounce), false)
}

// schedule asks for p to be read at the latest at at. Reads are throttled,
// not postponed: more events before the deadline do not move it, so a file
// rewritten continuously is still read every Debounce.
func (w *Watcher) schedule(p string, at time.Time, retry bool) {
	if old, ok := w.pending[p]; ok {
		if old.at.Before(at) {
			at = old.at
		}
		retry = retry && old.retry
	}
	w.pending[p] = pendingRead{at: at, retry: retry}
	if w.next.IsZero() || at.Before(w.next) {
		w.next = at
	}
}

// flush reads everything due, then publishes the result in one go.
func (w *Watcher) flush() {
	now := time.Now()
	var due []string
	w.next = time.Time{}
	for p, r := range w.pending {
		if !r.at.After(now) {
			due = append(due, p)
			continue
		}
		if w.next.IsZero() || r.at.Before(w.next) {
			w.next = r.at
		}
	}
	// Roots before lists before files, so a file is read in its list's
	// current state; by path within each, for a stable order of events.
	slices.SortFunc(due, func(a, b string) int {
		if ka, kb := w.eng.classify(a), w.eng.classify(b); ka != kb {
			return int(ka) - int(kb)
		}
		return strings.Compare(a, b)
	})
	reads := make([]pendingRead, len(due))
	for i, p := range due {
		reads[i] = w.pending[p]
		delete(w.pending, p)
	}
	for i, p := range due {
		w.eng.process(p, reads[i].retry)
	}
	w.publish(w.eng.finish())
}

// rescan re-reads whatever changed since the last look, for when events
// were lost or cannot be had.
func (w *Watcher) rescan() {
	w.eng.syncAll(true)
	w.publish(w.eng.finish())
}

// publish updates the snapshot with the lists the engine changed, then
// delivers events; a subscriber that sees an event finds it in Snapshot.
func (w *Watcher) publish(events []Event) {
	touched := w.eng.takeTouched()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range touched {
		if ls := w.eng.lists[p]; ls != nil {
			w.snap[p] = ls.built
		} else {
			delete(w.snap, p)
		}
	}
	for _, ev := range events {
		for s := range w.subs {
			s.send(ev)
		}
	}
}

// watchHooks implements hooks for the engine, on the Run goroutine.
type watchHooks Watcher

func (h *watchHooks) watch(dir string) {
	w := (*Watcher)(h)
	if w.fw == nil {
		return
	}
	if err := w.fw.Add(dir); err != nil {
		if isMissing(err) {
			return // the caller finds out by listing it
		}
		// Most likely out of inotify watches: fall back to polling.
		if !w.warned[dir] {
			w.warned[dir] = true
			w.log.Warn("cannot watch a task directory; polling for changes", "dir", dir, "err", err, "interval", w.cfg.PollInterval)
		}
		w.poll = true
	}
}

func (h *watchHooks) unwatch(dir string) {
	w := (*Watcher)(h)
	if w.fw != nil {
		_ = w.fw.Remove(dir) // already gone with the directory, usually
	}
}

func (h *watchHooks) waitFor(target string) {
	w := (*Watcher)(h)
	a := filepath.Dir(target)
	for !isDir(a) && filepath.Dir(a) != a {
		a = filepath.Dir(a)
	}
	old := w.ancestors[target]
	if old == a {
		return
	}
	w.ancestors[target] = a
	h.watch(a)
	h.release(old)
}

func (h *watchHooks) found(target string) {
	w := (*Watcher)(h)
	if old, ok := w.ancestors[target]; ok {
		delete(w.ancestors, target)
		h.release(old)
	}
}

// release stops watching an ancestor no longer waited on, unless it is
// watched for another reason.
func (h *watchHooks) release(dir string) {
	w := (*Watcher)(h)
	if dir == "" {
		return
	}
	for _, a := range w.ancestors {
		if a == dir {
			return
		}
	}
	if dir == w.eng.root || dir == w.eng.todos || w.eng.lists[dir] != nil {
		return
	}
	h.unwatch(dir)
}

func (h *watchHooks) retry(p string) {
	w := (*Watcher)(h)
	w.schedule(p, time.Now().Add(w.cfg.RetryDelay), true)
}
