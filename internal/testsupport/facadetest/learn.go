package facadetest

import (
	"context"
	"slices"
	"strconv"
	"sync"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
)

// Learner is a fake learning store (backend.Parts.Learn). It holds what
// SetSummary set: Summary answers it, and Capabilities, Outcomes and
// ListLearnings answer its parts. It records the outcomes reported and the
// learnings deleted, answers a deletion with one pattern per id, and
// counts the calls of each method. Its zero value is ready; it is safe for
// concurrent use.
type Learner struct {
	mu      sync.Mutex
	errs    map[string]error
	calls   map[string]int
	summary api.LearnSummary

	outcomes []api.Outcome
	deleted  [][]int64
}

var _ backend.Learner = (*Learner)(nil)

// Fail makes method, named as the service's method is on the socket
// ("report_outcome", "capabilities", "reflect", "learnings" for Summary,
// "outcomes", "list_learnings", "delete_learnings"), return err; nil
// restores it.
func (l *Learner) Fail(method string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errs == nil {
		l.errs = map[string]error{}
	}
	l.errs[method] = err
}

// SetSummary sets what Summary answers.
func (l *Learner) SetSummary(s api.LearnSummary) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.summary = s
}

// Calls counts the calls of method (named as Fail takes it) so far.
func (l *Learner) Calls(method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[method]
}

// Reported returns the outcomes reported so far, in order.
func (l *Learner) Reported() []api.Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.outcomes)
}

// Deleted returns the ids of each deletion so far, in order.
func (l *Learner) Deleted() [][]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.deleted)
}

// call counts a call of method and returns its error; the caller holds
// l.mu.
func (l *Learner) call(method string) error {
	if l.calls == nil {
		l.calls = map[string]int{}
	}
	l.calls[method]++
	return l.errs[method]
}

func (l *Learner) ReportOutcome(_ context.Context, o api.Outcome) (api.LearnReport, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outcomes = append(l.outcomes, o)
	if err := l.call("report_outcome"); err != nil {
		return api.LearnReport{}, err
	}
	return api.LearnReport{OutcomeID: int64(len(l.outcomes))}, nil
}

func (l *Learner) Capabilities(context.Context, string, string) ([]api.Capability, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.call("capabilities"); err != nil {
		return nil, err
	}
	return slices.Clone(l.summary.Capabilities), nil
}

func (l *Learner) Reflect(context.Context, string, string, api.Budget) (api.Reflection, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return api.Reflection{}, l.call("reflect")
}

func (l *Learner) Outcomes(context.Context, api.OutcomeFilter) ([]api.OutcomeRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.call("outcomes"); err != nil {
		return nil, err
	}
	return slices.Clone(l.summary.Outcomes), nil
}

func (l *Learner) ListLearnings(context.Context, api.LearningFilter) ([]api.LearnItem, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.call("list_learnings"); err != nil {
		return nil, err
	}
	return append(slices.Clone(l.summary.Patterns), l.summary.AntiPatterns...), nil
}

func (l *Learner) Summary(context.Context, int) (api.LearnSummary, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.call("learnings"); err != nil {
		return api.LearnSummary{}, err
	}
	return l.summary, nil
}

func (l *Learner) DeleteLearnings(_ context.Context, ids []int64) ([]api.LearnItem, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleted = append(l.deleted, slices.Clone(ids))
	if err := l.call("delete_learnings"); err != nil {
		return nil, err
	}
	items := make([]api.LearnItem, len(ids))
	for i, id := range ids {
		items[i] = api.LearnItem{ID: id, Kind: api.LearningPattern, Text: "learning " + strconv.FormatInt(id, 10)}
	}
	return items, nil
}
