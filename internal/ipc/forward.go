package ipc

import (
	"context"
	"errors"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// Forwarding returns a facade.Service whose every call is made by invoke,
// with the call's Method and arguments. A decorator (a failover, a proxy)
// is then one function: run m.Call on the service it chooses.
func Forwarding(invoke func(ctx context.Context, m *Method, args any) (any, error)) facade.Service {
	return forward{invoke}
}

// forward is facade.Service made from one invoke function: each method
// names its Method and packs its arguments. Client and Failover embed it.
type forward struct {
	invoke func(ctx context.Context, m *Method, args any) (any, error)
}

var _ facade.Service = forward{}

// errUnconnected is the error of a Failover used before Connect.
var errUnconnected = errors.New("ipc: the service was used before it was connected")

func (f forward) call(ctx context.Context, m *Method, args any) (any, error) {
	if f.invoke == nil {
		return nil, errUnconnected
	}
	return f.invoke(ctx, m, args)
}

// as returns an invoke's result as the method's result type.
func as[R any](v any, err error) (R, error) {
	r, _ := v.(R)
	return r, err
}

func (f forward) Snapshot(ctx context.Context) (api.Snapshot, error) {
	return as[api.Snapshot](f.call(ctx, mSnapshot, struct{}{}))
}

func (f forward) Watch(ctx context.Context) (<-chan api.Update, error) {
	return as[<-chan api.Update](f.call(ctx, mWatch, watchOpts{statuses: true}))
}

func (f forward) Wakes(ctx context.Context, fl api.WakeFilter) ([]api.Wake, error) {
	return as[[]api.Wake](f.call(ctx, mWakes, fl))
}

func (f forward) WaitWake(ctx context.Context, fl api.WakeFilter) (api.Wake, error) {
	return as[api.Wake](f.call(ctx, mWaitWake, fl))
}

func (f forward) SubscribeWakes(ctx context.Context, fl api.WakeFilter) (<-chan api.WakeMessage, error) {
	return as[<-chan api.WakeMessage](f.call(ctx, mSubscribeWakes, fl))
}

func (f forward) Ack(ctx context.Context, id, by string) (api.Wake, error) {
	return as[api.Wake](f.call(ctx, mAck, ack{ID: id, By: by}))
}

func (f forward) AckAll(ctx context.Context, by string) ([]api.Wake, error) {
	return as[[]api.Wake](f.call(ctx, mAckAll, by))
}

func (f forward) Preview(ctx context.Context, req api.PreviewRequest) (api.Preview, error) {
	return as[api.Preview](f.call(ctx, mPreview, req))
}

func (f forward) WatchPreview(ctx context.Context, req api.PreviewRequest) (<-chan api.PreviewUpdate, error) {
	return as[<-chan api.PreviewUpdate](f.call(ctx, mWatchPreview, req))
}

func (f forward) TaskLists(ctx context.Context, id string) ([]api.TaskListDoc, error) {
	return as[[]api.TaskListDoc](f.call(ctx, mTaskLists, id))
}

func (f forward) Task(ctx context.Context, req api.TaskRequest) (api.TaskDoc, error) {
	return as[api.TaskDoc](f.call(ctx, mTask, req))
}

func (f forward) Inject(ctx context.Context, req api.InjectRequest) (api.ActionResult, error) {
	return as[api.ActionResult](f.call(ctx, mInject, req))
}

func (f forward) SendKeys(ctx context.Context, req api.KeysRequest) (api.ActionResult, error) {
	return as[api.ActionResult](f.call(ctx, mKeys, req))
}

func (f forward) Answer(ctx context.Context, req api.AnswerRequest) (api.ActionResult, error) {
	return as[api.ActionResult](f.call(ctx, mAnswer, req))
}

func (f forward) Interrupt(ctx context.Context, req api.InterruptRequest) (api.ActionResult, error) {
	return as[api.ActionResult](f.call(ctx, mInterrupt, req))
}

func (f forward) Audit(ctx context.Context, e api.AuditEntry) error {
	_, err := f.call(ctx, mAudit, e)
	return err
}

func (f forward) Hook(ctx context.Context, ev api.HookEvent) (api.HookReply, error) {
	return as[api.HookReply](f.call(ctx, mHook, ev))
}

func (f forward) Link(ctx context.Context, req api.LinkRequest) (api.Session, error) {
	return as[api.Session](f.call(ctx, mLink, req))
}

func (f forward) Allow(ctx context.Context, req api.AllowRequest) error {
	_, err := f.call(ctx, mAllow, req)
	return err
}

func (f forward) Features(ctx context.Context) (facade.Features, error) {
	return as[facade.Features](f.call(ctx, mFeatures, struct{}{}))
}

func (f forward) Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error) {
	return as[api.SpawnResult](f.call(ctx, mSpawn, req))
}

func (f forward) Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error) {
	return as[api.StopResult](f.call(ctx, mStop, req))
}

func (f forward) Restore(ctx context.Context, req api.RestoreRequest) (api.RestoreResult, error) {
	return as[api.RestoreResult](f.call(ctx, mRestore, req))
}

func (f forward) Finish(ctx context.Context, req api.FinishRequest) (api.FinishResult, error) {
	return as[api.FinishResult](f.call(ctx, mFinish, req))
}

func (f forward) Agents(ctx context.Context) ([]string, error) {
	return as[[]string](f.call(ctx, mAgents, struct{}{}))
}

func (f forward) ReportOutcome(ctx context.Context, o api.Outcome) (api.LearnReport, error) {
	return as[api.LearnReport](f.call(ctx, mReportOutcome, o))
}

func (f forward) Capabilities(ctx context.Context, capability, domain string) ([]api.Capability, error) {
	return as[[]api.Capability](f.call(ctx, mCapabilities, capabilityArgs{Capability: capability, Domain: domain}))
}

func (f forward) Reflect(ctx context.Context, query, about string, budget api.Budget) (api.Reflection, error) {
	return as[api.Reflection](f.call(ctx, mReflect, reflectArgs{Query: query, About: about, Budget: budget}))
}

func (f forward) Learnings(ctx context.Context, n int) (api.LearnSummary, error) {
	return as[api.LearnSummary](f.call(ctx, mLearnings, n))
}

func (f forward) Outcomes(ctx context.Context, fl api.OutcomeFilter) ([]api.OutcomeRecord, error) {
	return as[[]api.OutcomeRecord](f.call(ctx, mOutcomes, fl))
}

func (f forward) ListLearnings(ctx context.Context, fl api.LearningFilter) ([]api.LearnItem, error) {
	return as[[]api.LearnItem](f.call(ctx, mListLearnings, fl))
}

func (f forward) DeleteLearnings(ctx context.Context, req api.LearnDeleteRequest) ([]api.LearnItem, error) {
	return as[[]api.LearnItem](f.call(ctx, mDeleteLearnings, req))
}

func (f forward) PatternInfos(ctx context.Context) ([]api.PatternInfo, error) {
	return as[[]api.PatternInfo](f.call(ctx, mPatternInfos, struct{}{}))
}

func (f forward) PatternInfo(ctx context.Context, id string) (api.PatternInfo, error) {
	return as[api.PatternInfo](f.call(ctx, mPatternInfo, id))
}

func (f forward) ActiveAlerts(ctx context.Context) ([]api.CoachAlert, error) {
	return as[[]api.CoachAlert](f.call(ctx, mActiveAlerts, struct{}{}))
}

func (f forward) History(ctx context.Context, q api.CoachHistoryQuery) ([]api.CoachAlert, error) {
	return as[[]api.CoachAlert](f.call(ctx, mHistory, q))
}

func (f forward) Stats(ctx context.Context, pattern, context string) ([]api.CoachStats, error) {
	return as[[]api.CoachStats](f.call(ctx, mStats, statsArgs{Pattern: pattern, Context: context}))
}

func (f forward) Directives(ctx context.Context) (api.DirectivesView, error) {
	return as[api.DirectivesView](f.call(ctx, mDirectives, struct{}{}))
}

func (f forward) RequestIntervention(ctx context.Context, req api.InterventionRequest) (api.InterventionResult, error) {
	return as[api.InterventionResult](f.call(ctx, mRequestIntervention, req))
}

func (f forward) ReportIntervention(ctx context.Context, r api.CoachReport) (api.InterventionStanding, error) {
	return as[api.InterventionStanding](f.call(ctx, mReportIntervention, r))
}

func (f forward) Remind(ctx context.Context, req facade.RemindRequest) (api.ActionResult, error) {
	return as[api.ActionResult](f.call(ctx, mRemind, req))
}
