package monitor

import (
	"context"
	"fmt"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

// screenPrompt is the identity of the prompt a classification saw on the
// screen, for agent: the same in the registry and in an answer's re-read.
// The parts of option labels the agent may still rewrite while the prompt
// stands do not count (rules' option_scope): actions.Answer checks the
// label of the option it chooses instead.
func screenPrompt(agent string, res rules.Result) string {
	return api.PromptIdentity(agent, res.Kind, res.Question, res.Detail, res.IdentityOptions)
}

// rereadTimeout bounds an answer's capture of the pane it checks.
const rereadTimeout = 5 * time.Second

// reread captures sess's pane now and classifies that screen as sess's
// agent, so an answer checks the prompt on screen at this moment rather
// than the registry's last capture. It has the pane captured again by the
// monitors too, so the registry catches up.
func (s *Supervisor) reread(ctx context.Context, sess api.Session) (api.Session, error) {
	s.mu.Lock()
	st, ok := s.panes[sess.Pane]
	var command string
	var limit limitMark
	var pid int
	if ok {
		command, limit, pid = st.pane.Command, st.limit, st.pane.PID
	}
	s.mu.Unlock()
	if !ok {
		return api.Session{}, fmt.Errorf("%w: pane %s went away", api.ErrUnknownTarget, sess.Pane)
	}
	cctx, cancel := context.WithTimeout(ctx, rereadTimeout)
	defer cancel()
	screen, err := s.cfg.Tmux.Capture(cctx, sess.Pane, tmux.CaptureOptions{})
	if err != nil {
		return api.Session{}, fmt.Errorf("capture %s: %w", sess.Pane, err)
	}
	res := s.rules.Load().Classify(rules.Input{Screen: screen, Processes: []string{command}, Agent: sess.Agent})
	now := sess.Clone()
	now.State, now.Kind, now.Question, now.Detail, now.Options = res.State, res.Kind, res.Question, res.Detail, res.Options
	now.ResetsAt = limit.read(res.State, res.Resets, api.Evidence{}, s.cfg.Clock(), s.zoneOf(pid))
	now.Prompt = ""
	if res.State == api.AwaitingInput {
		now.Prompt = screenPrompt(sess.Agent, res)
	}
	s.markDirty(sess.Pane)
	return now, nil
}

// answeredMark is the prompt an answer was last typed into in pane, while
// the screen has shown no other, and the last answer typed into pane.
func (s *Supervisor) answeredMark(pane string) (prompt, last answerMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.panes[pane]; ok {
		return st.answered, st.lastAnswer
	}
	return answerMark{}, answerMark{}
}

// markAnswered records that an answer was typed into pane's prompt.
func (s *Supervisor) markAnswered(pane string, m answerMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.panes[pane]; ok {
		st.answered, st.lastAnswer = m, m
	}
}
