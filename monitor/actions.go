package monitor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/tasks"
	"github.com/system3-dev/system3/tmux"
)

// Sender types into panes; *tmux.Client is one.
type Sender interface {
	SendText(ctx context.Context, pane, text string, opt tmux.SendOptions) (tmux.SendResult, error)
	SendKeys(ctx context.Context, pane string, keys ...tmux.Key) error
}

// actions is the Supervisor's job of acting on panes for the Service:
// typing text, pressing keys, answering prompts and interrupting, each
// checked against the policy and audited before and after; reading a
// pane's screen and the task lists. It reads the registry only through reg
// (which session a target names; have a pane captured again soon) and
// needs nothing else of the Supervisor, which embeds it.
type actions struct {
	cfg *Config
	reg interface {
		resolve(t api.Target) (api.Session, error)
		markDirty(pane string)
		// reread captures the pane now and classifies that screen as
		// sess's agent: the prompt on screen at this moment.
		reread(ctx context.Context, sess api.Session) (api.Session, error)
		// answeredMark and markAnswered keep the prompt an answer was
		// typed into, until the screen shows another (prompt), and the
		// last answer typed into the pane, whatever came since (last).
		answeredMark(pane string) (prompt, last answerMark)
		markAnswered(pane string, m answerMark)
	}
	// answering holds one lock per pane for an answer's check-and-type,
	// so two answers to one prompt cannot both see it unanswered.
	answering sync.Map // pane -> *sync.Mutex
}

// urgentPause lets an agent redraw its input after an interrupt before
// the guidance is typed.
const urgentPause = 300 * time.Millisecond

// sender returns the configured sender.
func (a *actions) sender() (Sender, error) {
	if a.cfg.Send == nil {
		return nil, api.ErrNoSender
	}
	return a.cfg.Send, nil
}

// Inject types text into a pane and, unless NoEnter, submits it and checks
// that the pane took it. The text must be text (tmux.CheckText) and at most
// tmux.MaxText bytes, or it is refused (ErrBadRequest) with the offending
// byte and its offset; with VisibleControls it is first made visible
// (tmux.VisibleText). What is audited is exactly what goes to tmux.
func (a *actions) Inject(ctx context.Context, req api.InjectRequest) (api.ActionResult, error) {
	text := req.Text
	if req.VisibleControls {
		text = tmux.VisibleText(text)
	}
	refused := api.AuditEntry{Origin: req.Origin, Action: "inject", Target: req.Target.String(), Text: text}
	size := max(len(text), req.WireSize())
	if size > len(text) {
		refused.Cut = size - len(text)
	}
	if err := checkInjectText(text, size); err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	sess, err := a.reg.resolve(req.Target)
	if err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	refused.Pane = sess.Pane
	if err := a.cfg.Policy.Check(req.Origin, "inject", sess); err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	send, err := a.sender()
	if err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	if err := a.checkInjectState(ctx, req, sess); err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	res := a.result("inject", sess)
	res.Text = text
	var interrupt []tmux.Key
	if req.Urgent {
		interrupt = interruptKeys(sess.Agent)
		for _, k := range interrupt {
			res.Keys = append(res.Keys, string(k))
		}
	}
	id, err := a.begin(req.Origin, req.Target, res)
	if err != nil {
		return res, err
	}
	if req.Urgent {
		err = interruptFirst(ctx, send, sess.Pane, interrupt)
	}
	if err == nil {
		var sr tmux.SendResult
		sr, err = send.SendText(ctx, sess.Pane, text, tmux.SendOptions{NoEnter: req.NoEnter})
		res.Delivered, res.Verified, res.Method, res.Detail = sr.Delivered, sr.Verified, sr.Method, sr.Detail
	}
	return a.finish(id, req.Origin, req.Target, res, err)
}

// checkInjectText refuses text that is empty, longer than tmux.MaxText
// bytes (size, as sent), or not text (tmux.CheckText).
func checkInjectText(text string, size int) error {
	if text == "" && size == 0 {
		return fmt.Errorf("%w: the text is empty", api.ErrBadRequest)
	}
	if err := tmux.CheckSize(size); err != nil {
		return fmt.Errorf("%w: %w", api.ErrBadRequest, err)
	}
	if err := tmux.CheckText(text); err != nil {
		return fmt.Errorf("%w: %w", api.ErrBadRequest, err)
	}
	return nil
}

// checkInjectState reads the pane again when the text is meant for a state
// (WhenIdle, WhileLimited) and refuses it when the pane is not in it now.
func (a *actions) checkInjectState(ctx context.Context, req api.InjectRequest, sess api.Session) error {
	if req.WhenIdle {
		// The registry's state may be a capture old: read the screen
		// now, so text meant for an input box never lands in a dialog
		// (where a digit in it would choose an option) or mid-turn.
		now, err := a.reg.reread(ctx, sess)
		if err != nil {
			return fmt.Errorf("%w: cannot read %s to check that it is idle, so nothing was typed: %w", api.ErrNotIdle, sess.Target, err)
		}
		if now.State != api.Idle {
			return fmt.Errorf("%w: %s is %s; nothing was typed", api.ErrNotIdle, sess.Target, now.State)
		}
	}
	if at := req.WhileLimited; !at.IsZero() {
		// The keystroke is for the limit's prompt as it is now: an agent
		// that went on, or says it goes on by itself, gets nothing.
		now, err := a.reg.reread(ctx, sess)
		if err != nil {
			return fmt.Errorf("%w: cannot read %s to check its usage limit, so nothing was typed: %w", api.ErrLimitChanged, sess.Target, err)
		}
		if now.State != api.RateLimited || now.Kind != "" || !now.ResetsAt.Equal(at) {
			return fmt.Errorf("%w (it reset at %s; now %s); nothing was typed", api.ErrLimitChanged, at.Format("15:04"), describeLimit(now))
		}
	}
	return nil
}

// interruptFirst presses an urgent text's interrupt keys and lets the
// agent redraw its input (urgentPause) before the text is typed.
func interruptFirst(ctx context.Context, send Sender, pane string, keys []tmux.Key) error {
	if err := sendApart(ctx, send, pane, keys); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(urgentPause):
	}
	return nil
}

// handOff records text given to the agent in a pane through its hook's
// reply (a Stop hook's "block" reason) instead of typed: the policy and
// the audit log see it as every action, under action "stop_hook", and
// nothing is sent to tmux. An error means the text must not be given.
func (a *actions) handOff(origin string, sess api.Session, text string) (api.ActionResult, error) {
	t := api.Target{Pane: sess.Pane}
	refused := api.AuditEntry{Origin: origin, Action: "stop_hook", Target: t.String(), Pane: sess.Pane, Text: text}
	if err := a.cfg.Policy.Check(origin, "inject", sess); err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	res := a.result("stop_hook", sess)
	res.Text, res.Method = text, "stop_hook"
	id, err := a.begin(origin, t, res)
	if err != nil {
		return res, err
	}
	// Handed over with the reply; Claude Code reads it as the reason it
	// goes on, which no screen can confirm.
	res.Delivered = true
	return a.finish(id, origin, t, res, nil)
}

// SendKeys presses keys in a pane.
func (a *actions) SendKeys(ctx context.Context, req api.KeysRequest) (api.ActionResult, error) {
	refused := api.AuditEntry{Origin: req.Origin, Action: "keys", Target: req.Target.String(), Keys: safeStrings(req.Keys)}
	keys, err := parseKeys(req.Keys)
	if err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	sess, err := a.reg.resolve(req.Target)
	if err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	return a.press(ctx, "keys", req.Origin, req.Target, sess, "", keys)
}

// Interrupt stops what the agent in a pane is doing.
func (a *actions) Interrupt(ctx context.Context, req api.InterruptRequest) (api.ActionResult, error) {
	sess, err := a.reg.resolve(req.Target)
	if err != nil {
		return api.ActionResult{}, a.refuse(api.AuditEntry{Origin: req.Origin, Action: "interrupt", Target: req.Target.String()}, err)
	}
	return a.press(ctx, "interrupt", req.Origin, req.Target, sess, "", interruptKeys(sess.Agent))
}

// describeLimit says in a few words what a pane shows now instead of the
// usage limit a continue was meant for.
func describeLimit(s api.Session) string {
	switch {
	case s.State != api.RateLimited:
		return fmt.Sprintf("%s is %s", s.Target, s.State)
	case s.Kind == api.KindAutoResume:
		return fmt.Sprintf("%s says it continues by itself", s.Target)
	}
	return fmt.Sprintf("%s shows another usage limit, resetting at %s", s.Target, s.ResetsAt.Format("15:04"))
}

// press sends keys and audits them. Answer has applied the policy before
// it reads the prompt; the other callers have it applied here.
func (a *actions) press(ctx context.Context, action, origin string, t api.Target, sess api.Session, option string, keys []tmux.Key) (api.ActionResult, error) {
	refused := api.AuditEntry{Origin: origin, Action: action, Target: t.String(), Pane: sess.Pane}
	if action != "answer" { // Answer checked the policy before it chose the keys
		if err := a.cfg.Policy.Check(origin, action, sess); err != nil {
			return api.ActionResult{}, a.refuse(refused, err)
		}
	}
	send, err := a.sender()
	if err != nil {
		return api.ActionResult{}, a.refuse(refused, err)
	}
	res := a.result(action, sess)
	res.Option = option
	for _, k := range keys {
		res.Keys = append(res.Keys, string(k))
	}
	id, err := a.begin(origin, t, res)
	if err != nil {
		return res, err
	}
	if action == "interrupt" {
		err = sendApart(ctx, send, sess.Pane, keys)
	} else {
		err = send.SendKeys(ctx, sess.Pane, keys...)
	}
	res.Delivered = err == nil
	return a.finish(id, origin, t, res, err)
}

func (a *actions) result(action string, sess api.Session) api.ActionResult {
	return api.ActionResult{Action: action, Pane: sess.Pane, Session: sess.Session, Target: sess.Target}
}

// refuse audits an action refused before anything was sent and returns
// its error. An audit log that cannot be written is added to the error.
func (a *actions) refuse(e api.AuditEntry, err error) error {
	e.Time, e.Phase, e.ID, e.Error = a.cfg.Clock(), audit.PhaseRefused, auditID(), err.Error()
	if aerr := a.cfg.Audit.Write(e); aerr != nil {
		a.cfg.Logger.Warn("audit", "err", aerr)
		return fmt.Errorf("%w (and the refusal could not be audited: %v)", err, aerr)
	}
	return err
}

// begin writes an action's attempt entry, with exactly the text and keys
// about to be sent, before anything is sent: an action that cannot be
// audited is not taken (ErrAuditUnwritable).
func (a *actions) begin(origin string, t api.Target, res api.ActionResult) (string, error) {
	id := auditID()
	e := api.AuditEntry{Time: a.cfg.Clock(), ID: id, Phase: audit.PhaseAttempt, Origin: origin, Action: res.Action,
		Target: t.String(), Pane: res.Pane, Text: res.Text, Keys: res.Keys}
	if res.Option != "" {
		e.Result = "option: " + res.Option
	}
	if err := a.cfg.Audit.Write(e); err != nil {
		a.cfg.Logger.Warn("audit", "err", err)
		return "", fmt.Errorf("%s %s: %w: %v", res.Action, res.Target, api.ErrAuditUnwritable, err)
	}
	return id, nil
}

// finish stamps an action, writes its result entry and reports it, and has
// the pane captured soon so its new state shows without waiting for output.
// The action has happened: a result entry that cannot be written is
// reported in Detail and the snapshot's problem, the attempt entry stays.
func (a *actions) finish(id, origin string, t api.Target, res api.ActionResult, err error) (api.ActionResult, error) {
	res.At = a.cfg.Clock()
	if err != nil {
		res.Delivered, res.Verified = false, false
		err = fmt.Errorf("%s %s: %w", res.Action, res.Target, err)
	}
	e := api.AuditEntry{Time: res.At, ID: id, Phase: audit.PhaseResult, Origin: origin, Action: res.Action, Target: t.String(), Pane: res.Pane,
		Sent: res.Delivered, Checked: res.Verified}
	if err != nil {
		e.Error = err.Error()
	}
	if aerr := a.cfg.Audit.Write(e); aerr != nil {
		a.cfg.Logger.Warn("audit", "err", aerr)
		if res.Detail != "" {
			res.Detail += "; "
		}
		res.Detail += "the audit log holds the attempt but could not record its result: " + aerr.Error()
	}
	a.reg.markDirty(res.Pane)
	return res, err
}

// auditID ties an action's audit entries together.
func auditID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// safeStrings quotes names that are not text, for the audit log.
func safeStrings(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if tmux.CheckText(n) != nil {
			out[i] = strconv.Quote(n)
		}
	}
	return out
}

// Audit records an entry (an MCP tool call) in the audit log.
func (a *actions) Audit(ctx context.Context, e api.AuditEntry) error {
	return a.cfg.Audit.Write(e)
}

// Preview returns a pane's screen.
func (a *actions) Preview(ctx context.Context, req api.PreviewRequest) (api.Preview, error) {
	sess, err := a.reg.resolve(req.Target)
	if err != nil {
		return api.Preview{}, err
	}
	text, err := a.cfg.Tmux.Capture(ctx, sess.Pane, tmux.CaptureOptions{History: req.History, Escapes: req.Escapes})
	if err != nil {
		return api.Preview{}, fmt.Errorf("preview %s: %w", sess.Target, err)
	}
	p := api.Preview{Pane: sess.Pane, Session: sess.Session, Taken: a.cfg.Clock(), Lines: []string{}}
	if text != "" {
		p.Lines = strings.Split(text, "\n")
	}
	if req.Lines > 0 && len(p.Lines) > req.Lines {
		p.Truncated = len(p.Lines) - req.Lines
		p.Lines = p.Lines[p.Truncated:]
	}
	return p, nil
}

// TaskLists returns every task list, or the one with id.
func (a *actions) TaskLists(ctx context.Context, id string) ([]api.TaskListDoc, error) {
	if a.cfg.TaskLists == nil {
		if id != "" {
			return nil, fmt.Errorf("%w: %q (no task lists are watched)", api.ErrUnknownList, id)
		}
		return []api.TaskListDoc{}, nil
	}
	lists := a.cfg.TaskLists()
	out := make([]api.TaskListDoc, 0, len(lists))
	for _, l := range lists {
		if id == "" || l.ID == id {
			out = append(out, tasks.Doc(l))
		}
	}
	if id != "" && len(out) == 0 {
		return nil, fmt.Errorf("%w: %q; run `system3 tasks` to list them", api.ErrUnknownList, id)
	}
	return out, nil
}

// Task returns one task of one list whole: the texts list views cap
// (tasks.MaxSubject) are all there.
func (a *actions) Task(ctx context.Context, req api.TaskRequest) (api.TaskDoc, error) {
	if req.List == "" || req.Task == "" {
		return api.TaskDoc{}, fmt.Errorf("%w: name the list and the task", api.ErrBadRequest)
	}
	if a.cfg.TaskLists != nil {
		for _, l := range a.cfg.TaskLists() {
			if l.ID != req.List {
				continue
			}
			if t, ok := tasks.TaskFull(l, req.Task); ok {
				return t, nil
			}
			return api.TaskDoc{}, fmt.Errorf("%w: %q in list %q", api.ErrUnknownTask, req.Task, req.List)
		}
	}
	return api.TaskDoc{}, fmt.Errorf("%w: %q; run `system3 tasks` to list them", api.ErrUnknownList, req.List)
}

// interruptKeys is how the agent is interrupted (its keys say: Escape for
// the agents that stop on it, twice for opencode, Ctrl-C for aider, plain
// shells and panes with no agent).
func interruptKeys(name string) []tmux.Key {
	k := agents.Lookup(name).KeysOrDefault()
	return slices.Repeat([]tmux.Key{k.Interrupt()}, agent.InterruptPresses(k))
}

// interruptGap separates repeated interrupt presses: keys sent together
// reach the agent as one sequence, and two Escapes at once interrupt
// nothing.
const interruptGap = 300 * time.Millisecond

// sendApart presses keys one at a time, interruptGap apart.
func sendApart(ctx context.Context, send Sender, pane string, keys []tmux.Key) error {
	for i, k := range keys {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(interruptGap):
			}
		}
		if err := send.SendKeys(ctx, pane, k); err != nil {
			return err
		}
	}
	return nil
}

func parseKeys(names []string) ([]tmux.Key, error) {
	if len(names) == 0 {
		var allowed []string
		for _, k := range tmux.AllowedKeys() {
			allowed = append(allowed, string(k))
		}
		return nil, fmt.Errorf("%w: no keys given (allowed: %s)", api.ErrBadRequest, strings.Join(allowed, ", "))
	}
	keys := make([]tmux.Key, 0, len(names))
	for _, n := range names {
		k, err := tmux.ParseKey(n)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", api.ErrBadRequest, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}
