package coach

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/learn"
)

// migrations are the coach's tables in the learn database, version by
// version (see learn.Migrate).
var migrations = []string{
	`CREATE TABLE coach_alerts (
		id           INTEGER PRIMARY KEY AUTOINCREMENT,
		pattern_id   TEXT NOT NULL,
		pattern_name TEXT NOT NULL,
		pane         TEXT NOT NULL,
		target       TEXT NOT NULL DEFAULT '',
		session      TEXT NOT NULL DEFAULT '',
		repo         TEXT NOT NULL DEFAULT '',
		agent        TEXT NOT NULL DEFAULT '',
		language     TEXT NOT NULL DEFAULT '',
		context      TEXT NOT NULL DEFAULT '',
		subject      TEXT NOT NULL DEFAULT '',
		count        INTEGER NOT NULL,
		threshold    INTEGER NOT NULL,
		preventive   INTEGER NOT NULL DEFAULT 0,
		auto_send    INTEGER NOT NULL DEFAULT 0,
		status       TEXT NOT NULL,
		intervention TEXT NOT NULL,
		directive    TEXT NOT NULL DEFAULT '',
		reminder     TEXT NOT NULL,
		wake_key     TEXT NOT NULL DEFAULT '',
		window_ns    INTEGER NOT NULL,
		detected     TEXT NOT NULL,
		last_seen    TEXT NOT NULL,
		sent_at      TEXT NOT NULL DEFAULT '',
		sent_by      TEXT NOT NULL DEFAULT '',
		settled_at   TEXT NOT NULL DEFAULT '',
		outcome      TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX coach_alerts_open ON coach_alerts(status, pattern_id, pane);
	CREATE INDEX coach_alerts_detected ON coach_alerts(detected);
	CREATE TABLE coach_stats (
		pattern_id      TEXT NOT NULL,
		intervention    TEXT NOT NULL,
		context         TEXT NOT NULL,
		shown           INTEGER NOT NULL DEFAULT 0,
		worked          INTEGER NOT NULL DEFAULT 0,
		reported        INTEGER NOT NULL DEFAULT 0,
		reported_worked INTEGER NOT NULL DEFAULT 0,
		updated         TEXT NOT NULL,
		PRIMARY KEY (pattern_id, intervention, context)
	);
	CREATE TABLE coach_reports (
		id           INTEGER PRIMARY KEY AUTOINCREMENT,
		pattern_id   TEXT NOT NULL,
		intervention TEXT NOT NULL,
		alert_id     INTEGER NOT NULL DEFAULT 0,
		worked       INTEGER NOT NULL,
		notes        TEXT NOT NULL DEFAULT '',
		by           TEXT NOT NULL DEFAULT '',
		time         TEXT NOT NULL
	);`,
}

// Migrate brings the coach's tables up to date.
func Migrate(ctx context.Context, db *sql.DB) error {
	return learn.Migrate(ctx, db, "coach", migrations)
}

const alertCols = `id, pattern_id, pattern_name, pane, target, session, repo, agent, language, context, subject, count, threshold,
	preventive, auto_send, status, intervention, directive, reminder, wake_key, window_ns, detected, last_seen, sent_at, sent_by, settled_at, outcome`

type scanner interface{ Scan(...any) error }

func scanAlert(s scanner) (api.CoachAlert, error) {
	var a api.CoachAlert
	var prev, auto int
	var window int64
	var detected, last, sent, settled string
	err := s.Scan(&a.ID, &a.Pattern, &a.PatternName, &a.Pane, &a.Target, &a.Session, &a.Repo, &a.Agent, &a.Language, &a.Context,
		&a.Subject, &a.Count, &a.Threshold, &prev, &auto, &a.Status, &a.Intervention, &a.Directive, &a.Reminder, &a.WakeKey,
		&window, &detected, &last, &sent, &a.SentBy, &settled, &a.Outcome)
	if err != nil {
		return api.CoachAlert{}, err
	}
	a.Preventive, a.AutoSend, a.Window = prev != 0, auto != 0, time.Duration(window)
	a.Detected, a.LastSeen, a.SentAt, a.SettledAt = parseTime(detected), parseTime(last), parseTime(sent), parseTime(settled)
	return a, nil
}

// timeLayout has a fixed width, so stored times compare as strings
// (RFC3339Nano drops trailing zeros: "…05Z" would sort after "…05.1Z").
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (c *Coach) insertAlert(ctx context.Context, a *api.CoachAlert) error {
	res, err := c.db.ExecContext(ctx, `INSERT INTO coach_alerts(pattern_id, pattern_name, pane, target, session, repo, agent, language, context,
		subject, count, threshold, preventive, auto_send, status, intervention, directive, reminder, wake_key, window_ns, detected, last_seen)
		VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		a.Pattern, a.PatternName, a.Pane, a.Target, a.Session, a.Repo, a.Agent, a.Language, a.Context, a.Subject, a.Count, a.Threshold,
		b2i(a.Preventive), b2i(a.AutoSend), a.Status, a.Intervention, a.Directive, a.Reminder, a.WakeKey, int64(a.Window),
		fmtTime(a.Detected), fmtTime(a.LastSeen))
	if err != nil {
		return fmt.Errorf("record alert: %w", err)
	}
	a.ID, err = res.LastInsertId()
	return err
}

// Alert returns one alert by id.
func (c *Coach) Alert(ctx context.Context, id int64) (api.CoachAlert, error) {
	a, err := scanAlert(c.db.QueryRowContext(ctx, `SELECT `+alertCols+` FROM coach_alerts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return api.CoachAlert{}, fmt.Errorf("%w: no alert %d", api.ErrCoachNotFound, id)
	}
	return a, err
}

// History returns alerts, newest first.
func (c *Coach) History(ctx context.Context, q api.CoachHistoryQuery) ([]api.CoachAlert, error) {
	var where []string
	var args []any
	if q.Pattern != "" {
		where, args = append(where, "pattern_id = ?"), append(args, q.Pattern)
	}
	if q.Session != "" {
		where, args = append(where, "(session = ? OR target = ? OR pane = ?)"), append(args, q.Session, q.Session, q.Session)
	}
	switch q.Status {
	case "":
	case "open":
		where = append(where, "status IN ('active', 'sent')")
	default:
		where, args = append(where, "status = ?"), append(args, q.Status)
	}
	if !q.Since.IsZero() {
		where, args = append(where, "detected >= ?"), append(args, fmtTime(q.Since))
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	query := `SELECT ` + alertCols + ` FROM coach_alerts`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit)
	return c.queryAlerts(ctx, query, args...)
}

func (c *Coach) queryAlerts(ctx context.Context, query string, args ...any) ([]api.CoachAlert, error) {
	rows, err := c.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read alerts: %w", err)
	}
	defer rows.Close()
	out := []api.CoachAlert{}
	for rows.Next() {
		a, err := scanAlert(rows)
		if err != nil {
			return nil, fmt.Errorf("read alerts: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ActiveAlerts returns the open alerts, oldest first.
func (c *Coach) ActiveAlerts(ctx context.Context) ([]api.CoachAlert, error) {
	return c.queryAlerts(ctx, `SELECT `+alertCols+` FROM coach_alerts WHERE status IN ('active', 'sent') ORDER BY id`)
}

// openAlerts are the open alerts of one pattern in one pane.
func (c *Coach) openAlerts(ctx context.Context, pattern, pane string) ([]api.CoachAlert, error) {
	return c.queryAlerts(ctx, `SELECT `+alertCols+` FROM coach_alerts WHERE status IN ('active', 'sent') AND pattern_id = ? AND pane = ? ORDER BY id`, pattern, pane)
}

// lastSettled is when the last alert of pattern on pane about subject was
// settled: occurrences before it were already dealt with.
func (c *Coach) lastSettled(ctx context.Context, pattern, pane, subject string) (time.Time, error) {
	var s sql.NullString
	err := c.db.QueryRowContext(ctx, `SELECT MAX(settled_at) FROM coach_alerts WHERE pattern_id = ? AND pane = ? AND subject = ? AND settled_at != ''`,
		pattern, pane, subject).Scan(&s)
	if err != nil {
		return time.Time{}, fmt.Errorf("read alerts: %w", err)
	}
	return parseTime(s.String), nil
}

// compute sets s's effectiveness from its counts.
func compute(s *api.CoachStats) {
	s.Effectiveness = float64(s.Worked+s.ReportedWorked+1) / float64(s.Shown+s.Reported+2)
}

// bump adds to an intervention's counts overall and in its context.
func (c *Coach) bump(ctx context.Context, tx *sql.Tx, pattern, intervention, context string, shown, worked, reported, reportedWorked int) error {
	ctxs := []string{""}
	if context != "" {
		ctxs = append(ctxs, context)
	}
	for _, cx := range ctxs {
		_, err := tx.ExecContext(ctx, `INSERT INTO coach_stats(pattern_id, intervention, context, shown, worked, reported, reported_worked, updated)
			VALUES(?,?,?,?,?,?,?,?)
			ON CONFLICT(pattern_id, intervention, context) DO UPDATE SET shown = shown + excluded.shown, worked = worked + excluded.worked,
			reported = reported + excluded.reported, reported_worked = reported_worked + excluded.reported_worked, updated = excluded.updated`,
			pattern, intervention, cx, shown, worked, reported, reportedWorked, fmtTime(c.now()))
		if err != nil {
			return fmt.Errorf("update intervention stats: %w", err)
		}
	}
	return nil
}

// Stats returns the counts of every intervention of a pattern ("" for
// all) in a context ("" overall).
func (c *Coach) Stats(ctx context.Context, pattern, context string) ([]api.CoachStats, error) {
	q := `SELECT pattern_id, intervention, context, shown, worked, reported, reported_worked FROM coach_stats WHERE context = ?`
	args := []any{context}
	if pattern != "" {
		q += ` AND pattern_id = ?`
		args = append(args, pattern)
	}
	rows, err := c.db.QueryContext(ctx, q+` ORDER BY pattern_id, intervention`, args...)
	if err != nil {
		return nil, fmt.Errorf("read intervention stats: %w", err)
	}
	defer rows.Close()
	out := []api.CoachStats{}
	for rows.Next() {
		var s api.CoachStats
		if err := rows.Scan(&s.Pattern, &s.Intervention, &s.Context, &s.Shown, &s.Worked, &s.Reported, &s.ReportedWorked); err != nil {
			return nil, fmt.Errorf("read intervention stats: %w", err)
		}
		compute(&s)
		out = append(out, s)
	}
	return out, rows.Err()
}

func (c *Coach) stat(ctx context.Context, pattern, intervention, context string) (api.CoachStats, error) {
	s := api.CoachStats{Pattern: pattern, Intervention: intervention, Context: context}
	err := c.db.QueryRowContext(ctx, `SELECT shown, worked, reported, reported_worked FROM coach_stats WHERE pattern_id = ? AND intervention = ? AND context = ?`,
		pattern, intervention, context).Scan(&s.Shown, &s.Worked, &s.Reported, &s.ReportedWorked)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("read intervention stats: %w", err)
	}
	compute(&s)
	return s, nil
}
