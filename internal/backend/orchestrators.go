package backend

import (
	"context"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/lifecycle"
)

// The orchestrators' methods of the Service New builds.

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
