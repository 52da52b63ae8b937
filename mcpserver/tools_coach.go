package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// Limits of query_pattern_history.
const (
	DefaultHistoryLimit = 20
	MaxHistoryLimit     = 200
)

// alertStatuses are the values query_pattern_history filters on.
var alertStatuses = []string{"open", api.CoachStatusActive, api.CoachStatusSent, api.CoachStatusWorked, api.CoachStatusFailed, api.CoachStatusResolved}

// coachError turns an error of the coach into a tool error a model can
// act on, and keeps a Go error for internal failures.
func coachError(err error) (*mcp.CallToolResult, error) {
	switch {
	case errors.Is(err, api.ErrCoachNotFound):
		return mcp.NewToolResultError(err.Error() + "; read system3://patterns for the pattern and intervention ids, or system3://alerts/active for open alerts"), nil
	case errors.Is(err, api.ErrCoachBadRequest):
		return mcp.NewToolResultError(err.Error()), nil
	case errors.Is(err, api.ErrCoachNoSender):
		return mcp.NewToolResultError(err.Error() + "; call again with send false to get the reminder text"), nil
	}
	return serviceError(err)
}

// QueryPatternHistoryTool lists detected behaviour patterns and how their
// reminders did.
func QueryPatternHistoryTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("query_pattern_history",
		mcp.WithDescription(`List the behaviour patterns (loops) system3 detected in agents' tool calls, newest first: the pattern (test_error_loop, formatter_loop, ci_push_loop, permission_denials, or the user's own), the session and pane, what repeated (the command, file or tool) and how often, the reminder composed for it (the user's CLAUDE.md directive quoted, a suggestion, the expected outcome), whether it was sent and by whom, and its measured outcome: open (still looping), worked (the loop ended after the reminder), failed (it went on), resolved (ended without one). Also returns each intervention's shown/worked counts and smoothed effectiveness, so you can see which reminder works best. Filter by pattern, session, status or a start time.`),
		mcp.WithString("pattern", mcp.Description(`A pattern id, like "formatter_loop"; empty for all.`), mcp.MaxLength(128)),
		mcp.WithString("session", mcp.Description(`A tmux session name, target ("orch-auth:0.1") or pane ("%3"); empty for all.`), mcp.MaxLength(256)),
		mcp.WithString("status", mcp.Description(`"open" (active or sent) or one status; empty for all.`), mcp.Enum(alertStatuses...)),
		mcp.WithString("since", mcp.Description(`Only alerts detected after this: an RFC 3339 time ("2026-11-21T08:00:00Z") or a duration back from now ("24h", "90m").`), mcp.MaxLength(64)),
		mcp.WithInteger("limit", mcp.Description("At most this many alerts."), mcp.Min(1), mcp.Max(MaxHistoryLimit), mcp.DefaultNumber(DefaultHistoryLimit)),
		argOrder("pattern", "session", "status", "since", "limit"),
		readOnly("Pattern history"),
	)
	type args struct {
		Pattern string `json:"pattern"`
		Session string `json:"session"`
		Status  string `json:"status"`
		Since   string `json:"since"`
		Limit   int    `json:"limit"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		q := api.CoachHistoryQuery{Pattern: a.Pattern, Session: a.Session, Status: a.Status, Limit: a.Limit}
		if q.Limit == 0 {
			q.Limit = DefaultHistoryLimit
		}
		if a.Since != "" {
			since, err := parseSince(a.Since, e.Clock())
			if err != nil {
				return badInput("%v", err)
			}
			q.Since = since
		}
		cctx, cancel := withTimeout(ctx, callTimeout)
		defer cancel()
		alerts, err := e.Coach.History(cctx, q)
		if err != nil {
			return coachError(err)
		}
		stats, err := e.Coach.Stats(cctx, a.Pattern, "")
		if err != nil {
			return coachError(err)
		}
		return result(map[string]any{"alerts": alerts, "count": len(alerts), "interventions": stats})
	})
}

// resolve finds the session a tool names in a snapshot, for a tool that
// reads it.
func (e *Env) resolve(ctx context.Context, session, pane string) (api.Session, *mcp.CallToolResult, error) {
	if session == "" && pane == "" {
		r, err := badInput(`name the session: {"session": "orch-auth"} (a name, target or pane from list_sessions), or {"pane": "%%3"}`)
		return api.Session{}, r, err
	}
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	snap, err := e.Svc.Snapshot(cctx)
	if err != nil {
		r, err := serviceError(err)
		return api.Session{}, r, err
	}
	sess, err := api.ResolveTarget(api.Target{Session: session, Pane: pane}, snap.Sessions, snap.Server)
	if err != nil {
		r, err := serviceError(err)
		return api.Session{}, r, err
	}
	return sess, nil, nil
}

// parseSince reads an RFC 3339 time or a duration back from now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf(`since %q is neither an RFC 3339 time nor a duration; send "2026-11-21T08:00:00Z" or "24h"`, s)
}

// RequestInterventionTool composes, and by default sends, the reminder for
// a loop in a session.
func RequestInterventionTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("request_intervention",
		mcp.WithDescription(`Send an agent the reminder for the loop it is in: "⚠️ Loop detected: <pattern>", the user's own CLAUDE.md directive quoted, a concrete suggestion and the expected outcome, using the intervention that has worked best so far. Without pattern it uses the session's open alert (see system3://alerts/active); with pattern it reminds the agent of that pattern even if system3 has not detected it. send false only composes it. system3 then measures whether it worked (the loop ends within the pattern's window, or recurs) and counts it toward the intervention's effectiveness. The text is typed like inject_guidance: only allowed sessions, rate-limited, audited (composing with send false is not limited). Returns the alert (reminder, status, sent_by) and the interventions' standings.`),
		mcp.WithString("session", mcp.Description(`Session name ("orch-auth"), target ("orch-auth:0.1") or pane id ("%3").`), mcp.MaxLength(256)),
		mcp.WithString("pane", mcp.Description(`Pane id like "%3", instead of session.`), mcp.MaxLength(32)),
		mcp.WithString("pattern", mcp.Description(`A pattern id ("formatter_loop"); empty to use the session's open alert.`), mcp.MaxLength(128)),
		mcp.WithBoolean("send", mcp.Description("Type the reminder into the agent's pane; false only composes it."), mcp.DefaultBool(true)),
		argOrder("session", "pane", "pattern", "send"),
		writes("Request intervention", true, false),
	)
	type args struct {
		Session string `json:"session"`
		Pane    string `json:"pane"`
		Pattern string `json:"pattern"`
		Send    *bool  `json:"send"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		send := a.Send == nil || *a.Send
		// The coach needs the session's repo and agent to compose; typing
		// the reminder is an action the service gates (allowlist, rate
		// limit) on the pane.
		sess, refusal, err := e.resolve(ctx, a.Session, a.Pane)
		if refusal != nil || err != nil {
			return refusal, err
		}
		actx, cancel := withTimeout(ctx, actionTimeout)
		defer cancel()
		r, err := e.Coach.RequestIntervention(actx, api.InterventionRequest{Pane: sess.Pane, Target: sess.Target, Session: sess.Session,
			Repo: sess.Path, Agent: sess.Agent, Pattern: a.Pattern, Send: send, By: originOf(ctx)})
		if err != nil {
			return coachError(err)
		}
		v := map[string]any{"alert": r.Alert, "sent": r.Sent, "interventions": r.Stats}
		if r.Action != nil {
			v["action"] = viewOf(*r.Action)
		}
		switch {
		case send && r.Action != nil && !r.Action.Delivered:
			v["next"] = "tmux did not take the text; call get_session to see the pane"
		case send && r.Action == nil && r.Alert.Status == api.CoachStatusSent:
			v["next"] = "this reminder was already sent (" + r.Alert.SentBy + "); system3 is measuring whether it worked"
		}
		return result(v)
	})
}

// ReportInterventionTool records whether a reminder worked.
func ReportInterventionTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("report_intervention",
		mcp.WithDescription(`Tell system3 whether an intervention (a reminder for a behaviour pattern) worked, when you know better than its measurement: the agent changed approach, or ignored it. With alert_id of a reminder still being measured, your report settles it; otherwise it counts as extra evidence. Effectiveness, (worked+1)/(shown+2) over measured and reported outcomes, decides which intervention is sent next time. Returns the intervention's counts, effectiveness and whether it is now the chosen one. Ids are in system3://patterns.`),
		mcp.WithString("pattern_id", mcp.Required(), mcp.Description(`The pattern, like "test_error_loop".`), mcp.MinLength(1), mcp.MaxLength(128)),
		mcp.WithString("intervention_id", mcp.Required(), mcp.Description(`The intervention, like "isolate-root-cause".`), mcp.MinLength(1), mcp.MaxLength(128)),
		mcp.WithBoolean("worked", mcp.Required(), mcp.Description("Whether the agent left the loop after it.")),
		mcp.WithString("notes", mcp.Description("What happened, in a sentence or two."), mcp.MaxLength(api.MaxNotes)),
		mcp.WithInteger("alert_id", mcp.Description("The alert the reminder belonged to, when known."), mcp.Min(1)),
		argOrder("pattern_id", "intervention_id", "worked", "notes", "alert_id"),
		writes("Report intervention", false, false),
	)
	type args struct {
		Pattern      string `json:"pattern_id"`
		Intervention string `json:"intervention_id"`
		Worked       bool   `json:"worked"`
		Notes        string `json:"notes"`
		Alert        int64  `json:"alert_id"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		if strings.TrimSpace(a.Pattern) == "" || strings.TrimSpace(a.Intervention) == "" {
			return badInput(`name both: {"pattern_id": "test_error_loop", "intervention_id": "isolate-root-cause", "worked": true}`)
		}
		cctx, cancel := withTimeout(ctx, callTimeout)
		defer cancel()
		st, err := e.Coach.ReportIntervention(cctx, api.CoachReport{Pattern: a.Pattern, Intervention: a.Intervention, Worked: a.Worked,
			Notes: a.Notes, Alert: a.Alert, By: originOf(ctx)})
		if err != nil {
			return coachError(err)
		}
		return result(st)
	})
}
