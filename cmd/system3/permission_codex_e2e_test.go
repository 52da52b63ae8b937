package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/testsupport/codextest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// TestPermissionPolicyRealCodex: the real Codex CLI (0.169), its
// PermissionRequest hook installed by system3 hooks install --agent codex
// and trusted at start-up as a person does, with the approval policy of
// TestPermissionPolicyRealClaude. An allowed command runs with no
// approval dialog and is audited as allowed by its rule; a denied one is
// refused and the model is told the rule's message in the function's
// output; an ask is held while its wake names the command, answered with
// system3 answer --wake, and proceeds.
func TestPermissionPolicyRealCodex(t *testing.T) {
	fakeAPI := codextest.NewFakeAPI(t,
		codextest.Rule{Contains: "staging-now", Steps: []codextest.Step{{Text: "Deploying.", Tool: codextest.Exec("./deploy.sh --staging", "Deploy to staging?")}, {Text: "Staging done."}}},
		codextest.Rule{Contains: "clean-now", Steps: []codextest.Step{{Text: "Cleaning.", Tool: codextest.Exec("rm -rf ./build", "Clean the build?")}, {Text: "Clean refused."}}},
		codextest.Rule{Contains: "prod-now", Steps: []codextest.Step{{Text: "Deploying.", Tool: codextest.Exec("./deploy.sh --prod eu", "Deploy to production?")}, {Text: "Prod done."}}},
	)
	state := testkit.ShortDir(t)
	// The hook as system3 hooks install --agent codex writes it, into the
	// CODEX_HOME the CLI then starts with.
	home := filepath.Join(t.TempDir(), "home")
	codexHome := filepath.Join(home, ".codex")
	installHooks(t, "codex", state, "PermissionRequest", map[string]string{"CODEX_HOME": codexHome})
	cs := codextest.Start(t, codextest.Options{API: fakeAPI, Home: home, Env: []string{"TMUX_PANE=%0"}, ReadyText: "Hooks need review"})
	if cs.Pane != "%0" {
		t.Fatalf("the CLI runs in pane %s, not %%0", cs.Pane)
	}
	// Trusted as a person does when Codex asks. A key pressed as the
	// dialog is drawn, before Codex takes keys, is lost (seen once under
	// load): it is pressed again until the choice moves.
	testkit.WaitFor(t, 60*time.Second, "Trust all and continue chosen", func() bool {
		cs.Keys("2")
		return testkit.Poll(2*time.Second, func() bool { return strings.Contains(cs.Capture(), "› 2. Trust all and continue") })
	}, cs.Capture)
	cs.Keys("Enter")
	cs.WaitFor("the input box", 60*time.Second, codextest.IsReady)
	r := startPermissionRig(t, state, cs.Socket(), cs.Pane, cs.Dir, cs.Capture, fakeAPI.Summary)
	ctx := context.Background()
	idle := func() { t.Helper(); r.idle("codex") }
	permissions := func() []api.AuditEntry { return permissions(state) }
	output := func(text string) bool {
		for _, r := range fakeAPI.Requests() {
			if r.Kind == codextest.KindMain && strings.Contains(string(r.Body), text) {
				return true
			}
		}
		return false
	}
	noDialog := func() {
		t.Helper()
		if strings.Contains(cs.Capture(), "Would you like to run the following command?") {
			t.Fatalf("Codex shows its approval dialog:\n%s", cs.Capture())
		}
	}
	idle()

	// Allowed: runs at once, no dialog.
	cs.Send("staging-now please")
	cs.WaitForText("Staging done.", 0)
	noDialog()
	if !output("deployed --staging") {
		t.Fatalf("the allowed command's output never reached the model:\n%s", fakeAPI.Summary())
	}
	p := permissions()
	if len(p) != 1 || p[0].Decision != "allow" || p[0].Rule != "deploy-staging" || p[0].Origin != api.PolicyOrigin || p[0].Tool != "Bash" {
		t.Fatalf("audit after the allowed command: %+v", p)
	}
	var req approval.Request
	if err := json.Unmarshal([]byte(p[0].Args), &req); err != nil || req.Command() != "./deploy.sh --staging" || req.Agent != "codex" {
		t.Fatalf("audited request %q: %v", p[0].Args, err)
	}
	idle()

	// Denied: refused with the rule's message, which the model is told.
	cs.Send("clean-now please")
	cs.WaitForText("Clean refused.", 0)
	noDialog()
	if !output("Policy: never rm -rf; remove the files one by one.") {
		t.Fatalf("the deny message never reached the model:\n%s", fakeAPI.Summary())
	}
	if p := permissions(); len(p) != 2 || p[1].Decision != "deny" || p[1].Rule != "no-rm-rf" {
		t.Fatalf("audit after the denied command: %+v", p)
	}
	idle()

	// Ask: held while its wake names the command; answered with the CLI.
	cs.Send("prod-now please")
	var w api.Wake
	testkit.WaitFor(t, 30*time.Second, "the policy's wake", func() bool {
		ws, _ := r.svc.Wakes(ctx, api.WakeFilter{})
		for _, x := range ws {
			if x.PolicyAsk() && strings.Contains(x.Details, "./deploy.sh --prod eu") {
				w = x
				return true
			}
		}
		return false
	})
	if code, out, errOut := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state}, "answer", "--wake", w.ID, "yes"); code != 0 {
		t.Fatalf("answer --wake: %d %s %s", code, out, errOut)
	}
	cs.WaitForText("Prod done.", 0)
	noDialog()
	if !output("deployed --prod eu") {
		t.Fatalf("the approved command's output never reached the model:\n%s", fakeAPI.Summary())
	}
	if p := permissions(); len(p) != 3 || p[2].Decision != "allow" || p[2].Rule != "prod-asks" || !strings.Contains(p[2].Origin, "cli") {
		t.Fatalf("audit after the answered ask: %+v", p)
	}
	t.Logf("Codex: allowed in %d ms, denied in %d ms, asked and held %d ms until the CLI's answer", p[0].WaitedMS, permissions()[1].WaitedMS, permissions()[2].WaitedMS)
}
