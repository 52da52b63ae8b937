package wake

import (
	"context"
	"slices"
	"sync"

	"github.com/system3-dev/system3/internal/api"
)

// Subscription delivers messages about the wakes its filter selects. Read C
// until it is closed, which happens on [Subscription.Close], when the
// context given to [Store.Subscribe] is done, or on [Store.Close].
type Subscription struct {
	// C delivers first the unacknowledged wakes that existed when the
	// subscription started (Replayed), then every change as it happens.
	C <-chan api.WakeMessage

	store  *Store
	filter api.WakeFilter
	from   uint64 // changes up to this rev are in the replay; set before registration
	limit  int    // messages C may hold; one more slot is kept for a Resync

	mu       sync.Mutex
	ch       chan api.WakeMessage
	closed   bool
	stop     func() bool // unregisters the context callback
	sent     uint64
	markerAt uint64 // value of sent just after the last Resync was queued
	missed   uint64
}

// Subscribe starts a subscription. The replay and the live messages come from
// one snapshot taken under the store's lock: no change is missed between them
// and none is delivered twice. The replay shows the state in memory, which may
// include a change whose fsync is in progress.
//
// A subscriber that falls behind never slows the store: once its buffer
// (Config.Buffer messages, plus room for the replay) is full, messages are
// dropped and counted, and one Resync message is queued telling it to re-read
// [Store.Unacked]. Filter.IncludeAcked adds acknowledged wakes to the replay;
// Acked messages are sent either way, so a view of unacked wakes can drop them.
func (s *Store) Subscribe(ctx context.Context, f api.WakeFilter) (*Subscription, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	f.Limit = 0
	f.Reasons = slices.Clone(f.Reasons)

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	f = s.cursorLocked(f)
	replay := s.list(f)
	sub := &Subscription{store: s, filter: f, from: s.rev, limit: len(replay) + s.cfg.Buffer}
	sub.ch = make(chan api.WakeMessage, sub.limit+1)
	sub.C = sub.ch
	for _, ev := range replay {
		sub.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: ev, Replayed: true}
		sub.sent++
	}
	s.subs = append(s.subs, sub)
	s.mu.Unlock()

	// AfterFunc starts no goroutine until ctx is done, and then only for the
	// time Close takes.
	stop := context.AfterFunc(ctx, sub.Close)
	sub.mu.Lock()
	if sub.closed {
		stop()
	} else {
		sub.stop = stop
	}
	sub.mu.Unlock()
	return sub, nil
}

// Missed returns how many messages were dropped because C was full.
func (sub *Subscription) Missed() uint64 {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.missed
}

// Close ends the subscription and closes C. It is safe to call more than once.
func (sub *Subscription) Close() {
	s := sub.store
	s.mu.Lock()
	if i := slices.Index(s.subs, sub); i >= 0 {
		s.subs = slices.Delete(s.subs, i, i+1)
	}
	s.mu.Unlock()
	sub.shut()
}

func (sub *Subscription) shut() {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.closed {
		return
	}
	sub.closed = true
	close(sub.ch)
	if sub.stop != nil {
		sub.stop()
	}
}

func (sub *Subscription) wants(m api.WakeMessage) bool {
	if !sub.filter.Matches(&m.Event) {
		return false
	}
	switch m.Kind {
	case api.WakeAcked:
		return true // the subscriber may hold the wake as unacked
	case api.WakeResolved:
		return sub.filter.IncludeAcked || !m.Event.Acked // it may hold it as open
	default:
		return sub.filter.Selects(&m.Event)
	}
}

// send never blocks: it is called by the flushing goroutine, whose caller is a
// monitor. Only one goroutine sends at a time (the store's flushMu) and the
// reader only takes messages out, so the len checks below cannot be outrun:
// while the marker is not queued len(ch) <= limit, leaving the Resync its slot.
func (sub *Subscription) send(rev uint64, m api.WakeMessage) {
	if rev <= sub.from || !sub.wants(m) {
		return
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.closed {
		return
	}
	// While a Resync is still queued, the reader has yet to re-read the
	// state, and that read will include this change: drop it.
	if sub.markerAt > 0 && sub.sent-uint64(len(sub.ch)) < sub.markerAt {
		sub.missed++
		return
	}
	if len(sub.ch) < sub.limit {
		sub.ch <- m
		sub.sent++
		return
	}
	sub.missed++
	sub.ch <- api.WakeMessage{Kind: api.WakeResync, Missed: sub.missed}
	sub.sent++
	sub.markerAt = sub.sent
}

// Wait returns the oldest unacknowledged wake f selects (open, unless
// f.IncludeResolved), waiting for one if there is none. It returns ctx's error when ctx is done first, and ErrClosed
// if the store closes.
func (s *Store) Wait(ctx context.Context, f api.WakeFilter) (api.Wake, error) {
	f.IncludeAcked = false
	s.mu.Lock()
	f = s.cursorLocked(f)
	s.mu.Unlock()
	sub, err := s.Subscribe(ctx, f)
	if err != nil {
		return api.Wake{}, err
	}
	defer sub.Close()
	for {
		select {
		case m, ok := <-sub.C:
			if !ok {
				if err := ctx.Err(); err != nil {
					return api.Wake{}, err
				}
				return api.Wake{}, ErrClosed
			}
			switch m.Kind {
			case api.WakeRaised:
				// It may have been acknowledged or resolved since it was
				// queued.
				if cur, ok := s.Get(m.Event.ID); ok && f.Selects(&cur) {
					return cur, nil
				}
			case api.WakeResync:
				if evs, _ := s.List(f); len(evs) > 0 {
					return evs[0], nil
				}
			}
		case <-ctx.Done():
			return api.Wake{}, ctx.Err()
		}
	}
}
