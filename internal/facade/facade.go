// Package facade is system3's one service: what the dashboard, the MCP
// server, the CLI and the state dir's socket see. It is [api.Service]
// (sessions, wakes, actions, links, policy) together with the
// orchestrators (spawn, stop, restore, finish), the learning store and
// the coach. [New] builds it in the process that runs the monitors; a
// process attached to that one gets the same Service over the socket
// (internal/ipc drives the client, the server and the failover from one
// method table), so a method added here reaches every process.
package facade

import (
	"context"
	"errors"

	"github.com/system3-dev/system3/internal/api"
)

// Service is system3's one service.
type Service interface {
	api.Service
	Orchestrators
	Learning
	Coaching
	// Features says which parts this service has: a part without its
	// store (a learning database that cannot be opened) answers every
	// method with an error matching ErrUnavailable.
	Features(ctx context.Context) (Features, error)
}

// Orchestrators start, stop, restore and finish orchestrators
// (internal/lifecycle).
type Orchestrators interface {
	// Spawn starts an orchestrator in a new worktree; req.Progress, when
	// set, hears each step, also across the socket.
	Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error)
	Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error)
	Restore(ctx context.Context, req api.RestoreRequest) (api.RestoreResult, error)
	Finish(ctx context.Context, req api.FinishRequest) (api.FinishResult, error)
	// Agents are the agents a spawn may name, sorted.
	Agents(ctx context.Context) ([]string, error)
}

// Learning is the learning store (internal/learn).
type Learning interface {
	LearningCore
	// Learnings summarises the store: the last n outcomes, patterns and
	// anti-patterns.
	Learnings(ctx context.Context, n int) (api.LearnSummary, error)
	// DeleteLearnings deletes learnings, all or none, and returns them as
	// they were. It is a write: req.By (the origin the service saw) passes
	// the policy, and each deletion, or the refusal, is audited.
	DeleteLearnings(ctx context.Context, req api.LearnDeleteRequest) ([]api.LearnItem, error)
}

// LearningCore are the methods the service and the learning store
// (backend.Learner) share.
type LearningCore interface {
	ReportOutcome(ctx context.Context, o api.Outcome) (api.LearnReport, error)
	Capabilities(ctx context.Context, capability, domain string) ([]api.Capability, error)
	Reflect(ctx context.Context, query, about string, budget api.Budget) (api.Reflection, error)
	// Outcomes lists the outcomes reported, newest first.
	Outcomes(ctx context.Context, f api.OutcomeFilter) ([]api.OutcomeRecord, error)
	// ListLearnings lists the learnings with who reported them, newest
	// first.
	ListLearnings(ctx context.Context, f api.LearningFilter) ([]api.LearnItem, error)
}

// Coaching is the coach (internal/coach): behaviour patterns, their
// alerts and the interventions that answer them.
type Coaching interface {
	CoachingCore
	Directives(ctx context.Context) (api.DirectivesView, error)
	// Remind types a wake's reminder into its pane and, once the pane
	// took it, records it as sent so its effect is measured: the one path
	// of a reminder a person sends (the dashboard's r). A reminder typed
	// but not recorded returns its result with an error matching
	// api.ErrNotRecorded.
	Remind(ctx context.Context, req RemindRequest) (api.ActionResult, error)
}

// CoachingCore are the methods the service and the coach
// (backend.Coacher) share.
type CoachingCore interface {
	PatternInfos(ctx context.Context) ([]api.PatternInfo, error)
	PatternInfo(ctx context.Context, id string) (api.PatternInfo, error)
	ActiveAlerts(ctx context.Context) ([]api.CoachAlert, error)
	History(ctx context.Context, q api.CoachHistoryQuery) ([]api.CoachAlert, error)
	Stats(ctx context.Context, pattern, context string) ([]api.CoachStats, error)
	RequestIntervention(ctx context.Context, req api.InterventionRequest) (api.InterventionResult, error)
	ReportIntervention(ctx context.Context, r api.CoachReport) (api.InterventionStanding, error)
}

// RemindRequest is a reminder to send into a pane.
type RemindRequest struct {
	Pane     string       `json:"pane"`
	Reminder api.Reminder `json:"reminder"`
	Origin   string       `json:"origin"`
}

// Features are the parts a Service has.
type Features struct {
	// Orchestrators: spawn, stop and Agents; Finish: restore and finish
	// too (orchestrators on this machine).
	Orchestrators bool `json:"orchestrators"`
	Finish        bool `json:"finish"`
	Learning      bool `json:"learning"`
	Coaching      bool `json:"coaching"`
}

// ErrUnavailable matches the error of a method whose part this service
// does not have; its message says which and why.
var ErrUnavailable = errors.New("not available in this system3")
