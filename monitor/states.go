package monitor

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tmux"
)

// StatesFile, in the state dir, is each pane's state and when it began, as
// the monitors last knew them. Monitors that start afresh (a dashboard
// taking over from a daemon that died, a daemon started again) carry on
// those times for the panes still in the same state, so every view's FOR
// timer, and the idle and error clocks, go on instead of starting again.
const StatesFile = "states.json"

// The monitors write the record when a state changes, at most every
// statesGap (a fleet of streaming agents changes state many times a
// second, and the record only carries when each state began), at least
// every statesEvery, and when they stop; a record older than carryWithin
// says nothing of what happened since, and is not carried on.
const (
	statesGap   = time.Second
	statesEvery = 10 * time.Second
	carryWithin = time.Minute
)

type statesDoc struct {
	Version int `json:"version"`
	// At is when the monitors that wrote the record last ran.
	At    time.Time             `json:"at"`
	Panes map[string]paneRecord `json:"panes"`
}

// paneRecord is one pane's state. The pane's process and its tmux server
// tell it is still the same pane: tmux numbers panes again from %0 after
// a restart.
type paneRecord struct {
	ServerPID int       `json:"server_pid"`
	PID       int       `json:"pid"`
	State     api.State `json:"state"`
	Kind      string    `json:"kind,omitempty"`
	Prompt    string    `json:"prompt,omitempty"`
	Since     time.Time `json:"since"`
	// Resets and ResetsAt are a usage limit's words for its reset and the
	// time they were read as, so that the same words on the same screen
	// keep meaning that time (see limitMark).
	Resets   string    `json:"resets,omitempty"`
	ResetsAt time.Time `json:"resets_at,omitzero"`
	// Resumed is the reset of the last usage limit system3 continued the
	// agent after: monitors started again do not continue it twice.
	Resumed time.Time `json:"resumed,omitzero"`
}

// statesLog is the record the monitors keep (see StatesFile). Only Run's
// goroutine writes it; carried is read and emptied under the supervisor's
// lock.
type statesLog struct {
	// carried is what the last monitors recorded, for the panes not yet
	// seen by these.
	carried map[string]paneRecord
	saved   map[string]paneRecord
	savedAt time.Time
	err     string
}

// loadStates reads the last monitors' record, if it is recent. A missing
// or damaged file is no record: it is only a convenience, and the next
// save replaces it.
func (s *Supervisor) loadStates(now time.Time) {
	if s.cfg.StatesPath == "" {
		return
	}
	b, err := os.ReadFile(s.cfg.StatesPath)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var doc statesDoc
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil {
		s.cfg.Logger.Warn("states file unreadable; every state starts now", "path", s.cfg.StatesPath, "err", err)
		return
	}
	if age := now.Sub(doc.At); doc.Version != 1 || age > carryWithin || age < -carryWithin {
		s.cfg.Logger.Debug("states file too old to carry on", "path", s.cfg.StatesPath, "at", doc.At)
		return
	}
	s.states.carried = doc.Panes
}

// carryLocked gives a pane these monitors have just found the record the
// last ones kept of it, if it is still the same pane.
func (s *Supervisor) carryLocked(st *paneState, p tmux.Pane) {
	r, ok := s.states.carried[p.ID]
	if !ok {
		return
	}
	delete(s.states.carried, p.ID)
	if r.PID == p.PID && r.ServerPID == p.ServerPID {
		st.carry = &r
	}
}

// carrySinceLocked, at a pane's first classification, keeps the time its
// state began as recorded when the state is the one recorded.
func carrySinceLocked(st *paneState) {
	r := st.carry
	if r == nil {
		return
	}
	st.carry = nil
	ss := &st.sess
	if ss.State == r.State && ss.Kind == r.Kind && ss.Prompt == r.Prompt && r.Since.Before(ss.Since) {
		ss.Since = r.Since
	}
	if ss.State == r.State && st.limit.text != "" && st.limit.text == r.Resets && !r.ResetsAt.IsZero() {
		st.limit.at, ss.ResetsAt = r.ResetsAt, r.ResetsAt
	}
	if r.Resumed.After(st.resumed) {
		st.resumed = r.Resumed
	}
}

// saveStates writes the record when it changed and the last one is
// statesGap old, or when the last one is statesEvery old (so a record says
// the monitors were running). A failure is logged once per change: the
// record is a convenience.
func (s *Supervisor) saveStates(now time.Time) {
	s.saveStatesAt(now, statesGap)
}

// saveStatesAt is saveStates with the least time between two records
// (0 when the monitors stop: the last record is written whatever the
// time).
func (s *Supervisor) saveStatesAt(now time.Time, gap time.Duration) {
	if s.cfg.StatesPath == "" || (!s.states.savedAt.IsZero() && now.Sub(s.states.savedAt) < gap) {
		return
	}
	s.mu.Lock()
	panes := make(map[string]paneRecord, len(s.panes))
	for id, st := range s.panes {
		ss := st.sess
		panes[id] = paneRecord{ServerPID: st.pane.ServerPID, PID: st.pane.PID, State: ss.State, Kind: ss.Kind, Prompt: ss.Prompt, Since: ss.Since,
			Resets: st.limit.text, ResetsAt: st.limit.at, Resumed: st.resumed}
	}
	s.mu.Unlock()
	if maps.Equal(panes, s.states.saved) && now.Sub(s.states.savedAt) < statesEvery && !s.states.savedAt.IsZero() {
		return
	}
	err := writeStates(s.cfg.StatesPath, statesDoc{Version: 1, At: now, Panes: panes})
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		s.states.saved, s.states.savedAt = panes, now
	}
	if msg != s.states.err && msg != "" {
		s.cfg.Logger.Warn("cannot keep the panes' states", "path", s.cfg.StatesPath, "err", err)
	}
	s.states.err = msg
}

// writeStates writes the record atomically.
func writeStates(path string, doc statesDoc) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
