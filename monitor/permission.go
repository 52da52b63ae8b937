package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/hooks"
)

// PermissionProblem is the source of the snapshot's problem about the
// approval policy (a policy file that does not load).
const PermissionProblem = "policy"

// askSlack is what an ask leaves of the hook's budget for the reply to
// travel back and the monitors to take the request.
const askSlack = 3 * time.Second

// Permissions decides the permission requests agents' hooks deliver
// (Claude Code's, Codex's and Qwen Code's PermissionRequest, the Gemini
// CLI's BeforeTool, GitHub Copilot CLI's permissionRequest and the Cline
// CLI's tool_call, whose tools are named as Claude Code's:
// approval.FromGemini, approval.FromCopilot, approval.FromCline,
// approval.FromAgent with the agent's PolicyTools) by
// the approval policy: an allow or a deny is answered at once, an ask
// holds the hook while an awaiting_input wake goes out and answers with
// what a person or a supervisor answered on that wake; no rule, or no
// answer in time, lets the agent show its own dialog. An agent whose
// reply can only refuse (Cline: HookEvent.CanAllow) gets a deny alone:
// an allow or an ask is left to its dialog at once. Every decision
// passes the one gate (the action policy, as an answer) and is written to
// the audit log.
type Permissions struct {
	sup    *Supervisor
	policy func() *approval.Policy

	mu      sync.Mutex
	pending map[string]*pendingAsk // by wake id
	seq     int
}

// pendingAsk is a permission request held for an answer.
type pendingAsk struct {
	wake   api.Wake
	input  string         // the request's input, as its wake shows it
	answer chan askAnswer // buffered: one answer
	done   bool           // answered, or given up on
}

type askAnswer struct {
	decision approval.Decision
	message  string
	option   string
	by       string
}

// NewPermissions returns the permission decisions of sup's panes by the
// policy policy returns (an approval.Watcher's Policy); nil decides
// nothing.
func NewPermissions(sup *Supervisor, policy func() *approval.Policy) *Permissions {
	if policy == nil {
		policy = func() *approval.Policy { return nil }
	}
	return &Permissions{sup: sup, policy: policy, pending: map[string]*pendingAsk{}}
}

// hook is the approval policy's stage of a hook event (Supervisor.Hook):
// it decides a fresh PermissionRequest (or Gemini BeforeTool, or Copilot
// permissionRequest); every other event, and one replayed from the spool
// (no hook waits for it), goes to next, the monitors. A Gemini
// BeforeTool or Copilot permissionRequest outside tmux is left to the
// agent's own dialog, and the monitors take neither (PolicyOnly): they
// learn nothing from it that the screen does not show.
func (p *Permissions) hook(ctx context.Context, ev api.HookEvent, next hookFunc) (api.HookReply, error) {
	if ev.PolicyOnly() && (ev.Sender.Via == api.ViaSpool || ev.Pane == "") {
		return hooks.DecisionReply(ev.Name, "", ""), nil
	}
	if !ev.AsksPermission() || ev.Sender.Via == api.ViaSpool || ev.Pane == "" {
		return next(ctx, ev)
	}
	return p.decide(ctx, ev, next)
}

// answerOr answers a held permission request (Supervisor.Answer),
// whatever face sends the answer: one naming its wake (MCP answer_prompt, answer --wake, the web
// page's ask), or one for its pane (the dashboard, the page's session
// card, answer SESSION), read against the dialog the agent drew
// meanwhile when it names that prompt or none. The answer is the
// decision the hook returns; nothing is typed. Any other answer is
// typed, by typed.
func (p *Permissions) answerOr(ctx context.Context, req api.AnswerRequest, typed func(context.Context, api.AnswerRequest) (api.ActionResult, error)) (api.ActionResult, error) {
	pa, screen, err := p.pendingFor(req)
	if err != nil {
		return api.ActionResult{}, p.sup.actions.refuse(auditRefusal(req, ""), err)
	}
	if pa != nil {
		return p.answer(pa, req, screen)
	}
	return typed(ctx, req)
}

// decide decides one permission request; inner takes the events the
// monitors must see (the request, when the agent's dialog will show).
func (p *Permissions) decide(ctx context.Context, ev api.HookEvent, inner hookFunc) (api.HookReply, error) {
	s := p.sup
	start := s.cfg.Clock()
	if ev.Sender.Via != "" {
		// Only the agent in the pane may ask about the pane.
		if err := s.checkHook(ev); err != nil {
			s.refuseHook(ev, err)
			return api.HookReply{}, err
		}
	}
	pol := p.policy()
	if len(pol.Rules()) == 0 || len(ev.ToolInputJSON) == 0 {
		// No policy, or an input too large to keep: the agent's dialog.
		return p.undecided(ctx, ev, inner)
	}
	sess, err := s.resolve(api.Target{Pane: ev.Pane})
	if err != nil {
		return p.undecided(ctx, ev, inner)
	}
	req := policyRequest(ev, sess)
	v := pol.Decide(req)
	if !ev.CanAllow() {
		v = refusalsOnly(v, sess.Agent)
	}
	switch v.Decision {
	case approval.Allow, approval.Deny:
		if err := s.cfg.Policy.Check(api.PolicyOrigin, "answer", sess); err != nil {
			p.audit(req, v, approval.None, "", sess.Pane, "", start, 0, err)
			return p.undecided(ctx, ev, inner)
		}
		p.audit(req, v, v.Decision, api.PolicyOrigin, sess.Pane, "", start, s.cfg.Clock().Sub(start), nil)
		s.cfg.Logger.Info("permission decided by the policy", "pane", sess.Pane, "tool", req.Tool, "rule", v.Rule, "decision", v.Decision)
		if v.Decision == approval.Deny && ev.DenyStopsTurn() {
			s.turnStopped(sess.Pane)
		}
		return hooks.DecisionReply(ev.Name, string(v.Decision), v.Message), nil
	case approval.Ask:
		return p.ask(ctx, ev, req, v, sess, inner, start, pol.AskTimeout())
	}
	p.audit(req, v, approval.None, "", sess.Pane, "", start, 0, nil)
	return p.undecided(ctx, ev, inner)
}

// policyRequest is the tool call ev asks about in the policy's words:
// its tool named as Claude Code names the like, its paths resolved.
func policyRequest(ev api.HookEvent, sess api.Session) approval.Request {
	req := approval.Request{Agent: sess.Agent, Session: sess.Session, Cwd: firstNonEmpty(sess.Path, ev.Cwd),
		Tool: ev.ToolName, Input: json.RawMessage(ev.ToolInputJSON)}
	switch ev.Name {
	case api.BeforeTool:
		req = approval.FromGemini(req, ev.MCPServer, ev.MCPTool)
	case api.CopilotPermissionRequest:
		req = approval.FromCopilot(req)
	case api.ClineToolCall:
		req = approval.FromCline(req)
	default:
		req = approval.FromAgent(req, agents.Lookup(sess.Agent).PolicyTools)
	}
	return approval.Resolve(req)
}

// refusalsOnly is the verdict for an agent whose reply can only refuse
// (Cline): a deny stands, and an allow or an ask, which would still meet
// the agent's dialog (an ask answered yes too), decides nothing, on
// record with the rule that matched and why.
func refusalsOnly(v approval.Verdict, agent string) approval.Verdict {
	if v.Decision == approval.Allow || v.Decision == approval.Ask {
		v.Why = fmt.Sprintf("rule %s says %s, but %s's hook can only refuse a call", v.Rule, v.Decision, firstNonEmpty(agent, "the agent"))
		v.Decision = approval.None
	}
	return v
}

// undecided hands the request to the monitors, as when no policy runs:
// the agent shows its dialog, and the screen and the hook's state raise
// its wake. Gemini is told to show its dialog ("ask"), and Copilot
// told nothing, which shows its: the screen then reports either
// (PolicyOnly).
func (p *Permissions) undecided(ctx context.Context, ev api.HookEvent, inner hookFunc) (api.HookReply, error) {
	if ev.PolicyOnly() {
		return hooks.DecisionReply(ev.Name, "", ""), nil
	}
	if now := p.sup.cfg.Clock(); now.Sub(ev.Received) > time.Second {
		// Held for an ask: the dialog shows from now on.
		ev.Received = now
	}
	if _, err := inner(ctx, ev); err != nil {
		return api.HookReply{}, err
	}
	return api.HookReply{}, nil
}

// ask holds the request while its wake goes out, and answers with the
// answer given on the wake; without one in time the agent's dialog shows.
func (p *Permissions) ask(ctx context.Context, ev api.HookEvent, req approval.Request, v approval.Verdict, sess api.Session, inner hookFunc, start time.Time, hold time.Duration) (api.HookReply, error) {
	s := p.sup
	hold = min(hold, hooks.PermissionBudget-askSlack)
	if dl, ok := ctx.Deadline(); ok {
		hold = min(hold, time.Until(dl)-askSlack)
	}
	if hold <= 0 {
		p.audit(req, v, approval.None, "", sess.Pane, "", start, 0, nil)
		return p.undecided(ctx, ev, inner)
	}
	p.mu.Lock()
	p.seq++
	key := fmt.Sprintf("%s/%s/policy/%d", api.ReasonAwaitingInput, sess.Pane, p.seq)
	p.mu.Unlock()
	heading, input := describeRequest(req)
	agent := firstNonEmpty(sess.Agent, "the agent")
	w := api.Wake{Reason: api.ReasonAwaitingInput, Key: key, Session: sess.Session, Pane: sess.Pane, Agent: sess.Agent,
		State: string(api.AwaitingInput), Kind: "permission",
		Evidence: api.Evidence{Source: api.PolicySource, Rule: "policy." + v.Rule, Lines: []string{"PermissionRequest: " + req.Tool, input}},
		Question: fmt.Sprintf("May %s use %s? %s: %s", agent, firstNonEmpty(req.AgentTool, req.Tool), heading, input),
		Details:  heading + ": " + input,
		Options:  []string{"Yes", "No"},
		SuggestedAction: fmt.Sprintf("The approval policy (rule %s) asks you about this %s in %s (pane %s): answer yes to let it run, no to refuse it, or other text to refuse it with that text as the reason (system3 answer --wake ID, answer_prompt with wake). Without an answer within %s, %s shows its own dialog.",
			v.Rule, firstNonEmpty(req.AgentTool, req.Tool), sess.Target, sess.Pane, hold.Round(time.Second), agent),
	}
	// Held under mu from the raise on, so an answer to the wake, however
	// quick, finds the request waiting.
	p.mu.Lock()
	raised, _, err := s.Raise(w)
	if err != nil && raised.ID == "" {
		p.mu.Unlock()
		s.cfg.Logger.Warn("policy ask: the wake could not be raised", "pane", sess.Pane, "err", err)
		p.audit(req, v, approval.None, "", sess.Pane, "", start, 0, fmt.Errorf("the wake could not be raised: %w", err))
		return p.undecided(ctx, ev, inner)
	}
	pa := &pendingAsk{wake: raised, input: input, answer: make(chan askAnswer, 1)}
	p.pending[raised.ID] = pa
	p.mu.Unlock()
	s.holdPrompt(sess.Pane, raised.ID)
	s.noteDecision(sess.Pane, decisionOf(req, v.Rule, api.DecisionAsking, "", raised.ID, start, 0))

	timer := time.NewTimer(hold)
	defer timer.Stop()
	var a askAnswer
	var why string
	select {
	case a = <-pa.answer:
	case <-timer.C:
		why = "nobody answered in time: the agent's own dialog shows"
	case <-ctx.Done():
		why = "the agent stopped waiting (its hook ended): its own dialog shows"
	}
	p.mu.Lock()
	if why != "" && pa.done {
		// Answered as the wait ended: the answer stands.
		a, why = <-pa.answer, ""
	}
	pa.done = true
	delete(p.pending, raised.ID)
	p.mu.Unlock()

	waited := s.cfg.Clock().Sub(start)
	if why != "" {
		if err := s.Resolve(key, why); err != nil {
			s.cfg.Logger.Warn("policy ask: resolve the wake", "wake", raised.ID, "err", err)
		}
		s.releasePrompt(sess.Pane, true)
		p.audit(req, v, approval.None, "", sess.Pane, raised.ID, start, waited, nil)
		if ctx.Err() != nil {
			return api.HookReply{}, nil
		}
		return p.undecided(ctx, ev, inner)
	}
	if err := s.Resolve(key, "answered by "+api.ShortOrigin(a.by)+": "+a.option); err != nil {
		s.cfg.Logger.Warn("policy ask: resolve the wake", "wake", raised.ID, "err", err)
	}
	s.releasePrompt(sess.Pane, false)
	v.Message = a.message
	p.audit(req, v, a.decision, a.by, sess.Pane, raised.ID, start, waited, nil)
	return hooks.DecisionReply(ev.Name, string(a.decision), a.message), nil
}

// pendingFor returns the held request an answer is for: the one whose
// wake it names, or the one held in the pane it names, with that pane's
// session (whose dialog, drawn while the hook is held, the answer may
// name). Two requests held in one pane are told apart by the command the
// dialog shows; failing that the answer must name a wake.
func (p *Permissions) pendingFor(req api.AnswerRequest) (*pendingAsk, *api.Session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if req.Wake != "" {
		return p.pending[req.Wake], nil, nil
	}
	if req.Target == (api.Target{}) || len(p.pending) == 0 {
		return nil, nil, nil
	}
	sess, err := p.sup.resolve(req.Target)
	if err != nil {
		return nil, nil, nil // the usual path says why
	}
	var held []*pendingAsk
	for _, pa := range p.pending {
		if pa.wake.Pane == sess.Pane {
			held = append(held, pa)
		}
	}
	if len(held) > 1 {
		// The one whose input the dialog on screen shows.
		held = slices.DeleteFunc(held, func(pa *pendingAsk) bool {
			d := strings.TrimSpace(sess.Detail)
			return d == "" || !strings.Contains(pa.input, d)
		})
		if len(held) != 1 {
			return nil, nil, fmt.Errorf("%w: the approval policy holds several requests of %s; answer one by its wake (system3 wakes lists them)", api.ErrBadRequest, sess.Target)
		}
	}
	if len(held) == 0 {
		return nil, nil, nil
	}
	if req.Prompt != "" && req.Prompt == sess.Prompt && sess.Kind != "permission" {
		// Another kind of prompt on screen (a question), named: the
		// answer is for it.
		return nil, nil, nil
	}
	return held[0], &sess, nil
}

// answer gives a held request its answer, through the one gate. An
// answer on the ask's wake reads the ask's options: yes (1) allows, no
// (2) denies, other text denies with that text as the reason the agent
// is given. An answer for the pane (screen) reads the options of the
// agent's dialog on screen, as typing it would have: an option that
// begins with Yes or Allow allows, any other denies; text that is no
// option denies with it as the reason. It must name the prompt on
// screen, or none.
func (p *Permissions) answer(pa *pendingAsk, req api.AnswerRequest, screen *api.Session) (api.ActionResult, error) {
	s := p.sup
	refused := auditRefusal(req, pa.wake.Pane)
	sess, err := s.resolve(api.Target{Pane: pa.wake.Pane})
	if err != nil {
		return api.ActionResult{}, s.actions.refuse(refused, err)
	}
	if t := req.Target; t != (api.Target{}) {
		if ts, err := s.resolve(t); err != nil || ts.Pane != sess.Pane {
			return api.ActionResult{}, s.actions.refuse(refused, fmt.Errorf("%w: wake %s is about pane %s, not %s", api.ErrBadRequest, pa.wake.ID, sess.Pane, t))
		}
	}
	if err := s.cfg.Policy.Check(req.Origin, "answer", sess); err != nil {
		return api.ActionResult{}, s.actions.refuse(refused, err)
	}
	var a askAnswer
	var detail string
	if screen != nil {
		a, detail, err = screenAnswer(req, sess)
	} else {
		a, err = wakeAnswer(req.Answer)
	}
	if err != nil {
		return api.ActionResult{}, s.actions.refuse(refused, err)
	}
	a.by = req.Origin
	if a.decision == approval.Deny && a.message == "" {
		a.message = fmt.Sprintf("The request was declined by %s.", api.ShortOrigin(req.Origin))
	}
	p.mu.Lock()
	if pa.done {
		p.mu.Unlock()
		return api.ActionResult{}, s.actions.refuse(refused, fmt.Errorf("%w: wake %s was answered already, or its wait ended; nothing was sent", api.ErrPromptChanged, pa.wake.ID))
	}
	pa.done = true
	pa.answer <- a
	p.mu.Unlock()
	// The hook's side audits the decision, with who gave it and the wait.
	return api.ActionResult{Action: "answer", Pane: sess.Pane, Session: sess.Session, Target: sess.Target, Option: a.option,
		Method: PermissionMethod, Delivered: true, Detail: detail, At: s.cfg.Clock()}, nil
}

// PermissionMethod is the ActionResult.Method of an answer the approval
// policy's held request took: the decision returned at the agent's hook,
// no key typed.
const PermissionMethod = "permission_hook"

// wakeAnswer reads an answer on the ask's wake, whose options are Yes
// and No.
func wakeAnswer(answer string) (askAnswer, error) {
	text := strings.TrimSpace(answer)
	switch strings.ToLower(text) {
	case "", "esc", "escape":
		return askAnswer{}, fmt.Errorf("%w: answer yes to allow it, no to refuse it, or text to refuse it with that reason", api.ErrBadRequest)
	case "1", "y", "yes", "allow", "approve":
		return askAnswer{decision: approval.Allow, option: "Yes"}, nil
	case "2", "n", "no", "deny", "decline", "reject":
		return askAnswer{decision: approval.Deny, option: "No"}, nil
	}
	return askAnswer{decision: approval.Deny, option: "No: " + text, message: text}, nil
}

// screenAnswer reads an answer for the dialog the agent drew while its
// request is held, as typing it would have been read (agents.AnswerKeys):
// the answer must name that prompt, or none.
func screenAnswer(req api.AnswerRequest, sess api.Session) (askAnswer, string, error) {
	drawn := sess.State == api.AwaitingInput && sess.Prompt != "" && len(sess.Options) > 0
	if req.Prompt != "" && (!drawn || req.Prompt != sess.Prompt) {
		return askAnswer{}, "", fmt.Errorf("%w (now: %s); nothing was decided", api.ErrPromptChanged, describeNow(sess))
	}
	if !drawn {
		// No dialog yet: the ask's own options.
		a, err := wakeAnswer(req.Answer)
		return a, "", err
	}
	option, _, err := agents.AnswerKeys(sess, req.Answer)
	if err != nil {
		if _, numeric := strconv.Atoi(strings.TrimSpace(req.Answer)); numeric == nil {
			return askAnswer{}, "", err
		}
		// Not one of the dialog's options: text, the reason for a no.
		a, werr := wakeAnswer(req.Answer)
		if werr != nil {
			return askAnswer{}, "", err
		}
		return a, "", nil
	}
	l := strings.ToLower(option)
	if strings.HasPrefix(l, "yes") || strings.HasPrefix(l, "allow") {
		detail := ""
		if l != "yes" && l != "allow" {
			detail = "allowed this one call at the hook; the rest of the option is not applied (a policy rule can allow the like)"
		}
		return askAnswer{decision: approval.Allow, option: option}, detail, nil
	}
	return askAnswer{decision: approval.Deny, option: firstNonEmpty(option, "No")}, "", nil
}

func auditRefusal(req api.AnswerRequest, pane string) api.AuditEntry {
	return api.AuditEntry{Origin: req.Origin, Action: "answer", Target: firstNonEmpty(req.Target.String(), pane), Pane: pane, Result: "answer: " + strconv.Quote(req.Answer)}
}

// audit writes a permission decision to the audit log, and shows it
// with its pane's session (the dashboard's detail); wake is the ask's,
// start when the hook delivered the request.
func (p *Permissions) audit(req approval.Request, v approval.Verdict, decided approval.Decision, by, pane, wake string, start time.Time, waited time.Duration, refused error) {
	e := approval.AuditEntry(req, v, decided, by, pane, waited)
	e.Time = p.sup.cfg.Clock()
	if refused != nil {
		e.Error = refused.Error()
	}
	if err := p.sup.cfg.Audit.Write(e); err != nil {
		p.sup.cfg.Logger.Warn("audit a permission decision", "err", err)
	}
	p.sup.noteDecision(pane, decisionOf(req, v.Rule, string(decided), e.Origin, wake, start, waited))
}

// decisionOf is a request's decision as its session shows it.
func decisionOf(req approval.Request, rule, decision, by, wake string, start time.Time, waited time.Duration) api.PolicyDecision {
	_, input := describeRequest(req)
	if len(input) > api.MaxDecisionInput {
		input = strings.ToValidUTF8(input[:api.MaxDecisionInput], "") + "…"
	}
	return api.PolicyDecision{Time: start, Tool: req.Tool, Input: input, Rule: rule, Decision: decision, By: by, Wake: wake, WaitedMS: waited.Milliseconds()}
}

// noteDecision shows a permission decision with its pane's session,
// newest first, in place of the same ask's while it was held.
func (s *Supervisor) noteDecision(pane string, d api.PolicyDecision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.panes[pane]
	if !ok {
		return
	}
	ds := slices.DeleteFunc(slices.Clone(st.sess.Decisions), func(x api.PolicyDecision) bool { return d.Wake != "" && x.Wake == d.Wake })
	ds = append([]api.PolicyDecision{d}, ds...)
	st.sess.Decisions = ds[:min(len(ds), api.MaxDecisions)]
	s.publishLocked(api.Update{Kind: api.SessionChanged, Session: st.sess.Clone(), Previous: st.sess.State})
}

// describeRequest is the heading Claude Code shows above a request, and
// the request's input whole.
func describeRequest(req approval.Request) (heading, input string) {
	switch {
	case req.Command() != "":
		return "Bash command", req.Command()
	case req.Path() != "":
		return req.Tool + " file", req.Path()
	case req.Host() != "":
		return "Fetch", req.Summary()
	}
	return req.Tool, req.Summary()
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// UsePermissions has the approval policy p decide the permission requests
// of the supervisor's panes at their hooks, and answer a request it holds
// for a person (Hook, Answer). Call it before the service is served.
func (s *Supervisor) UsePermissions(p *Permissions) { s.permissions.Store(p) }

// Answer answers the prompt a session waits at: a permission request the
// approval policy holds (UsePermissions) by the decision its hook returns,
// any other prompt by typing (actions.Answer).
func (s *Supervisor) Answer(ctx context.Context, req api.AnswerRequest) (api.ActionResult, error) {
	if p := s.permissions.Load(); p != nil {
		return p.answerOr(ctx, req, s.actions.Answer)
	}
	return s.actions.Answer(ctx, req)
}
