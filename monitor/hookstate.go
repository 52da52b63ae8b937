package monitor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/monitor/rules"
)

// How hook events are weighed against the screen.
const (
	// HookFresh is how old a hook event may be and still set a session's
	// state; older ones (replayed from the spool) only add history: the
	// transcript path and failing tool calls.
	HookFresh = 3 * time.Minute
	// hookUnconfirmed is how long a hook state the screen never showed
	// holds while the screen stays as it was: if the screen has not
	// caught up by then, it was right.
	hookUnconfirmed = 30 * time.Second
	// hookForget drops what is known about a pane that is gone.
	hookForget = 10 * time.Minute
)

// stateKind is a classification without its evidence.
type stateKind struct {
	state api.State
	kind  string
}

// hookMark is the state the latest hook event set for a pane, and what the
// screen said when it arrived.
type hookMark struct {
	stateKind
	rule  string
	lines []string
	at    time.Time
	// base is the screen's classification the hook arrived over; hasBase
	// is false while the pane had no capture yet (the first capture may
	// predate the hook, so it is taken as the base).
	base    stateKind
	hasBase bool
	// confirmed: a capture has shown the hook's state.
	confirmed bool
}

// paneHooks is what hook events have told about one pane.
type paneHooks struct {
	mark       *hookMark
	transcript string
	sessionID  string
	// fails are the failing tool calls since the last successful one.
	fails []api.HookEvent
	// lastRes and lastPr are the last capture's classification, which a
	// hook is applied over until the next capture.
	lastRes  rules.Result
	lastPr   probeResult
	captured bool
	// screenAt is when the captures began to show lastRes's state; zero
	// while they have shown it from the first (since when is not known).
	screenAt time.Time
	seen     time.Time
}

// hookEffect is the state a hook event says the session is in.
func hookEffect(ev api.HookEvent) (sk stateKind, rule string, lines []string, ok bool) {
	line := ev.Name
	if ev.ToolName != "" {
		line += ": " + ev.ToolName
		if ev.ToolInput != "" {
			line += ": " + ev.ToolInput
		}
	}
	switch ev.Name {
	case api.PermissionRequest:
		return stateKind{api.AwaitingInput, "permission"}, "hook.permission_request", []string{line}, true
	case api.Notification:
		l := []string{fmt.Sprintf("Notification %s: %s", ev.NotificationType, ev.Message)}
		// Other notifications ("idle_prompt": waiting a minute for input)
		// may come while a question dialog is up: the screen knows better.
		if ev.NotificationType == "permission_prompt" {
			return stateKind{api.AwaitingInput, "permission"}, "hook.notification.permission_prompt", l, true
		}
	case api.Stop:
		if ev.Blocked {
			// system3's reply gave the agent a wake instead of letting
			// the turn end (a supervisor pane's Stop hook).
			return stateKind{api.Working, ""}, "hook.stop_blocked", []string{"Stop: blocked with a wake; the turn goes on"}, true
		}
		return stateKind{api.Idle, ""}, "hook.stop", []string{line}, true
	case api.StopFailure:
		l := []string{"StopFailure: " + ev.Error}
		if ev.ErrorDetails != "" {
			l = append(l, ev.ErrorDetails)
		}
		if ev.LastMessage != "" {
			l = append(l, ev.LastMessage)
		}
		if ev.Error == "rate_limit" && resetsIn([]string{ev.LastMessage}) != "" {
			// A usage limit that says when it resets, no API error:
			// Claude Code may continue by itself then, which only its
			// screen tells.
			return stateKind{api.RateLimited, ""}, "hook.usage_limit", l, true
		}
		return stateKind{api.Error, ev.Error}, "hook.stop_failure", l, true
	case api.UserPromptSubmit:
		return stateKind{api.Working, ""}, "hook.user_prompt_submit", []string{line}, true
	case api.PreToolUse:
		return stateKind{api.Working, ""}, "hook.pre_tool_use", []string{line}, true
	case api.PostToolUse:
		return stateKind{api.Working, ""}, "hook.post_tool_use", []string{line}, true
	case api.PostToolUseFailure:
		if !ev.IsInterrupt {
			return stateKind{api.Working, ""}, "hook.post_tool_use_failure", []string{line, errorSummary(ev.Error)}, true
		}
	case api.SessionEnd:
		return stateKind{api.Exited, "session_end"}, "hook.session_end", []string{"SessionEnd: " + ev.Reason}, true
	}
	return stateKind{}, "", nil, false
}

// Hook takes one hook event (from `system3 hook`) through the stages that
// may answer it, in order: the delivery of wakes to the supervisor pane
// answers that pane's Stop (UseDelivery), the approval policy decides a
// permission request (UsePermissions), and the monitors take every event
// (monitorHook).
func (s *Supervisor) Hook(ctx context.Context, ev api.HookEvent) (api.HookReply, error) {
	if d := s.delivery.Load(); d != nil {
		return d.hook(ctx, ev, s.permissionHook)
	}
	return s.permissionHook(ctx, ev)
}

// permissionHook is Hook after the delivery's stage.
func (s *Supervisor) permissionHook(ctx context.Context, ev api.HookEvent) (api.HookReply, error) {
	if p := s.permissions.Load(); p != nil {
		return p.hook(ctx, ev, s.monitorHook)
	}
	return s.monitorHook(ctx, ev)
}

// hookFunc is a stage of Hook, or what follows it.
type hookFunc func(ctx context.Context, ev api.HookEvent) (api.HookReply, error)

// monitorHook is the monitors' stage of a hook event (from `system3 hook`,
// or replayed from the spool). A fresh event sets its pane's state at
// once; the screen takes over again as soon as a capture shows something
// else than it did when the event came (see docs/hooks.md). Every event
// adds what it knows: the transcript path, the session id, failing tool
// calls. Its reply is always empty.
func (s *Supervisor) monitorHook(ctx context.Context, ev api.HookEvent) (api.HookReply, error) {
	if ev.Name == "" {
		return api.HookReply{}, fmt.Errorf("%w: the hook event has no name", api.ErrBadRequest)
	}
	if ev.Sender.Via != "" {
		// Before Received is touched: the proof covers the time sent.
		if err := s.checkHook(ev); err != nil {
			s.refuseHook(ev, err)
			return api.HookReply{}, err
		}
	}
	now := s.cfg.Clock()
	if ev.Received.IsZero() || ev.Received.After(now) {
		ev.Received = now
	}
	fresh := now.Sub(ev.Received) <= HookFresh
	call, isCall := ev.ToolCall()
	var ops []wakeOp
	var tc api.ToolCall
	s.mu.Lock()
	if ev.Pane != "" {
		ops = s.hookLocked(now, ev, fresh)
	}
	if isCall && s.cfg.OnToolCall != nil {
		tc = hookToolCall(call)
		if st, ok := s.panes[ev.Pane]; ok {
			tc.Session, tc.Target, tc.Repo, tc.Agent = st.sess.Session, st.sess.Target, st.sess.Path, st.sess.Agent
		}
	}
	s.mu.Unlock()
	s.runOps(ops)
	if isCall && s.cfg.OnToolCall != nil {
		s.cfg.OnToolCall(tc)
	}
	s.cfg.Logger.Debug("hook", "event", ev.Name, "pane", ev.Pane, "fresh", fresh)
	return api.HookReply{}, nil
}

func (s *Supervisor) hookLocked(now time.Time, ev api.HookEvent, fresh bool) []wakeOp {
	ph := s.paneHooksLocked(now, ev.Pane)
	ph.record(ev, fresh, max(s.cfg.LoopThreshold, 1))
	sk, rule, lines, ok := hookEffect(ev)
	st, known := s.panes[ev.Pane]
	if !ok || !fresh || !ph.takes(ev, sk) {
		if known && ph.captured && ev.Name == api.PostToolUseFailure {
			return s.applyLocked(now, ev.Pane, ph.lastRes, ph.lastPr)
		}
		return nil
	}
	ph.mark = &hookMark{stateKind: sk, rule: rule, lines: lines, at: ev.Received}
	if !known {
		// A pane tmux has not listed yet: the next rescan adds it, and
		// its first capture meets the mark.
		s.kickLocked()
		return nil
	}
	// The next capture fills in what the screen shows (the question and
	// options of a prompt the hook announced).
	st.dirty = true
	s.kickLocked()
	if !ph.captured {
		return nil
	}
	ph.mark.base, ph.mark.hasBase = stateKind{ph.lastRes.State, ph.lastRes.Kind}, true
	return s.applyLocked(now, ev.Pane, ph.lastRes, ph.lastPr)
}

// paneHooksLocked returns what hook events have told about pane, made if
// none have, and forgets the panes gone for hookForget.
func (s *Supervisor) paneHooksLocked(now time.Time, pane string) *paneHooks {
	if s.hooks == nil {
		s.hooks = map[string]*paneHooks{}
	}
	for id, ph := range s.hooks {
		if _, ok := s.panes[id]; !ok && now.Sub(ph.seen) > hookForget {
			delete(s.hooks, id)
		}
	}
	ph := s.hooks[pane]
	if ph == nil {
		ph = &paneHooks{}
		s.hooks[pane] = ph
	}
	ph.seen = now
	return ph
}

// record adds what an event tells besides a state: the agent's session
// and transcript (a stale event's only where none is known), and the
// failing tool calls since the last that succeeded, the last keep of them.
func (ph *paneHooks) record(ev api.HookEvent, fresh bool, keep int) {
	if ev.SessionID != "" && (fresh || ph.sessionID == "") {
		ph.sessionID = ev.SessionID
	}
	if ev.TranscriptPath != "" && fresh {
		ph.transcript = ev.TranscriptPath
	}
	switch {
	case ev.Name == api.PostToolUseFailure && !ev.IsInterrupt:
		ph.fails = append(ph.fails, ev)
		if len(ph.fails) > keep {
			ph.fails = slices.Delete(ph.fails, 0, len(ph.fails)-keep)
		}
	case ev.Name == api.PostToolUse:
		ph.fails = nil
	}
}

// takes reports whether a fresh event's state sk stands against what is
// known: not when an event that happened later already set one (a
// spooled event replayed after a delivered one), nor when the screen has
// shown another state since before the event happened (an event its agent
// delivered late: opencode's plugin sends them one at a time), since what
// the screen shows came after.
func (ph *paneHooks) takes(ev api.HookEvent, sk stateKind) bool {
	if ph.mark != nil && ev.Received.Before(ph.mark.at) {
		return false
	}
	return sk.state == ph.lastRes.State || !ph.screenAt.After(ev.Received) // screenAt is zero until a second capture
}

// turnStopped ends the hooked working state of pane whose turn system3's
// own reply stopped (a deny the Cline CLI takes as a cancel, which fires
// no hook): the screen decides again from the next capture. Without it, a
// turn stopped before any capture showed it working (the screen idle
// before and after, only its text changed) would stay working by the
// hook for hookUnconfirmed.
func (s *Supervisor) turnStopped(pane string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ph := s.hooks[pane]
	if ph == nil || ph.mark == nil || ph.mark.state != api.Working {
		return
	}
	ph.mark = nil
	if st, ok := s.panes[pane]; ok {
		st.dirty = true
		s.kickLocked()
	}
}

func (s *Supervisor) kickLocked() {
	select {
	case s.kick <- struct{}{}:
	default: // a flush is already asked for
	}
}

// hookOverlayLocked weighs the pane's hook state against a classification
// from the screen (state, kind, ev, and res for its question and options),
// and returns the state to show. The rule: a hook state holds until a
// capture shows something else than the screen did when the hook came; a
// capture that shows the hook's state confirms it (the screen then fills
// the question and options); a process that is gone always wins.
func (s *Supervisor) hookOverlayLocked(st *paneState, now time.Time, res *rules.Result, pr probeResult, state api.State, kind string, ev api.Evidence) (api.State, string, api.Evidence) {
	ph := s.hooks[st.sess.Pane]
	if ph == nil {
		if !agents.Lookup(res.Agent).Hooks {
			return state, kind, ev
		}
		// Remember the screen of panes whose agent has hooks (Claude
		// Code), for the first hook to be weighed against.
		if s.hooks == nil {
			s.hooks = map[string]*paneHooks{}
		}
		ph = &paneHooks{seen: now}
		s.hooks[st.sess.Pane] = ph
	}
	if ph.captured && ph.lastRes.State != res.State {
		ph.screenAt = now
	}
	ph.lastRes, ph.lastPr, ph.captured = *res, pr, true
	screen := stateKind{res.State, res.Kind}
	if m := ph.mark; m != nil {
		switch {
		case state == api.Exited || state == api.ErrorLoop:
			// The agent is gone, or history decided: no hook says otherwise.
			ph.mark = nil
		case state == m.state:
			// The screen shows what the hook said.
			m.base, m.hasBase, m.confirmed = screen, true, true
			// The screen tells a prompt's kind best; StopFailure's error
			// kind is Claude Code's own word.
			if kind == "" || (m.state == api.Error && m.kind != "") {
				kind = m.kind
			}
			ev = api.Evidence{Source: "hook", Rule: m.rule, Lines: append(slices.Clone(m.lines), ev.Lines...)}
		case !m.hasBase:
			m.base, m.hasBase = screen, true
			state, kind, ev = m.hold(res)
		case screen == m.base && (m.confirmed || now.Sub(m.at) < hookUnconfirmed):
			state, kind, ev = m.hold(res)
		default:
			// The screen changed after the hook: it knows better now.
			ph.mark = nil
		}
	}
	if failing, n := s.hookFailing(ph, now); failing != "" && state != api.AwaitingInput && state != api.Exited && state != api.ErrorLoop {
		state, kind = api.ErrorLoop, ""
		ev = api.Evidence{Source: "hook", Rule: "hook.failing_tools", Lines: []string{errorSummary(failing),
			fmt.Sprintf("the last %d tool calls failed with this error within %s", n, s.cfg.LoopWindow)}}
		st.sess.ErrorCount = n
	}
	return state, kind, ev
}

// expireHooksLocked ends the hook states the screen has not shown within
// hookUnconfirmed. Captures do the same, but a pane that prints nothing is
// not captured again, so the clock must: a hook state nothing confirms
// never outlives hookUnconfirmed by more than one tick.
func (s *Supervisor) expireHooksLocked(now time.Time) []wakeOp {
	var ops []wakeOp
	for id, ph := range s.hooks {
		m := ph.mark
		if m == nil || m.confirmed || !ph.captured || now.Sub(m.at) < hookUnconfirmed {
			continue
		}
		if _, ok := s.panes[id]; !ok {
			continue
		}
		s.cfg.Logger.Debug("hook state expired", "pane", id, "rule", m.rule, "age", now.Sub(m.at))
		ops = append(ops, s.applyLocked(now, id, ph.lastRes, ph.lastPr)...)
	}
	return ops
}

// hold returns the hook's state over a screen that does not show it; what
// the screen said about a prompt does not apply.
func (m *hookMark) hold(res *rules.Result) (api.State, string, api.Evidence) {
	res.Question, res.Detail, res.Options = "", "", nil
	return m.state, m.kind, api.Evidence{Source: "hook", Rule: m.rule, Lines: slices.Clone(m.lines)}
}

// hookFailing reports a run of LoopThreshold failing tool calls with the
// same error within LoopWindow, as PostToolUseFailure told them.
func (s *Supervisor) hookFailing(ph *paneHooks, now time.Time) (string, int) {
	n := s.cfg.LoopThreshold
	if n <= 0 || len(ph.fails) < n {
		return "", 0
	}
	last := ph.fails[len(ph.fails)-n:]
	sig := normalizeError(last[0].Error)
	for _, f := range last {
		if normalizeError(f.Error) != sig || now.Sub(f.Received) > s.cfg.LoopWindow {
			return "", 0
		}
	}
	text := last[n-1].Error
	if text == "" {
		text = "a tool call failed (no error text)"
	}
	return text, n
}

// checkHook tells whether an event from outside this process (the socket,
// the spool) came from the pane it names: the process that sent it runs in
// that pane (it descends from the pane's process), or the event is signed
// with the hook token of the pane's session (see hooks.SessionToken). The
// error says why not.
func (s *Supervisor) checkHook(ev api.HookEvent) error {
	refuse := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", api.ErrHookRefused, fmt.Sprintf(format, a...))
	}
	if ev.Pane == "" {
		return refuse("it names no tmux pane ($TMUX_PANE was not set)")
	}
	s.mu.Lock()
	st, ok := s.panes[ev.Pane]
	var panePID int
	var session string
	if ok {
		panePID, session = st.sess.PID, st.sess.Session
	}
	s.mu.Unlock()
	if !ok {
		return refuse("pane %s is not one system3 watches", ev.Pane)
	}
	// A live sender whose ancestry can be read and does not lead to the
	// pane's process runs elsewhere, whatever token it holds: the token is
	// the session's for every run of it, and an agent of an earlier run
	// (orphaned when the tmux server died) still holds it. The token
	// stands in where ancestry cannot be read: the spool, or a system
	// without /proc.
	var ancestryErr error
	if ev.Sender.Via != api.ViaSpool && ev.Sender.PID > 0 && panePID > 0 {
		if hub, agent := HubAbove(ev.Sender.PID, panePID); hub > 0 {
			// The hub runs any pane's sessions with the environment (the
			// pane, the token), and below the process, of the CLI that
			// started it.
			return refuse("process %d runs under %s's hub (process %d), which runs the sessions of other panes too: its events cannot be tied to pane %s", ev.Sender.PID, agent, hub, ev.Pane)
		}
		in, err := descendsFrom(ev.Sender.PID, panePID)
		if in {
			return nil
		}
		if err == nil {
			return refuse("process %d does not run in pane %s (whose process is %d)", ev.Sender.PID, ev.Pane, panePID)
		}
		ancestryErr = err
	}
	if ev.Proof != "" && len(s.cfg.HookKey) > 0 && hooks.Proven(ev, hooks.SessionToken(s.cfg.HookKey, session)) {
		// The token is the session's, for every run of it: an event sent
		// before the pane's process started comes from an earlier run
		// (the agent that died with the tmux server, its SessionEnd
		// spooled), never from this one.
		if start, err := processStart(panePID); err == nil && panePID > 0 && ev.Received.Before(start) {
			return refuse("it was sent at %s, before the process of pane %s started (%s): it comes from an earlier run of session %s",
				ev.Received.Format(time.RFC3339Nano), ev.Pane, start.Format(time.RFC3339Nano), session)
		}
		return nil
	}
	var why []string
	if ev.Proof != "" {
		why = append(why, fmt.Sprintf("its proof is not signed with the hook token of session %s", session))
	}
	switch {
	case ev.Sender.Via == api.ViaSpool:
		if ev.Proof == "" {
			why = append(why, "it was spooled without a hook token, and the process that wrote it is gone")
		}
	case ev.Sender.PID <= 0:
		why = append(why, "the socket did not tell which process sent it")
	case panePID <= 0:
		why = append(why, fmt.Sprintf("tmux did not tell the process of pane %s", ev.Pane))
	default:
		why = append(why, fmt.Sprintf("the ancestry of process %d could not be read (%v)", ev.Sender.PID, ancestryErr))
	}
	return refuse("%s", strings.Join(why, "; "))
}

// refuseHook logs and audits an event that was not accepted.
func (s *Supervisor) refuseHook(ev api.HookEvent, err error) {
	s.cfg.Logger.Warn("hook event refused", "event", ev.Name, "pane", ev.Pane, "via", ev.Sender.Via, "pid", ev.Sender.PID, "exe", ev.Sender.Exe, "err", err)
	origin := "hook:" + ev.Sender.Via
	if ev.Sender.PID > 0 {
		origin = fmt.Sprintf("socket:pid=%d,exe=%s", ev.Sender.PID, ev.Sender.Exe)
	}
	if aerr := s.cfg.Audit.Write(api.AuditEntry{Time: s.cfg.Clock(), Origin: origin, Action: "hook", Pane: ev.Pane,
		Tool: ev.Name, Error: err.Error()}); aerr != nil {
		s.cfg.Logger.Warn("audit a refused hook event", "err", aerr)
	}
}

// hookInfo returns the transcript path and Claude Code session id hook
// events gave for a pane.
func (s *Supervisor) hookInfo(pane string) (transcript, sessionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ph := s.hooks[pane]; ph != nil {
		return ph.transcript, ph.sessionID
	}
	return "", ""
}

// ReplaySpool feeds the events `system3 hook` left in the spool while no
// daemon ran, in order, and empties it. Old events only add history (see
// HookFresh). It returns how many events it fed.
func (s *Supervisor) ReplaySpool(ctx context.Context, sp hooks.Spool) (int, error) {
	evs, skipped, err := sp.Drain()
	if skipped > 0 {
		s.cfg.Logger.Warn("hook spool: skipped lines that are not events", "path", sp.Path, "skipped", skipped)
	}
	for _, ev := range evs {
		ev.Sender = api.HookSender{Via: api.ViaSpool}
		// No hook waits for a replayed event's answer: the monitors alone
		// take it.
		if _, err := s.monitorHook(ctx, ev); err != nil && !errors.Is(err, api.ErrHookRefused) {
			s.cfg.Logger.Warn("hook spool: event refused", "event", ev.Name, "err", err)
		}
	}
	return len(evs), err
}

// hookToolCall is a hook's tool call in the form transcripts give: the
// command of a shell call, the file of an edit.
func hookToolCall(c api.HookToolCall) api.ToolCall {
	tc := api.ToolCall{ID: c.ID, Pane: c.Pane, Tool: c.Tool, Failed: c.Failed, Error: c.Error, Time: c.At, Source: "hook"}
	switch c.Tool {
	case "Bash":
		tc.Command = c.Input
	case "Edit", "MultiEdit", "Write", "Read", "NotebookEdit":
		tc.File = c.Input
	}
	return tc
}
