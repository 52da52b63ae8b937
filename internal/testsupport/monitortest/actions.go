package monitortest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
)

// Call is one action the fake service received: its method ("inject",
// "keys", "answer", "interrupt", "link") and request.
type Call struct {
	Method  string
	Target  api.Target
	Text    string
	Keys    []string
	Answer  string
	Urgent  bool
	NoEnter bool
	Origin  string
	// Prompt is the prompt identity an answer named; Wake, the wake it
	// named.
	Prompt string
	Wake   string
	// TaskList is a link's task list ("" unlinks).
	TaskList string
}

// Calls returns the actions received so far, in order.
func (f *Service) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// AuditEntries returns the entries given to Audit.
func (f *Service) AuditEntries() []api.AuditEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.audits)
}

// SetPreview sets what Preview returns for a pane, and sends it to the
// pane's WatchPreview streams.
func (f *Service) SetPreview(pane string, lines ...string) {
	f.mu.Lock()
	if f.previews == nil {
		f.previews = map[string][]string{}
	}
	f.previews[pane] = lines
	f.mu.Unlock()
	f.ScreenChanged(pane)
}

// ScreenChanged has the pane's WatchPreview streams read it again and
// send it (after a Fail of "preview", the error).
func (f *Service) ScreenChanged(pane string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.screens {
		if w.pane == pane {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

// screenWatch is one WatchPreview stream.
type screenWatch struct {
	pane string
	wake chan struct{} // read the pane again
	end  chan struct{} // closed by EndWatches
}

// SetTaskLists sets what TaskLists returns.
func (f *Service) SetTaskLists(lists []api.TaskListDoc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = lists
}

// SetUnverified makes injections report delivered but not verified, with
// detail, as when the pane did not visibly take the text.
func (f *Service) SetUnverified(detail string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unverified = detail
}

// SetPolicy makes the fake apply p to its actions, as the real service
// does (nil: every action is allowed).
func (f *Service) SetPolicy(p *api.Policy) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.policy = p
}

func (f *Service) check(origin, action string, sess api.Session) error {
	f.mu.Lock()
	p := f.policy
	f.mu.Unlock()
	if err := p.Check(origin, action, sess); err != nil {
		return fmt.Errorf("%s %s: %w", action, sess.Target, err)
	}
	return nil
}

// Allow applies the policy set by SetPolicy and records the request;
// Allowed returns them.
func (f *Service) Allow(ctx context.Context, req api.AllowRequest) error {
	if err := f.err("allow"); err != nil {
		return err
	}
	f.mu.Lock()
	f.allows = append(f.allows, req)
	p := f.policy
	f.mu.Unlock()
	return p.Check(req.Origin, req.Action, api.Session{Session: req.Session})
}

// Allowed returns the Allow requests received, in order.
func (f *Service) Allowed() []api.AllowRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.allows)
}

// target resolves t against the snapshot, as the real service does.
func (f *Service) target(t api.Target) (api.Session, error) {
	f.mu.Lock()
	sessions, server := f.snap.Sessions, f.snap.Server
	f.mu.Unlock()
	return api.ResolveTarget(t, sessions, server)
}

func (f *Service) record(c Call, sess api.Session, action string) api.ActionResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	res := api.ActionResult{Action: action, Pane: sess.Pane, Session: sess.Session, Target: sess.Target,
		Text: c.Text, Keys: c.Keys, Delivered: true, Verified: action == "inject" && !c.NoEnter && f.unverified == ""}
	if action == "inject" && f.unverified != "" {
		res.Detail = f.unverified
	}
	return res
}

func (f *Service) Inject(ctx context.Context, req api.InjectRequest) (api.ActionResult, error) {
	if err := f.err("inject"); err != nil {
		return api.ActionResult{}, err
	}
	if req.Text == "" {
		return api.ActionResult{}, fmt.Errorf("%w: the text is empty", api.ErrBadRequest)
	}
	sess, err := f.target(req.Target)
	if err != nil {
		return api.ActionResult{}, err
	}
	if err := f.check(req.Origin, "inject", sess); err != nil {
		return api.ActionResult{}, err
	}
	res := f.record(Call{Method: "inject", Target: req.Target, Text: req.Text, Urgent: req.Urgent, NoEnter: req.NoEnter, Origin: req.Origin}, sess, "inject")
	if req.Urgent {
		res.Keys = []string{"Escape"}
	}
	return res, nil
}

func (f *Service) SendKeys(ctx context.Context, req api.KeysRequest) (api.ActionResult, error) {
	if err := f.err("keys"); err != nil {
		return api.ActionResult{}, err
	}
	sess, err := f.target(req.Target)
	if err != nil {
		return api.ActionResult{}, err
	}
	if err := f.check(req.Origin, "keys", sess); err != nil {
		return api.ActionResult{}, err
	}
	return f.record(Call{Method: "keys", Target: req.Target, Keys: req.Keys, Origin: req.Origin}, sess, "keys"), nil
}

func (f *Service) Answer(ctx context.Context, req api.AnswerRequest) (api.ActionResult, error) {
	if err := f.err("answer"); err != nil {
		return api.ActionResult{}, err
	}
	if req.Wake != "" && req.Target == (api.Target{}) {
		ev, ok := f.Store.Get(req.Wake)
		if !ok {
			return api.ActionResult{}, fmt.Errorf("%w: no wake %q", api.ErrBadRequest, req.Wake)
		}
		req.Target = api.Target{Pane: ev.Pane}
	}
	sess, err := f.target(req.Target)
	if err != nil {
		return api.ActionResult{}, err
	}
	if err := f.check(req.Origin, "answer", sess); err != nil {
		return api.ActionResult{}, err
	}
	if sess.State != "awaiting_input" {
		return api.ActionResult{}, fmt.Errorf("%w: %s is %s", api.ErrNotAwaiting, sess.Target, sess.State)
	}
	if req.Prompt != "" && req.Prompt != sess.Prompt {
		return api.ActionResult{}, fmt.Errorf("%w (now: %s asks %q)", api.ErrPromptChanged, sess.Target, sess.Question)
	}
	option, keys, err := agents.AnswerKeys(sess, req.Answer)
	if err != nil {
		return api.ActionResult{}, err
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = string(k)
	}
	res := f.record(Call{Method: "answer", Target: req.Target, Answer: req.Answer, Keys: names, Origin: req.Origin, Prompt: req.Prompt, Wake: req.Wake}, sess, "answer")
	res.Option = option
	return res, nil
}

func (f *Service) Interrupt(ctx context.Context, req api.InterruptRequest) (api.ActionResult, error) {
	if err := f.err("interrupt"); err != nil {
		return api.ActionResult{}, err
	}
	sess, err := f.target(req.Target)
	if err != nil {
		return api.ActionResult{}, err
	}
	if err := f.check(req.Origin, "interrupt", sess); err != nil {
		return api.ActionResult{}, err
	}
	return f.record(Call{Method: "interrupt", Target: req.Target, Keys: []string{"Escape"}, Origin: req.Origin}, sess, "interrupt"), nil
}

func (f *Service) Preview(ctx context.Context, req api.PreviewRequest) (api.Preview, error) {
	if err := f.err("preview"); err != nil {
		return api.Preview{}, err
	}
	return f.preview(req)
}

// WatchPreview sends the pane's screen as Preview reads it (without
// counting as a Preview call), then again at every SetPreview or
// ScreenChanged of the pane, until ctx ends or EndWatches.
func (f *Service) WatchPreview(ctx context.Context, req api.PreviewRequest) (<-chan api.PreviewUpdate, error) {
	if err := f.err("watch_preview"); err != nil {
		return nil, err
	}
	sess, err := f.target(req.Target)
	if err != nil {
		return nil, err
	}
	req.Target = api.Target{Pane: sess.Pane}
	w := &screenWatch{pane: sess.Pane, wake: make(chan struct{}, 1), end: make(chan struct{})}
	f.mu.Lock()
	f.screens[w] = struct{}{}
	f.mu.Unlock()
	f.inflight.Add(1)
	out := make(chan api.PreviewUpdate)
	go func() {
		defer f.inflight.Add(-1)
		defer close(out)
		defer func() {
			f.mu.Lock()
			delete(f.screens, w)
			f.mu.Unlock()
		}()
		for {
			var u api.PreviewUpdate
			f.mu.Lock()
			ferr := f.errs["preview"]
			f.mu.Unlock()
			if ferr != nil {
				u = api.PreviewUpdate{Preview: api.Preview{Pane: w.pane, Lines: []string{}}, Err: ferr.Error()}
			} else if p, err := f.preview(req); err != nil {
				u = api.PreviewUpdate{Preview: api.Preview{Pane: w.pane, Lines: []string{}}, Err: err.Error()}
			} else {
				u = api.PreviewUpdate{Preview: p}
			}
			select {
			case out <- u:
			case <-ctx.Done():
				return
			case <-w.end:
				return
			}
			select {
			case <-w.wake:
			case <-ctx.Done():
				return
			case <-w.end:
				return
			}
		}
	}()
	return out, nil
}

func (f *Service) preview(req api.PreviewRequest) (api.Preview, error) {
	sess, err := f.target(req.Target)
	if err != nil {
		return api.Preview{}, err
	}
	f.mu.Lock()
	lines := slices.Clone(f.previews[sess.Pane])
	f.mu.Unlock()
	p := api.Preview{Pane: sess.Pane, Session: sess.Session, Lines: lines}
	if p.Lines == nil {
		p.Lines = []string{}
	}
	if req.Lines > 0 && len(p.Lines) > req.Lines {
		p.Truncated = len(p.Lines) - req.Lines
		p.Lines = p.Lines[p.Truncated:]
	}
	return p, nil
}

func (f *Service) TaskLists(ctx context.Context, id string) ([]api.TaskListDoc, error) {
	if err := f.err("task_lists"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []api.TaskListDoc
	for _, l := range f.lists {
		if id == "" || l.ID == id {
			out = append(out, l)
		}
	}
	if id != "" && len(out) == 0 {
		return nil, fmt.Errorf("%w: %q", api.ErrUnknownList, id)
	}
	if out == nil {
		out = []api.TaskListDoc{}
	}
	return out, nil
}

// Task returns one task of the lists SetTaskLists set (as they were set:
// the fake caps nothing).
func (f *Service) Task(ctx context.Context, req api.TaskRequest) (api.TaskDoc, error) {
	if err := f.err("task"); err != nil {
		return api.TaskDoc{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.lists {
		if l.ID != req.List {
			continue
		}
		for _, t := range l.Tasks {
			if t.ID == req.Task {
				return t, nil
			}
		}
		return api.TaskDoc{}, fmt.Errorf("%w: %q in list %q", api.ErrUnknownTask, req.Task, req.List)
	}
	return api.TaskDoc{}, fmt.Errorf("%w: %q", api.ErrUnknownList, req.List)
}

// Hook records a hook event; Hooks returns them. Its reply is empty.
func (f *Service) Hook(ctx context.Context, ev api.HookEvent) (api.HookReply, error) {
	if err := f.err("hook"); err != nil {
		return api.HookReply{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hooks = append(f.hooks, ev)
	return api.HookReply{}, nil
}

// Hooks returns the hook events received, in order.
func (f *Service) Hooks() []api.HookEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.hooks)
}

func (f *Service) Audit(ctx context.Context, e api.AuditEntry) error {
	if err := f.err("audit"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.audits = append(f.audits, e)
	return nil
}

// Link records the call and sets the task list of the sessions the target
// names in the snapshot (every pane of a named session), publishing the
// change, as the real service does.
func (f *Service) Link(ctx context.Context, req api.LinkRequest) (api.Session, error) {
	sess, err := f.link(req)
	f.mu.Lock()
	fn := f.linked
	f.mu.Unlock()
	if err == nil && fn != nil {
		fn(ctx, req, sess)
	}
	return sess, err
}

// UseLinked has fn told of each link made or removed through Link, as
// the supervisor's UseLinked does.
func (f *Service) UseLinked(fn func(ctx context.Context, req api.LinkRequest, sess api.Session)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.linked = fn
}

func (f *Service) link(req api.LinkRequest) (api.Session, error) {
	if err := f.err("link"); err != nil {
		return api.Session{}, err
	}
	if req.TaskList != "" {
		if why := api.ValidTaskListID(req.TaskList); why != "" {
			return api.Session{}, fmt.Errorf("%w: %s", api.ErrBadRequest, why)
		}
	}
	sess, err := f.target(req.Target)
	if err != nil && (req.TaskList != "" || req.Pane != "" || !errors.Is(err, api.ErrUnknownTarget)) {
		return api.Session{}, err
	}
	acted := sess
	if err != nil {
		acted = api.Session{Session: req.Session, Target: req.Session}
	}
	if cerr := f.check(req.Origin, "link", acted); cerr != nil {
		return api.Session{}, cerr
	}
	f.mu.Lock()
	f.calls = append(f.calls, Call{Method: "link", Target: req.Target, TaskList: req.TaskList, Origin: req.Origin})
	var changed []api.Session
	f.snap.Sessions = slices.Clone(f.snap.Sessions)
	for i, s := range f.snap.Sessions {
		if err == nil && s.Pane == sess.Pane || (req.Pane == "" && s.Session == sess.Session) {
			f.snap.Sessions[i].TaskList = req.TaskList
			if s.Pane == sess.Pane {
				sess = f.snap.Sessions[i]
			}
			changed = append(changed, f.snap.Sessions[i])
		}
	}
	f.mu.Unlock()
	if err != nil { // unlinking a session that is gone
		return api.Session{Session: req.Session}, nil
	}
	for _, s := range changed {
		f.Publish(api.Update{Kind: api.SessionChanged, Session: s})
	}
	return sess, nil
}
