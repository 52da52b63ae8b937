package learn

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// Confidence is the smoothed success rate (successes+1)/(attempts+2),
// rounded to two decimals.
func Confidence(successes, attempts int) float64 {
	return round2(float64(successes+1) / float64(attempts+2))
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

func evidence(succ, attempts, partials int) string {
	s := fmt.Sprintf("%d successful %s out of %d", succ, plural(succ, "initiative", "initiatives"), attempts)
	if partials > 0 {
		s += fmt.Sprintf(" (%d partial)", partials)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

const capabilitySelect = `SELECT domain, attempts, successes, partials, failures, updated FROM capabilities`

type rowScanner interface{ Scan(...any) error }

func scanCapability(r rowScanner) (api.Capability, error) {
	var c api.Capability
	var up int64
	if err := r.Scan(&c.Domain, &c.Attempts, &c.Successes, &c.Partials, &c.Failures, &up); err != nil {
		return c, err
	}
	c.Name, c.Updated = c.Domain, fromMS(up)
	fill(&c)
	return c, nil
}

// fill computes c's confidence and evidence from its counts.
func fill(c *api.Capability) {
	c.Confidence = Confidence(c.Successes, c.Attempts)
	c.Evidence = evidence(c.Successes, c.Attempts, c.Partials)
}

// Capabilities reports capabilities, most attempted first. With neither
// argument: one per domain. domain keeps that domain. capability names a
// kind of initiative in words ("database migrations"): the confidence is
// then computed over the outcomes whose initiative matches all its words,
// per domain.
func (s *Store) Capabilities(ctx context.Context, capability, domain string) ([]api.Capability, error) {
	capability = strings.TrimSpace(capability)
	if capability != "" {
		return s.capabilityMatching(ctx, capability, domain)
	}
	q, args := capabilitySelect, []any{}
	if domain != "" {
		q += ` WHERE domain = ?`
		args = append(args, normDomain(domain))
	}
	q += ` ORDER BY attempts DESC, domain`
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	defer rows.Close()
	out := []api.Capability{}
	for rows.Next() {
		c, err := scanCapability(rows)
		if err != nil {
			return nil, fmt.Errorf("capabilities: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	return out, nil
}

func (s *Store) capabilityMatching(ctx context.Context, capability, domain string) ([]api.Capability, error) {
	words := terms(capability, 16)
	if len(words) == 0 {
		return nil, invalid("capability %q has no words to match; name a kind of initiative, like \"database migrations\"", capability)
	}
	q := `SELECT o.domain, COUNT(*), SUM(o.outcome = 'success'), SUM(o.outcome = 'partial'), SUM(o.outcome = 'failure'), MAX(o.at)
		FROM outcomes_fts f JOIN outcomes o ON o.id = f.rowid
		WHERE outcomes_fts MATCH ?`
	args := []any{ftsAll(words)}
	if domain != "" {
		q += ` AND o.domain = ?`
		args = append(args, normDomain(domain))
	}
	q += ` GROUP BY o.domain ORDER BY COUNT(*) DESC, o.domain`
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	defer rows.Close()
	out := []api.Capability{}
	for rows.Next() {
		var c api.Capability
		var up int64
		if err := rows.Scan(&c.Domain, &c.Attempts, &c.Successes, &c.Partials, &c.Failures, &up); err != nil {
			return nil, fmt.Errorf("capabilities: %w", err)
		}
		c.Name, c.Updated = capability, fromMS(up)
		fill(&c)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	return out, nil
}

// recomputeCapabilities rebuilds every domain's counts from the outcomes
// themselves, so counts can never drift from the record (outcomes deleted
// by hand, an interrupted older writer).
func (s *Store) recomputeCapabilities(ctx context.Context) (int, error) {
	var changed int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM capabilities WHERE domain NOT IN (SELECT domain FROM outcomes)`)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		changed += n
		res, err = tx.ExecContext(ctx, `INSERT INTO capabilities(domain, attempts, successes, partials, failures, updated)
			SELECT domain, COUNT(*), SUM(outcome = 'success'), SUM(outcome = 'partial'), SUM(outcome = 'failure'), MAX(at)
			FROM outcomes WHERE true GROUP BY domain
			ON CONFLICT(domain) DO UPDATE SET attempts = excluded.attempts, successes = excluded.successes,
				partials = excluded.partials, failures = excluded.failures, updated = excluded.updated
			WHERE attempts != excluded.attempts OR successes != excluded.successes
				OR partials != excluded.partials OR failures != excluded.failures`)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		changed += n
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recompute capabilities: %w", err)
	}
	return int(changed), nil
}
