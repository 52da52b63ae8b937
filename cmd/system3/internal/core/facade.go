package core

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/coach"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/lifecycle"
)

// Local is the one service of the process that runs the monitors: svc
// (the supervisor) with the orchestrators of lm (HOST:NAME routed to the
// config's hosts; nil: none, for the reason lmErr), the learning store and
// the coach (this process's detecting coach, else one reading the shared
// database and typing through svc). What cannot be opened is logged and
// left out: its methods say why.
func (a *App) Local(ctx context.Context, svc api.Service, lm *lifecycle.Manager, lmErr error) facade.Service {
	p := backend.Parts{OrchestratorsErr: lmErr}
	if lm != nil {
		p.Orchestrators = a.HostsLifecycle(lm, svc)
	}
	if ls, err := a.OpenLearn(); err != nil {
		a.Log.Warn("learning store unavailable", "err", err)
		p.LearnErr = err
	} else {
		p.Learn = ls
	}
	if co, err := a.coachFor(ctx, svc); err != nil {
		p.CoachErr = err
	} else {
		p.Coach = co
	}
	// The learning store's writes are audited in the state dir's log, by
	// a process without monitors too.
	dir := a.Settings.StateDir
	p.Audit = func(e api.AuditEntry) error {
		log := audit.Open(dir)
		defer log.Close()
		return log.Write(e)
	}
	return backend.New(svc, p)
}

// openParts is the service for a command that uses only the learning
// store or the coach: the daemon's when one runs, else one of this
// process without monitors, whose sessions, wakes and actions say that
// none run. It is how Client opens the service (PartsOnly).
func (a *App) openParts(ctx context.Context) (facade.Service, func() error, error) {
	c, err := ipc.Dial(ctx, a.SocketPath())
	if err == nil {
		return c, c.Close, nil
	}
	if !errors.Is(err, ipc.ErrNoDaemon) {
		return nil, nil, err
	}
	none := ipc.Forwarding(func(context.Context, *ipc.Method, any) (any, error) { return nil, errNoMonitors })
	return a.Local(ctx, none, nil, errNoMonitors), func() error { return nil }, nil
}

// errNoMonitors is what a service without monitors answers.
var errNoMonitors = errors.New("no system3 monitors this state dir: start `system3 serve` (or the dashboard)")

// coachFor is the coach of this process's monitors, else a reading coach
// opened once per process (closed by Close); an error when its database
// cannot be opened.
func (a *App) coachFor(ctx context.Context, inject api.Injector) (*coach.Coach, error) {
	if a.coach != nil {
		return a.coach, nil
	}
	a.readingMu.Lock()
	defer a.readingMu.Unlock()
	if a.reading == nil {
		co, closeFn, err := a.OpenCoach(ctx, nil, inject, nil)
		if err != nil {
			a.Log.Warn("behaviour patterns unavailable", "err", err)
			return nil, fmt.Errorf("open the learning database: %w", err)
		}
		a.reading, a.closeReading = co, closeFn
	}
	return a.reading, nil
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

// FleetOf is svc with the config's hosts beside this machine: their
// sessions and wakes (see Fleet), and spawn and stop on them run there
// from this process; without hosts it is svc.
func (a *App) FleetOf(svc facade.Service) facade.Service {
	if a.HostSet() == nil {
		return svc
	}
	return backend.Over(svc, a.Fleet(svc), serviceHosts{Orchestrators: svc, hostsLifecycle: hostsLifecycle{local: svc, a: a, svc: svc}})
}
