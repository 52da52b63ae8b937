package facadetest

import (
	"context"
	"slices"
	"sync"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
)

// Coach is a fake coach (backend.Parts.Coach) with no patterns: it records
// the alerts marked sent (Remind's record) and the interventions asked
// and reported, and answers the rest empty. Its zero value is ready; it
// is safe for concurrent use.
type Coach struct {
	mu   sync.Mutex
	errs map[string]error

	marks    []Mark
	requests []api.InterventionRequest
	reports  []api.CoachReport
}

var _ backend.Coacher = (*Coach)(nil)

// Mark is an alert marked sent, and by whom.
type Mark struct {
	ID int64
	By string
}

// Fail makes method ("mark_sent", or a method named as on the socket:
// "patterns", "pattern", "active_alerts", "alert_history",
// "intervention_stats", "directives", "request_intervention",
// "report_intervention") return err, after recording what it was asked;
// nil restores it.
func (c *Coach) Fail(method string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.errs == nil {
		c.errs = map[string]error{}
	}
	c.errs[method] = err
}

func (c *Coach) err(method string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errs[method]
}

// Marks returns the alerts marked sent so far, in order.
func (c *Coach) Marks() []Mark {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.marks)
}

// Requests returns the interventions asked so far, in order.
func (c *Coach) Requests() []api.InterventionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.requests)
}

// Reports returns the interventions reported so far, in order.
func (c *Coach) Reports() []api.CoachReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reports)
}

func (c *Coach) MarkSent(_ context.Context, id int64, by string) (api.CoachAlert, error) {
	c.mu.Lock()
	c.marks = append(c.marks, Mark{ID: id, By: by})
	c.mu.Unlock()
	if err := c.err("mark_sent"); err != nil {
		return api.CoachAlert{}, err
	}
	return api.CoachAlert{ID: id}, nil
}

func (c *Coach) PatternInfos(context.Context) ([]api.PatternInfo, error) {
	return nil, c.err("patterns")
}

func (c *Coach) PatternInfo(context.Context, string) (api.PatternInfo, error) {
	if err := c.err("pattern"); err != nil {
		return api.PatternInfo{}, err
	}
	return api.PatternInfo{}, api.ErrCoachNotFound
}

func (c *Coach) ActiveAlerts(context.Context) ([]api.CoachAlert, error) {
	return nil, c.err("active_alerts")
}

func (c *Coach) History(context.Context, api.CoachHistoryQuery) ([]api.CoachAlert, error) {
	return nil, c.err("alert_history")
}

func (c *Coach) Stats(context.Context, string, string) ([]api.CoachStats, error) {
	return nil, c.err("intervention_stats")
}

func (c *Coach) Directives() (api.DirectivesView, error) {
	return api.DirectivesView{}, c.err("directives")
}

func (c *Coach) RequestIntervention(_ context.Context, req api.InterventionRequest) (api.InterventionResult, error) {
	c.mu.Lock()
	c.requests = append(c.requests, req)
	c.mu.Unlock()
	return api.InterventionResult{}, c.err("request_intervention")
}

func (c *Coach) ReportIntervention(_ context.Context, r api.CoachReport) (api.InterventionStanding, error) {
	c.mu.Lock()
	c.reports = append(c.reports, r)
	c.mu.Unlock()
	return api.InterventionStanding{}, c.err("report_intervention")
}
