package learn

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tmux"
)

// Limits of a reported outcome.
const (
	// MaxReporter caps who reported an outcome, as kept: a longer one is
	// cut.
	MaxReporter = 256
)

// clean validates and normalises o.
func clean(o api.Outcome) (api.Outcome, error) {
	o.Initiative = strings.TrimSpace(o.Initiative)
	o.Outcome = strings.ToLower(strings.TrimSpace(o.Outcome))
	o.ReasoningPath = strings.TrimSpace(o.ReasoningPath)
	o.Domain = normDomain(o.Domain)
	// The reporter is the service's word (an origin it built), kept as
	// text however it came.
	o.ReportedBy = tmux.VisibleText(strings.Join(strings.Fields(o.ReportedBy), " "))
	if len(o.ReportedBy) > MaxReporter {
		o.ReportedBy = strings.ToValidUTF8(o.ReportedBy[:MaxReporter-len("…")], "") + "…"
	}
	switch {
	case o.Initiative == "":
		return o, invalid(`initiative is empty; name what was attempted, like "add login rate limiting"`)
	case len(o.Initiative) > api.MaxOutcomeInitiative:
		return o, invalid("initiative is %d characters; keep it under %d (put details in reasoning_path)", len(o.Initiative), api.MaxOutcomeInitiative)
	case o.Outcome != api.OutcomeSuccess && o.Outcome != api.OutcomePartial && o.Outcome != api.OutcomeFailure:
		return o, invalid("outcome %q is not one of success, partial, failure", o.Outcome)
	case len(o.ReasoningPath) > api.MaxReasoning:
		return o, invalid("reasoning_path is %d characters; keep it under %d", len(o.ReasoningPath), api.MaxReasoning)
	case len(o.Domain) > api.MaxDomain:
		return o, invalid("domain is %d characters; use a short name like \"auth\" (at most %d)", len(o.Domain), api.MaxDomain)
	case len(o.Learnings) > api.MaxLearnings || len(o.Blockers) > api.MaxLearnings:
		return o, invalid("at most %d learnings and %d blockers; keep the ones that matter", api.MaxLearnings, api.MaxLearnings)
	}
	// What is stored is text: learnings are typed into agents' panes later
	// (a spawn's first prompt), and shown on terminals.
	for name, v := range map[string]string{"initiative": o.Initiative, "reasoning_path": o.ReasoningPath, "domain": o.Domain} {
		if err := tmux.CheckText(v); err != nil {
			return o, invalid("%s: %v", name, err)
		}
	}
	var err error
	if o.Learnings, err = cleanList("learning", o.Learnings); err != nil {
		return o, err
	}
	if o.Blockers, err = cleanList("blocker", o.Blockers); err != nil {
		return o, err
	}
	return o, nil
}

func cleanList(what string, in []string) ([]string, error) {
	out := []string{}
	seen := map[string]bool{}
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if len(s) > api.MaxLearning {
			return nil, invalid("a %s is %d characters; keep each under %d", what, len(s), api.MaxLearning)
		}
		if err := tmux.CheckText(s); err != nil {
			return nil, invalid("a %s: %v", what, err)
		}
		if n := normText(s); !seen[n] {
			seen[n] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// normText is the text learnings are compared by: lower case words
// separated by single spaces, punctuation dropped.
func normText(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

// ReportOutcome stores an outcome, checks its reasoning path against the
// criteria, keeps its learnings as patterns (success with validated
// reasoning) or anti-patterns (anything else), and updates the capability
// of its domain, all in one transaction.
func (s *Store) ReportOutcome(ctx context.Context, o api.Outcome) (api.LearnReport, error) {
	o, err := clean(o)
	if err != nil {
		return api.LearnReport{}, err
	}
	crit, ok := CheckReasoning(o.ReasoningPath)
	rep := api.LearnReport{Validated: ok, Criteria: crit, Domain: o.Domain, Kind: api.LearningAntiPattern, Learnings: []api.StoredLearning{}}
	if ok && o.Outcome == api.OutcomeSuccess {
		rep.Kind = api.LearningPattern
	}
	now := ms(s.now())
	critJSON, _ := json.Marshal(crit)
	learnJSON, _ := json.Marshal(o.Learnings)
	blockJSON, _ := json.Marshal(o.Blockers)
	var capab api.Capability
	err = s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO outcomes(at, initiative, outcome, reasoning, domain, validated, criteria, learnings, blockers)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, now, o.Initiative, o.Outcome, o.ReasoningPath, o.Domain, ok, critJSON, learnJSON, blockJSON)
		if err != nil {
			return err
		}
		if rep.OutcomeID, err = res.LastInsertId(); err != nil {
			return err
		}
		for _, l := range o.Learnings {
			var id int64
			var seen int
			// A learning already known (same kind, domain and words) is
			// seen once more, and comes back from the stale if it was.
			// It keeps its first reporter, whose text it keeps.
			err := tx.QueryRowContext(ctx, `INSERT INTO learnings(kind, text, norm, domain, outcome_id, created, last_seen, reported_by)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT(kind, domain, norm) DO UPDATE SET seen = seen + 1, last_seen = excluded.last_seen, stale = 0
				RETURNING id, seen`, rep.Kind, l, normText(l), o.Domain, rep.OutcomeID, now, now, o.ReportedBy).Scan(&id, &seen)
			if err != nil {
				return err
			}
			if seen > 1 {
				if err := addInitiative(ctx, tx, id, o.Initiative); err != nil {
					return err
				}
			}
			rep.Learnings = append(rep.Learnings, api.StoredLearning{ID: id, Text: l, Merged: seen > 1})
		}
		succ, part, fail := 0, 0, 0
		switch o.Outcome {
		case api.OutcomeSuccess:
			succ = 1
		case api.OutcomePartial:
			part = 1
		default:
			fail = 1
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO capabilities(domain, attempts, successes, partials, failures, updated)
			VALUES (?, 1, ?, ?, ?, ?)
			ON CONFLICT(domain) DO UPDATE SET attempts = attempts + 1, successes = successes + excluded.successes,
				partials = partials + excluded.partials, failures = failures + excluded.failures, updated = excluded.updated`,
			o.Domain, succ, part, fail, now); err != nil {
			return err
		}
		capab, err = scanCapability(tx.QueryRowContext(ctx, capabilitySelect+` WHERE domain = ?`, o.Domain))
		return err
	})
	if err != nil {
		return api.LearnReport{}, fmt.Errorf("report outcome: %w", err)
	}
	s.lastWrite.Store(now)
	rep.PatternStored = rep.Kind == api.LearningPattern && len(rep.Learnings) > 0
	rep.CapabilityUpdated = true
	rep.Confidence, rep.Evidence = capab.Confidence, capab.Evidence
	return rep, nil
}

// Outcomes lists stored outcomes, newest first.
func (s *Store) Outcomes(ctx context.Context, f api.OutcomeFilter) ([]api.OutcomeRecord, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	q := `SELECT id, at, initiative, outcome, reasoning, domain, validated, criteria, learnings, blockers FROM outcomes`
	var args []any
	if f.Domain != "" {
		q += ` WHERE domain = ?`
		args = append(args, normDomain(f.Domain))
	}
	q += ` ORDER BY at DESC, id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list outcomes: %w", err)
	}
	defer rows.Close()
	out := []api.OutcomeRecord{}
	for rows.Next() {
		var r api.OutcomeRecord
		var at int64
		var crit, learn, block string
		if err := rows.Scan(&r.ID, &at, &r.Initiative, &r.Outcome, &r.ReasoningPath, &r.Domain, &r.Validated, &crit, &learn, &block); err != nil {
			return nil, fmt.Errorf("list outcomes: %w", err)
		}
		r.At = fromMS(at)
		_ = json.Unmarshal([]byte(crit), &r.Criteria)
		_ = json.Unmarshal([]byte(learn), &r.Learnings)
		_ = json.Unmarshal([]byte(block), &r.Blockers)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list outcomes: %w", err)
	}
	return out, nil
}
