package monitor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

// wakeOp is a raise or clear decided under the registry lock and carried
// out after it is released, so a slow disk never blocks readers.
type wakeOp struct {
	clear string // key to resolve, saying why, or
	why   string
	raise *api.Wake
	// or the pane's session was renamed from rename[0] to rename[1]
	rename *[2]string
	pane   string
}

func wakeKey(r api.Reason, pane string) string { return string(r) + "/" + pane }

// stateWakesLocked carries out the decision for a change of the pane's
// session from prev (decide).
func (s *Supervisor) stateWakesLocked(st *paneState, prev api.Session) []wakeOp {
	cur := st.sess
	d := decide(prev, cur, s.factsLocked(st), s.cfg.Clock())
	var ops []wakeOp
	for _, c := range d.clear {
		ops = append(ops, wakeOp{clear: wakeKey(c.reason, cur.Pane), why: c.why})
	}
	if d.raise != "" {
		ops = append(ops, s.raiseOp(cur, d.raise))
		if d.raise == api.ReasonWorkerFailed {
			st.timeWoke = true
		}
	}
	return ops
}

// factsLocked are what decide needs to know of a pane besides its
// sessions.
func (s *Supervisor) factsLocked(st *paneState) paneFacts {
	return paneFacts{held: s.asking[st.sess.Pane] > 0, cleanExit: cleanExit(st), resuming: st.resuming}
}

// ruleAgentLeft decides an agent gone from its pane that left nothing of
// its screen behind: it cleared its display as it quit.
const ruleAgentLeft = "monitor.agent_left"

// cleanExit reports an exit the agent's user chose, which is no failed
// worker: the agent said goodbye its own way (a rule of the agent, not a
// built-in one, recognised its exit on screen: Claude Code's "Resume this
// session with:" after /exit or Ctrl-C twice), it cleared its screen as it
// quit (Claude Code leaving a session with no conversation), its
// SessionEnd hook said so, or the pane's process exited with status 0. An
// agent that vanished leaving its screen (killed) or exited non-zero is
// not.
func cleanExit(st *paneState) bool {
	ev := st.sess.Evidence
	switch {
	case ev.Rule == ruleAgentLeft:
		return true
	case ev.Rule == api.RulePaneDead:
		return st.pane.Dead && st.pane.DeadStatus == 0
	case ev.Source == "hook":
		return ev.Rule == "hook.session_end"
	case ev.Source == "screen":
		return !strings.HasPrefix(ev.Rule, "builtin.") && !strings.HasPrefix(ev.Rule, "monitor.")
	}
	return false
}

// budgetWakeLocked raises budget_exceeded once when a session's estimated
// cost reaches its budget.
func (s *Supervisor) budgetWakeLocked(st *paneState) []wakeOp {
	u := st.sess.Usage
	if s.cfg.Budget == nil || u == nil {
		return nil
	}
	budget, ok := s.cfg.Budget(st.sess.Session)
	if !ok {
		return nil
	}
	switch over := u.CostUSD >= budget; {
	case over && !st.overBudget:
		st.overBudget = true
		op := s.raiseOp(st.sess, api.ReasonBudgetExceeded)
		op.raise.Details = fmt.Sprintf("estimated cost $%.2f, budget $%.2f (%d tokens in %d responses)", u.CostUSD, budget, u.Total(), u.Responses)
		return []wakeOp{op}
	case !over && st.overBudget:
		st.overBudget = false
		return []wakeOp{{clear: wakeKey(api.ReasonBudgetExceeded, st.sess.Pane), why: "the cost fell below the budget"}}
	}
	return nil
}

// timeChecksLocked decides the wakes that come from time passing: errors
// past their grace, idleness, and the heartbeat.
func (s *Supervisor) timeChecksLocked(now time.Time) []wakeOp {
	ops := s.expireHooksLocked(now)
	for id, st := range s.panes {
		if u := st.unmatched; u != nil && st.sess.Evidence.Rule != api.RuleNoMatch && now.Sub(st.unmatchedSince) >= s.cfg.UnmatchedAfter {
			// Still no rule for the screen, and no new output to say so.
			ops = append(ops, s.applyLocked(now, id, u.res, u.pr)...)
		}
		s.recheckGuessLocked(st, now)
		cur := st.sess
		if st.timeWoke {
			continue
		}
		g := graces{err: s.cfg.ErrorGrace, idle: s.cfg.IdleAfter, exit: s.cfg.ExitGrace, prompt: promptWait}
		raise, done := decideLate(cur, now.Sub(cur.Since), s.factsLocked(st), g)
		if raise != "" {
			ops = append(ops, s.raiseOp(cur, raise))
		}
		st.timeWoke = done
	}
	if len(ops) > 0 {
		s.lastWake = now
	}
	if s.cfg.SummaryEvery > 0 && now.Sub(s.lastSummary) >= s.cfg.SummaryEvery {
		s.lastSummary = now
		ev := api.Wake{Reason: api.ReasonSummary, SuggestedAction: s.summaryLocked(), Details: s.digestLocked()}
		ops = append(ops, wakeOp{raise: &ev})
	}
	if s.cfg.HeartbeatEvery > 0 && now.Sub(s.lastWake) >= s.cfg.HeartbeatEvery {
		s.lastWake = now
		ev := api.Wake{
			Reason:          api.ReasonHeartbeat,
			State:           "",
			SuggestedAction: fmt.Sprintf("Nothing needed attention for %s: %s.", s.cfg.HeartbeatEvery, s.countsLocked()),
		}
		ops = append(ops, wakeOp{raise: &ev})
	}
	return ops
}

// countsLocked summarises the registry: "4 sessions: 2 working, 1 idle, 1 awaiting_input".
func (s *Supervisor) countsLocked() string {
	counts := map[api.State]int{}
	for _, st := range s.panes {
		counts[st.sess.State]++
	}
	var parts []string
	for _, state := range rules.States {
		if n := counts[state]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, state))
		}
	}
	if len(parts) == 0 {
		return "no sessions"
	}
	return fmt.Sprintf("%d sessions: %s", len(s.panes), strings.Join(parts, ", "))
}

// summaryLocked is the summary wake's one sentence.
func (s *Supervisor) summaryLocked() string {
	need := 0
	for _, st := range s.panes {
		if st.sess.NeedsPerson() {
			need++
		}
	}
	if need == 0 {
		return fmt.Sprintf("Summary: %s; none needs attention.", s.countsLocked())
	}
	return fmt.Sprintf("Summary: %s; %d need attention (see details).", s.countsLocked(), need)
}

// digestLocked lists every session, those needing a person first, one line
// each: target, agent, state and what it shows.
func (s *Supervisor) digestLocked() string {
	ss := make([]api.Session, 0, len(s.panes))
	for _, st := range s.panes {
		ss = append(ss, st.sess)
	}
	api.SortSessions(ss)
	var b strings.Builder
	for _, x := range ss {
		state := string(x.State)
		if x.Kind != "" {
			state += "/" + x.Kind
		}
		what := x.Question
		if what == "" {
			what = x.LastLine
		}
		agent := x.Agent
		if agent == "" {
			agent = "-"
		}
		fmt.Fprintf(&b, "%s %s %s %s", x.Target, agent, state, what)
		if x.Tasks != nil {
			fmt.Fprintf(&b, " [tasks %d/%d]", x.Tasks.Completed, x.Tasks.Total)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (s *Supervisor) clearWakesLocked(pane string) []wakeOp {
	var ops []wakeOp
	for _, r := range []api.Reason{api.ReasonAwaitingInput, api.ReasonAPIError, api.ReasonErrorLoopDetected, api.ReasonWorkerFailed, api.ReasonSessionIdle, api.ReasonUsageLimit} {
		ops = append(ops, wakeOp{clear: wakeKey(r, pane), why: "the pane went away"})
	}
	return ops
}

func (s *Supervisor) raiseOp(cur api.Session, r api.Reason) wakeOp {
	ev := api.Wake{
		Reason:          r,
		Key:             wakeKey(r, cur.Pane),
		Session:         cur.Session,
		Pane:            cur.Pane,
		Agent:           cur.Agent,
		State:           string(cur.State),
		Kind:            cur.Kind,
		Evidence:        cur.Evidence,
		Question:        cur.Question,
		Options:         cur.Options,
		Prompt:          cur.Prompt,
		ResetsAt:        cur.ResetsAt,
		SuggestedAction: s.suggest(cur, r),
	}
	if cur.Detail != "" {
		ev.Details = cur.Detail
	}
	if cur.Tasks != nil {
		ev.Tasks = &api.WakeProgress{ListID: cur.TaskList, Completed: cur.Tasks.Completed, Total: cur.Tasks.Total, InProgress: slices.Clone(cur.Tasks.InProgress)}
	}
	return wakeOp{raise: &ev}
}

// suggest is the one-sentence next step shown with a wake: its reason
// row's, told where the session is and what the monitor's settings are.
func (s *Supervisor) suggest(cur api.Session, r api.Reason) string {
	c := api.SuggestContext{
		Agent: cur.Agent, Where: fmt.Sprintf("%s (pane %s)", cur.Target, cur.Pane),
		Now: s.cfg.Clock(), ErrorGrace: s.cfg.ErrorGrace, IdleAfter: s.cfg.IdleAfter,
	}
	if c.Agent == "" {
		c.Agent = "the agent"
	}
	if s.cfg.ResumeAfterLimit {
		c.Resume = agents.Lookup(cur.Agent).Continue
	}
	return r.Info().Suggest(cur, c)
}

// holdPrompt marks pane's permission request as held by the approval
// policy's ask (ask wake W): a wake the screen raised for its dialog
// first is resolved, and none is raised while the ask waits.
func (s *Supervisor) holdPrompt(pane, askWake string) {
	s.mu.Lock()
	s.asking[pane]++
	s.mu.Unlock()
	if err := s.Resolve(wakeKey(api.ReasonAwaitingInput, pane), "the approval policy asks about it (wake "+askWake+")"); err != nil {
		s.cfg.Logger.Warn("resolve the dialog's wake for the policy's ask", "pane", pane, "err", err)
	}
}

// releasePrompt ends a hold; with shown, nobody answered the ask and the
// agent's own dialog shows: it gets its wake now, as the screen shows it.
func (s *Supervisor) releasePrompt(pane string, shown bool) {
	s.mu.Lock()
	if s.asking[pane]--; s.asking[pane] <= 0 {
		delete(s.asking, pane)
	}
	var ops []wakeOp
	if st, ok := s.panes[pane]; ok && shown && s.asking[pane] == 0 && st.sess.State == api.AwaitingInput {
		ops = append(ops, s.raiseOp(st.sess, api.ReasonAwaitingInput))
	}
	s.mu.Unlock()
	s.runOps(ops)
	if shown {
		// The dialog may not have been captured yet.
		s.markDirty(pane)
	}
}

// runOps carries out wake decisions outside the registry lock.
func (s *Supervisor) runOps(ops []wakeOp) {
	for _, op := range ops {
		if op.rename != nil {
			if _, err := s.cfg.Wakes.RenameSession(op.pane, op.rename[0], op.rename[1]); err != nil {
				s.cfg.Logger.Warn("rename the session of wakes", "pane", op.pane, "session", op.rename[1], "err", err)
			}
			continue
		}
		if op.clear != "" {
			if err := s.Resolve(op.clear, op.why); err != nil {
				s.cfg.Logger.Warn("resolve wake", "key", op.clear, "err", err)
			}
			continue
		}
		if _, _, err := s.Raise(*op.raise); err != nil {
			// A journal error still delivered the wake; Health reports it.
			s.cfg.Logger.Warn("raise wake", "reason", op.raise.Reason, "pane", op.raise.Pane, "err", err)
		}
	}
}

// Raise is where every wake of the process is raised: the Supervisor's own
// (state changes, time passing, budgets), the validator's and the coach's
// (they are given the Supervisor as their api.WakeRaiser). It fills in what
// the registry knows of the wake's pane that the producer left out (its
// session, its agent, and the suggested action for the reason), then hands
// the wake to the store, which keeps one wake per condition: raising an
// active Key again returns the wake raised for it and false. It must not
// be called with the registry lock held.
func (s *Supervisor) Raise(ev api.Wake) (api.Wake, bool, error) {
	if ev.Pane != "" && (ev.Session == "" || ev.Agent == "" || ev.SuggestedAction == "") {
		s.mu.Lock()
		if st, ok := s.panes[ev.Pane]; ok {
			cur := st.sess
			if ev.Session == "" {
				ev.Session = cur.Session
			}
			if ev.Agent == "" {
				ev.Agent = cur.Agent
			}
			if ev.SuggestedAction == "" {
				ev.SuggestedAction = s.suggest(cur, ev.Reason)
			}
		}
		s.mu.Unlock()
	}
	raised, created, err := s.cfg.Wakes.Raise(ev)
	if created {
		s.mu.Lock()
		s.lastWake = raised.Time
		s.mu.Unlock()
		s.cfg.Logger.Info("wake", "id", raised.ID, "reason", raised.Reason, "pane", raised.Pane, "state", raised.State, "kind", raised.Kind)
	}
	return raised, created, err
}

// Resolve ends a wake's condition (its Key), saying how, so the next
// Raise of it makes a new wake; the wake stays, resolved, until
// acknowledged.
func (s *Supervisor) Resolve(key, why string) error { return s.cfg.Wakes.Resolve(key, why) }
