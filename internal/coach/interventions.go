package coach

import (
	"context"
	"fmt"
	"strings"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/rules"
)

// Best is the intervention to use for p in a context: the highest
// smoothed effectiveness, counted in that context once it has three
// outcomes there, else overall; ties go to the one listed first.
func (c *Coach) Best(ctx context.Context, p rules.Pattern, context string) (rules.Intervention, error) {
	best, bestScore := p.Interventions[0], -1.0
	for _, iv := range p.Interventions {
		s, err := c.effectiveness(ctx, p.ID, iv.ID, context)
		if err != nil {
			return rules.Intervention{}, err
		}
		if s.Effectiveness > bestScore+1e-9 {
			best, bestScore = iv, s.Effectiveness
		}
	}
	return best, nil
}

// minContextOutcomes is how many outcomes a context needs before its own
// counts are trusted over the overall ones.
const minContextOutcomes = 3

func (c *Coach) effectiveness(ctx context.Context, pattern, intervention, context string) (Stats, error) {
	if context != "" {
		s, err := c.stat(ctx, pattern, intervention, context)
		if err != nil || s.Shown+s.Reported >= minContextOutcomes {
			return s, err
		}
	}
	return c.stat(ctx, pattern, intervention, "")
}

// MarkSent records that an alert's reminder was typed into its pane (by
// "tui", "auto", "mcp:<client>"...): its effectiveness is measured from
// now. A reminder already sent is not counted twice.
func (c *Coach) MarkSent(ctx context.Context, id int64, by string) (Alert, error) {
	a, err := c.Alert(ctx, id)
	if err != nil {
		return Alert{}, err
	}
	if a.Status != StatusActive {
		return a, nil
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return Alert{}, fmt.Errorf("mark alert %d sent: %w", id, err)
	}
	defer tx.Rollback()
	now := c.now()
	res, err := tx.ExecContext(ctx, `UPDATE coach_alerts SET status = ?, sent_at = ?, sent_by = ? WHERE id = ? AND status = ?`,
		StatusSent, fmtTime(now), by, id, StatusActive)
	if err != nil {
		return Alert{}, fmt.Errorf("mark alert %d sent: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		if err := c.bump(ctx, tx, a.Pattern, a.Intervention, a.Context, 1, 0, 0, 0); err != nil {
			return Alert{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return Alert{}, fmt.Errorf("mark alert %d sent: %w", id, err)
	}
	return c.Alert(ctx, id)
}

// Send types an open alert's reminder into its pane and marks it sent.
func (c *Coach) Send(ctx context.Context, id int64, by string) (api.ActionResult, error) {
	if c.cfg.Inject == nil {
		return api.ActionResult{}, ErrNoSender
	}
	a, err := c.Alert(ctx, id)
	if err != nil {
		return api.ActionResult{}, err
	}
	if !a.Open() {
		return api.ActionResult{}, fmt.Errorf("%w: alert %d is %s (%s); only an open alert's reminder is sent", ErrBadRequest, id, a.Status, a.Outcome)
	}
	return api.SendReminder(ctx, c.cfg.Inject, a.Pane, api.Reminder{Alert: a.ID, Pattern: a.Pattern, Text: a.Reminder}, "coach:"+by,
		func(ctx context.Context, id int64) error {
			_, err := c.MarkSent(ctx, id, by)
			return err
		})
}

// InterventionRequest asks for a reminder in one pane.
type InterventionRequest = api.InterventionRequest

// InterventionResult is the alert the reminder belongs to and, when sent,
// what the pane did with it.
type InterventionResult = api.InterventionResult

// RequestIntervention composes (and, if asked, sends) a reminder for a
// pane.
func (c *Coach) RequestIntervention(ctx context.Context, req InterventionRequest) (InterventionResult, error) {
	if req.Pane == "" {
		return InterventionResult{}, fmt.Errorf("%w: name the pane", ErrBadRequest)
	}
	var p rules.Pattern
	if req.Pattern != "" {
		var ok bool
		if p, ok = c.Pattern(req.Pattern); !ok {
			return InterventionResult{}, fmt.Errorf("%w: no pattern %q", ErrNotFound, req.Pattern)
		}
	}
	open, err := c.queryAlerts(ctx, `SELECT `+alertCols+` FROM coach_alerts WHERE status IN ('active', 'sent') AND pane = ? ORDER BY id DESC`, req.Pane)
	if err != nil {
		return InterventionResult{}, err
	}
	var a *Alert
	for i := range open {
		if req.Pattern == "" || open[i].Pattern == req.Pattern {
			a = &open[i]
			break
		}
	}
	if a == nil {
		if req.Pattern == "" {
			return InterventionResult{}, fmt.Errorf("%w: no loop is detected in %s now; name a pattern to remind it of one anyway", ErrNotFound, req.Pane)
		}
		c.mu.Lock()
		lang := ""
		if h := c.panes[req.Pane]; h != nil {
			lang = h.language
		}
		c.mu.Unlock()
		tc := api.ToolCall{Time: c.now(), Pane: req.Pane, Target: req.Target, Session: req.Session, Repo: req.Repo, Agent: req.Agent}
		if a, err = c.raise(ctx, p, tc, "", lang, 0, req.By); err != nil {
			return InterventionResult{}, err
		}
	}
	out := InterventionResult{Alert: *a}
	if req.Send && a.Status == StatusActive {
		res, err := c.Send(ctx, a.ID, req.By)
		if err != nil {
			return out, err
		}
		out.Action, out.Sent = &res, res.Delivered
		if out.Alert, err = c.Alert(ctx, a.ID); err != nil {
			return out, err
		}
	}
	if pp, ok := c.Pattern(a.Pattern); ok {
		out.Stats, _ = c.Standings(ctx, pp, a.Context)
	}
	return out, nil
}

// Report is a user's or agent's word on whether an intervention worked.
type Report = api.CoachReport

// MaxNotes caps a report's notes.
const MaxNotes = api.MaxNotes

// ReportIntervention records a report and returns the intervention's
// standing after it.
func (c *Coach) ReportIntervention(ctx context.Context, r Report) (InterventionStanding, error) {
	p, ok := c.Pattern(r.Pattern)
	if !ok {
		return InterventionStanding{}, fmt.Errorf("%w: no pattern %q", ErrNotFound, r.Pattern)
	}
	if _, ok := p.Intervention(r.Intervention); !ok {
		ids := make([]string, len(p.Interventions))
		for i, iv := range p.Interventions {
			ids[i] = iv.ID
		}
		return InterventionStanding{}, fmt.Errorf("%w: pattern %s has no intervention %q (it has %s)", ErrNotFound, r.Pattern, r.Intervention, strings.Join(ids, ", "))
	}
	if len(r.Notes) > MaxNotes {
		return InterventionStanding{}, fmt.Errorf("%w: notes are %d bytes; keep them under %d", ErrBadRequest, len(r.Notes), MaxNotes)
	}
	context := ""
	// A report on a sent reminder still being measured settles it: one
	// outcome, counted once.
	var measured *Alert
	if r.Alert != 0 {
		a, err := c.Alert(ctx, r.Alert)
		if err != nil {
			return InterventionStanding{}, err
		}
		if a.Pattern != r.Pattern {
			return InterventionStanding{}, fmt.Errorf("%w: alert %d is about pattern %s, not %s", ErrBadRequest, r.Alert, a.Pattern, r.Pattern)
		}
		context = a.Context
		if a.Status == StatusSent && a.Intervention == r.Intervention {
			measured = &a
		}
	}
	if measured != nil {
		status, verdict := StatusFailed, "did not work"
		if r.Worked {
			status, verdict = StatusWorked, "worked"
		}
		outcome := fmt.Sprintf("reported by %s: %s", orUnknown(r.By), verdict)
		if r.Notes != "" {
			outcome += " (" + clip(r.Notes, 200) + ")"
		}
		if err := c.settle(ctx, *measured, status, outcome); err != nil {
			return InterventionStanding{}, err
		}
	}
	reported, reportedWorked := 1, b2i(r.Worked)
	if measured != nil {
		reported, reportedWorked = 0, 0
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return InterventionStanding{}, fmt.Errorf("record report: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO coach_reports(pattern_id, intervention, alert_id, worked, notes, by, time) VALUES(?,?,?,?,?,?,?)`,
		r.Pattern, r.Intervention, r.Alert, b2i(r.Worked), r.Notes, r.By, fmtTime(c.now())); err != nil {
		return InterventionStanding{}, fmt.Errorf("record report: %w", err)
	}
	if reported > 0 {
		if err := c.bump(ctx, tx, r.Pattern, r.Intervention, context, 0, 0, reported, reportedWorked); err != nil {
			return InterventionStanding{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return InterventionStanding{}, fmt.Errorf("record report: %w", err)
	}
	st, err := c.Standings(ctx, p, context)
	if err != nil {
		return InterventionStanding{}, err
	}
	for _, s := range st {
		if s.Intervention == r.Intervention {
			return s, nil
		}
	}
	return InterventionStanding{}, nil
}

// InterventionStanding is one intervention's counts and whether it is the
// one chosen now.
type InterventionStanding = api.InterventionStanding

// Standings are a pattern's interventions with their effectiveness in a
// context (as Best counts it), the chosen one marked.
func (c *Coach) Standings(ctx context.Context, p rules.Pattern, context string) ([]InterventionStanding, error) {
	best, err := c.Best(ctx, p, context)
	if err != nil {
		return nil, err
	}
	out := make([]InterventionStanding, 0, len(p.Interventions))
	for _, iv := range p.Interventions {
		s, err := c.effectiveness(ctx, p.ID, iv.ID, context)
		if err != nil {
			return nil, err
		}
		out = append(out, InterventionStanding{CoachStats: s, Chosen: iv.ID == best.ID})
	}
	return out, nil
}
