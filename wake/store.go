package wake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/system3-dev/system3/monitor/api"
)

// Defaults for [Config].
const (
	defaultBuffer         = 256
	defaultKeepAcked      = 500
	defaultCompactBytes   = 4 << 20
	defaultCompactRecords = 20000
	defaultRetryInterval  = 5 * time.Second
)

// Errors returned by the store.
var (
	ErrNotFound = errors.New("no such wake")
	ErrClosed   = errors.New("wake store closed")
)

// Config configures [Open]. The zero value is a store in memory with defaults.
type Config struct {
	// Dir is the state dir that holds the journal (wakes.jsonl). Empty keeps
	// wakes in memory only. The caller should hold [AcquireLock] on it.
	Dir string
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Buffer is each subscriber's buffer, in messages (default 256).
	Buffer int
	// KeepAcked is how many acknowledged wakes are kept, in memory and in the
	// journal, for recent-wakes views (default 500).
	KeepAcked int
	// The journal is compacted when it passes CompactBytes (default 4 MiB) or
	// CompactRecords records (default 20000).
	CompactBytes   int64
	CompactRecords int
	// RetryInterval is how often [Store.Run] retries a failing journal (default 5s).
	RetryInterval time.Duration

	ops fileOps // tests substitute failing files
}

// Health describes the journal, for the UI to show when it is not OK.
type Health struct {
	Path string // empty when the store is in memory only
	// Err is set while the journal cannot be written, and cleared by the next
	// successful write. Its message is one sentence fit for the user.
	Err   *JournalError
	ErrAt time.Time
	// Pending counts changes applied in memory but not yet on disk.
	Pending int
	// CompactErr is the last compaction failure; the journal stays correct but
	// keeps growing until a compaction succeeds.
	CompactErr error
}

// OK reports whether every change is on disk.
func (h Health) OK() bool { return h.Err == nil && h.Pending == 0 }

// Store holds the wakes, journals them and delivers them. Its methods are safe
// for concurrent use.
//
// Durability: Raise, Clear, Ack and AckAll return only after their journal
// record has been written and fsynced, batched with any concurrent changes
// (group commit). If that fails they return a [*JournalError] (errors.Is
// ErrNotDurable): the change is applied and delivered anyway, and written
// later, in order, when the journal works again.
type Store struct {
	cfg   Config
	clock func() time.Time

	// mu guards the state, the queue of changes not yet flushed and the
	// subscribers. It is never held during I/O.
	mu     sync.Mutex
	st     *state
	rev    uint64 // one per change, to order delivery and skip replayed ones
	queue  []change
	subs   []*Subscription
	closed bool
	health Health // copied from the journal after each flush, so Health never waits for I/O

	// flushMu serialises journal writes and delivery, so subscribers see
	// changes in the order they were made. Lock order: flushMu, then mu.
	flushMu sync.Mutex
	done    uint64   // highest rev flushed and delivered
	j       *journal // nil in memory only
}

// change is one state change waiting to be written and delivered.
type change struct {
	rev  uint64
	rec  []byte
	msgs []api.WakeMessage
}

// Open reads the journal in cfg.Dir (if any) and returns a store serving what
// it held. Lines it cannot read are skipped and returned as warnings. Open
// fails only if an existing journal cannot be read; a journal that cannot be
// written is reported by [Store.Health] and the store works in memory meanwhile.
func Open(cfg Config) (*Store, []Warning, error) {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = defaultBuffer
	}
	if cfg.KeepAcked <= 0 {
		cfg.KeepAcked = defaultKeepAcked
	}
	if cfg.CompactBytes <= 0 {
		cfg.CompactBytes = defaultCompactBytes
	}
	if cfg.CompactRecords <= 0 {
		cfg.CompactRecords = defaultCompactRecords
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = defaultRetryInterval
	}
	if cfg.ops.openAppend == nil {
		cfg.ops = osFileOps
	}
	s := &Store{cfg: cfg, clock: func() time.Time { return cfg.Clock().UTC().Round(0) }, st: newState()}
	if cfg.Dir == "" {
		return s, nil, nil
	}

	path := filepath.Join(cfg.Dir, JournalFile)
	s.j = &journal{path: path, ops: cfg.ops, clock: s.clock}
	var warnings []Warning
	f, err := os.Open(path)
	switch {
	case err == nil:
		ld, err := loadJournal(f, path, cfg.KeepAcked)
		f.Close()
		if err != nil {
			return nil, ld.warnings, fmt.Errorf("cannot read the wake journal %s: %w", path, err)
		}
		s.st, warnings = ld.st, ld.warnings
		s.j.records, s.j.size = ld.records, ld.size
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		// No journal yet; if the dir cannot be made, Health will say so.
	default:
		return nil, nil, fmt.Errorf("cannot read the wake journal %s: %w", path, err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		s.j.err, s.j.errAt = &JournalError{Path: path, Err: err}, s.clock()
		s.publishHealth()
		return s, warnings, nil
	}
	removeStaleTemps(cfg.Dir)
	// Open now rather than at the first wake, so Health shows a read-only or
	// full state dir from the start.
	if err := s.j.open(); err != nil {
		s.j.err, s.j.errAt = &JournalError{Path: path, Err: err}, s.clock()
	}
	s.flushMu.Lock()
	if len(warnings) > 0 && s.j.err == nil {
		warnings = s.quarantine(warnings)
	} else {
		s.maybeCompact()
	}
	s.publishHealth()
	s.flushMu.Unlock()
	return s, warnings, nil
}

// quarantine copies the lines the journal reader rejected to the quarantine
// file, then rewrites the journal without them, so they are reported once and
// never read again. If either step fails the journal keeps them, and they are
// reported again at the next start. It runs with flushMu held.
func (s *Store) quarantine(warnings []Warning) []Warning {
	dir := filepath.Dir(s.j.path)
	qpath := filepath.Join(dir, QuarantineFile)
	if err := quarantine(dir, warnings, s.clock()); err != nil {
		return append(warnings, Warning{Path: s.j.path, Problem: fmt.Sprintf("could not copy the skipped lines to %s (%v), so they stay in the journal; free space or fix the state dir's permissions", qpath, err)})
	}
	s.compact()
	if s.j.compactErr != nil {
		return append(warnings, Warning{Path: s.j.path, Problem: fmt.Sprintf("copied the skipped lines to %s but could not rewrite the journal without them (%v); they stay in it", qpath, s.j.compactErr)})
	}
	for i := range warnings {
		warnings[i].Quarantine = qpath
	}
	return warnings
}

// Path returns the journal's path, or "" for a store in memory.
func (s *Store) Path() string {
	if s.j == nil {
		return ""
	}
	return s.j.path
}

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
		return api.Wake{}, fmt.Errorf("ack %s: %w (acknowledged wakes are forgotten after %d newer ones)", id, ErrNotFound, s.cfg.KeepAcked)
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

// Run retries a failing journal every RetryInterval until ctx is done, so
// pending changes reach the disk even when no new wake comes to push them.
func (s *Store) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.RetryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if !s.Health().OK() {
				s.Sync()
			}
		}
	}
}

// Close writes what is pending, closes the journal and every subscription.
// Changes after Close fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()

	s.flushMu.Lock()
	s.flushLocked()
	var err error
	if s.j != nil {
		if s.j.err != nil {
			err = s.j.err
		}
		if cerr := s.j.close(); err == nil && cerr != nil {
			err = fmt.Errorf("close the wake journal: %w", cerr)
		}
	}
	s.flushMu.Unlock()

	s.mu.Lock()
	subs := s.subs
	s.subs = nil
	s.mu.Unlock()
	for _, sub := range subs {
		sub.shut()
	}
	return err
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
