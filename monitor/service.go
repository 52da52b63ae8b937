package monitor

import (
	"context"
	"errors"
	"strings"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/wake"
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
	s.checkHealth()
	s.mu.Lock()
	st := s.statusLocked()
	snap := api.Snapshot{Server: st.Server, Running: st.Running, Taken: s.cfg.Clock(), Problem: st.Problem}
	snap.Sessions = make([]api.Session, 0, len(s.panes))
	for _, st := range s.panes {
		snap.Sessions = append(snap.Sessions, st.sess.Clone())
	}
	s.mu.Unlock()
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

// Ack acknowledges one wake, through the policy, and audits who did.
func (s *Supervisor) Ack(ctx context.Context, id, by string) (api.Wake, error) {
	if err := s.cfg.Policy.CheckWrite(by, "acknowledge wakes"); err != nil {
		s.auditAck(by, id, "", err)
		return api.Wake{}, err
	}
	ev, err := s.cfg.Wakes.Ack(id, by)
	s.auditAck(by, id, ev.Pane, err)
	return ev, err
}

// AckAll acknowledges every unacked wake, through the policy, and audits
// who did.
func (s *Supervisor) AckAll(ctx context.Context, by string) ([]api.Wake, error) {
	if err := s.cfg.Policy.CheckWrite(by, "acknowledge wakes"); err != nil {
		s.auditAck(by, "all", "", err)
		return nil, err
	}
	evs, err := s.cfg.Wakes.AckAll(by)
	for _, ev := range evs {
		s.auditAck(by, ev.ID, ev.Pane, err)
	}
	return evs, err
}

// auditAck records an acknowledgement (or its refusal) in the audit log,
// under the origin the policy judged.
func (s *Supervisor) auditAck(by, id, pane string, err error) {
	e := api.AuditEntry{Time: s.cfg.Clock(), Origin: by, Action: "ack", Target: id, Pane: pane, Sent: err == nil || errors.Is(err, wake.ErrNotDurable)}
	if err != nil {
		e.Error = err.Error()
		if errors.Is(err, api.ErrRefused) {
			e.Phase = audit.PhaseRefused
		}
	}
	if aerr := s.cfg.Audit.Write(e); aerr != nil {
		s.cfg.Logger.Warn("audit", "err", aerr)
	}
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
