package wake

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// state is the truth the store serves and the journal rebuilds. Every change
// goes through the methods below, shared by live operations and journal
// replay, so what is replayed after a restart is what was served before it.
type state struct {
	events     []*api.Wake // ascending Seq
	byID       map[string]*api.Wake
	active     map[string]string // condition key -> ID of the wake raised for it
	seq        uint64            // last seq handed out (or recorded by a compaction)
	lastRaised uint64            // Seq of the last raise applied, to reject out-of-order records
	acked      int               // acknowledged events in events
	// prunable counts acknowledged events whose condition is over: the only
	// ones prune may drop. Kept up to date so prune need not scan to find out
	// there is nothing to do.
	prunable int
}

func newState() *state {
	return &state{byID: map[string]*api.Wake{}, active: map[string]string{}}
}

// raise adds ev. It returns false for an ID already known (a record written
// twice) or a seq not above the last one (only a damaged journal has that:
// accepting it would make the active key depend on file order). It also
// returns the information wakes ev resolves (informationResolved).
func (st *state) raise(ev *api.Wake) (bool, []*api.Wake) {
	if _, dup := st.byID[ev.ID]; dup || ev.Seq <= st.lastRaised {
		return false, nil
	}
	resolved := st.informationResolved(ev)
	st.events = append(st.events, ev)
	st.byID[ev.ID] = ev
	// A wake keyed by its own ID (one raised without a key) is no condition:
	// nothing can raise it again, so it must not hold an active key forever.
	if ev.Key != ev.ID {
		if prev := st.byID[st.active[ev.Key]]; prev != nil {
			// Replaced as the key's wake (replaying a compaction, or a
			// journal written before clears said why): its condition
			// ended before this one was raised.
			resolve(prev, ev.Time, "its condition ended")
			if prev.Acked {
				st.prunable++
			}
		}
		st.active[ev.Key] = ev.ID
	}
	st.lastRaised = ev.Seq
	st.seq = max(st.seq, ev.Seq)
	if ev.Acked {
		st.acked++
		if !st.isActive(ev) {
			st.prunable++
		}
	}
	return true, resolved
}

// ack reports whether the event exists and whether this call acknowledged it.
func (st *state) ack(id, by string, at time.Time) (ev *api.Wake, changed bool) {
	ev = st.byID[id]
	if ev == nil || ev.Acked {
		return ev, false
	}
	ev.Acked, ev.AckedAt, ev.AckedBy = true, at, by
	st.acked++
	if !st.isActive(ev) {
		st.prunable++
	}
	return ev, true
}

// clear ends the condition key only if wake id still holds it, so a clear
// record replayed twice cannot end a newer wake's condition. The wake is
// resolved, saying why.
func (st *state) clear(key, id, why string, at time.Time) bool {
	if cur, ok := st.active[key]; !ok || cur != id {
		return false
	}
	delete(st.active, key)
	if ev := st.byID[id]; ev != nil {
		resolve(ev, at, why)
		if ev.Acked {
			st.prunable++
		}
	}
	return true
}

// informationResolved resolves the open wakes of ev's reason raised before
// it, when that reason is information (heartbeats, summaries): each is
// resolved by the next. It returns them.
func (st *state) informationResolved(ev *api.Wake) []*api.Wake {
	if ev.Reason.NeedsPerson() {
		return nil
	}
	var out []*api.Wake
	for _, prev := range st.events {
		if prev != ev && prev.Reason == ev.Reason && !prev.Resolved {
			resolve(prev, ev.Time, "the next "+string(ev.Reason))
			out = append(out, prev)
		}
	}
	return out
}

// resolve marks ev resolved once; a wake resolved already keeps its first
// resolution.
func resolve(ev *api.Wake, at time.Time, why string) {
	if ev.Resolved {
		return
	}
	if why == "" {
		why = "its condition ended"
	}
	ev.Resolved, ev.ResolvedAt, ev.Resolution = true, at, why
}

// rename gives the wakes ids the session name session; unknown ids are
// normal (pruned by a compaction).
func (st *state) rename(ids []string, session string) {
	for _, id := range ids {
		if ev := st.byID[id]; ev != nil {
			ev.Session = session
		}
	}
}

func (st *state) isActive(ev *api.Wake) bool {
	id, ok := st.active[ev.Key]
	return ok && id == ev.ID
}

// prune drops the oldest acknowledged wakes whose condition is over, beyond
// keep. Unacknowledged wakes must survive; those whose condition is active
// answer Raise for their key.
func (st *state) prune(keep int) {
	drop := st.prunable - keep
	if drop <= 0 {
		return
	}
	st.events = slices.DeleteFunc(st.events, func(ev *api.Wake) bool {
		if drop == 0 || !ev.Acked || st.isActive(ev) {
			return false
		}
		drop--
		st.acked--
		st.prunable--
		delete(st.byID, ev.ID)
		return true
	})
}

// snapshot encodes the state as journal records that replay to the same state:
// the seq counter, every event (its ack inside it), then a clear for each key
// whose last event is no longer active.
func (st *state) snapshot(at time.Time) ([][]byte, error) {
	out := make([][]byte, 0, len(st.events)+1)
	add := func(r record) error {
		b, err := encodeRecord(r)
		if err == nil {
			out = append(out, b)
		}
		return err
	}
	if err := add(record{Type: recSeq, Seq: st.seq}); err != nil {
		return nil, err
	}
	last := map[string]*api.Wake{}
	for _, ev := range st.events {
		if err := add(record{Type: recRaise, Event: ev}); err != nil {
			return nil, err
		}
		last[ev.Key] = ev
	}
	for _, ev := range st.events {
		if last[ev.Key] == ev && !st.isActive(ev) && ev.Key != ev.ID {
			when := ev.ResolvedAt
			if when.IsZero() {
				when = at
			}
			if err := add(record{Type: recClear, Key: ev.Key, ID: ev.ID, At: when, By: ev.Resolution}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Record types of the journal.
const (
	recRaise = "raise"
	recAck   = "ack"
	recClear = "clear"
	recSeq   = "seq"
	// recRename gives open wakes the new name of their session.
	recRename = "rename"
)

// recordVersion is written in every record so a future format change can be
// recognised; readers today go by Type alone.
const recordVersion = 1

type record struct {
	V     int       `json:"v"`
	Type  string    `json:"type"`
	Event *api.Wake `json:"event,omitempty"`
	IDs   []string  `json:"ids,omitempty"`
	ID    string    `json:"id,omitempty"`
	Key   string    `json:"key,omitempty"`
	By    string    `json:"by,omitempty"`
	At    time.Time `json:"at,omitzero"`
	Seq   uint64    `json:"seq,omitempty"`
	// Session is the new session name of a rename record.
	Session string `json:"session,omitempty"`
}

func encodeRecord(r record) ([]byte, error) {
	r.V = recordVersion
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
