package wake

import (
	"fmt"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// Raise records ev and delivers it, unless its condition (ev.Key) is already
// active: then it returns the wake raised for it and false. The store sets ID,
// Seq, Time and clears the ack fields. err is nil, a validation error (nothing
// raised), ErrClosed, or a [*JournalError] (raised and delivered, not yet on disk).
func (s *Store) Raise(ev api.Wake) (api.Wake, bool, error) {
	if !ev.Reason.Known() {
		return api.Wake{}, false, fmt.Errorf("raise: unknown reason %q (known: %v)", ev.Reason, api.Reasons())
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return api.Wake{}, false, ErrClosed
	}
	if id, ok := s.st.active[ev.Key]; ok && ev.Key != "" {
		cur := s.st.byID[id].Clone()
		s.mu.Unlock()
		return cur, false, nil
	}
	if s.st.seq >= maxSeq {
		s.mu.Unlock()
		return api.Wake{}, false, fmt.Errorf("raise: wake seq %d is the largest an id can hold; move %s aside to start a new journal", s.st.seq, JournalFile)
	}
	e := ev.Clone()
	e.Seq = s.st.seq + 1
	e.Time = s.clock()
	e.ID = eventID(e.Seq, e.Time)
	if e.Key == "" {
		e.Key = e.ID
	}
	e.Acked, e.AckedAt, e.AckedBy = false, time.Time{}, ""
	rec, err := s.encode(record{Type: recRaise, Event: &e})
	if err != nil {
		s.mu.Unlock()
		return api.Wake{}, false, fmt.Errorf("raise: %w", err)
	}
	stored := e.Clone()
	ok, resolved := s.st.raise(&stored)
	if !ok {
		// Only a state the journal reader should have refused gets here:
		// never deliver a wake the store does not hold.
		s.mu.Unlock()
		return api.Wake{}, false, fmt.Errorf("raise: wake %s cannot be stored after seq %d; restart system3 to re-read the journal", e.ID, s.st.lastRaised)
	}
	msgs := []api.WakeMessage{{Kind: api.WakeRaised, Event: e.Clone()}}
	for _, prev := range resolved {
		msgs = append(msgs, api.WakeMessage{Kind: api.WakeResolved, Event: prev.Clone()})
	}
	rev := s.enqueue(rec, msgs...)
	s.mu.Unlock()
	return e, true, s.commit(rev)
}

// Resolve ends the condition key, so the next Raise for it makes a new
// wake, and marks its wake resolved, saying why ("answered by cli: Yes",
// "the prompt changed"). It does not acknowledge the wake. Resolving a key
// that is not active does nothing.
func (s *Store) Resolve(key, why string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	id, ok := s.st.active[key]
	if !ok {
		s.mu.Unlock()
		return nil
	}
	at := s.clock()
	rec, err := s.encode(record{Type: recClear, Key: key, ID: id, At: at, By: why})
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("resolve %s: %w", key, err)
	}
	s.st.clear(key, id, why, at)
	rev := s.enqueue(rec, api.WakeMessage{Kind: api.WakeResolved, Event: s.st.byID[id].Clone()})
	s.prune()
	s.mu.Unlock()
	return s.commit(rev)
}

// Ack acknowledges wake id on behalf of by ("tui", "cli", "mcp:<client>").
// Acknowledging twice does nothing and returns the wake as first acknowledged.
// The condition stays active: while it lasts it is not raised again.
func (s *Store) Ack(id, by string) (api.Wake, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return api.Wake{}, ErrClosed
	}
	ev := s.st.byID[id]
	if ev == nil {
		s.mu.Unlock()
		return api.Wake{}, fmt.Errorf("ack %s: %w (acknowledged wakes are forgotten after %d newer ones)", id, api.ErrUnknownWake, s.cfg.KeepAcked)
	}
	if ev.Acked {
		e := ev.Clone()
		s.mu.Unlock()
		return e, nil
	}
	at := s.clock()
	rec, err := s.encode(record{Type: recAck, IDs: []string{id}, By: by, At: at})
	if err != nil {
		s.mu.Unlock()
		return api.Wake{}, fmt.Errorf("ack %s: %w", id, err)
	}
	s.st.ack(id, by, at)
	e := ev.Clone()
	rev := s.enqueue(rec, api.WakeMessage{Kind: api.WakeAcked, Event: e.Clone()})
	s.prune()
	s.mu.Unlock()
	return e, s.commit(rev)
}

// AckAll acknowledges every unacknowledged wake and returns them.
func (s *Store) AckAll(by string) ([]api.Wake, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	var ids []string
	for _, ev := range s.st.events {
		if !ev.Acked {
			ids = append(ids, ev.ID)
		}
	}
	if len(ids) == 0 {
		s.mu.Unlock()
		return nil, nil
	}
	at := s.clock()
	rec, err := s.encode(record{Type: recAck, IDs: ids, By: by, At: at})
	if err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("ack all: %w", err)
	}
	evs := make([]api.Wake, len(ids))
	msgs := make([]api.WakeMessage, len(ids))
	for i, id := range ids {
		ev, _ := s.st.ack(id, by, at)
		evs[i] = ev.Clone()
		msgs[i] = api.WakeMessage{Kind: api.WakeAcked, Event: ev.Clone()}
	}
	rev := s.enqueue(rec, msgs...)
	s.prune()
	s.mu.Unlock()
	return evs, s.commit(rev)
}

// RenameSession gives the unacknowledged wakes of pane that carry session
// name from the name to, so a reader filtering by the session's new name
// finds them, after a restart too. It returns the wakes it renamed; each is
// delivered again as a Raised message with Replayed set, which a subscriber
// already holding the wake treats idempotently, by ID.
func (s *Store) RenameSession(pane, from, to string) ([]api.Wake, error) {
	if to == "" || from == to {
		return nil, nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	var ids []string
	for _, ev := range s.st.events {
		if !ev.Acked && ev.Pane == pane && ev.Session == from {
			ids = append(ids, ev.ID)
		}
	}
	if len(ids) == 0 {
		s.mu.Unlock()
		return nil, nil
	}
	rec, err := s.encode(record{Type: recRename, IDs: ids, Session: to, At: s.clock()})
	if err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("rename session %s: %w", from, err)
	}
	s.st.rename(ids, to)
	evs := make([]api.Wake, len(ids))
	msgs := make([]api.WakeMessage, len(ids))
	for i, id := range ids {
		evs[i] = s.st.byID[id].Clone()
		msgs[i] = api.WakeMessage{Kind: api.WakeRaised, Event: evs[i].Clone(), Replayed: true}
	}
	rev := s.enqueue(rec, msgs...)
	s.mu.Unlock()
	return evs, s.commit(rev)
}
