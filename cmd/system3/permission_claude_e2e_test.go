package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/mcpserver/web"
	"github.com/system3-dev/system3/monitor"
)

// The approval policy of TestPermissionPolicyRealClaude, in the config.
const permissionE2EConfig = `policy:
  ask_timeout: 8s
  rules:
    - id: deploy-staging
      command: "./deploy.sh --staging"
      decision: allow
    - id: no-rm-rf
      command: "rm -rf *"
      decision: deny
      message: "Policy: never rm -rf; remove the files one by one."
    - id: prod-asks
      command: "./deploy.sh --prod *"
      decision: ask
`

// TestPermissionPolicyRealClaude: the real Claude Code, with system3's
// hooks, and an approval policy in the config. An allowed command runs
// with no dialog and is audited as allowed by its rule; a denied one is
// refused and its model is told the rule's message in the tool result;
// an ask is held while its wake names the command and proceeds once
// answered: with system3 answer --wake, over MCP (a no, whose reason the
// model gets), from the web page in real Chromium (its card shows the
// tool and the exact input; its Yes allows) and from the dashboard while
// Claude Code draws its dialog (the dashboard's answer request: the
// decision at the hook, no key typed, the ask's wake resolved at once);
// an ask nobody answers in time lets Claude Code's own dialog show, which
// the screen then reports.
func TestPermissionPolicyRealClaude(t *testing.T) {
	fakeAPI := claudetest.NewFakeAPI(t,
		claudetest.Rule{Contains: "staging-now", Steps: []claudetest.Step{{Tool: claudetest.Bash("./deploy.sh --staging", "Deploy to staging")}, {Text: "Staging done."}}},
		claudetest.Rule{Contains: "clean-now", Steps: []claudetest.Step{{Tool: claudetest.Bash("rm -rf ./build", "Clean")}, {Text: "Clean refused."}}},
		claudetest.Rule{Contains: "prod-now", Steps: []claudetest.Step{{Tool: claudetest.Bash("./deploy.sh --prod eu", "Deploy to production")}, {Text: "Prod done."}}},
		claudetest.Rule{Contains: "mcp-now", Steps: []claudetest.Step{{Tool: claudetest.Bash("./deploy.sh --prod asia", "Deploy to production")}, {Text: "Asia declined."}}},
		claudetest.Rule{Contains: "web-now", Steps: []claudetest.Step{{Tool: claudetest.Bash("./deploy.sh --prod web", "Deploy to production")}, {Text: "Web done."}}},
		claudetest.Rule{Contains: "tui-now", Steps: []claudetest.Step{{Tool: claudetest.Bash("./deploy.sh --prod tui", "Deploy to production")}, {Text: "Tui declined."}}},
		claudetest.Rule{Contains: "late-now", Steps: []claudetest.Step{{Tool: claudetest.Bash("./deploy.sh --prod us", "Deploy to production")}, {Text: "Late done."}}},
	)
	h := startHookedClaudeConfig(t, fakeAPI, true, permissionE2EConfig)
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(h.stateDir, "system3.log"))
			t.Logf("system3.log:\n%s", log)
		}
	})
	h.await(t, "the agent recognised", 20*time.Second, func(s api.Session) bool { return s.Agent == "claude" && s.State == api.Idle })
	ctx := context.Background()
	permissions := func() []api.AuditEntry { return permissions(h.stateDir) }
	toolResult := func(text string) bool {
		for _, r := range fakeAPI.Requests() {
			if r.Kind == claudetest.KindMain && strings.Contains(string(r.Body), text) {
				return true
			}
		}
		return false
	}
	policyWake := func(command string) api.Wake {
		t.Helper()
		var w api.Wake
		testkit.WaitFor(t, 30*time.Second, "the policy's wake for "+command, func() bool {
			ws, _ := h.svc.Wakes(ctx, api.WakeFilter{})
			for _, x := range ws {
				if x.Evidence.Source == "policy" && strings.Contains(x.Details, command) {
					w = x
					return true
				}
			}
			return false
		})
		return w
	}

	// Allowed: runs at once, no dialog.
	start := time.Now()
	h.cs.Send("staging-now please")
	h.cs.WaitForText("Staging done.", 0)
	if !toolResult("deployed --staging") {
		t.Fatal("the allowed command's output never reached the model")
	}
	p := permissions()
	if len(p) != 1 || p[0].Decision != "allow" || p[0].Rule != "deploy-staging" || p[0].Origin != api.PolicyOrigin {
		t.Fatalf("audit after the allowed command: %+v", p)
	}
	t.Logf("allowed: prompt to its answer %s, decided in %d ms", time.Since(start).Round(time.Millisecond), p[0].WaitedMS)
	h.await(t, "idle", 20*time.Second, func(s api.Session) bool { return s.State == api.Idle })

	// Denied: refused with the rule's message, which the model is told.
	h.cs.Send("clean-now please")
	h.cs.WaitForText("Clean refused.", 0)
	if !toolResult("Policy: never rm -rf; remove the files one by one.") {
		t.Fatal("the deny message never reached the model in the tool result")
	}
	if p := permissions(); len(p) != 2 || p[1].Decision != "deny" || p[1].Rule != "no-rm-rf" {
		t.Fatalf("audit after the denied command: %+v", p)
	}
	h.await(t, "idle", 20*time.Second, func(s api.Session) bool { return s.State == api.Idle })

	// Ask: held while the wake goes out, answered from the CLI.
	h.cs.Send("prod-now please")
	w := policyWake("./deploy.sh --prod eu")
	// Claude Code (2.1.x) draws its dialog while the hook runs; the
	// answer on the policy's wake decides it, typing nothing.
	code, out, errOut := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": h.stateDir}, "answer", "--wake", w.ID, "yes")
	if code != 0 {
		t.Fatalf("answer --wake: %d %s %s", code, out, errOut)
	}
	h.cs.WaitForText("Prod done.", 0)
	if !toolResult("deployed --prod eu") {
		t.Fatal("the approved command's output never reached the model")
	}
	p = permissions()
	if len(p) != 3 || p[2].Decision != "allow" || p[2].Rule != "prod-asks" || !strings.Contains(p[2].Origin, "cli") || !strings.HasPrefix(p[2].Result, "asked") {
		t.Fatalf("audit after the answered ask: %+v", p)
	}
	var req approval.Request
	if err := json.Unmarshal([]byte(p[2].Args), &req); err != nil || req.Command() != "./deploy.sh --prod eu" {
		t.Fatalf("audited input %q: %v", p[2].Args, err)
	}
	t.Logf("asked: held %d ms until the CLI's answer", p[2].WaitedMS)
	h.await(t, "idle", 20*time.Second, func(s api.Session) bool { return s.State == api.Idle })

	// Ask, answered by a supervising agent over MCP (system3 mcp on the
	// daemon's socket): its "no" refuses the call, with the reason the
	// agent is given.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mc := mcpStdio(t, exe, []string{runMainEnv + "=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "SYSTEM3_STATE_DIR=" + h.stateDir}, "supervisor")
	h.cs.Send("mcp-now please")
	w = policyWake("./deploy.sh --prod asia")
	if text, isErr := callTool(t, mc, "answer_prompt", map[string]any{"wake": w.ID, "answer": "no"}); isErr {
		t.Fatalf("answer_prompt on the ask's wake: %s", text)
	}
	h.cs.WaitForText("Asia declined.", 0)
	if !toolResult("declined by mcp:supervisor") {
		t.Fatalf("the model never got the refusal's reason:\n%s", fakeAPI.Summary())
	}
	p = permissions()
	if len(p) != 4 || p[3].Decision != "deny" || !strings.Contains(p[3].Origin, `claims "mcp:supervisor"`) {
		t.Fatalf("audit after the ask answered over MCP: %+v", p)
	}
	h.await(t, "idle", 20*time.Second, func(s api.Session) bool { return s.State == api.Idle })

	// Ask, answered from the web page in real Chromium: the card shows the
	// tool and its exact input, and its Yes answers the ask's wake through
	// the service, as MCP's answer did (the one gate, origin "web").
	page, err := web.New(h.svc, web.Options{StateDir: h.stateDir})
	if err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(page)
	t.Cleanup(site.Close)
	link, _ := signInLink(t, map[string]string{"SYSTEM3_STATE_DIR": h.stateDir}, site.URL)
	bctx := browser(t)
	run2(t, bctx, "sign in", 90*time.Second, chromedp.Navigate(link))
	waitLocation(t, bctx, site.URL+"/web/")
	run2(t, bctx, "the page, live", 60*time.Second, present(`#live.on`))
	h.cs.Send("web-now please")
	w = policyWake("./deploy.sh --prod web")
	card := `#need .card[data-ask="` + w.ID + `"]`
	var cardText string
	run2(t, bctx, "the ask on the page", 30*time.Second, present(card), text(card, &cardText))
	if !strings.Contains(cardText, "May claude use Bash? Bash command: ./deploy.sh --prod web") || !strings.Contains(cardText, "policy.prod-asks") {
		t.Fatalf("the ask's card: %q", cardText)
	}
	start = time.Now()
	run2(t, bctx, "allow it from the page", 30*time.Second, tap(card+` button.opt[value="yes"]`),
		poll(`document.getElementById('toast').textContent.indexOf('answered')>=0`))
	h.cs.WaitForText("Web done.", 0)
	if !toolResult("deployed --prod web") {
		t.Fatal("the command allowed from the page never ran")
	}
	p = permissions()
	if len(p) != 5 || p[4].Decision != "allow" || p[4].Rule != "prod-asks" || p[4].Origin != web.Origin {
		t.Fatalf("audit after the ask answered from the page: %+v", p)
	}
	t.Logf("web page: held %d ms until the tap; tap to the command's output %s", p[4].WaitedMS, time.Since(start).Round(time.Millisecond))
	h.await(t, "idle", 20*time.Second, func(s api.Session) bool { return s.State == api.Idle })

	// Ask, answered from the dashboard while Claude Code draws its dialog:
	// the dashboard's answer (tui/cmds.go's: the pane, the prompt on its
	// row, the key's answer, origin tui) is the decision at the hook; no
	// key is typed into the dialog, and the ask's wake does not wait for
	// its timeout.
	h.cs.Send("tui-now please")
	w = policyWake("./deploy.sh --prod tui")
	s := h.await(t, "the dialog drawn while the ask is held", 6*time.Second, func(s api.Session) bool {
		return s.State == api.AwaitingInput && s.Prompt != "" && strings.Contains(s.Detail, "--prod tui")
	})
	res, err := h.svc.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: s.Pane}, Prompt: s.Prompt, Answer: "no", Origin: "tui"})
	if err != nil || res.Method != monitor.PermissionMethod || len(res.Keys) != 0 {
		t.Fatalf("the dashboard's answer: %+v, %v", res, err)
	}
	h.cs.WaitForText("Tui declined.", 0)
	if !toolResult("declined by tui") {
		t.Fatalf("the model never got the dashboard's refusal:\n%s", fakeAPI.Summary())
	}
	p = permissions()
	if len(p) != 6 || p[5].Decision != "deny" || p[5].Origin != "tui" || p[5].WaitedMS >= 7000 {
		t.Fatalf("audit after the ask answered from the dashboard: %+v", p)
	}
	if got, _ := h.svc.Wakes(ctx, api.AllWakes()); !slices.ContainsFunc(got, func(x api.Wake) bool {
		return x.ID == w.ID && x.Resolved && x.Resolution == "answered by tui: "+res.Option
	}) {
		t.Fatalf("the ask's wake after the dashboard's answer: %+v", got)
	}
	es, _ := audit.Read(filepath.Join(h.stateDir, audit.File))
	for _, e := range es {
		if e.Action == "answer" && len(e.Keys) > 0 {
			t.Fatalf("keys were typed into a dialog: %+v", e)
		}
	}
	t.Logf("dashboard: held %d ms until its answer (%s)", p[5].WaitedMS, res.Option)
	if ds := h.session(t).Decisions; len(ds) < 3 || ds[0].By != "tui" || ds[0].Decision != "deny" || ds[1].By != web.Origin {
		t.Fatalf("the session's decisions: %+v", ds)
	}
	h.await(t, "idle", 20*time.Second, func(s api.Session) bool { return s.State == api.Idle })

	// Nobody answers: the dialog shows after ask_timeout, and the screen
	// (and the hook) report it.
	h.cs.Send("late-now please")
	late := policyWake("./deploy.sh --prod us")
	testkit.WaitFor(t, 30*time.Second, "the unanswered ask to time out", func() bool { return len(permissions()) == 7 })
	got, _ := h.svc.Wakes(ctx, api.WakeFilter{})
	for _, x := range got {
		if x.ID == late.ID && (!x.Resolved || x.Resolution != "nobody answered in time: the agent's own dialog shows") {
			t.Fatalf("the unanswered ask's wake: %+v", x)
		}
	}
	s = h.await(t, "Claude Code's own dialog", 30*time.Second, func(s api.Session) bool {
		return s.State == api.AwaitingInput && s.Question == "Do you want to proceed?" && s.Prompt != ""
	})
	p = permissions()
	if len(p) != 7 || p[6].Decision != "" || p[6].Origin != "nobody" || p[6].WaitedMS < 7900 {
		t.Fatalf("audit after the unanswered ask: %+v", p)
	}
	t.Logf("unanswered: held %d ms, then the dialog (%s)", p[6].WaitedMS, s.Evidence.Rule)
	// The dialog now has one open wake: the screen's, not the ask's.
	testkit.WaitFor(t, 10*time.Second, "the dialog's wake", func() bool {
		open, _ := h.svc.Wakes(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}})
		return len(open) == 1 && open[0].Evidence.Source != "policy" && open[0].Prompt != ""
	})
	h.approve(t)
	h.cs.WaitForText("Late done.", 0)
}
