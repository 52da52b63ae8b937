package coach

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/rules"
)

// raise records a new alert with the best intervention, raises its wake,
// and sends it when the pattern says so. by is who asked ("" when detected).
func (c *Coach) raise(ctx context.Context, p rules.Pattern, tc api.ToolCall, subject, lang string, n int, by string) (*api.CoachAlert, error) {
	now := c.now()
	a := api.CoachAlert{
		Pattern: p.ID, PatternName: p.Name, Pane: tc.Pane, Target: tc.Target, Session: tc.Session, Repo: tc.Repo, Agent: tc.Agent,
		Language: lang, Context: contextOf(tc.Repo, tc.Agent), Subject: subject, Count: n, Threshold: p.Threshold,
		Preventive: p.Preventive && n < p.Threshold, AutoSend: p.AutoSend, Status: api.CoachStatusActive, Window: p.WindowDuration(),
		Detected: now, LastSeen: tc.Time,
	}
	iv, err := c.Best(ctx, p, a.Context)
	if err != nil {
		return nil, err
	}
	a.Intervention = iv.ID
	link := c.link(p)
	a.Directive = link.Directive
	if link.By == "missing" {
		a.Directive = ""
	}
	a.Reminder, err = compose(p, iv, a, link, tc)
	if err != nil {
		return nil, err
	}
	if err := c.insertAlert(ctx, &a); err != nil {
		return nil, err
	}
	if c.cfg.Wakes != nil {
		// One wake per alert: the coach clears it when the alert settles.
		a.WakeKey = fmt.Sprintf("pattern/%s/%s/%d", p.ID, tc.Pane, a.ID)
		if _, err := c.db.ExecContext(ctx, `UPDATE coach_alerts SET wake_key = ? WHERE id = ?`, a.WakeKey, a.ID); err != nil {
			return nil, fmt.Errorf("record alert: %w", err)
		}
		ev := api.Wake{
			Reason: api.ReasonErrorLoopDetected, Key: a.WakeKey, Session: a.Session, Pane: a.Pane, Agent: a.Agent,
			State: string(api.ErrorLoop),
			Evidence: api.Evidence{Source: "coach", Rule: "pattern." + p.ID, Lines: []string{
				fmt.Sprintf("%s: %d of %d within %s", p.Name, a.Count, p.Threshold, p.Window),
				"last: " + describe(tc),
			}},
			SuggestedAction: fmt.Sprintf("%s looks stuck in a loop (%s) in %s; send it the reminder (key r in the dashboard, or request_intervention) or give it other guidance.", agentName(a.Agent), p.Name, a.Target),
			Details:         a.Reminder,
			Reminder: &api.Reminder{Alert: a.ID, Pattern: p.ID, Intervention: a.Intervention, Directive: a.Directive, Text: a.Reminder,
				Preventive: a.Preventive, AutoSend: a.AutoSend},
		}
		if _, _, err := c.cfg.Wakes.Raise(ev); err != nil {
			c.cfg.Logger.Warn("coach: raise wake", "pattern", p.ID, "pane", a.Pane, "err", err)
		}
	}
	c.cfg.Logger.Info("coach: pattern detected", "pattern", p.ID, "pane", a.Pane, "count", a.Count, "intervention", a.Intervention, "alert", a.ID)
	if p.AutoSend && c.cfg.Inject != nil && by == "" {
		if _, err := c.Send(ctx, a.ID, "auto"); err != nil {
			c.cfg.Logger.Warn("coach: send reminder", "alert", a.ID, "err", err)
		} else {
			a.Status = api.CoachStatusSent
		}
	}
	return &a, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "someone"
	}
	return s
}

func agentName(a string) string {
	if a == "" {
		return "The agent"
	}
	return a
}

// link is the directive a pattern's reminders quote.
func (c *Coach) link(p rules.Pattern) api.DirectiveLink {
	ds, errs := LoadDirectives(c.cfg.Directives)
	for _, err := range errs {
		c.cfg.Logger.Warn("coach: directives", "err", err)
	}
	return LinkDirective(p, ds)
}

// compose writes the reminder: the loop, the directive quoted, a concrete
// suggestion and the outcome to expect.
func compose(p rules.Pattern, iv rules.Intervention, a api.CoachAlert, link api.DirectiveLink, tc api.ToolCall) (string, error) {
	subject := a.Subject
	if subject == "" {
		subject = describe(tc)
	}
	window := p.Window
	suggestion, expected, err := iv.Render(rules.TemplateData{Pattern: p.Name, Subject: subject, Count: a.Count, Threshold: p.Threshold,
		Window: window, Agent: a.Agent, Repo: a.Repo})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "⚠️ Loop detected: %s", p.Name)
	if a.Subject != "" {
		fmt.Fprintf(&b, " (%s)", clip(a.Subject, 80))
	}
	b.WriteString("\n")
	if a.Count > 0 {
		if a.Count < p.Threshold {
			fmt.Fprintf(&b, "Seen %d times in %s; this reminder comes before the %s.\n", a.Count, window, ordinal(p.Threshold))
		} else {
			fmt.Fprintf(&b, "Seen %d times in %s.\n", a.Count, window)
		}
	}
	if link.Directive != "" && link.Text != "" {
		fmt.Fprintf(&b, "Your directive: %q\n", link.Text)
	}
	fmt.Fprintf(&b, "Suggestion: %s\n", suggestion)
	fmt.Fprintf(&b, "Expected outcome: %s", expected)
	return b.String(), nil
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// reset ends runs of p in tc's pane that a reset call (the test passed)
// proves over: a sent reminder worked, an unsent alert is resolved.
func (c *Coach) reset(ctx context.Context, p rules.Pattern, tc api.ToolCall, subject string) error {
	open, err := c.openAlerts(ctx, p.ID, tc.Pane)
	if err != nil {
		return err
	}
	for _, a := range open {
		if subject != "" && a.Subject != subject {
			continue
		}
		why := fmt.Sprintf("left the loop: %s succeeded", describe(tc))
		status := api.CoachStatusResolved
		if a.Status == api.CoachStatusSent {
			if !tc.Time.After(a.SentAt) {
				continue
			}
			status = api.CoachStatusWorked
		}
		if err := c.settle(ctx, a, status, why); err != nil {
			return err
		}
	}
	return nil
}

// Settle closes alerts whose window passed: a sent reminder with no
// recurrence worked; an alert never acted on whose loop went quiet is
// resolved.
func (c *Coach) Settle(ctx context.Context) error {
	open, err := c.ActiveAlerts(ctx)
	if err != nil {
		return err
	}
	now := c.now()
	c.forgetQuiet(now)
	var errs []error
	for _, a := range open {
		switch {
		case a.Status == api.CoachStatusSent && now.Sub(a.SentAt) >= a.Window:
			errs = append(errs, c.settle(ctx, a, api.CoachStatusWorked, fmt.Sprintf("no recurrence within %s of the reminder", a.Window)))
		case a.Status == api.CoachStatusActive && now.Sub(a.LastSeen) >= a.Window:
			errs = append(errs, c.settle(ctx, a, api.CoachStatusResolved, fmt.Sprintf("no occurrence for %s", a.Window)))
		}
	}
	return errors.Join(errs...)
}

// forgetQuiet drops the history of panes with no call for a day (closed
// panes, finished agents).
func (c *Coach) forgetQuiet(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pane, h := range c.panes {
		if n := len(h.calls); n == 0 || now.Sub(h.calls[n-1].Time) > maxHistoryAge {
			delete(c.panes, pane)
		}
	}
}

// settle closes an alert, counts a sent reminder's outcome, and clears its
// wake.
func (c *Coach) settle(ctx context.Context, a api.CoachAlert, status, outcome string) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("settle alert %d: %w", a.ID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE coach_alerts SET status = ?, settled_at = ?, outcome = ? WHERE id = ? AND status = ?`,
		status, fmtTime(c.now()), outcome, a.ID, a.Status)
	if err != nil {
		return fmt.Errorf("settle alert %d: %w", a.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // another process settled or sent it first
	}
	if status == api.CoachStatusWorked {
		if err := c.bump(ctx, tx, a.Pattern, a.Intervention, a.Context, 0, 1, 0, 0); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("settle alert %d: %w", a.ID, err)
	}
	c.cfg.Logger.Info("coach: alert settled", "alert", a.ID, "pattern", a.Pattern, "status", status, "outcome", outcome)
	if c.cfg.Wakes != nil && a.WakeKey != "" {
		if err := c.cfg.Wakes.Resolve(a.WakeKey, "the pattern's alert settled ("+string(status)+")"); err != nil {
			c.cfg.Logger.Warn("coach: resolve wake", "key", a.WakeKey, "err", err)
		}
	}
	return nil
}
