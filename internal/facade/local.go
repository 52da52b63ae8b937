package facade

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/coach"
	"github.com/system3-dev/system3/internal/learn"
	"github.com/system3-dev/system3/internal/lifecycle"
)

// Learner is the learning store as New uses it; *learn.Store is one.
type Learner interface {
	learning
	Summary(ctx context.Context, n int) (api.LearnSummary, error)
	DeleteLearnings(ctx context.Context, ids []int64) ([]api.LearnItem, error)
}

var _ Learner = (*learn.Store)(nil)

// Coacher is the coach as New uses it; *coach.Coach is one.
type Coacher interface {
	coaching
	Directives() (api.DirectivesView, error)
	MarkSent(ctx context.Context, id int64, by string) (api.CoachAlert, error)
}

var _ Coacher = (*coach.Coach)(nil)

// Parts are what New builds a Service from. A nil part is unavailable:
// its methods return an error matching ErrUnavailable.
type Parts struct {
	// Orchestrators spawns and stops (a *lifecycle.Manager, or one that
	// routes HOST:NAME to other hosts); when it is also a
	// lifecycle.Finisher, it restores and finishes.
	Orchestrators lifecycle.Orchestrators
	Learn         Learner
	Coach         Coacher
	// Why a part is nil, for its errors ("learning store: disk full");
	// nil: its default sentence.
	OrchestratorsErr, LearnErr, CoachErr error
	// Audit writes an entry of a write that touches no pane (a learning
	// deleted) to the audit log. Nil: the service's Audit does, which a
	// process without monitors does not have.
	Audit func(api.AuditEntry) error
}

// DefaultAgents are the agents a spawn knows without configuration, sorted
// (lifecycle.DefaultAgents): what a face offers when its service cannot
// say (Agents) because it has no orchestrators.
func DefaultAgents() []string { return slices.Sorted(maps.Keys(lifecycle.DefaultAgents())) }

// New returns the Service of svc and parts, for the process that has
// them: svc's methods as svc implements them, and the parts'. The
// orchestrators are told of each link made through svc's Link, when svc
// tells (linkTeller: the supervisor, the tests' fake), so the
// orchestrator records keep in step; its Remind records what it sent with
// the coach.
func New(svc api.Service, p Parts) Service {
	if lt, ok := svc.(linkTeller); ok && p.Orchestrators != nil {
		lt.UseLinked(p.Orchestrators.Linked)
	}
	return &local{Service: svc, p: p,
		errNoOrchestrators: unavailable("this system3 cannot start or stop orchestrators", p.OrchestratorsErr, "its lifecycle could not be set up; its log says why"),
		errNoLearn:         unavailable("the learning store is not open in this system3", p.LearnErr, "its log says why"),
		errNoCoach:         unavailable("behaviour patterns are off in this system3", p.CoachErr, "the coach's database could not be opened; its log says why"),
	}
}

// linkTeller is a service that tells a function of each link made or
// removed through its Link.
type linkTeller interface {
	UseLinked(fn func(ctx context.Context, req api.LinkRequest, sess api.Session))
}

// local is the Service of one process.
type local struct {
	api.Service
	p Parts
	// The errors of the parts it lacks.
	errNoOrchestrators, errNoLearn, errNoCoach error
}

// unavailable is the error of a missing part: what, and why (or, without
// a cause, the default sentence).
func unavailable(what string, why error, otherwise string) error {
	if why != nil {
		return &unavailableError{msg: what + ": " + why.Error(), cause: why}
	}
	return &unavailableError{msg: what + " (" + otherwise + ")"}
}

// unavailableError matches ErrUnavailable, and its cause.
type unavailableError struct {
	msg   string
	cause error
}

func (e *unavailableError) Error() string        { return e.msg }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }
func (e *unavailableError) Unwrap() error        { return e.cause }

var errNoFinish = &unavailableError{msg: "this system3 cannot restore or finish orchestrators"}

func (l *local) Features(context.Context) (Features, error) {
	_, fin := l.p.Orchestrators.(lifecycle.Finisher)
	return Features{Orchestrators: l.p.Orchestrators != nil, Finish: fin, Learning: l.p.Learn != nil, Coaching: l.p.Coach != nil}, nil
}

func (l *local) Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error) {
	if l.p.Orchestrators == nil {
		return api.SpawnResult{}, l.errNoOrchestrators
	}
	return l.p.Orchestrators.Spawn(ctx, req)
}

func (l *local) Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error) {
	if l.p.Orchestrators == nil {
		return api.StopResult{}, l.errNoOrchestrators
	}
	return l.p.Orchestrators.Stop(ctx, req)
}

func (l *local) finisher() (lifecycle.Finisher, error) {
	if l.p.Orchestrators == nil {
		return nil, l.errNoOrchestrators
	}
	f, ok := l.p.Orchestrators.(lifecycle.Finisher)
	if !ok {
		return nil, errNoFinish
	}
	return f, nil
}

func (l *local) Restore(ctx context.Context, req api.RestoreRequest) (api.RestoreResult, error) {
	f, err := l.finisher()
	if err != nil {
		return api.RestoreResult{}, err
	}
	return f.Restore(ctx, req)
}

func (l *local) Finish(ctx context.Context, req api.FinishRequest) (api.FinishResult, error) {
	f, err := l.finisher()
	if err != nil {
		return api.FinishResult{}, err
	}
	return f.Finish(ctx, req)
}

func (l *local) Agents(context.Context) ([]string, error) {
	if l.p.Orchestrators == nil {
		return nil, l.errNoOrchestrators
	}
	return l.p.Orchestrators.AgentNames(), nil
}

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
func (l *local) Remind(ctx context.Context, req RemindRequest) (api.ActionResult, error) {
	var record func(context.Context, int64) error
	if co := l.p.Coach; co != nil {
		record = func(ctx context.Context, alert int64) error {
			_, err := co.MarkSent(ctx, alert, req.Origin)
			return err
		}
	}
	return api.SendReminder(ctx, l.Service, req.Pane, req.Reminder, req.Origin, record)
}

// Over returns svc with its sessions, wakes and actions from sessions and
// its orchestrators from orch: a process that follows other hosts sees
// their sessions beside its own (remote.Fleet over svc) and starts and
// stops orchestrators on them too; the learning store and the coach stay
// svc's.
func Over(svc Service, sessions api.Service, orch Orchestrators) Service {
	return overlay{Service: sessions, Orchestrators: orch, Learning: svc, Coaching: svc, featured: svc}
}

// overlay is a Service whose api.Service part and orchestrators are replaced.
type overlay struct {
	api.Service
	Orchestrators
	Learning
	Coaching
	featured
}

type featured interface {
	Features(ctx context.Context) (Features, error)
}
