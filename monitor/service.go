package monitor

import (
	"context"
	"strings"

	"github.com/system3-dev/system3/monitor/api"
)

// watchBuffer bounds each Watch subscriber; past it updates are counted as
// missed and the subscriber is sent a Resync.
const watchBuffer = 256

type watcher struct {
	ch     chan api.Update
	missed uint64
}

// publishLocked delivers an update to every watcher without blocking.
func (s *Supervisor) publishLocked(u api.Update) {
	for w := range s.subs {
		if w.missed > 0 {
			select {
			case w.ch <- api.Update{Kind: api.Resync, Missed: w.missed}:
				w.missed = 0
			default:
				w.missed++
				continue
			}
		}
		select {
		case w.ch <- u:
		default:
			w.missed++
		}
	}
}

// Snapshot returns every session, those needing a person first, then by
// session, window and pane.
func (s *Supervisor) Snapshot(ctx context.Context) (api.Snapshot, error) {
	s.mu.Lock()
	snap := api.Snapshot{Server: s.cfg.Server, Running: s.running, Taken: s.cfg.Clock(), Problem: joinProblems(s.problem, s.rulesProblem, s.extraProblemLocked())}
	snap.Sessions = make([]api.Session, 0, len(s.panes))
	for _, st := range s.panes {
		snap.Sessions = append(snap.Sessions, st.sess.Clone())
	}
	s.mu.Unlock()
	if h := s.cfg.Wakes.Health(); h.Err != nil {
		snap.Problem = joinProblems(snap.Problem, h.Err.Error())
	}
	if err := s.cfg.Audit.Health(); err != nil {
		snap.Problem = joinProblems(snap.Problem, err.Error())
	}
	api.SortSessions(snap.Sessions)
	return snap, nil
}

// Watch delivers registry updates until ctx ends; the channel is closed
// then.
func (s *Supervisor) Watch(ctx context.Context) (<-chan api.Update, error) {
	w := &watcher{ch: make(chan api.Update, watchBuffer)}
	s.mu.Lock()
	s.subs[w] = struct{}{}
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		delete(s.subs, w)
		close(w.ch)
		s.mu.Unlock()
	}()
	return w.ch, nil
}

// Wakes lists wakes.
func (s *Supervisor) Wakes(ctx context.Context, f api.WakeFilter) ([]api.Wake, error) {
	return s.cfg.Wakes.List(f)
}

// WaitWake returns the first open, unacked wake matching f (or a resolved one with f.IncludeResolved), waiting for one.
func (s *Supervisor) WaitWake(ctx context.Context, f api.WakeFilter) (api.Wake, error) {
	return s.cfg.Wakes.Wait(ctx, f)
}

// SubscribeWakes delivers wake messages until ctx ends.
func (s *Supervisor) SubscribeWakes(ctx context.Context, f api.WakeFilter) (<-chan api.WakeMessage, error) {
	sub, err := s.cfg.Wakes.Subscribe(ctx, f)
	if err != nil {
		return nil, err
	}
	return sub.C, nil
}

// Ack acknowledges one wake.
func (s *Supervisor) Ack(ctx context.Context, id, by string) (api.Wake, error) {
	if err := s.cfg.Policy.CheckAck(by); err != nil {
		return api.Wake{}, err
	}
	return s.cfg.Wakes.Ack(id, by)
}

// AckAll acknowledges every unacked wake.
func (s *Supervisor) AckAll(ctx context.Context, by string) ([]api.Wake, error) {
	if err := s.cfg.Policy.CheckAck(by); err != nil {
		return nil, err
	}
	return s.cfg.Wakes.AckAll(by)
}

// joinProblems joins the non-empty problems into one message.
func joinProblems(ps ...string) string {
	var out []string
	for _, p := range ps {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}
