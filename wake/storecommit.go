package wake

import (
	"errors"
	"slices"

	"github.com/system3-dev/system3/internal/api"
)

// publishHealth runs with flushMu held.
func (s *Store) publishHealth() {
	if s.j == nil {
		return
	}
	h := Health{Path: s.j.path, ErrAt: s.j.errAt, Pending: len(s.j.pending), CompactErr: s.j.compactErr}
	if s.j.err != nil {
		e := *s.j.err
		h.Err = &e
	}
	s.mu.Lock()
	s.health = h
	s.mu.Unlock()
}

// Sync retries writing the changes a failing journal kept in memory. It
// returns nil when everything is on disk.
func (s *Store) Sync() error {
	if s.j == nil {
		return nil
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.flushLocked()
	if s.j.err != nil {
		return s.j.err
	}
	return nil
}

// encode returns nil for a store in memory: there is nothing to write.
func (s *Store) encode(r record) ([]byte, error) {
	if s.j == nil {
		return nil, nil
	}
	return encodeRecord(r)
}

// enqueue must be called with mu held, right after the state change, so queue
// order is state order.
func (s *Store) enqueue(rec []byte, msgs ...api.WakeMessage) uint64 {
	s.rev++
	s.queue = append(s.queue, change{rev: s.rev, rec: rec, msgs: msgs})
	return s.rev
}

// prune runs with mu held. It lets acknowledged wakes exceed KeepAcked by a
// margin so the O(n) pass runs once per many acks, not on every one.
func (s *Store) prune() {
	if s.st.prunable > s.cfg.KeepAcked+s.cfg.KeepAcked/8+16 {
		s.st.prune(s.cfg.KeepAcked)
	}
}

// commit returns once change rev is written and delivered. The first caller
// to get flushMu writes every queued change with one fsync and delivers them;
// callers whose change it carried find their work done (group commit).
func (s *Store) commit(rev uint64) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if s.done < rev {
		s.flushLocked()
	}
	if s.j == nil || s.j.durable >= rev {
		return nil
	}
	if s.j.err != nil {
		return s.j.err
	}
	return &JournalError{Path: s.j.path, Err: errors.New("not written"), Pending: len(s.j.pending)}
}

// flushLocked runs with flushMu held.
func (s *Store) flushLocked() {
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	subs := slices.Clone(s.subs)
	s.mu.Unlock()

	if s.j != nil {
		for _, c := range batch {
			s.j.add(c.rev, c.rec)
		}
		s.j.flush()
	}
	s.deliver(batch, subs)
	if s.j != nil && s.j.err == nil {
		s.maybeCompact()
	}
	s.publishHealth()
}

func (s *Store) deliver(batch []change, subs []*Subscription) {
	for _, c := range batch {
		for _, sub := range subs {
			for _, m := range c.msgs {
				sub.send(c.rev, m)
			}
		}
		s.done = c.rev
	}
}

// maybeCompact runs with flushMu held. The snapshot and the queue are taken
// together under mu, so the snapshot holds exactly the queued changes: they
// are durable once it is renamed in place, and are appended as usual if the
// compaction fails.
func (s *Store) maybeCompact() {
	if s.j == nil || !s.j.needsCompaction(s.cfg.CompactBytes, s.cfg.CompactRecords) {
		return
	}
	s.compact()
}

// compact rewrites the journal from the state; see maybeCompact.
func (s *Store) compact() {
	s.mu.Lock()
	s.st.prune(s.cfg.KeepAcked)
	records, err := s.st.snapshot(s.clock())
	batch := s.queue
	s.queue = nil
	rev := s.rev
	subs := slices.Clone(s.subs)
	s.mu.Unlock()

	if err == nil {
		err = s.j.rewrite(records, rev)
	}
	s.j.compactErr = err
	if err != nil {
		// Wait for the journal to double again rather than retry on every write.
		s.j.compactedSize = s.j.size
	}
	if err != nil && s.j.durable < rev {
		for _, c := range batch {
			s.j.add(c.rev, c.rec)
		}
		s.j.flush()
	}
	s.deliver(batch, subs)
}
