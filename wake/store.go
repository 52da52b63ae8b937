package wake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// Defaults for [Config].
const (
	defaultBuffer         = 256
	defaultKeepAcked      = 500
	defaultCompactBytes   = 4 << 20
	defaultCompactRecords = 20000
	defaultRetryInterval  = 5 * time.Second
)

// ErrClosed is returned by a store that was closed. An unknown wake is
// api.ErrUnknownWake.
var ErrClosed = errors.New("wake store closed")

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
