package monitor

import (
	"fmt"
	"slices"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

// The pipeline from a classified screen to the registry and the wakes:
// verdict, record, publish, decide.

// apply records a classification, derives error loops and exits, publishes
// the change and raises or clears wakes.
// pr is what the agent's process and transcript add.
func (s *Supervisor) apply(paneID string, res rules.Result, pr probeResult) {
	now := s.cfg.Clock()
	s.mu.Lock()
	ops := s.applyLocked(now, paneID, res, pr)
	s.mu.Unlock()
	s.runOps(ops)
}

// applyLocked is the supervisor's pipeline for one classified screen:
// hold a screen no rule explains for a while (holdUnmatchedLocked), make
// the verdict from the screen, the process, the error history, the
// transcript and the hooks (verdictLocked), store it in the registry
// (recordLocked), and, when the session changed, publish it and decide
// its wakes (stateWakesLocked, a table over the previous and the current
// session).
func (s *Supervisor) applyLocked(now time.Time, paneID string, res rules.Result, pr probeResult) []wakeOp {
	st, ok := s.panes[paneID]
	if !ok {
		return nil
	}
	if agents.IsAgent(res.Agent) {
		st.seenAgent = res.Agent
	}
	if s.holdUnmatchedLocked(st, now, &res, pr) {
		return nil
	}
	v := s.verdictLocked(st, now, &res, pr)
	prev := st.sess
	s.recordLocked(st, now, v, res, pr)
	budget := s.budgetWakeLocked(st)
	if !sessionChanged(prev, st.sess) {
		return budget
	}
	s.publishLocked(api.Update{Kind: api.SessionChanged, Session: st.sess.Clone(), Previous: prev.State})
	return append(s.stateWakesLocked(st, prev), budget...)
}

// verdict is what the supervisor concludes of a pane from everything it
// looked at: the agent, its state and kind, and why.
type verdict struct {
	agent    string
	state    api.State
	kind     string
	ev       api.Evidence
	resetsAt time.Time
}

// holdUnmatchedLocked keeps a recognised agent's previous state while its
// screen matches no rule, for UnmatchedAfter (a frame drawn half-way),
// and reports whether it did; after that the screen is said to match no
// rule, naming the agent and its version in the evidence.
func (s *Supervisor) holdUnmatchedLocked(st *paneState, now time.Time, res *rules.Result, pr probeResult) bool {
	if res.Rule != api.RuleNoMatch || res.Agent == "" || res.Kind != "" || st.pane.Dead {
		st.unmatchedSince, st.unmatched = time.Time{}, nil
		return false
	}
	if st.unmatchedSince.IsZero() {
		st.unmatchedSince = now
	}
	st.unmatched = &pendingApply{res: *res, pr: pr}
	if wait := s.cfg.UnmatchedAfter; wait > 0 && now.Sub(st.unmatchedSince) < wait && st.sess.State != api.Unknown {
		st.sess.Updated, st.sess.LastLine = now, res.LastLine
		return true
	}
	who := res.Agent
	if pr.version != "" {
		who += " " + pr.version
	}
	res.Evidence = append([]string{fmt.Sprintf("no rule matched (%s)", who)}, res.Evidence...)
	return false
}

// verdictLocked makes the pane's verdict: the screen's classification,
// corrected by what its process says (an agent or a program gone back to
// its shell), its error history (the same error again and again is an
// error loop), its transcript (tool calls failing alike) and its hooks,
// with when a usage limit resets.
func (s *Supervisor) verdictLocked(st *paneState, now time.Time, res *rules.Result, pr probeResult) verdict {
	v := s.processVerdict(st, *res)
	v = s.errorHistoryLocked(st, now, *res, pr, v)
	v.state, v.kind, v.ev = s.hookOverlayLocked(st, now, res, pr, v.state, v.kind, v.ev)
	v.resetsAt = st.limit.read(v.state, res.Resets, v.ev, now, s.zoneOf(st.pane.PID))
	return v
}

// processVerdict is the screen's classification as the pane's process
// tells it.
func (s *Supervisor) processVerdict(st *paneState, res rules.Result) verdict {
	v := verdict{agent: res.Agent, state: res.State, kind: res.Kind, ev: api.Evidence{Source: "screen", Rule: res.Rule, Lines: res.Evidence}}
	switch {
	case st.program != "" && agents.IsShell(v.agent) && res.Rule != api.RuleShellJob && res.Rule != api.RulePaneDead:
		// The program no agent package knows that this pane's shell ran
		// has ended: the shell holds its terminal again.
		v.agent, v.state, v.kind = "", api.Exited, "process_gone"
		v.ev = api.Evidence{Source: "process", Rule: ruleProgramLeft, Lines: []string{fmt.Sprintf("%s (a program no agent package knows) is no longer running; the pane's shell holds its terminal again", st.program)}}
	case res.Rule == api.RuleShellJob || res.Rule == api.RuleShellPrompt:
		v.ev.Source = "process"
	case res.Rule == api.RulePaneDead:
		v.ev.Source = "process"
		if v.agent == "" {
			v.agent = st.seenAgent
		}
	case agents.IsShell(v.agent) && st.seenAgent != "":
		// The agent this pane ran has quit to its shell, and the screen
		// shows nothing of it (a screen it left behind is the engine's
		// api.RuleProcessGone, by screen): it cleared its own display on the
		// way out, as a program that quits does and one killed cannot.
		v.agent, v.state, v.kind = st.seenAgent, api.Exited, "process_gone"
		v.ev = api.Evidence{Source: "process", Rule: ruleAgentLeft, Lines: []string{fmt.Sprintf("%s is no longer running and cleared its screen; %s is in the foreground", st.seenAgent, st.pane.Command)}}
	}
	return v
}

// errorHistoryLocked turns an error seen LoopThreshold times within
// LoopWindow, or a run of tool calls failing alike in the transcript,
// into an error loop, and counts the session's errors.
func (s *Supervisor) errorHistoryLocked(st *paneState, now time.Time, res rules.Result, pr probeResult, v verdict) verdict {
	st.sess.ErrorCount = 0
	if v.state == api.Error && v.kind != "command" {
		n := st.errs.observe(now, res.Evidence, s.cfg.LoopWindow)
		st.sess.ErrorCount = n
		if n >= s.cfg.LoopThreshold {
			v.state, v.kind = api.ErrorLoop, ""
			v.ev = api.Evidence{Source: "history", Rule: "monitor.error_loop", Lines: append(slices.Clone(res.Evidence),
				fmt.Sprintf("the same error was seen %d times within %s", n, s.cfg.LoopWindow))}
		}
	} else {
		st.errs.leave()
	}
	if failing := pr.failing; failing != "" && v.state != api.AwaitingInput && v.state != api.Exited {
		v.state, v.kind = api.ErrorLoop, ""
		v.ev = api.Evidence{Source: "transcript", Rule: "monitor.failing_tools", Lines: []string{errorSummary(failing),
			fmt.Sprintf("the last %d tool calls failed with this error within %s", s.cfg.LoopThreshold, s.cfg.LoopWindow)}}
		st.sess.ErrorCount = s.cfg.LoopThreshold
	}
	return v
}

// recordLocked stores the verdict and what the probes read in the pane's
// session: the registry's copy, which readers and the next verdict see.
func (s *Supervisor) recordLocked(st *paneState, now time.Time, v verdict, res rules.Result, pr probeResult) {
	prev := st.sess
	ss := &st.sess
	ss.Agent, ss.AgentBy, ss.Kind = v.agent, res.AgentBy, v.kind
	ss.Evidence, ss.Question, ss.Detail = v.ev, res.Question, res.Detail
	ss.Options = res.Options
	if ss.Options == nil {
		ss.Options = []string{}
	}
	ss.ResetsAt = v.resetsAt
	ss.Prompt = ""
	if v.state == api.AwaitingInput && res.State == api.AwaitingInput {
		// Only a prompt the screen shows has an identity: one a hook
		// announced before it is drawn has no keys to choose yet.
		ss.Prompt = screenPrompt(v.agent, res)
	}
	if st.answered.prompt != "" && st.answered.prompt != ss.Prompt {
		// The screen moved on from the prompt an answer was typed into:
		// the next prompt, even one like it, may be answered.
		st.answered = answerMark{}
	}
	ss.LastLine = res.LastLine
	ss.TaskList, ss.Tasks = pr.taskList, pr.tasks
	ss.AgentSessionID, ss.Transcript = pr.agentSessionID, pr.transcript
	ss.AgentVersion = pr.version
	if pr.usage != nil || st.pane.Dead || agents.Lookup(v.agent).Probe == nil {
		// A probe that could not read the transcript this time keeps
		// the usage known so far.
		ss.Usage = pr.usage
	}
	ss.Updated = now
	if v.state != prev.State || v.kind != prev.Kind || ss.Prompt != prev.Prompt {
		ss.State = v.state
		ss.Since = now
		st.timeWoke = false
	}
	carrySinceLocked(st)
}

// sessionChanged reports whether cur differs from prev in anything a
// watcher is told of (not Updated, nor LastLine alone).
func sessionChanged(prev, cur api.Session) bool {
	return cur.State != prev.State || cur.Kind != prev.Kind || cur.Question != prev.Question || !slices.Equal(cur.Options, prev.Options) ||
		cur.Detail != prev.Detail || cur.Prompt != prev.Prompt || !cur.Since.Equal(prev.Since) || !cur.ResetsAt.Equal(prev.ResetsAt) ||
		cur.Agent != prev.Agent || cur.TaskList != prev.TaskList || !cur.Tasks.Equal(prev.Tasks) || !cur.Usage.Equal(prev.Usage) ||
		cur.AgentSessionID != prev.AgentSessionID ||
		cur.AgentVersion != prev.AgentVersion || (cur.Evidence.Rule == api.RuleNoMatch) != (prev.Evidence.Rule == api.RuleNoMatch)
}
