package backend

import (
	"context"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// The coach's methods of the Service New builds.

func (l *local) PatternInfos(ctx context.Context) ([]api.PatternInfo, error) {
	if l.p.Coach == nil {
		return nil, l.errNoCoach
	}
	return l.p.Coach.PatternInfos(ctx)
}

func (l *local) PatternInfo(ctx context.Context, id string) (api.PatternInfo, error) {
	if l.p.Coach == nil {
		return api.PatternInfo{}, l.errNoCoach
	}
	return l.p.Coach.PatternInfo(ctx, id)
}

func (l *local) ActiveAlerts(ctx context.Context) ([]api.CoachAlert, error) {
	if l.p.Coach == nil {
		return nil, l.errNoCoach
	}
	return l.p.Coach.ActiveAlerts(ctx)
}

func (l *local) History(ctx context.Context, q api.CoachHistoryQuery) ([]api.CoachAlert, error) {
	if l.p.Coach == nil {
		return nil, l.errNoCoach
	}
	return l.p.Coach.History(ctx, q)
}

func (l *local) Stats(ctx context.Context, pattern, context string) ([]api.CoachStats, error) {
	if l.p.Coach == nil {
		return nil, l.errNoCoach
	}
	return l.p.Coach.Stats(ctx, pattern, context)
}

func (l *local) Directives(context.Context) (api.DirectivesView, error) {
	if l.p.Coach == nil {
		return api.DirectivesView{}, l.errNoCoach
	}
	return l.p.Coach.Directives()
}

func (l *local) RequestIntervention(ctx context.Context, req api.InterventionRequest) (api.InterventionResult, error) {
	if l.p.Coach == nil {
		return api.InterventionResult{}, l.errNoCoach
	}
	return l.p.Coach.RequestIntervention(ctx, req)
}

// ReportIntervention passes the policy first: the reports choose which
// reminder is sent by itself.
func (l *local) ReportIntervention(ctx context.Context, r api.CoachReport) (api.InterventionStanding, error) {
	if l.p.Coach == nil {
		return api.InterventionStanding{}, l.errNoCoach
	}
	if err := l.allowRecord(ctx, "report_intervention", r.By); err != nil {
		return api.InterventionStanding{}, err
	}
	return l.p.Coach.ReportIntervention(ctx, r)
}

// Remind sends through the service's Inject; without a coach the reminder
// is typed and not recorded (nothing measures it).
func (l *local) Remind(ctx context.Context, req facade.RemindRequest) (api.ActionResult, error) {
	var record func(context.Context, int64) error
	if co := l.p.Coach; co != nil {
		record = func(ctx context.Context, alert int64) error {
			_, err := co.MarkSent(ctx, alert, req.Origin)
			return err
		}
	}
	return api.SendReminder(ctx, l.Service, req.Pane, req.Reminder, req.Origin, record)
}
