package backend

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
)

// The learning store's methods of the Service New builds.

// allowRecord asks the policy about a write that touches no pane. An
// operator's (the CLI, the dashboard) passes it without asking, as the
// policy would let it: a process with the learning store but no monitors
// has no policy to ask.
func (l *local) allowRecord(ctx context.Context, action, origin string) error {
	if api.OperatorOrigin(origin) {
		return nil
	}
	return l.Allow(ctx, api.AllowRequest{Action: action, Origin: origin})
}

// ReportOutcome passes the policy first, as every write does: what it
// stores is typed into later spawns' first prompts.
func (l *local) ReportOutcome(ctx context.Context, o api.Outcome) (api.LearnReport, error) {
	if l.p.Learn == nil {
		return api.LearnReport{}, l.errNoLearn
	}
	if err := l.allowRecord(ctx, "report_outcome", o.ReportedBy); err != nil {
		return api.LearnReport{}, err
	}
	return l.p.Learn.ReportOutcome(ctx, o)
}

func (l *local) Capabilities(ctx context.Context, capability, domain string) ([]api.Capability, error) {
	if l.p.Learn == nil {
		return nil, l.errNoLearn
	}
	return l.p.Learn.Capabilities(ctx, capability, domain)
}

func (l *local) Reflect(ctx context.Context, query, about string, budget api.Budget) (api.Reflection, error) {
	if l.p.Learn == nil {
		return api.Reflection{}, l.errNoLearn
	}
	return l.p.Learn.Reflect(ctx, query, about, budget)
}

func (l *local) Learnings(ctx context.Context, n int) (api.LearnSummary, error) {
	if l.p.Learn == nil {
		return api.LearnSummary{}, l.errNoLearn
	}
	return l.p.Learn.Summary(ctx, n)
}

func (l *local) Outcomes(ctx context.Context, f api.OutcomeFilter) ([]api.OutcomeRecord, error) {
	if l.p.Learn == nil {
		return nil, l.errNoLearn
	}
	return l.p.Learn.Outcomes(ctx, f)
}

func (l *local) ListLearnings(ctx context.Context, f api.LearningFilter) ([]api.LearnItem, error) {
	if l.p.Learn == nil {
		return nil, l.errNoLearn
	}
	return l.p.Learn.ListLearnings(ctx, f)
}

// maxAuditedLearning caps a deleted learning's text in its audit entry.
const maxAuditedLearning = 500

// DeleteLearnings passes the policy first, as every write does, and
// audits each learning deleted (with its text and reporter, so the audit
// log keeps what was removed) or the refusal.
func (l *local) DeleteLearnings(ctx context.Context, req api.LearnDeleteRequest) ([]api.LearnItem, error) {
	if l.p.Learn == nil {
		return nil, l.errNoLearn
	}
	target := "learning"
	for _, id := range req.IDs {
		target += " " + strconv.FormatInt(id, 10)
	}
	if err := l.allowRecord(ctx, "delete_learnings", req.By); err != nil {
		// The refusal is audited when it can be; the refusal stands either way.
		_ = l.audit(ctx, api.AuditEntry{Origin: req.By, Action: "delete_learning", Target: target, Phase: audit.PhaseRefused, Error: err.Error()})
		return nil, err
	}
	items, err := l.p.Learn.DeleteLearnings(ctx, req.IDs)
	if err != nil {
		return nil, err
	}
	var failed error
	for _, it := range items {
		text := it.Text
		if len(text) > maxAuditedLearning {
			text = strings.ToValidUTF8(text[:maxAuditedLearning], "") + "…"
		}
		reporter := it.ReportedBy
		if reporter == "" {
			reporter = "unknown"
		}
		e := api.AuditEntry{Origin: req.By, Action: "delete_learning", Target: "learning " + strconv.FormatInt(it.ID, 10), Text: text,
			Result: fmt.Sprintf("deleted %s reported by %s", it.Kind, reporter), Sent: true}
		if err := l.audit(ctx, e); err != nil && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		return items, fmt.Errorf("the learnings were deleted, but the audit log could not record it: %w", failed)
	}
	return items, nil
}

// audit writes e through Parts.Audit, else the service's Audit.
func (l *local) audit(ctx context.Context, e api.AuditEntry) error {
	if l.p.Audit != nil {
		return l.p.Audit(e)
	}
	return l.Audit(ctx, e)
}
