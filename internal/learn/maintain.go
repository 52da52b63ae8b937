package learn

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the Maintainer.
const (
	DefaultIdleAfter  = time.Minute
	DefaultEvery      = 30 * time.Second
	DefaultStaleAfter = 180 * 24 * time.Hour
	// MergeSimilarity is the word overlap (Jaccard) from which two
	// learnings of the same kind and domain are one.
	MergeSimilarity = 0.8
)

// Maintainer does the store's idle work: once nothing has happened for
// IdleAfter, every Every it checks orchestrator health (Health), merges
// duplicate learnings, ages out stale ones and recomputes capabilities.
// Touch reports real work: a pass under way stops at once and the idle
// clock starts again.
type Maintainer struct {
	store *Store
	// Health checks the orchestrators (dead panes, stale task lists) in
	// idle time; nil skips it. It must return when ctx ends.
	Health func(ctx context.Context) error
	// IdleAfter, Every and StaleAfter: zero means the defaults.
	IdleAfter, Every, StaleAfter time.Duration
	// Log receives a line per pass that changed something; nil discards.
	Log *slog.Logger
	// OnPass, when set, is told about every pass (for tests and metrics).
	OnPass func(PassResult)

	touch      chan struct{}
	lastActive atomic.Int64 // Unix ns
	once       sync.Once
}

// PassResult is what one idle pass did.
type PassResult struct {
	At       time.Time
	Merged   int // learnings folded into a duplicate
	Aged     int // learnings aged out
	Updated  int // capabilities recomputed to new counts
	Yielded  bool
	Err      error
	HealthOK bool
}

// NewMaintainer returns the idle worker of s.
func NewMaintainer(s *Store) *Maintainer {
	return &Maintainer{store: s, touch: make(chan struct{}, 1)}
}

// Touch says real work just happened: the idle clock restarts and a pass
// under way stops.
func (m *Maintainer) Touch() {
	m.lastActive.Store(time.Now().UnixNano())
	select {
	case m.touch <- struct{}{}:
	default:
	}
}

func (m *Maintainer) defaults() {
	m.once.Do(func() {
		if m.IdleAfter <= 0 {
			m.IdleAfter = DefaultIdleAfter
		}
		if m.Every <= 0 {
			m.Every = DefaultEvery
		}
		if m.StaleAfter <= 0 {
			m.StaleAfter = DefaultStaleAfter
		}
		if m.Log == nil {
			m.Log = slog.New(slog.DiscardHandler)
		}
	})
}

// Run does idle passes until ctx ends.
func (m *Maintainer) Run(ctx context.Context) error {
	m.defaults()
	if m.lastActive.Load() == 0 {
		m.lastActive.Store(time.Now().UnixNano())
	}
	var lastPass time.Time
	for {
		active := time.Unix(0, m.lastActive.Load())
		if w := m.store.lastWrite.Load(); w != 0 && time.UnixMilli(w).After(active) {
			active = time.UnixMilli(w)
		}
		next := active.Add(m.IdleAfter)
		if !lastPass.IsZero() && lastPass.Add(m.Every).After(next) {
			next = lastPass.Add(m.Every)
		}
		if wait := time.Until(next); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-m.touch:
				t.Stop()
			case <-t.C:
			}
			continue
		}
		r := m.pass(ctx)
		lastPass = time.Now()
		if ctx.Err() != nil {
			return nil
		}
		if r.Err != nil {
			m.Log.Warn("learn: idle pass", "err", r.Err)
		} else if r.Merged+r.Aged+r.Updated > 0 {
			m.Log.Info("learn: idle pass", "merged", r.Merged, "aged", r.Aged, "capabilities", r.Updated)
		}
		if m.OnPass != nil {
			m.OnPass(r)
		}
	}
}

// pass runs the idle steps in order, stopping at the first Touch.
func (m *Maintainer) pass(ctx context.Context) PassResult {
	r := PassResult{At: time.Now()}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-m.touch:
			cancel()
		case <-done:
		}
	}()
	steps := []func(context.Context) error{
		func(ctx context.Context) error {
			if m.Health == nil {
				return nil
			}
			err := m.Health(ctx)
			r.HealthOK = err == nil
			return err
		},
		func(ctx context.Context) (err error) { r.Merged, err = m.store.mergeDuplicates(ctx); return },
		func(ctx context.Context) (err error) { r.Aged, err = m.store.ageOut(ctx, m.StaleAfter); return },
		func(ctx context.Context) (err error) { r.Updated, err = m.store.recomputeCapabilities(ctx); return },
	}
	for _, step := range steps {
		if pctx.Err() != nil {
			break
		}
		if err := step(pctx); err != nil && pctx.Err() == nil {
			r.Err = errors.Join(r.Err, err)
		}
	}
	r.Yielded = pctx.Err() != nil && ctx.Err() == nil
	if r.Yielded {
		r.Err = nil // a step cut short by real work is not a failure
	}
	return r
}

// MaintainOnce runs one idle pass now, for `system3` commands and tests.
func (s *Store) MaintainOnce(ctx context.Context) (PassResult, error) {
	m := NewMaintainer(s)
	m.defaults()
	r := m.pass(ctx)
	return r, r.Err
}

// mergeDuplicates folds learnings that say the same thing (same kind and
// domain, word overlap at least MergeSimilarity) into the most seen one.
func (s *Store) mergeDuplicates(ctx context.Context) (int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, kind, domain, norm, seen FROM learnings WHERE stale = 0 ORDER BY kind, domain, seen DESC, id`)
	if err != nil {
		return 0, fmt.Errorf("merge learnings: %w", err)
	}
	type lr struct {
		id         int64
		kind, dom  string
		words      map[string]bool
		seen       int
		mergedInto int64
	}
	var all []*lr
	for rows.Next() {
		var l lr
		var norm string
		if err := rows.Scan(&l.id, &l.kind, &l.dom, &norm, &l.seen); err != nil {
			rows.Close()
			return 0, fmt.Errorf("merge learnings: %w", err)
		}
		l.words = map[string]bool{}
		for _, w := range terms(norm, 1<<20) {
			l.words[w] = true
		}
		all = append(all, &l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("merge learnings: %w", err)
	}
	merged := 0
	for i, keep := range all {
		if keep.mergedInto != 0 {
			continue
		}
		var dups []int64
		for _, o := range all[i+1:] {
			if o.kind != keep.kind || o.dom != keep.dom {
				break
			}
			if o.mergedInto == 0 && jaccard(keep.words, o.words) >= MergeSimilarity {
				o.mergedInto = keep.id
				dups = append(dups, o.id)
			}
		}
		if len(dups) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return merged, err
		}
		err := s.tx(ctx, func(tx *sql.Tx) error {
			for _, d := range dups {
				if _, err := tx.ExecContext(ctx, `UPDATE learnings SET
					seen = seen + (SELECT seen FROM learnings WHERE id = ?1),
					injected = injected + (SELECT injected FROM learnings WHERE id = ?1),
					last_seen = MAX(last_seen, (SELECT last_seen FROM learnings WHERE id = ?1)),
					created = MIN(created, (SELECT created FROM learnings WHERE id = ?1))
					WHERE id = ?2 AND EXISTS (SELECT 1 FROM learnings WHERE id = ?1)`, d, keep.id); err != nil {
					return err
				}
				var from string
				if err := tx.QueryRowContext(ctx, `SELECT initiative FROM recall_words WHERE rowid = ?`, d).Scan(&from); err == nil {
					if err := addInitiative(ctx, tx, keep.id, from); err != nil {
						return err
					}
				}
				if _, err := tx.ExecContext(ctx, `UPDATE injections SET learning_id = ? WHERE learning_id = ?`, keep.id, d); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM learnings WHERE id = ?`, d); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return merged, fmt.Errorf("merge learnings: %w", err)
		}
		merged += len(dups)
	}
	return merged, nil
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// ageOut marks learnings not seen for staleAfter as stale: reflect and
// Wisdom leave them out; reporting the same learning again revives it.
func (s *Store) ageOut(ctx context.Context, staleAfter time.Duration) (int, error) {
	cut := ms(s.now().Add(-staleAfter))
	res, err := s.db.ExecContext(ctx, `UPDATE learnings SET stale = 1 WHERE stale = 0 AND last_seen < ?`, cut)
	if err != nil {
		return 0, fmt.Errorf("age out learnings: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
