package learn

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// itemColumns are the learnings' columns an Item is read from, in
// scanItem's order.
const itemColumns = `id, kind, text, domain, seen, injected, created, last_seen, reported_by, stale`

func scanItem(r rowScanner) (api.LearnItem, error) {
	var it api.LearnItem
	var created, last int64
	err := r.Scan(&it.ID, &it.Kind, &it.Text, &it.Domain, &it.Seen, &it.Injected, &created, &last, &it.ReportedBy, &it.Stale)
	it.Created, it.LastSeen = fromMS(created), fromMS(last)
	return it, err
}

func scanItems(rows *sql.Rows) ([]api.LearnItem, error) {
	defer rows.Close()
	out := []api.LearnItem{}
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// ListLearnings lists the stored learnings, stale ones too, newest
// first: what an operator reviews, with who reported each one.
func (s *Store) ListLearnings(ctx context.Context, f api.LearningFilter) ([]api.LearnItem, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	q := `SELECT ` + itemColumns + ` FROM learnings`
	var args []any
	if f.Domain != "" {
		q += ` WHERE domain = ?`
		args = append(args, normDomain(f.Domain))
	}
	q += ` ORDER BY created DESC, id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list learnings: %w", err)
	}
	out, err := scanItems(rows)
	if err != nil {
		return nil, fmt.Errorf("list learnings: %w", err)
	}
	return out, nil
}

// DeleteLearnings deletes the learnings ids, all or none: an id that
// names no learning refuses the whole request. It returns the learnings
// as they were. Reflect, wisdom and spawns' first prompts no longer offer
// them; the outcomes they were reported with keep their record.
func (s *Store) DeleteLearnings(ctx context.Context, ids []int64) ([]api.LearnItem, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return nil, invalid("name the learnings to delete by id; `system3 learnings` lists them")
	}
	var out []api.LearnItem
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		var missing []string
		for _, id := range ids {
			it, err := scanItem(tx.QueryRowContext(ctx, `SELECT `+itemColumns+` FROM learnings WHERE id = ?`, id))
			if errors.Is(err, sql.ErrNoRows) {
				missing = append(missing, fmt.Sprint(id))
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, it)
		}
		if len(missing) > 0 {
			return invalid("no learning %s, so nothing was deleted; `system3 learnings` lists them", strings.Join(missing, ", "))
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `DELETE FROM learnings WHERE id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delete learnings: %w", err)
	}
	s.lastWrite.Store(ms(s.now()))
	return out, nil
}
