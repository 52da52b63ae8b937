package wake

import (
	"github.com/system3-dev/system3/internal/api"
)

// Get returns wake id, acknowledged or not, if the store still holds it.
func (s *Store) Get(id string) (api.Wake, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.st.byID[id]
	if ev == nil {
		return api.Wake{}, false
	}
	return ev.Clone(), true
}

// Unacked returns the open, unacknowledged wakes, oldest first.
func (s *Store) Unacked() []api.Wake {
	evs, _ := s.List(api.WakeFilter{})
	return evs
}

// List returns the wakes f selects, oldest first.
func (s *Store) List(f api.WakeFilter) ([]api.Wake, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list(f), nil
}

func (s *Store) list(f api.WakeFilter) []api.Wake {
	f = s.cursorLocked(f)
	var out []api.Wake
	for _, ev := range s.st.events {
		if f.Selects(ev) {
			out = append(out, ev.Clone())
			if f.Limit > 0 && len(out) == f.Limit {
				break
			}
		}
	}
	return out
}

// cursorLocked reads a cursor beyond every seq this journal issued as
// none: it was taken from another journal (a state dir started afresh, a
// journal moved aside), and keeping it would skip every wake to come.
func (s *Store) cursorLocked(f api.WakeFilter) api.WakeFilter {
	if f.SinceSeq > s.st.seq {
		f.SinceSeq = 0
	}
	return f
}

// LastSeq returns the seq of the newest wake, the cursor a reader starts from
// to see only future wakes.
func (s *Store) LastSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.seq
}

// Health reports the state of the journal.
func (s *Store) Health() Health {
	if s.j == nil {
		return Health{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.health
	if h.Err != nil {
		// Changes made since the failure are not on disk either.
		h.Pending += len(s.queue)
		e := *h.Err
		e.Pending = h.Pending
		h.Err = &e
	}
	return h
}
