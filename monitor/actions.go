package monitor

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/audit"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tasks"
	"github.com/system3-dev/system3/tmux"
)

// Target names the pane an action goes to. Pane is a tmux pane id ("%3");
// Session is a session name, a tmux target ("build:0.1") or a session id
// ("$2"). A session with several panes resolves to the one pane running an
// agent; when several do, the call fails and lists them.
type Target struct {
	Session string `json:"session,omitempty"`
	Pane    string `json:"pane,omitempty"`
}

func (t Target) String() string {
	if t.Pane != "" {
		return t.Pane
	}
	return t.Session
}

// InjectRequest types text into a pane.
type InjectRequest struct {
	Target
	Text string `json:"text"`
	// NoEnter types the text without submitting it.
	NoEnter bool `json:"no_enter,omitempty"`
	// Urgent interrupts the agent (Escape) before typing, so the guidance
	// is read now rather than after the current step.
	Urgent bool `json:"urgent,omitempty"`
	// VisibleControls types what CheckText would refuse (control bytes,
	// ESC, invalid UTF-8) as visible text instead ("^[", "^C", "\xff"):
	// see tmux.VisibleText. Without it such a text is refused.
	VisibleControls bool `json:"visible_controls,omitempty"`
	// Origin says who asks, for the audit log: "tui", "cli", "mcp:<client>".
	Origin string `json:"origin"`

	// size is the length of the text the sender had, when the socket
	// carried only its first tmux.MaxText bytes.
	size int
}

// wireTextLimit is the longest text InjectRequest's JSON carries as a
// string; longer text (and text that is not text) goes as base64, which
// keeps every byte and bounds the request at 4/3 of the text.
const wireTextLimit = 128 << 10

// MarshalJSON keeps the text byte for byte (encoding/json would turn
// invalid UTF-8 into U+FFFD): text that CheckText refuses, or that is
// long, goes as text_base64. Text over tmux.MaxText, which the service
// refuses anyway, is cut to that and its length sent as text_bytes, so
// the refusal is audited on the far side.
func (r InjectRequest) MarshalJSON() ([]byte, error) {
	type plain InjectRequest
	w := struct {
		plain
		Text       string `json:"text,omitempty"`
		TextBase64 string `json:"text_base64,omitempty"`
		TextBytes  int    `json:"text_bytes,omitempty"`
	}{plain: plain(r)}
	text := r.Text
	if len(text) > tmux.MaxText {
		w.TextBytes, text = len(text), text[:tmux.MaxText]
	}
	if len(text) <= wireTextLimit && tmux.CheckText(text) == nil {
		w.Text = text
	} else {
		w.TextBase64 = base64.StdEncoding.EncodeToString([]byte(text))
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *InjectRequest) UnmarshalJSON(b []byte) error {
	type plain InjectRequest
	var w struct {
		plain
		Text       string `json:"text"`
		TextBase64 string `json:"text_base64"`
		TextBytes  int    `json:"text_bytes"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = InjectRequest(w.plain)
	r.Text, r.size = w.Text, w.TextBytes
	if w.TextBase64 != "" {
		t, err := base64.StdEncoding.DecodeString(w.TextBase64)
		if err != nil {
			return fmt.Errorf("text_base64: %w", err)
		}
		r.Text = string(t)
	}
	return nil
}

// KeysRequest presses keys in a pane (tmux key names from the allowed set).
type KeysRequest struct {
	Target
	Keys   []string `json:"keys"`
	Origin string   `json:"origin"`
}

// AnswerRequest answers the prompt a session is waiting at. Answer is an
// option number ("2"), an option's label (or a unique prefix of it), "yes"
// (the first option that starts with Yes) or "no" (decline the way the
// agent expects: Escape, or its No option).
type AnswerRequest struct {
	Target
	Answer string `json:"answer"`
	Origin string `json:"origin"`
}

// InterruptRequest stops what the agent is doing (Escape for agents that
// take it, Ctrl-C otherwise).
type InterruptRequest struct {
	Target
	Origin string `json:"origin"`
}

// PreviewRequest asks for a pane's screen.
type PreviewRequest struct {
	Target
	// Lines keeps only the last Lines lines (0: the visible screen).
	Lines int `json:"lines,omitempty"`
	// History includes this many lines of scrollback above the screen.
	History int `json:"history,omitempty"`
	// Escapes keeps colour escape sequences, for a coloured preview.
	Escapes bool `json:"escapes,omitempty"`
}

// Preview is a pane's screen at one moment.
type Preview struct {
	Pane    string   `json:"pane"`
	Session string   `json:"session"`
	Lines   []string `json:"lines"`
	// Truncated is how many lines above Lines were cut.
	Truncated int       `json:"truncated"`
	Taken     time.Time `json:"taken"`
}

// ActionResult says what an action sent and whether it arrived.
type ActionResult struct {
	Action  string `json:"action"` // inject, keys, answer, interrupt
	Pane    string `json:"pane"`
	Session string `json:"session"`
	Target  string `json:"target"` // session:window.pane
	Text    string `json:"text,omitempty"`
	// Keys are the keys pressed, in order (for inject: the Escape of an
	// urgent message).
	Keys []string `json:"keys,omitempty"`
	// Option is the option an answer chose, as the screen showed it.
	Option string `json:"option,omitempty"`
	// Delivered: tmux accepted everything. Verified: the pane was seen to
	// take the text (for keys, only Delivered applies).
	Delivered bool      `json:"delivered"`
	Verified  bool      `json:"verified"`
	Method    string    `json:"method,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	At        time.Time `json:"at"`
}

// Errors of the actions. They match with errors.Is, also across the socket.
var (
	// ErrUnknownTarget: no such pane or session is being watched.
	ErrUnknownTarget = errors.New("no such session or pane")
	// ErrAmbiguousTarget: a session name matches several agent panes.
	ErrAmbiguousTarget = errors.New("the session has several agent panes")
	// ErrNotAwaiting: an answer for a session that is not at a prompt.
	ErrNotAwaiting = errors.New("the session is not waiting for an answer")
	// ErrBadAnswer: the answer matches no option.
	ErrBadAnswer = errors.New("the answer matches no option")
	// ErrBadRequest: the request itself is not valid (no target, no text,
	// a key outside the allowed set).
	ErrBadRequest = errors.New("invalid request")
	// ErrUnknownList: no task list has that id.
	ErrUnknownList = errors.New("no such task list")
	// ErrUnknownTask: the task list has no task with that id.
	ErrUnknownTask = errors.New("no such task")
	// ErrNoSender: the service was built without a way to type into panes.
	ErrNoSender = errors.New("this system3 cannot send to panes")
	// ErrAuditUnwritable: the audit log cannot be written, so the action
	// was refused before anything was sent.
	ErrAuditUnwritable = errors.New("the audit log cannot be written, so nothing was sent")
)

// Sender types into panes; *tmux.Client is one.
type Sender interface {
	SendText(ctx context.Context, pane, text string, opt tmux.SendOptions) (tmux.SendResult, error)
	SendKeys(ctx context.Context, pane string, keys ...tmux.Key) error
}

// urgentPause lets an agent redraw its input after an interrupt before
// the guidance is typed.
const urgentPause = 300 * time.Millisecond

// resolve finds the session a target names.
func (s *Supervisor) resolve(t Target) (Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]Session, 0, len(s.panes))
	for _, st := range s.panes {
		all = append(all, st.sess)
	}
	return ResolveTarget(t, all, s.cfg.Server)
}

// ResolveTarget picks the session t names from sessions (of the tmux
// server named server, for messages).
func ResolveTarget(t Target, sessions []Session, server string) (Session, error) {
	name := strings.TrimSpace(t.String())
	if name == "" {
		return Session{}, fmt.Errorf("%w: name a session or a pane", ErrBadRequest)
	}
	var matches, agents []Session
	for _, ss := range sessions {
		switch {
		case t.Pane != "" && ss.Pane == t.Pane:
			return ss, nil
		case t.Pane != "":
		case ss.Target == name || ss.Pane == name:
			return ss, nil
		case ss.Session == name || ss.SessionID == name:
			matches = append(matches, ss)
			if ss.IsAgent() {
				agents = append(agents, ss)
			}
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(agents) == 1:
		return agents[0], nil
	case len(matches) == 0:
		return Session{}, fmt.Errorf("%w: %q is not a session or pane on %s; run `system3 status` to list them", ErrUnknownTarget, name, server)
	}
	pick := agents
	if len(pick) == 0 {
		pick = matches
	}
	SortSessions(pick)
	names := make([]string, len(pick))
	for i, p := range pick {
		names[i] = fmt.Sprintf("%s (%s, %s)", p.Target, p.Pane, p.Agent)
	}
	return Session{}, fmt.Errorf("%w: %q has %d panes; name one: %s", ErrAmbiguousTarget, name, len(pick), strings.Join(names, ", "))
}

// sender returns the configured sender.
func (s *Supervisor) sender() (Sender, error) {
	if s.cfg.Send == nil {
		return nil, ErrNoSender
	}
	return s.cfg.Send, nil
}

// Inject types text into a pane and, unless NoEnter, submits it and checks
// that the pane took it. The text must be text (tmux.CheckText) and at most
// tmux.MaxText bytes, or it is refused (ErrBadRequest) with the offending
// byte and its offset; with VisibleControls it is first made visible
// (tmux.VisibleText). What is audited is exactly what goes to tmux.
func (s *Supervisor) Inject(ctx context.Context, req InjectRequest) (ActionResult, error) {
	text := req.Text
	if req.VisibleControls {
		text = tmux.VisibleText(text)
	}
	refused := audit.Entry{Origin: req.Origin, Action: "inject", Target: req.Target.String(), Text: text}
	size := max(len(text), req.size)
	if size > len(text) {
		refused.Cut = size - len(text)
	}
	if text == "" && size == 0 {
		return ActionResult{}, s.refuse(refused, fmt.Errorf("%w: the text is empty", ErrBadRequest))
	}
	if err := tmux.CheckSize(size); err != nil {
		return ActionResult{}, s.refuse(refused, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	if err := tmux.CheckText(text); err != nil {
		return ActionResult{}, s.refuse(refused, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	sess, err := s.resolve(req.Target)
	if err != nil {
		return ActionResult{}, s.refuse(refused, err)
	}
	refused.Pane = sess.Pane
	if err := s.cfg.Policy.Check(req.Origin, "inject", sess); err != nil {
		return ActionResult{}, s.refuse(refused, err)
	}
	send, err := s.sender()
	if err != nil {
		return ActionResult{}, s.refuse(refused, err)
	}
	res := s.result("inject", sess)
	res.Text = text
	var k tmux.Key
	if req.Urgent {
		k = interruptKey(sess.Agent)
		res.Keys = []string{string(k)}
	}
	id, err := s.begin(req.Origin, req.Target, res)
	if err != nil {
		return res, err
	}
	if req.Urgent {
		if err = send.SendKeys(ctx, sess.Pane, k); err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(urgentPause):
			}
		}
	}
	if err == nil {
		var sr tmux.SendResult
		sr, err = send.SendText(ctx, sess.Pane, text, tmux.SendOptions{NoEnter: req.NoEnter})
		res.Delivered, res.Verified, res.Method, res.Detail = sr.Delivered, sr.Verified, sr.Method, sr.Detail
	}
	return s.finish(id, req.Origin, req.Target, res, err)
}

// SendKeys presses keys in a pane.
func (s *Supervisor) SendKeys(ctx context.Context, req KeysRequest) (ActionResult, error) {
	refused := audit.Entry{Origin: req.Origin, Action: "keys", Target: req.Target.String(), Keys: safeStrings(req.Keys)}
	keys, err := parseKeys(req.Keys)
	if err != nil {
		return ActionResult{}, s.refuse(refused, err)
	}
	sess, err := s.resolve(req.Target)
	if err != nil {
		return ActionResult{}, s.refuse(refused, err)
	}
	return s.press(ctx, "keys", req.Origin, req.Target, sess, "", keys)
}

// Interrupt stops what the agent in a pane is doing.
func (s *Supervisor) Interrupt(ctx context.Context, req InterruptRequest) (ActionResult, error) {
	sess, err := s.resolve(req.Target)
	if err != nil {
		return ActionResult{}, s.refuse(audit.Entry{Origin: req.Origin, Action: "interrupt", Target: req.Target.String()}, err)
	}
	return s.press(ctx, "interrupt", req.Origin, req.Target, sess, "", []tmux.Key{interruptKey(sess.Agent)})
}

// Answer answers the prompt a session waits at.
func (s *Supervisor) Answer(ctx context.Context, req AnswerRequest) (ActionResult, error) {
	refused := audit.Entry{Origin: req.Origin, Action: "answer", Target: req.Target.String(), Result: "answer: " + strconv.Quote(req.Answer)}
	sess, err := s.resolve(req.Target)
	if err != nil {
		return ActionResult{}, s.refuse(refused, err)
	}
	refused.Pane = sess.Pane
	if err := s.cfg.Policy.Check(req.Origin, "answer", sess); err != nil {
		return ActionResult{}, s.refuse(refused, err)
	}
	if sess.State != rules.AwaitingInput {
		return ActionResult{}, s.refuse(refused, fmt.Errorf("%w: %s is %s, not awaiting_input; use inject to send text", ErrNotAwaiting, sess.Target, sess.State))
	}
	option, keys, err := AnswerKeys(sess, req.Answer)
	if err != nil {
		return ActionResult{}, s.refuse(refused, err)
	}
	return s.press(ctx, "answer", req.Origin, req.Target, sess, option, keys)
}

// press sends keys and audits them. Answer has applied the policy before
// it reads the prompt; the other callers have it applied here.
func (s *Supervisor) press(ctx context.Context, action, origin string, t Target, sess Session, option string, keys []tmux.Key) (ActionResult, error) {
	refused := audit.Entry{Origin: origin, Action: action, Target: t.String(), Pane: sess.Pane}
	if action != "answer" { // Answer checked the policy before it chose the keys
		if err := s.cfg.Policy.Check(origin, action, sess); err != nil {
			return ActionResult{}, s.refuse(refused, err)
		}
	}
	send, err := s.sender()
	if err != nil {
		return ActionResult{}, s.refuse(refused, err)
	}
	res := s.result(action, sess)
	res.Option = option
	for _, k := range keys {
		res.Keys = append(res.Keys, string(k))
	}
	id, err := s.begin(origin, t, res)
	if err != nil {
		return res, err
	}
	err = send.SendKeys(ctx, sess.Pane, keys...)
	res.Delivered = err == nil
	return s.finish(id, origin, t, res, err)
}

func (s *Supervisor) result(action string, sess Session) ActionResult {
	return ActionResult{Action: action, Pane: sess.Pane, Session: sess.Session, Target: sess.Target}
}

// refuse audits an action refused before anything was sent and returns
// its error. An audit log that cannot be written is added to the error.
func (s *Supervisor) refuse(e audit.Entry, err error) error {
	e.Time, e.Phase, e.ID, e.Error = s.cfg.Clock(), audit.PhaseRefused, auditID(), err.Error()
	if aerr := s.cfg.Audit.Write(e); aerr != nil {
		s.cfg.Logger.Warn("audit", "err", aerr)
		return fmt.Errorf("%w (and the refusal could not be audited: %v)", err, aerr)
	}
	return err
}

// begin writes an action's attempt entry, with exactly the text and keys
// about to be sent, before anything is sent: an action that cannot be
// audited is not taken (ErrAuditUnwritable).
func (s *Supervisor) begin(origin string, t Target, res ActionResult) (string, error) {
	id := auditID()
	e := audit.Entry{Time: s.cfg.Clock(), ID: id, Phase: audit.PhaseAttempt, Origin: origin, Action: res.Action,
		Target: t.String(), Pane: res.Pane, Text: res.Text, Keys: res.Keys}
	if res.Option != "" {
		e.Result = "option: " + res.Option
	}
	if err := s.cfg.Audit.Write(e); err != nil {
		s.cfg.Logger.Warn("audit", "err", err)
		return "", fmt.Errorf("%s %s: %w: %v", res.Action, res.Target, ErrAuditUnwritable, err)
	}
	return id, nil
}

// finish stamps an action, writes its result entry and reports it, and has
// the pane captured soon so its new state shows without waiting for output.
// The action has happened: a result entry that cannot be written is
// reported in Detail and the snapshot's problem, the attempt entry stays.
func (s *Supervisor) finish(id, origin string, t Target, res ActionResult, err error) (ActionResult, error) {
	res.At = s.cfg.Clock()
	if err != nil {
		res.Delivered, res.Verified = false, false
		err = fmt.Errorf("%s %s: %w", res.Action, res.Target, err)
	}
	e := audit.Entry{Time: res.At, ID: id, Phase: audit.PhaseResult, Origin: origin, Action: res.Action, Target: t.String(), Pane: res.Pane,
		Sent: res.Delivered, Checked: res.Verified}
	if err != nil {
		e.Error = err.Error()
	}
	if aerr := s.cfg.Audit.Write(e); aerr != nil {
		s.cfg.Logger.Warn("audit", "err", aerr)
		if res.Detail != "" {
			res.Detail += "; "
		}
		res.Detail += "the audit log holds the attempt but could not record its result: " + aerr.Error()
	}
	s.markDirty(res.Pane)
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

// markDirty has a pane captured at the next flush.
func (s *Supervisor) markDirty(pane string) {
	s.mu.Lock()
	if st, ok := s.panes[pane]; ok {
		st.dirty = true
	}
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Audit records an entry (an MCP tool call) in the audit log.
func (s *Supervisor) Audit(ctx context.Context, e audit.Entry) error {
	return s.cfg.Audit.Write(e)
}

// Preview returns a pane's screen.
func (s *Supervisor) Preview(ctx context.Context, req PreviewRequest) (Preview, error) {
	sess, err := s.resolve(req.Target)
	if err != nil {
		return Preview{}, err
	}
	text, err := s.cfg.Tmux.Capture(ctx, sess.Pane, tmux.CaptureOptions{History: req.History, Escapes: req.Escapes})
	if err != nil {
		return Preview{}, fmt.Errorf("preview %s: %w", sess.Target, err)
	}
	p := Preview{Pane: sess.Pane, Session: sess.Session, Taken: s.cfg.Clock(), Lines: []string{}}
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
func (s *Supervisor) TaskLists(ctx context.Context, id string) ([]tasks.ListDoc, error) {
	if s.cfg.TaskLists == nil {
		if id != "" {
			return nil, fmt.Errorf("%w: %q (no task lists are watched)", ErrUnknownList, id)
		}
		return []tasks.ListDoc{}, nil
	}
	lists := s.cfg.TaskLists()
	out := make([]tasks.ListDoc, 0, len(lists))
	for _, l := range lists {
		if id == "" || l.ID == id {
			out = append(out, tasks.Doc(l))
		}
	}
	if id != "" && len(out) == 0 {
		return nil, fmt.Errorf("%w: %q; run `system3 tasks` to list them", ErrUnknownList, id)
	}
	return out, nil
}

// Task returns one task of one list whole: the texts list views cap
// (tasks.MaxSubject) are all there.
func (s *Supervisor) Task(ctx context.Context, req TaskRequest) (tasks.TaskDoc, error) {
	if req.List == "" || req.Task == "" {
		return tasks.TaskDoc{}, fmt.Errorf("%w: name the list and the task", ErrBadRequest)
	}
	if s.cfg.TaskLists != nil {
		for _, l := range s.cfg.TaskLists() {
			if l.ID != req.List {
				continue
			}
			if t, ok := tasks.TaskFull(l, req.Task); ok {
				return t, nil
			}
			return tasks.TaskDoc{}, fmt.Errorf("%w: %q in list %q", ErrUnknownTask, req.Task, req.List)
		}
	}
	return tasks.TaskDoc{}, fmt.Errorf("%w: %q; run `system3 tasks` to list them", ErrUnknownList, req.List)
}

// interruptKey is how the agent is interrupted (its keys say: Escape for
// the agents that stop on it, Ctrl-C for aider, plain shells and panes
// with no agent).
func interruptKey(agent string) tmux.Key {
	return agents.Lookup(agent).KeysOrDefault().Interrupt()
}

func parseKeys(names []string) ([]tmux.Key, error) {
	if len(names) == 0 {
		var allowed []string
		for _, k := range tmux.AllowedKeys() {
			allowed = append(allowed, string(k))
		}
		return nil, fmt.Errorf("%w: no keys given (allowed: %s)", ErrBadRequest, strings.Join(allowed, ", "))
	}
	keys := make([]tmux.Key, 0, len(names))
	for _, n := range names {
		k, err := tmux.ParseKey(n)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// AnswerKeys returns the option an answer chooses at sess's prompt and the
// keys that choose it, as the agent's keys (monitor/agents/<name>) say:
// numbered menus (Claude Code, Codex, Gemini) take the option's digit,
// except Codex's folder-trust dialog, which takes Down to the option and
// Enter; aider takes the option's letter and Enter. "no" declines with
// Escape where the agent's No option says so (Claude Code always takes
// Escape).
func AnswerKeys(sess Session, answer string) (option string, keys []tmux.Key, err error) {
	a := strings.ToLower(strings.TrimSpace(answer))
	opts := sess.Options
	k := agents.Lookup(sess.Agent).KeysOrDefault()
	p := agent.Prompt{Kind: sess.Kind, Options: opts}
	choose := func(i int) (string, []tmux.Key, error) {
		label := ""
		if i < len(opts) {
			label = opts[i]
		}
		keys, err := k.Choose(p, i)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %v", ErrBadAnswer, err)
		}
		return label, keys, nil
	}
	list := func() string {
		if len(opts) == 0 {
			return "the screen shows no options"
		}
		parts := make([]string, len(opts))
		for i, o := range opts {
			parts[i] = fmt.Sprintf("%d=%q", i+1, o)
		}
		return "options: " + strings.Join(parts, ", ")
	}
	if a == "" {
		return "", nil, fmt.Errorf("%w: the answer is empty; send a number, an option's label, yes or no (%s)", ErrBadAnswer, list())
	}
	if n, cerr := strconv.Atoi(a); cerr == nil {
		if n < 1 || (len(opts) > 0 && n > len(opts)) || (len(opts) == 0 && n > 9) {
			return "", nil, fmt.Errorf("%w: there is no option %d (%s)", ErrBadAnswer, n, list())
		}
		return choose(n - 1)
	}
	switch a {
	case "y", "yes":
		if i := k.Yes(p); i >= 0 {
			return choose(i)
		}
		return "", nil, fmt.Errorf("%w: no option starts with Yes or Allow (%s)", ErrBadAnswer, list())
	case "n", "no":
		label, keys, err := k.No(p)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %v", ErrBadAnswer, err)
		}
		return label, keys, nil
	}
	// A label: exact, then unique prefix, then unique substring.
	for _, match := range []func(string) bool{
		func(o string) bool { return strings.ToLower(o) == a },
		func(o string) bool { return strings.HasPrefix(strings.ToLower(o), a) },
		func(o string) bool { return strings.Contains(strings.ToLower(o), a) },
	} {
		found := -1
		for i, o := range opts {
			if match(o) {
				if found >= 0 {
					return "", nil, fmt.Errorf("%w: %q matches several options (%s); send the number", ErrBadAnswer, answer, list())
				}
				found = i
			}
		}
		if found >= 0 {
			return choose(found)
		}
	}
	return "", nil, fmt.Errorf("%w: %q (%s)", ErrBadAnswer, answer, list())
}
