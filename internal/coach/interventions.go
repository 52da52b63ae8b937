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

func (c *Coach) effectiveness(ctx context.Context, pattern, intervention, context string) (api.CoachStats, error) {
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
func (c *Coach) MarkSent(ctx context.Context, id int64, by string) (api.CoachAlert, error) {
	a, err := c.Alert(ctx, id)
	if err != nil {
		return api.CoachAlert{}, err
	}
	if a.Status != api.CoachStatusActive {
		return a, nil
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return api.CoachAlert{}, fmt.Errorf("mark alert %d sent: %w", id, err)
	}
	defer tx.Rollback()
	now := c.now()
	res, err := tx.ExecContext(ctx, `UPDATE coach_alerts SET status = ?, sent_at = ?, sent_by = ? WHERE id = ? AND status = ?`,
		api.CoachStatusSent, fmtTime(now), by, id, api.CoachStatusActive)
	if err != nil {
		return api.CoachAlert{}, fmt.Errorf("mark alert %d sent: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		if err := c.bump(ctx, tx, a.Pattern, a.Intervention, a.Context, 1, 0, 0, 0); err != nil {
			return api.CoachAlert{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return api.CoachAlert{}, fmt.Errorf("mark alert %d sent: %w", id, err)
	}
	return c.Alert(ctx, id)
}

// Send types an open alert's reminder into its pane and marks it sent.
func (c *Coach) Send(ctx context.Context, id int64, by string) (api.ActionResult, error) {
	if c.cfg.Inject == nil {
		return api.ActionResult{}, api.ErrCoachNoSender
	}
	a, err := c.Alert(ctx, id)
	if err != nil {
		return api.ActionResult{}, err
	}
	if !a.Open() {
		return api.ActionResult{}, fmt.Errorf("%w: alert %d is %s (%s); only an open alert's reminder is sent", api.ErrCoachBadRequest, id, a.Status, a.Outcome)
	}
	return api.SendReminder(ctx, c.cfg.Inject, a.Pane, api.Reminder{Alert: a.ID, Pattern: a.Pattern, Text: a.Reminder}, "coach:"+by,
		func(ctx context.Context, id int64) error {
			_, err := c.MarkSent(ctx, id, by)
			return err
		})
}

// RequestIntervention composes (and, if asked, sends) a reminder for a
// pane.
func (c *Coach) RequestIntervention(ctx context.Context, req api.InterventionRequest) (api.InterventionResult, error) {
	if req.Pane == "" {
		return api.InterventionResult{}, fmt.Errorf("%w: name the pane", api.ErrCoachBadRequest)
	}
	var p rules.Pattern
	if req.Pattern != "" {
		var ok bool
		if p, ok = c.Pattern(req.Pattern); !ok {
			return api.InterventionResult{}, fmt.Errorf("%w: no pattern %q", api.ErrCoachNotFound, req.Pattern)
		}
	}
	open, err := c.queryAlerts(ctx, `SELECT `+alertCols+` FROM coach_alerts WHERE status IN ('active', 'sent') AND pane = ? ORDER BY id DESC`, req.Pane)
	if err != nil {
		return api.InterventionResult{}, err
	}
	var a *api.CoachAlert
	for i := range open {
		if req.Pattern == "" || open[i].Pattern == req.Pattern {
			a = &open[i]
			break
		}
	}
	if a == nil {
		if req.Pattern == "" {
			return api.InterventionResult{}, fmt.Errorf("%w: no loop is detected in %s now; name a pattern to remind it of one anyway", api.ErrCoachNotFound, req.Pane)
		}
		c.mu.Lock()
		lang := ""
		if h := c.panes[req.Pane]; h != nil {
			lang = h.language
		}
		c.mu.Unlock()
		tc := api.ToolCall{Time: c.now(), Pane: req.Pane, Target: req.Target, Session: req.Session, Repo: req.Repo, Agent: req.Agent}
		if a, err = c.raise(ctx, p, tc, "", lang, 0, req.By); err != nil {
			return api.InterventionResult{}, err
		}
	}
	out := api.InterventionResult{Alert: *a}
	if req.Send && a.Status == api.CoachStatusActive {
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

// ReportIntervention records a report and returns the intervention's
// standing after it.
func (c *Coach) ReportIntervention(ctx context.Context, r api.CoachReport) (api.InterventionStanding, error) {
	p, ok := c.Pattern(r.Pattern)
	if !ok {
		return api.InterventionStanding{}, fmt.Errorf("%w: no pattern %q", api.ErrCoachNotFound, r.Pattern)
	}
	if _, ok := p.Intervention(r.Intervention); !ok {
		ids := make([]string, len(p.Interventions))
		for i, iv := range p.Interventions {
			ids[i] = iv.ID
		}
		return api.InterventionStanding{}, fmt.Errorf("%w: pattern %s has no intervention %q (it has %s)", api.ErrCoachNotFound, r.Pattern, r.Intervention, strings.Join(ids, ", "))
	}
	if len(r.Notes) > api.MaxNotes {
		return api.InterventionStanding{}, fmt.Errorf("%w: notes are %d bytes; keep them under %d", api.ErrCoachBadRequest, len(r.Notes), api.MaxNotes)
	}
	context := ""
	// A report on a sent reminder still being measured settles it: one
	// outcome, counted once.
	var measured *api.CoachAlert
	if r.Alert != 0 {
		a, err := c.Alert(ctx, r.Alert)
		if err != nil {
			return api.InterventionStanding{}, err
		}
		if a.Pattern != r.Pattern {
			return api.InterventionStanding{}, fmt.Errorf("%w: alert %d is about pattern %s, not %s", api.ErrCoachBadRequest, r.Alert, a.Pattern, r.Pattern)
		}
		context = a.Context
		if a.Status == api.CoachStatusSent && a.Intervention == r.Intervention {
			measured = &a
		}
	}
	if measured != nil {
		status, verdict := api.CoachStatusFailed, "did not work"
		if r.Worked {
			status, verdict = api.CoachStatusWorked, "worked"
		}
		outcome := fmt.Sprintf("reported by %s: %s", orUnknown(r.By), verdict)
		if r.Notes != "" {
			outcome += " (" + clip(r.Notes, 200) + ")"
		}
		if err := c.settle(ctx, *measured, status, outcome); err != nil {
			return api.InterventionStanding{}, err
		}
	}
	reported, reportedWorked := 1, b2i(r.Worked)
	if measured != nil {
		reported, reportedWorked = 0, 0
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return api.InterventionStanding{}, fmt.Errorf("record report: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO coach_reports(pattern_id, intervention, alert_id, worked, notes, by, time) VALUES(?,?,?,?,?,?,?)`,
		r.Pattern, r.Intervention, r.Alert, b2i(r.Worked), r.Notes, r.By, fmtTime(c.now())); err != nil {
		return api.InterventionStanding{}, fmt.Errorf("record report: %w", err)
	}
	if reported > 0 {
		if err := c.bump(ctx, tx, r.Pattern, r.Intervention, context, 0, 0, reported, reportedWorked); err != nil {
			return api.InterventionStanding{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return api.InterventionStanding{}, fmt.Errorf("record report: %w", err)
	}
	st, err := c.Standings(ctx, p, context)
	if err != nil {
		return api.InterventionStanding{}, err
	}
	for _, s := range st {
		if s.Intervention == r.Intervention {
			return s, nil
		}
	}
	return api.InterventionStanding{}, nil
}

// Standings are a pattern's interventions with their effectiveness in a
// context (as Best counts it), the chosen one marked.
func (c *Coach) Standings(ctx context.Context, p rules.Pattern, context string) ([]api.InterventionStanding, error) {
	best, err := c.Best(ctx, p, context)
	if err != nil {
		return nil, err
	}
	out := make([]api.InterventionStanding, 0, len(p.Interventions))
	for _, iv := range p.Interventions {
		s, err := c.effectiveness(ctx, p.ID, iv.ID, context)
		if err != nil {
			return nil, err
		}
		out = append(out, api.InterventionStanding{CoachStats: s, Chosen: iv.ID == best.ID})
	}
	return out, nil
}
