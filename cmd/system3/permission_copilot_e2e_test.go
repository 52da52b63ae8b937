package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/testsupport/chattest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// TestPermissionPolicyRealCopilot: the real GitHub Copilot CLI (1.0.102)
// against the fake, its hooks installed by system3 hooks install --agent
// copilot into its user settings, with the approval policy of
// TestPermissionPolicyRealClaude. An allowed command runs with no dialog
// and is audited as allowed by its rule, for agent copilot, as Bash with
// Copilot's bash beside it; a denied one is refused, Copilot says so and
// the model is told the rule's message; an ask is held, Copilot's dialog
// not drawn, while its wake names the command, answered with system3
// answer --wake, and proceeds; a command no rule decides shows
// Copilot's dialog, which system3 reports as awaiting_input with one
// wake. A turn's end comes by its agentStop hook.
func TestPermissionPolicyRealCopilot(t *testing.T) {
	fakeAPI := chattest.NewFakeAPI(t,
		chattest.Rule{Contains: "staging-now", Steps: []chattest.Step{{Text: "Deploying.", Tool: chattest.Shell(chattest.Copilot, "./deploy.sh --staging", "Deploy to staging")}, {Text: "Staging done."}}},
		chattest.Rule{Contains: "clean-now", Steps: []chattest.Step{{Text: "Cleaning.", Tool: chattest.Shell(chattest.Copilot, "rm -rf ./build", "Clean the build")}, {Text: "Clean refused."}}},
		chattest.Rule{Contains: "prod-now", Steps: []chattest.Step{{Text: "Deploying.", Tool: chattest.Shell(chattest.Copilot, "./deploy.sh --prod eu", "Deploy to production")}, {Text: "Prod done."}}},
		chattest.Rule{Contains: "other-now", Steps: []chattest.Step{{Text: "Running.", Tool: chattest.Shell(chattest.Copilot, "./deploy.sh --other", "Something else")}, {Text: "Other done."}}},
	)
	state := testkit.ShortDir(t)
	// The hooks as system3 hooks install --agent copilot writes them, into
	// the COPILOT_HOME the CLI then starts with ($HOME/.copilot).
	home := filepath.Join(t.TempDir(), "home")
	installHooks(t, "copilot", state, "permissionRequest, agentStop", map[string]string{"COPILOT_HOME": filepath.Join(home, ".copilot")})
	cs := chattest.Start(t, chattest.Copilot, chattest.Options{API: fakeAPI, Home: home, Env: []string{"TMUX_PANE=%0"}, ReadyTimeout: 90 * time.Second})
	if cs.Pane != "%0" {
		t.Fatalf("the CLI runs in pane %s, not %%0", cs.Pane)
	}
	r := startPermissionRig(t, state, cs.Socket(), cs.Pane, cs.Dir, cs.Capture, fakeAPI.Summary)
	ctx := context.Background()
	session := r.session
	idle := func() { t.Helper(); r.idle("copilot") }
	permissions := func() []api.AuditEntry { return permissions(state) }
	told := fakeAPI.Told
	const dialog = "Do you want to run this command?"
	noDialog := func() {
		t.Helper()
		if sc := cs.Capture(); strings.Contains(sc, dialog) {
			t.Fatalf("Copilot shows its approval dialog:\n%s", sc)
		}
	}
	idle()

	// Allowed: runs at once, no dialog.
	cs.Send("staging-now please")
	cs.WaitForText("Staging done.", 60*time.Second)
	noDialog()
	if !told("deployed --staging") {
		t.Fatalf("the allowed command's output never reached the model:\n%s", fakeAPI.Summary())
	}
	p := permissions()
	if len(p) != 1 || p[0].Decision != "allow" || p[0].Rule != "deploy-staging" || p[0].Origin != api.PolicyOrigin || p[0].Tool != "Bash" {
		t.Fatalf("audit after the allowed command: %+v", p)
	}
	var req approval.Request
	if err := json.Unmarshal([]byte(p[0].Args), &req); err != nil || req.Command() != "./deploy.sh --staging" || req.Agent != "copilot" || req.AgentTool != "bash" {
		t.Fatalf("audited request %q: %v", p[0].Args, err)
	}
	// The turn's end is told by Copilot's agentStop.
	testkit.WaitFor(t, 30*time.Second, "idle by the agentStop hook", func() bool {
		s := session()
		return s.State == api.Idle && s.Evidence.Source == "hook" && s.Evidence.Rule == "hook.stop"
	})

	// Denied: refused with the rule's message, which Copilot shows and the
	// model is told.
	cs.Send("clean-now please")
	cs.WaitForText("Clean refused.", 60*time.Second)
	noDialog()
	if sc := cs.Capture(); !strings.Contains(sc, "Permission denied by a PermissionRequest hook") {
		t.Fatalf("Copilot does not say the command was denied:\n%s", sc)
	}
	if !told("Policy: never rm -rf; remove the files one by one.") {
		t.Fatalf("the deny message never reached the model:\n%s", fakeAPI.Summary())
	}
	if p := permissions(); len(p) != 2 || p[1].Decision != "deny" || p[1].Rule != "no-rm-rf" {
		t.Fatalf("audit after the denied command: %+v", p)
	}
	idle()

	// Ask: held while its wake names the command, Copilot's dialog not
	// drawn; answered with the CLI.
	cs.Send("prod-now please")
	var aw api.Wake
	testkit.WaitFor(t, 60*time.Second, "the policy's wake", func() bool {
		ws, _ := r.svc.Wakes(ctx, api.WakeFilter{})
		for _, x := range ws {
			if x.PolicyAsk() && strings.Contains(x.Details, "./deploy.sh --prod eu") {
				aw = x
				return true
			}
		}
		return false
	})
	if !strings.Contains(aw.Question, "copilot") || !strings.Contains(aw.Question, "bash") {
		t.Fatalf("the ask's wake: %+v", aw)
	}
	time.Sleep(2 * time.Second)
	noDialog()
	if code, out, errOut := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state}, "answer", "--wake", aw.ID, "yes"); code != 0 {
		t.Fatalf("answer --wake: %d %s %s", code, out, errOut)
	}
	cs.WaitForText("Prod done.", 60*time.Second)
	noDialog()
	if !told("deployed --prod eu") {
		t.Fatalf("the approved command's output never reached the model:\n%s", fakeAPI.Summary())
	}
	if p := permissions(); len(p) != 3 || p[2].Decision != "allow" || p[2].Rule != "prod-asks" || !strings.Contains(p[2].Origin, "cli") {
		t.Fatalf("audit after the answered ask: %+v", p)
	}
	idle()

	// No rule decides: Copilot's own dialog shows, awaiting_input, one wake.
	before, err := r.svc.Wakes(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}, IncludeAcked: true, IncludeResolved: true})
	if err != nil {
		t.Fatal(err)
	}
	cs.Send("other-now please")
	cs.WaitForText(dialog, 60*time.Second)
	var s api.Session
	testkit.WaitFor(t, 30*time.Second, "the dialog reported", func() bool {
		s = session()
		return s.State == api.AwaitingInput && s.Kind == "permission" && strings.Contains(s.Detail, "./deploy.sh --other")
	})
	raised := func() []api.Wake {
		all, _ := r.svc.Wakes(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}, IncludeAcked: true, IncludeResolved: true})
		return slices.DeleteFunc(all, func(x api.Wake) bool {
			return slices.ContainsFunc(before, func(b api.Wake) bool { return b.ID == x.ID })
		})
	}
	testkit.WaitFor(t, 10*time.Second, "the dialog's wake", func() bool { return len(raised()) > 0 })
	if p := permissions(); len(p) != 4 || p[3].Decision != "" || p[3].Origin != "nobody" || !strings.Contains(p[3].Result, "no rule decides") {
		t.Fatalf("audit after the undecided command: %+v", p)
	}
	time.Sleep(3 * time.Second) // a second wake would come within the screen's next captures
	if w := raised(); len(w) != 1 || w[0].Resolved || w[0].Pane != cs.Pane || !strings.Contains(w[0].Details, "./deploy.sh --other") {
		t.Fatalf("%d wakes for the dialog, want one, unresolved: %+v", len(w), w)
	}
	cs.Keys("1") // Yes, as a person at the pane
	cs.WaitForText("Other done.", 60*time.Second)
	if !told("deployed --other") {
		t.Fatalf("the command allowed in Copilot's dialog never ran:\n%s", fakeAPI.Summary())
	}
	idle()
	p = permissions()
	t.Logf("Copilot: allowed in %d ms, denied in %d ms, asked and held %d ms until the CLI's answer; its dialog reported by %s (%s)",
		p[0].WaitedMS, p[1].WaitedMS, p[2].WaitedMS, s.Evidence.Source, s.Evidence.Rule)
}
