package backend

import (
	"context"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/coach"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/learn"
	"github.com/system3-dev/system3/internal/lifecycle"
)

// Learner is the learning store as New uses it; *learn.Store is one.
type Learner interface {
	facade.LearningCore
	Summary(ctx context.Context, n int) (api.LearnSummary, error)
	DeleteLearnings(ctx context.Context, ids []int64) ([]api.LearnItem, error)
}

var _ Learner = (*learn.Store)(nil)

// Coacher is the coach as New uses it; *coach.Coach is one.
type Coacher interface {
	facade.CoachingCore
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

// New returns the Service of svc and parts, for the process that has
// them: svc's methods as svc implements them, and the parts'. The
// orchestrators are told of each link made through svc's Link, when svc
// tells (linkTeller: the supervisor, the tests' fake), so the
// orchestrator records keep in step; its Remind records what it sent with
// the coach.
func New(svc api.Service, p Parts) facade.Service {
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
func (e *unavailableError) Is(target error) bool { return target == facade.ErrUnavailable }
func (e *unavailableError) Unwrap() error        { return e.cause }

var errNoFinish = &unavailableError{msg: "this system3 cannot restore or finish orchestrators"}

func (l *local) Features(context.Context) (facade.Features, error) {
	_, fin := l.p.Orchestrators.(lifecycle.Finisher)
	return facade.Features{Orchestrators: l.p.Orchestrators != nil, Finish: fin, Learning: l.p.Learn != nil, Coaching: l.p.Coach != nil}, nil
}

// Over returns svc with its sessions, wakes and actions from sessions and
// its orchestrators from orch: a process that follows other hosts sees
// their sessions beside its own (remote.Fleet over svc) and starts and
// stops orchestrators on them too; the learning store and the coach stay
// svc's.
func Over(svc facade.Service, sessions api.Service, orch facade.Orchestrators) facade.Service {
	return overlay{Service: sessions, Orchestrators: orch, Learning: svc, Coaching: svc, featured: svc}
}

// overlay is a Service whose api.Service part and orchestrators are replaced.
type overlay struct {
	api.Service
	facade.Orchestrators
	facade.Learning
	facade.Coaching
	featured
}

type featured interface {
	Features(ctx context.Context) (facade.Features, error)
}
