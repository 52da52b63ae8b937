package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/ipc"
)

// Fleet is this machine's service with the config's hosts beside it, for
// the dashboard: every followed host's sessions and unacknowledged wakes
// join this machine's, named HOST:SESSION (pane HOST:%3, wake HOST:ID,
// Session.Host set), and an action on one of them (preview, inject, keys,
// answer, interrupt, link, ack) goes to that host's daemon over its link,
// which applies its own policy, text check and audit. This machine's
// policy applies first (Service.Allow, with the session named
// HOST:SESSION, so mcp.allow_sessions globs such as "web1:*" select
// another host's sessions, and mcp.read_only refuses everything), and
// this machine's audit log records each routed action before it is sent
// (nothing is sent when that entry cannot be written) and after, with the
// outcome.
//
// Everything else (task lists, hooks, wait) is this machine's. The Set
// must be started (Set.Start).
type Fleet struct {
	api.Service
	Set *Set
	// Record writes an entry of this machine's audit log.
	Record func(api.AuditEntry) error
	// Via is added to a routed action's origin, as the remote daemon
	// records it: "tui" becomes "tui via ssh from THIS-MACHINE".
	Via string
}

var _ api.Service = (*Fleet)(nil)

// Routes reports whether host is one of the hosts the fleet routes to.
func (f *Fleet) Routes(host string) bool { return host != api.LocalHost && f.Set.Link(host) != nil }

// route splits a target: the host ("" or local: this machine) and the
// target as that host knows it.
func (f *Fleet) route(t api.Target) (string, api.Target, error) {
	hs, s, _ := api.SplitHost(t.Session, f.Routes)
	hp, p, _ := api.SplitHost(t.Pane, f.Routes)
	if t.Session == "" {
		hs = hp
	}
	if t.Pane == "" {
		hp = hs
	}
	if hs != hp {
		return "", t, fmt.Errorf("%w: session %q and pane %q are on different hosts", api.ErrBadRequest, t.Session, t.Pane)
	}
	if hs == "" || hs == api.LocalHost {
		if hs == api.LocalHost {
			t.Session, t.Pane = s, p
		}
		return "", t, nil
	}
	if t.Session != "" {
		t.Session = s
	}
	if t.Pane != "" {
		t.Pane = p
	}
	return hs, t, nil
}

func prefixed(host, s string) string {
	if s == "" {
		return ""
	}
	return api.JoinHost(host, s)
}

// hosted renames a host's session for this machine.
func hosted(host string, s api.Session) api.Session {
	s.Host = host
	s.Pane, s.Session, s.SessionID, s.Target = prefixed(host, s.Pane), prefixed(host, s.Session), prefixed(host, s.SessionID), prefixed(host, s.Target)
	return s
}

// hostedWake renames a host's wake for this machine.
func hostedWake(host string, ev api.Wake) api.Wake {
	ev.ID, ev.Session, ev.Pane = prefixed(host, ev.ID), prefixed(host, ev.Session), prefixed(host, ev.Pane)
	return ev
}

// Snapshot is this machine's, with every connected host's sessions after.
func (f *Fleet) Snapshot(ctx context.Context) (api.Snapshot, error) {
	snap, err := f.Service.Snapshot(ctx)
	if err != nil {
		return snap, err
	}
	for _, r := range f.Set.Report(ctx) {
		if !r.Connected {
			continue
		}
		for _, s := range r.Snapshot.Sessions {
			snap.Sessions = append(snap.Sessions, hosted(r.Name, s))
		}
	}
	return snap, nil
}

// Watch delivers this machine's updates and the hosts' sessions' changes:
// a host that connects, disconnects or is read again comes as a resync.
func (f *Fleet) Watch(ctx context.Context) (<-chan api.Update, error) {
	local, err := f.Service.Watch(ctx)
	if err != nil {
		return nil, err
	}
	return merge(ctx, local, f.Set, func(missed uint64) api.Update {
		return api.Update{Kind: api.Resync, Missed: missed}
	}, func(host string, c Change) (api.Update, bool) {
		switch {
		case c.Update != nil && c.Update.Kind.OfSession():
			u := *c.Update
			u.Session = hosted(host, u.Session)
			return u, true
		case c.Update == nil && c.Wake == nil:
			return api.Update{Kind: api.Resync}, true
		}
		// A host's own status (its tmux server, its problem) is not this
		// machine's: the hosts' state is shown apart (Set.Report).
		return api.Update{}, false
	}), nil
}

// merge relays local and what set's hosts report (as hostItem turns each
// change into an item, or skips it) to one channel, until ctx ends or
// local closes. It never blocks a sender: a slow reader loses items and
// is then told how many with resync(missed), as the service tells it.
func merge[T any](ctx context.Context, local <-chan T, set *Set, resync func(missed uint64) T, hostItem func(host string, c Change) (T, bool)) <-chan T {
	out := make(chan T, 64)
	var (
		mu     sync.Mutex // orders sends with the close below
		closed bool
		missed uint64
	)
	send := func(v T) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		if missed > 0 {
			select {
			case out <- resync(missed):
				missed = 0
			default:
				missed++
				return
			}
		}
		select {
		case out <- v:
		default:
			missed++
		}
	}
	cancel := set.Subscribe(func(host string, c Change) {
		if v, ok := hostItem(host, c); ok {
			send(v)
		}
	})
	go func() {
		defer func() {
			cancel()
			mu.Lock()
			closed = true
			close(out)
			mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case v, ok := <-local:
				if !ok {
					return
				}
				send(v)
			}
		}
	}()
	return out
}

// Wakes are this machine's; with no filter at all (the unacknowledged
// wakes, as the dashboard reads them), the connected hosts'
// unacknowledged wakes too.
func (f *Fleet) Wakes(ctx context.Context, fl api.WakeFilter) ([]api.Wake, error) {
	evs, err := f.Service.Wakes(ctx, fl)
	if err != nil || fl.SinceSeq != 0 || fl.IncludeAcked || fl.Session != "" || len(fl.Reasons) != 0 || fl.Limit != 0 {
		return evs, err
	}
	for _, r := range f.Set.Report(ctx) {
		for _, ev := range r.Unacked {
			evs = append(evs, hostedWake(r.Name, ev))
		}
	}
	return evs, nil
}

// SubscribeWakes delivers this machine's wake messages and the hosts';
// a host that connects or disconnects comes as a resync (read Wakes
// again).
func (f *Fleet) SubscribeWakes(ctx context.Context, fl api.WakeFilter) (<-chan api.WakeMessage, error) {
	local, err := f.Service.SubscribeWakes(ctx, fl)
	if err != nil || fl.SinceSeq != 0 || fl.Session != "" || len(fl.Reasons) != 0 {
		return local, err
	}
	return merge(ctx, local, f.Set, func(missed uint64) api.WakeMessage {
		return api.WakeMessage{Kind: api.WakeResync, Missed: missed}
	}, func(host string, c Change) (api.WakeMessage, bool) {
		switch {
		case c.Wake != nil:
			m := *c.Wake
			m.Event = hostedWake(host, m.Event)
			return m, true
		case c.Update == nil:
			return api.WakeMessage{Kind: api.WakeResync}, true
		}
		return api.WakeMessage{}, false
	}), nil
}

// Ack acknowledges HOST:ID on that host's daemon.
func (f *Fleet) Ack(ctx context.Context, id, by string) (api.Wake, error) {
	host, rest, _ := api.SplitHost(id, f.Routes)
	switch host {
	case "":
		return f.Service.Ack(ctx, id, by)
	case api.LocalHost:
		return f.Service.Ack(ctx, rest, by)
	}
	ev, err := routeCall(ctx, f, by, host, "ack", rest, "", "", func(c *ipc.Client) (api.Wake, error) {
		return c.Ack(ctx, rest, f.via(by))
	}, func(api.Wake) (bool, bool, string) { return true, true, "acknowledged" })
	if err != nil {
		return ev, err
	}
	return hostedWake(host, ev), nil
}

func (f *Fleet) via(origin string) string {
	if f.Via == "" {
		return origin
	}
	return origin + " " + f.Via
}

// Preview reads a host's pane through its daemon.
func (f *Fleet) Preview(ctx context.Context, req api.PreviewRequest) (api.Preview, error) {
	host, t, err := f.route(req.Target)
	if err != nil {
		return api.Preview{}, err
	}
	req.Target = t
	if host == "" {
		return f.Service.Preview(ctx, req)
	}
	l := f.Set.Link(host)
	p, err := l.Client.Preview(ctx, req)
	if err = l.Observe(ctx, err); err != nil {
		return p, err
	}
	p.Pane, p.Session = prefixed(host, p.Pane), prefixed(host, p.Session)
	return p, nil
}

// WatchPreview follows a host's pane through its daemon's stream (one
// ssh process while it lasts). A host whose system3 predates the stream
// has its pane read once, and then says why the screen no longer follows
// the pane: no poll is kept for it.
func (f *Fleet) WatchPreview(ctx context.Context, req api.PreviewRequest) (<-chan api.PreviewUpdate, error) {
	host, t, err := f.route(req.Target)
	if err != nil {
		return nil, err
	}
	req.Target = t
	if host == "" {
		return f.Service.WatchPreview(ctx, req)
	}
	l := f.Set.Link(host)
	in, err := l.Client.WatchPreview(ctx, req)
	if errors.Is(err, facade.ErrUnavailable) {
		return previewOnce(ctx, l, req), nil
	}
	if err = l.Observe(ctx, err); err != nil {
		return nil, err
	}
	out := make(chan api.PreviewUpdate)
	go func() {
		defer close(out)
		for u := range in {
			u.Pane, u.Session = prefixed(host, u.Pane), prefixed(host, u.Session)
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// previewOnce is WatchPreview's stream for a host whose daemon has no
// stream of screens: the screen read once, then (as the error of a read)
// that the host must be upgraded for it to follow the pane. It closes
// when ctx ends.
func previewOnce(ctx context.Context, l *Link, req api.PreviewRequest) <-chan api.PreviewUpdate {
	host := l.Host.Name
	out := make(chan api.PreviewUpdate)
	go func() {
		defer close(out)
		var frames []api.PreviewUpdate
		p, err := l.Client.Preview(ctx, req)
		if err = l.Observe(ctx, err); err != nil {
			frames = append(frames, api.PreviewUpdate{Preview: api.Preview{Lines: []string{}}, Err: err.Error()})
		} else {
			frames = append(frames, api.PreviewUpdate{Preview: p})
		}
		frames = append(frames, api.PreviewUpdate{Preview: api.Preview{Lines: []string{}},
			Err: fmt.Sprintf("host %s runs an older system3, whose daemon cannot send a pane's screen as it changes: this is the screen when it was selected; upgrade it (system3 hosts install %s, then restart its daemon)", host, host)})
		for _, u := range frames {
			u.Pane, u.Session = prefixed(host, cmp.Or(u.Pane, req.Pane)), prefixed(host, u.Session)
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		}
		<-ctx.Done()
	}()
	return out
}

// Inject types text in a host's pane through its daemon.
func (f *Fleet) Inject(ctx context.Context, req api.InjectRequest) (api.ActionResult, error) {
	host, t, err := f.route(req.Target)
	if err != nil {
		return api.ActionResult{}, err
	}
	req.Target = t
	if host == "" {
		return f.Service.Inject(ctx, req)
	}
	args := ""
	if req.NoEnter {
		args += " no_enter"
	}
	if req.Urgent {
		args += " urgent"
	}
	if req.VisibleControls {
		args += " visible_controls"
	}
	origin := req.Origin
	req.Origin = f.via(req.Origin)
	return f.action(ctx, origin, host, "inject", t, req.Text, strings.TrimSpace(args), func(c *ipc.Client) (api.ActionResult, error) {
		return c.Inject(ctx, req)
	})
}

// SendKeys presses keys in a host's pane through its daemon.
func (f *Fleet) SendKeys(ctx context.Context, req api.KeysRequest) (api.ActionResult, error) {
	host, t, err := f.route(req.Target)
	if err != nil {
		return api.ActionResult{}, err
	}
	req.Target = t
	if host == "" {
		return f.Service.SendKeys(ctx, req)
	}
	origin := req.Origin
	req.Origin = f.via(req.Origin)
	return f.action(ctx, origin, host, "keys", t, "", strings.Join(req.Keys, " "), func(c *ipc.Client) (api.ActionResult, error) {
		return c.SendKeys(ctx, req)
	})
}

// Answer answers a host's prompt through its daemon. A wake named
// HOST:ID is that host's wake, and goes there with the bare id.
func (f *Fleet) Answer(ctx context.Context, req api.AnswerRequest) (api.ActionResult, error) {
	host, t, err := f.route(req.Target)
	if err != nil {
		return api.ActionResult{}, err
	}
	if hw, id, ok := api.SplitHost(req.Wake, f.Routes); ok {
		if req.Target != (api.Target{}) && hw != host && !(hw == api.LocalHost && host == "") {
			return api.ActionResult{}, fmt.Errorf("%w: wake %q and target %q are on different hosts", api.ErrBadRequest, req.Wake, req.Target)
		}
		if req.Target == (api.Target{}) && hw != api.LocalHost {
			host = hw
		}
		req.Wake = id
	}
	req.Target = t
	if host == "" {
		return f.Service.Answer(ctx, req)
	}
	origin := req.Origin
	req.Origin = f.via(req.Origin)
	audited := t
	if audited == (api.Target{}) {
		audited.Session = "wake " + req.Wake // what the answer names, for the audit log
	}
	return f.action(ctx, origin, host, "answer", audited, "", req.Answer, func(c *ipc.Client) (api.ActionResult, error) {
		return c.Answer(ctx, req)
	})
}

// Interrupt interrupts a host's agent through its daemon.
func (f *Fleet) Interrupt(ctx context.Context, req api.InterruptRequest) (api.ActionResult, error) {
	host, t, err := f.route(req.Target)
	if err != nil {
		return api.ActionResult{}, err
	}
	req.Target = t
	if host == "" {
		return f.Service.Interrupt(ctx, req)
	}
	origin := req.Origin
	req.Origin = f.via(req.Origin)
	return f.action(ctx, origin, host, "interrupt", t, "", "", func(c *ipc.Client) (api.ActionResult, error) {
		return c.Interrupt(ctx, req)
	})
}

// Link links a host's session to one of its task lists, on that host.
func (f *Fleet) Link(ctx context.Context, req api.LinkRequest) (api.Session, error) {
	host, t, err := f.route(req.Target)
	if err != nil {
		return api.Session{}, err
	}
	req.Target = t
	if host == "" {
		return f.Service.Link(ctx, req)
	}
	origin := req.Origin
	req.Origin = f.via(req.Origin)
	s, err := routeCall(ctx, f, origin, host, "link", t.String(), "", req.TaskList, func(c *ipc.Client) (api.Session, error) {
		return c.Link(ctx, req)
	}, func(api.Session) (bool, bool, string) { return true, true, "linked to " + req.TaskList })
	if err != nil {
		return s, err
	}
	return hosted(host, s), nil
}

// action routes a pane action and renames its result for this machine.
func (f *Fleet) action(ctx context.Context, origin, host, action string, t api.Target, text, args string, do func(*ipc.Client) (api.ActionResult, error)) (api.ActionResult, error) {
	res, err := routeCall(ctx, f, origin, host, action, t.String(), text, args, do, func(r api.ActionResult) (bool, bool, string) {
		if r.Detail == "" && r.Option != "" {
			return r.Delivered, r.Verified, "option: " + r.Option
		}
		return r.Delivered, r.Verified, r.Detail
	})
	res.Pane, res.Session, res.Target = prefixed(host, res.Pane), prefixed(host, res.Session), prefixed(host, res.Target)
	return res, err
}

// sessionName names, as HOST:SESSION, the session of host that target
// (a session, target, pane or wake id, as the host knows it) is in, from
// what the followed streams said; HOST:TARGET when it is not known.
func (f *Fleet) sessionName(ctx context.Context, host, target string) string {
	for _, r := range f.Set.Report(ctx) {
		if r.Name != host {
			continue
		}
		for _, s := range r.Snapshot.Sessions {
			if s.Pane == target || s.Session == target || s.Target == target {
				return prefixed(host, s.Session)
			}
		}
		for _, ev := range r.Unacked {
			if ev.ID == target {
				return prefixed(host, ev.Session)
			}
		}
	}
	return prefixed(host, target)
}

// routeCall sends one action to host's daemon after this machine's
// policy, audited here before and after (see Fleet and Routed).
func routeCall[T any](ctx context.Context, f *Fleet, origin, host, action, target, text, args string, do func(*ipc.Client) (T, error), outcome func(T) (sent, verified bool, detail string)) (T, error) {
	var zero T
	l := f.Set.Link(host)
	if l == nil {
		return zero, fmt.Errorf("%w: no host %q in the config", api.ErrBadRequest, host)
	}
	if err := f.Service.Allow(ctx, api.AllowRequest{Action: action, Session: f.sessionName(ctx, host, target), Origin: origin}); err != nil {
		return zero, err
	}
	r := Routed{Origin: origin, Action: action, Target: target, Text: text, Args: args, Record: f.Record}
	return Route(ctx, l, r, do, outcome)
}

// Routed describes an action sent to another host's daemon, for this
// machine's audit log.
type Routed struct {
	Origin string // who asked here: cli, tui, mcp:NAME
	Action string // answer, inject, keys, interrupt, link, ack
	Target string // as the host knows it: session, pane or wake id
	Text   string // inject's text, audited as given
	Args   string // the rest: an answer's option, inject's flags
	// Record writes an entry of this machine's audit log; nil records
	// nothing.
	Record func(api.AuditEntry) error
}

// Route runs do on l's daemon. The host's service does the action, so its
// policy, text checks and audit apply there; r.Record records here that
// it was routed, before (nothing is sent when that entry cannot be
// written) and after, with the outcome. When the link drops during the
// call, the error says that whether the host did it is in its audit log.
func Route[T any](ctx context.Context, l *Link, r Routed, do func(*ipc.Client) (T, error), outcome func(T) (sent, verified bool, detail string)) (T, error) {
	var zero T
	host := l.Host.Name
	e := api.AuditEntry{Origin: r.Origin, Action: "route", Tool: r.Action, Host: host, Target: api.JoinHost(host, r.Target),
		ID: fmt.Sprintf("route-%d-%d", time.Now().UnixNano(), os.Getpid()), Phase: audit.PhaseAttempt, Text: r.Text, Args: r.Args}
	if r.Record != nil {
		if err := r.Record(e); err != nil {
			return zero, fmt.Errorf("not sent to host %s: %w", host, err)
		}
	}
	v, err := do(l.Client)
	err = l.Observe(ctx, err)
	if r.Record != nil {
		e.Phase, e.Time, e.Text, e.Args = audit.PhaseResult, time.Time{}, "", ""
		if err != nil {
			e.Error = err.Error()
		} else {
			e.Sent, e.Checked, e.Result = outcome(v)
		}
		_ = r.Record(e)
	}
	if err != nil && (errors.Is(err, ErrLinkLost) || errors.Is(err, ipc.ErrConnLost) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return zero, fmt.Errorf("%w; whether host %s did the %s is not known: see its audit log (%s)", err, host, r.Action, l.Host.CommandLine("audit"))
	}
	return v, err
}
