package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/testsupport/geminitest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// TestPermissionPolicyRealGemini: the real Gemini CLI (0.61) in yolo
// mode, its BeforeTool hook installed by system3 hooks install --agent
// gemini --project, with the approval policy of
// TestPermissionPolicyRealClaude. An allowed command runs with no dialog
// and is audited as allowed by its rule, for agent gemini, as Bash with
// Gemini's run_shell_command beside it; a denied one is refused and the
// model is told the rule's message in the function's response; an ask is
// held while its wake names the command, answered with system3 answer
// --wake, and proceeds; a command no rule decides shows Gemini's own
// dialog, yolo mode or not, which the screen then reports.
func TestPermissionPolicyRealGemini(t *testing.T) {
	fakeAPI := geminitest.NewFakeAPI(t,
		geminitest.Rule{Contains: "staging-now", Steps: []geminitest.Step{{Text: "Deploying.", Call: geminitest.Shell("./deploy.sh --staging", "Deploy to staging")}, {Text: "Staging done."}}},
		geminitest.Rule{Contains: "clean-now", Steps: []geminitest.Step{{Text: "Cleaning.", Call: geminitest.Shell("rm -rf ./build", "Clean the build")}, {Text: "Clean refused."}}},
		geminitest.Rule{Contains: "prod-now", Steps: []geminitest.Step{{Text: "Deploying.", Call: geminitest.Shell("./deploy.sh --prod eu", "Deploy to production")}, {Text: "Prod done."}}},
		geminitest.Rule{Contains: "other-now", Steps: []geminitest.Step{{Text: "Running.", Call: geminitest.Shell("./deploy.sh --other", "Something else")}, {Text: "Other done."}}},
	)
	state := testkit.ShortDir(t)
	// The hook as system3 hooks install --agent gemini --project writes
	// it, into the project the CLI then starts in.
	home := filepath.Join(t.TempDir(), "home")
	project := filepath.Join(home, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	installHooks(t, "gemini", state, "BeforeTool", nil, "--project", project)
	gs := geminitest.Start(t, geminitest.Options{API: fakeAPI, Home: home, Args: []string{"--approval-mode", "yolo"},
		Env: []string{"TMUX_PANE=%0"}, ReadyTimeout: 90 * time.Second})
	if real, _ := filepath.EvalSymlinks(project); gs.Pane != "%0" || gs.Dir != real {
		t.Fatalf("the CLI runs in pane %s, in %s", gs.Pane, gs.Dir)
	}
	r := startPermissionRig(t, state, gs.Socket(), gs.Pane, gs.Dir, gs.Capture, fakeAPI.Summary)
	ctx := context.Background()
	session := r.session
	idle := func() { t.Helper(); r.idle("gemini") }
	permissions := func() []api.AuditEntry { return permissions(state) }
	response := func(text string) bool {
		for _, p := range fakeAPI.MainPrompts() {
			if strings.HasPrefix(p, "run_shell_command: ") && strings.Contains(p, text) {
				return true
			}
		}
		return false
	}
	const dialog = "Allow execution of"
	noDialog := func() {
		t.Helper()
		if sc := gs.Capture(); strings.Contains(sc, dialog) {
			t.Fatalf("Gemini shows its approval dialog:\n%s", sc)
		}
	}
	idle()

	// Allowed: runs at once, no dialog.
	gs.Send("staging-now please")
	gs.WaitFor("staging done", 60*time.Second, geminitest.IdleAfter("Staging done."))
	noDialog()
	if !response("deployed --staging") {
		t.Fatalf("the allowed command's output never reached the model:\n%s", fakeAPI.Summary())
	}
	p := permissions()
	if len(p) != 1 || p[0].Decision != "allow" || p[0].Rule != "deploy-staging" || p[0].Origin != api.PolicyOrigin || p[0].Tool != "Bash" {
		t.Fatalf("audit after the allowed command: %+v", p)
	}
	var req approval.Request
	if err := json.Unmarshal([]byte(p[0].Args), &req); err != nil || req.Command() != "./deploy.sh --staging" || req.Agent != "gemini" || req.AgentTool != "run_shell_command" {
		t.Fatalf("audited request %q: %v", p[0].Args, err)
	}
	idle()

	// Denied: refused with the rule's message, which the model is told.
	gs.Send("clean-now please")
	gs.WaitFor("clean refused", 60*time.Second, geminitest.IdleAfter("Clean refused."))
	noDialog()
	if !response("Tool execution blocked: Policy: never rm -rf; remove the files one by one.") {
		t.Fatalf("the deny message never reached the model:\n%s", fakeAPI.Summary())
	}
	if p := permissions(); len(p) != 2 || p[1].Decision != "deny" || p[1].Rule != "no-rm-rf" {
		t.Fatalf("audit after the denied command: %+v", p)
	}
	idle()

	// Ask: held while its wake names the command; answered with the CLI.
	gs.Send("prod-now please")
	var w api.Wake
	testkit.WaitFor(t, 60*time.Second, "the policy's wake", func() bool {
		ws, _ := r.svc.Wakes(ctx, api.WakeFilter{})
		for _, x := range ws {
			if x.PolicyAsk() && strings.Contains(x.Details, "./deploy.sh --prod eu") {
				w = x
				return true
			}
		}
		return false
	})
	if !strings.Contains(w.Question, "gemini") || !strings.Contains(w.Question, "run_shell_command") {
		t.Fatalf("the ask's wake: %+v", w)
	}
	if code, out, errOut := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state}, "answer", "--wake", w.ID, "yes"); code != 0 {
		t.Fatalf("answer --wake: %d %s %s", code, out, errOut)
	}
	gs.WaitFor("prod done", 60*time.Second, geminitest.IdleAfter("Prod done."))
	noDialog()
	if !response("deployed --prod eu") {
		t.Fatalf("the approved command's output never reached the model:\n%s", fakeAPI.Summary())
	}
	if p := permissions(); len(p) != 3 || p[2].Decision != "allow" || p[2].Rule != "prod-asks" || !strings.Contains(p[2].Origin, "cli") {
		t.Fatalf("audit after the answered ask: %+v", p)
	}
	idle()

	// No rule decides: Gemini's own dialog shows although it runs in yolo
	// mode, and the screen reports it.
	gs.Send("other-now please")
	gs.WaitForText(dialog, 60*time.Second)
	testkit.WaitFor(t, 30*time.Second, "the dialog reported", func() bool {
		s := session()
		return s.State == api.AwaitingInput && s.Kind == "permission"
	})
	if p := permissions(); len(p) != 4 || p[3].Decision != "" || p[3].Origin != "nobody" || !strings.Contains(p[3].Result, "no rule decides") {
		t.Fatalf("audit after the undecided command: %+v", p)
	}
	gs.Keys("Enter") // Allow once, as a person at the pane
	gs.WaitFor("other done", 60*time.Second, geminitest.IdleAfter("Other done."))
	if !response("deployed --other") {
		t.Fatalf("the command allowed in Gemini's dialog never ran:\n%s", fakeAPI.Summary())
	}
	p = permissions()
	t.Logf("Gemini: allowed in %d ms, denied in %d ms, asked and held %d ms until the CLI's answer", p[0].WaitedMS, p[1].WaitedMS, p[2].WaitedMS)
}
