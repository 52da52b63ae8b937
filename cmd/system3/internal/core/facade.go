package core

import (
	"context"
	"sync"

	"github.com/system3-dev/system3/monitor/api"
	"github.com/system3-dev/system3/monitor/coach"
	"github.com/system3-dev/system3/monitor/facade"
	"github.com/system3-dev/system3/monitor/lifecycle"
)

// Local is the one service of the process that runs the monitors: svc
// (the supervisor) with the orchestrators of lm (HOST:NAME routed to the
// config's hosts; nil: none), the learning store and the coach (this
// process's detecting coach, else one reading the shared database and
// typing through svc). What cannot be opened is logged and left out: its
// methods say so.
func (a *App) Local(ctx context.Context, svc api.Service, lm *lifecycle.Manager) facade.Service {
	var p facade.Parts
	if lm != nil {
		p.Orchestrators = a.HostsLifecycle(lm, svc)
	}
	if ls := a.LearnStore(); ls != nil {
		p.Learn = ls
	}
	if co := a.coachFor(ctx, svc); co != nil {
		p.Coach = co
	}
	return facade.New(svc, p)
}

// coachFor is the coach of this process's monitors, else a reading coach
// opened once per process (closed by Close); nil when its database cannot
// be opened.
func (a *App) coachFor(ctx context.Context, inject api.Injector) *coach.Coach {
	if a.coach != nil {
		return a.coach
	}
	a.readingMu.Lock()
	defer a.readingMu.Unlock()
	if a.reading == nil {
		co, closeFn, err := a.OpenCoach(ctx, nil, inject, nil)
		if err != nil {
			a.Log.Warn("behaviour patterns unavailable", "err", err)
			return nil
		}
		a.reading, a.closeReading = co, closeFn
	}
	return a.reading
}

// readingCoach holds the reading coach of coachFor.
type readingCoach struct {
	readingMu    sync.Mutex
	reading      *coach.Coach
	closeReading func()
}

func (r *readingCoach) closeCoach() {
	r.readingMu.Lock()
	defer r.readingMu.Unlock()
	if r.closeReading != nil {
		r.closeReading()
	}
	r.reading, r.closeReading = nil, nil
}

// FleetOf is svc with the config's hosts' sessions and wakes beside this
// machine's (see Fleet); without hosts it is svc.
func (a *App) FleetOf(svc facade.Service) facade.Service {
	if a.HostSet() == nil {
		return svc
	}
	return facade.Sessions(svc, a.Fleet(svc))
}
