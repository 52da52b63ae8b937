package remote

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
)

// feed is what a followed link knows of its host: its sessions and its
// unacknowledged wakes, kept current by two streams from its daemon
// (registry updates and wake messages) over two long-lived ssh processes.
type feed struct {
	mu       sync.Mutex
	live     bool // both streams are open and their state was read
	snap     api.Snapshot
	sessions map[string]api.Session // by pane id
	unacked  map[string]api.Wake    // by wake id
	// first is closed once the feed has first synchronised or failed,
	// so a report asked for just after start waits for the first answer.
	first     chan struct{}
	firstOnce sync.Once
}

func newFeed() *feed {
	return &feed{first: make(chan struct{})}
}

func (f *feed) settled() { f.firstOnce.Do(func() { close(f.first) }) }

// install replaces what is known with a snapshot (nil: keep the sessions)
// and a list of unacknowledged wakes (nil: keep the wakes).
func (f *feed) install(snap *api.Snapshot, evs []api.Wake) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if snap != nil {
		f.snap = *snap
		f.snap.Sessions = nil
		f.sessions = make(map[string]api.Session, len(snap.Sessions))
		for _, s := range snap.Sessions {
			f.sessions[s.Pane] = s
		}
	}
	if evs != nil {
		f.unacked = make(map[string]api.Wake, len(evs))
		for _, ev := range evs {
			if !ev.Acked {
				f.unacked[ev.ID] = ev
			}
		}
	}
}

// apply takes one registry update: a session's change, or the host's
// status. An update read before the snapshot it follows may be older than
// what the snapshot says: the newer one stays.
func (f *feed) apply(u api.Update) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sessions == nil {
		f.sessions = map[string]api.Session{}
	}
	switch u.Kind {
	case api.SessionAdded, api.SessionChanged:
		if old, ok := f.sessions[u.Session.Pane]; ok && old.Updated.After(u.Session.Updated) {
			return
		}
		f.sessions[u.Session.Pane] = u.Session
	case api.SessionRemoved:
		delete(f.sessions, u.Session.Pane)
	case api.StatusChanged:
		if st := u.Status; st != nil {
			f.snap.Server, f.snap.Running, f.snap.Problem = st.Server, st.Running, st.Problem
		}
	}
}

// applyWake takes one wake message.
func (f *feed) applyWake(m api.WakeMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unacked == nil {
		f.unacked = map[string]api.Wake{}
	}
	switch m.Kind {
	case api.WakeRaised, api.WakeResolved:
		// A cleared wake (its prompt went away) stays until acknowledged.
		if m.Event.Acked {
			delete(f.unacked, m.Event.ID)
		} else if _, known := f.unacked[m.Event.ID]; known || m.Kind == api.WakeRaised {
			f.unacked[m.Event.ID] = m.Event
		}
	case api.WakeAcked:
		delete(f.unacked, m.Event.ID)
	}
}

func (f *feed) setLive(live bool) {
	f.mu.Lock()
	f.live = live
	f.mu.Unlock()
}

// state returns whether the feed is live, and what it knows: the
// sessions in tmux order, the unacknowledged wakes oldest first.
func (f *feed) state() (bool, api.Snapshot, []api.Wake) {
	f.mu.Lock()
	defer f.mu.Unlock()
	snap := f.snap
	snap.Sessions = make([]api.Session, 0, len(f.sessions))
	for _, s := range f.sessions {
		snap.Sessions = append(snap.Sessions, s)
	}
	slices.SortFunc(snap.Sessions, func(a, b api.Session) int {
		if c := cmpString(a.Session, b.Session); c != 0 {
			return c
		}
		if a.WindowIndex != b.WindowIndex {
			return a.WindowIndex - b.WindowIndex
		}
		if a.PaneIndex != b.PaneIndex {
			return a.PaneIndex - b.PaneIndex
		}
		return cmpString(a.Pane, b.Pane)
	})
	evs := make([]api.Wake, 0, len(f.unacked))
	for _, ev := range f.unacked {
		evs = append(evs, ev)
	}
	slices.SortFunc(evs, func(a, b api.Wake) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return f.live, snap, evs
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Change is one change a followed host reported: a registry update, a
// wake message, or (neither) a change of the host as a whole: it
// connected, disconnected or was read again, so what is known of it must
// be read again.
type Change struct {
	Update *api.Update
	Wake   *api.WakeMessage
}

// errStreamEnded: the host's daemon ended a stream, or the link under it
// closed; a ping says which.
var errStreamEnded = errors.New("the host's daemon ended the stream")

// follow keeps l's feed current until ctx ends: it opens both streams,
// reads the host's state, then applies every update; when a stream ends
// it marks the host disconnected (with why, from a ping) and connects
// again after a backoff (1 s doubling to 30 s, back to 1 s once the host
// answered). changed is called after every change.
func (l *Link) follow(ctx context.Context, changed func(Change)) {
	backoff := api.Backoff{First: MinBackoff, Max: MaxBackoff}
	for ctx.Err() == nil {
		before := l.State().LastSeen
		err := l.followOnce(ctx, changed)
		l.feed.setLive(false)
		if ctx.Err() != nil || errors.Is(err, ipc.ErrClientClosed) {
			l.feed.settled()
			return
		}
		if errors.Is(err, errStreamEnded) {
			// Ask why: a failed ssh explains itself.
			pctx, cancel := context.WithTimeout(ctx, DefaultDeadline)
			if perr := l.Client.Ping(pctx); perr != nil {
				err = perr
			}
			cancel()
		}
		if LinkFailure(err) || errors.Is(err, errStreamEnded) {
			l.mu.Lock()
			l.lastErr = err
			l.mu.Unlock()
		} else {
			_ = l.Observe(ctx, err)
		}
		if l.State().LastSeen.After(before) {
			backoff.Reset()
		}
		l.feed.settled()
		changed(Change{})
		if !backoff.Wait(ctx) {
			return
		}
	}
}

// followOnce is one connection of follow: it returns why it ended.
func (l *Link) followOnce(ctx context.Context, changed func(Change)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Streams first, then the state they change: nothing between is lost.
	var (
		ups              <-chan api.Update
		msgs             <-chan api.WakeMessage
		snap             api.Snapshot
		evs              []api.Wake
		uerr, merr, serr error
		werr             error
		wg               sync.WaitGroup
	)
	// Each call is its own ssh process: start them together.
	wg.Go(func() { ups, uerr = l.Client.Watch(ctx) })
	wg.Go(func() { msgs, merr = l.Client.SubscribeWakes(ctx, api.WakeFilter{}) })
	wg.Wait()
	if err := firstErr(uerr, merr); err != nil {
		return err
	}
	wg.Go(func() { snap, serr = l.Client.Snapshot(ctx) })
	wg.Go(func() { evs, werr = l.Client.Wakes(ctx, api.WakeFilter{}) })
	wg.Wait()
	if err := firstErr(serr, werr); err != nil {
		return err
	}
	if evs == nil {
		evs = []api.Wake{}
	}
	l.feed.install(&snap, evs)
	l.feed.setLive(true)
	l.seen()
	l.feed.settled()
	changed(Change{})
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case u, ok := <-ups:
			if !ok {
				return errStreamEnded
			}
			if u.Kind == api.Resync {
				s, err := l.Client.Snapshot(ctx)
				if err != nil {
					return err
				}
				l.feed.install(&s, nil)
				changed(Change{})
			} else {
				l.feed.apply(u)
				changed(Change{Update: &u})
			}
		case m, ok := <-msgs:
			if !ok {
				return errStreamEnded
			}
			if m.Kind == api.WakeResync {
				evs, err := l.Client.Wakes(ctx, api.WakeFilter{})
				if err != nil {
					return err
				}
				if evs == nil {
					evs = []api.Wake{}
				}
				l.feed.install(nil, evs)
				changed(Change{})
			} else {
				l.feed.applyWake(m)
				changed(Change{Wake: &m})
			}
		}
		l.seen()
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
