package monitor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
)

// answerMark is the prompt an answer was typed into: by whom, which
// option and when.
type answerMark struct {
	prompt, by, option string
	at                 time.Time
}

// recentAnswer is how long after an answer a second one that names no
// prompt is refused: it was most likely meant for the prompt just
// answered, and would land on whatever the agent showed next.
const recentAnswer = 2 * time.Second

// promptSettle is how long a prompt has been on screen before an answer
// is typed into it: Claude Code drops a key typed within about 100 ms of
// its dialog appearing, and an answer straight from a wake would be lost.
const promptSettle = 300 * time.Millisecond

// Answer answers the prompt a session waits at, as a compare-and-set:
// it types only if the pane, read again right before typing, still shows
// the prompt the request is for (its wake's, the one it names, or the one
// the registry holds) and no answer was typed into that prompt yet. The
// answer resolves the prompt's wake, saying who answered and how.
func (a *actions) Answer(ctx context.Context, req api.AnswerRequest) (api.ActionResult, error) {
	refused := api.AuditEntry{Origin: req.Origin, Action: "answer", Target: req.Target.String(), Result: "answer: " + strconv.Quote(req.Answer)}
	ev, err := a.answerWake(&req, &refused)
	if err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	sess, err := a.reg.resolve(req.Target)
	if err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	refused.Pane = sess.Pane
	if err := a.cfg.Policy.Check(req.Origin, "answer", sess); err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	if sess.Evidence.Rule == api.RuleGuessChoice || ev.Evidence.Rule == api.RuleGuessChoice {
		return api.ActionResult{}, a.refuse(refused, errGuessed(sess))
	}
	want, err := answerFor(req, ev, sess)
	if err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	mu, _ := a.answering.LoadOrStore(sess.Pane, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if err := a.checkNotAnswered(req, sess, want); err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	if wait := promptSettle - a.cfg.Clock().Sub(sess.Since); sess.Prompt == want && wait > 0 {
		// The prompt has just appeared: let the agent take keys.
		select {
		case <-ctx.Done():
			return api.ActionResult{}, a.refuse(refused, ctx.Err())
		case <-time.After(wait):
		}
	}
	now, err := a.promptNow(ctx, sess, want)
	if err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	option, keys, err := agents.AnswerKeys(now, req.Answer)
	if err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	if err := optionAsShown(req, ev, sess, option); err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	res, err := a.press(ctx, "answer", req.Origin, req.Target, now, option, keys)
	if res.Delivered {
		a.answered(req, sess.Pane, want, option, res.At)
	}
	return res, err
}

// answerWake is the wake an answer names, if any; an answer that names a
// wake and no target is for the wake's pane (set in req and refused).
func (a *actions) answerWake(req *api.AnswerRequest, refused *api.AuditEntry) (api.Wake, error) {
	if req.Wake == "" {
		return api.Wake{}, nil
	}
	ev, ok := a.cfg.Wakes.Get(req.Wake)
	if !ok {
		return api.Wake{}, fmt.Errorf("%w: no wake %q (run `system3 wakes --all` to list them)", api.ErrBadRequest, req.Wake)
	}
	if req.Target == (api.Target{}) {
		req.Target = api.Target{Pane: ev.Pane}
		refused.Target = ev.Pane
	}
	return ev, nil
}

// checkNotAnswered refuses an answer to a prompt that was answered already
// and, when the answer names no prompt, one that comes within recentAnswer
// of the pane's last answer: it may be meant for that one.
func (a *actions) checkNotAnswered(req api.AnswerRequest, sess api.Session, want string) error {
	m, last := a.reg.answeredMark(sess.Pane)
	if m.prompt == want {
		return fmt.Errorf("%w: %s's prompt was answered already (%q by %s, %s ago) and the screen has shown no other since; nothing was typed",
			api.ErrPromptChanged, sess.Target, m.option, m.by, a.cfg.Clock().Sub(m.at).Round(time.Millisecond))
	}
	if since := a.cfg.Clock().Sub(last.at); req.Wake == "" && req.Prompt == "" && !last.at.IsZero() && since < recentAnswer {
		return fmt.Errorf("%w: %s was answered %s ago (%q by %s), and an answer that names no prompt may be meant for that one; nothing was typed: to answer what it shows now, name it (answer --wake ID or --prompt P; MCP wake or prompt)",
			api.ErrPromptChanged, sess.Target, since.Round(time.Millisecond), last.option, last.by)
	}
	return nil
}

// promptNow reads the pane again and returns what it shows when that is
// still the prompt the answer is for.
func (a *actions) promptNow(ctx context.Context, sess api.Session, want string) (api.Session, error) {
	now, err := a.reg.reread(ctx, sess)
	if err != nil {
		return api.Session{}, fmt.Errorf("answer %s: cannot read the pane to check its prompt, so nothing was typed: %w", sess.Target, err)
	}
	if now.State != api.AwaitingInput || now.Prompt != want {
		return api.Session{}, fmt.Errorf("%w (now: %s); nothing was typed", api.ErrPromptChanged, describeNow(now))
	}
	return now, nil
}

// optionAsShown refuses an option that reads differently from when the
// answer's prompt was shown, its wake's or the registry's: the same prompt
// may still redraw part of an option (the scope of Claude Code's "don't
// ask again").
func optionAsShown(req api.AnswerRequest, ev api.Wake, sess api.Session, option string) error {
	seen := sess.Options
	if req.Wake != "" {
		seen = ev.Options
	}
	if option != "" && len(seen) > 0 && !slices.Contains(seen, option) {
		return fmt.Errorf("%w: %s's option %q reads differently from when the prompt was shown (options then: %q); nothing was typed",
			api.ErrPromptChanged, sess.Target, option, seen)
	}
	return nil
}

// answered marks the prompt answered and resolves its wake, saying who
// answered and how.
func (a *actions) answered(req api.AnswerRequest, pane, want, option string, at time.Time) {
	by := api.ShortOrigin(req.Origin)
	a.reg.markAnswered(pane, answerMark{prompt: want, by: by, option: option, at: at})
	why := "answered by " + by
	if option != "" {
		why += ": " + option
	}
	if rerr := a.cfg.Wakes.Resolve(wakeKey(api.ReasonAwaitingInput, pane), why); rerr != nil {
		a.cfg.Logger.Warn("resolve the answered wake", "pane", pane, "err", rerr)
	}
}

// answerFor is the identity of the prompt an answer is for: its wake's,
// the one it names, or the one the registry holds for its target.
func answerFor(req api.AnswerRequest, ev api.Wake, sess api.Session) (string, error) {
	want := req.Prompt
	if req.Wake != "" {
		switch {
		case ev.Pane != sess.Pane:
			return "", fmt.Errorf("%w: wake %s is about pane %s, not %s", api.ErrBadRequest, ev.ID, ev.Pane, sess.Pane)
		case ev.Reason != api.ReasonAwaitingInput:
			return "", fmt.Errorf("%w: wake %s is %s, not a prompt to answer", api.ErrBadRequest, ev.ID, ev.Reason)
		case ev.Resolved:
			return "", fmt.Errorf("%w: wake %s is resolved (%s); nothing was typed", api.ErrPromptChanged, ev.ID, ev.Resolution)
		case ev.Prompt == "":
			return "", fmt.Errorf("%w: wake %s names no prompt on screen (a hook announced it, or an older system3 raised it); answer the prompt on screen now by session", api.ErrPromptChanged, ev.ID)
		case want != "" && want != ev.Prompt:
			return "", fmt.Errorf("%w: prompt %s is not wake %s's prompt %s", api.ErrBadRequest, want, ev.ID, ev.Prompt)
		}
		want = ev.Prompt
	}
	if want == "" {
		if sess.State != api.AwaitingInput {
			return "", fmt.Errorf("%w: %s is %s, not awaiting_input; use inject to send text", api.ErrNotAwaiting, sess.Target, sess.State)
		}
		want = sess.Prompt
	}
	if want == "" {
		// Awaiting by a hook's word, with no prompt on screen to choose
		// keys from.
		return "", fmt.Errorf("%w: %s shows no prompt system3 can read, so it cannot choose the keys; look at the pane", api.ErrNotAwaiting, sess.Target)
	}
	return want, nil
}

// describeNow says in one line what a pane shows now, for a refusal.
func describeNow(s api.Session) string {
	if s.State != api.AwaitingInput {
		return fmt.Sprintf("%s is %s", s.Target, s.State)
	}
	what := s.Question
	if s.Detail != "" {
		what += " — " + s.Detail
	}
	return fmt.Sprintf("%s asks %q", s.Target, what)
}
