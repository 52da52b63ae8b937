package learn

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// MaxWisdom caps the items Wisdom returns.
const MaxWisdom = 20

// Wisdom picks the patterns and anti-patterns worth putting in a new
// agent's first prompt for the task query: Reflect's ranking over both
// kinds, best first, at most limit (1..MaxWisdom; 0 means 5).
func (s *Store) Wisdom(ctx context.Context, query string, limit int) ([]api.LearnItem, error) {
	if limit <= 0 {
		limit = 5
	}
	limit = min(limit, MaxWisdom)
	words := terms(query, maxTerms)
	if len(words) == 0 {
		return []api.LearnItem{}, nil
	}
	pats, err := s.search(ctx, api.LearningPattern, words, limit)
	if err != nil {
		return nil, err
	}
	anti, err := s.search(ctx, api.LearningAntiPattern, words, limit)
	if err != nil {
		return nil, err
	}
	all := append(pats, anti...)
	slices.SortStableFunc(all, func(a, b api.LearnItem) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return int(b.ID - a.ID)
	})
	return all[:min(limit, len(all))], nil
}

// RecordInjected records that the learnings itemIDs were injected into
// the first prompt of initiative (a spawned agent's task), so their
// injected counts show what agents were told.
func (s *Store) RecordInjected(ctx context.Context, initiative string, itemIDs []int64) error {
	initiative = strings.TrimSpace(initiative)
	if initiative == "" {
		return invalid("initiative is empty; name the task the items were injected into")
	}
	if len(itemIDs) == 0 {
		return nil
	}
	now := ms(s.now())
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, id := range itemIDs {
			res, err := tx.ExecContext(ctx, `UPDATE learnings SET injected = injected + 1 WHERE id = ?`, id)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return invalid("no learning %d; pass ids from Wisdom or reflect", id)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO injections(at, initiative, learning_id) VALUES (?, ?, ?)`, now, initiative, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record injected learnings: %w", err)
	}
	s.lastWrite.Store(now)
	return nil
}

// Learnings lists live learnings of one kind (both when kind is empty),
// the most seen first.
func (s *Store) Learnings(ctx context.Context, kind string, limit int) ([]api.LearnItem, error) {
	if limit <= 0 {
		limit = 50
	}
	q := `SELECT ` + itemColumns + ` FROM learnings WHERE stale = 0`
	args := []any{}
	if kind != "" {
		q += ` AND kind = ?`
		args = append(args, kind)
	}
	q += ` ORDER BY seen DESC, last_seen DESC, id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list learnings: %w", err)
	}
	defer rows.Close()
	out, err := scanItems(rows)
	if err != nil {
		return nil, fmt.Errorf("list learnings: %w", err)
	}
	return out, nil
}

// Summary returns the n most recent outcomes, the n most seen patterns
// and anti-patterns, and every capability.
func (s *Store) Summary(ctx context.Context, n int) (api.LearnSummary, error) {
	var sum api.LearnSummary
	var err error
	if sum.Outcomes, err = s.Outcomes(ctx, api.OutcomeFilter{Limit: n}); err != nil {
		return sum, err
	}
	if sum.Patterns, err = s.Learnings(ctx, api.LearningPattern, n); err != nil {
		return sum, err
	}
	if sum.AntiPatterns, err = s.Learnings(ctx, api.LearningAntiPattern, n); err != nil {
		return sum, err
	}
	sum.Capabilities, err = s.Capabilities(ctx, "", "")
	return sum, err
}
