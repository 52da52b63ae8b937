package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/testsupport/chattest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/hooks"
)

// TestPermissionPolicyRealQwen: the real Qwen Code (0.24) against the
// fake, its hooks (Claude Code's) installed by system3 hooks install
// --agent qwen --project, with the approval policy of
// TestPermissionPolicyRealClaude. Its hooks report to system3: a prompt
// submitted is working by the hook, a turn's end idle by its Stop. An
// allowed command runs with no dialog and is audited as allowed by its
// rule, for agent qwen, as Bash with Qwen's run_shell_command beside it;
// a denied one is refused and the model is told the rule's message; a
// command no rule decides shows Qwen's dialog, which system3 reports as
// awaiting_input by its hooks (PermissionRequest, then a permission_prompt
// Notification) confirmed by the screen, with one wake that has the
// dialog's question.
func TestPermissionPolicyRealQwen(t *testing.T) {
	fakeAPI := chattest.NewFakeAPI(t,
		chattest.Rule{Contains: "staging-now", Steps: []chattest.Step{{Text: "Deploying.", Tool: chattest.Shell(chattest.Qwen, "./deploy.sh --staging", "Deploy to staging")}, {Text: "Staging done."}}},
		chattest.Rule{Contains: "clean-now", Steps: []chattest.Step{{Text: "Cleaning.", Tool: chattest.Shell(chattest.Qwen, "rm -rf ./build", "Clean the build")}, {Text: "Clean refused."}}},
		chattest.Rule{Contains: "other-now", Steps: []chattest.Step{{Text: "Running.", Tool: chattest.Shell(chattest.Qwen, "./deploy.sh --other", "Something else")}, {Text: "Other done."}}},
	)
	state := testkit.ShortDir(t)
	// The hooks as system3 hooks install --agent qwen --project writes
	// them, into the project the CLI then starts in.
	home := filepath.Join(t.TempDir(), "home")
	project := filepath.Join(home, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	installHooks(t, "qwen", state, strings.Join(hooks.QwenEvents, ", "), nil, "--project", project)
	qs := chattest.Start(t, chattest.Qwen, chattest.Options{API: fakeAPI, Home: home, Env: []string{"TMUX_PANE=%0"}, ReadyTimeout: 90 * time.Second})
	if real, _ := filepath.EvalSymlinks(project); qs.Pane != "%0" || qs.Dir != real {
		t.Fatalf("the CLI runs in pane %s, in %s", qs.Pane, qs.Dir)
	}
	r := startPermissionRig(t, state, qs.Socket(), qs.Pane, qs.Dir, qs.Capture, fakeAPI.Summary)
	ctx := context.Background()
	session := r.session
	idle := func() { t.Helper(); r.idle("qwen") }
	permissions := func() []api.AuditEntry { return permissions(state) }
	told := fakeAPI.Told
	const dialog = "Allow execution of"
	noDialog := func() {
		t.Helper()
		if sc := qs.Capture(); strings.Contains(sc, dialog) {
			t.Fatalf("Qwen Code shows its approval dialog:\n%s", sc)
		}
	}
	idle()

	// Allowed: runs at once, no dialog; the turn's end comes by its Stop.
	qs.Send("staging-now please")
	qs.WaitForText("Staging done.", 60*time.Second)
	noDialog()
	if !told("deployed --staging") {
		t.Fatalf("the allowed command's output never reached the model:\n%s", fakeAPI.Summary())
	}
	p := permissions()
	if len(p) != 1 || p[0].Decision != "allow" || p[0].Rule != "deploy-staging" || p[0].Origin != api.PolicyOrigin || p[0].Tool != "Bash" {
		t.Fatalf("audit after the allowed command: %+v", p)
	}
	var req approval.Request
	if err := json.Unmarshal([]byte(p[0].Args), &req); err != nil || req.Command() != "./deploy.sh --staging" || req.Agent != "qwen" || req.AgentTool != "run_shell_command" {
		t.Fatalf("audited request %q: %v", p[0].Args, err)
	}
	testkit.WaitFor(t, 30*time.Second, "idle by the Stop hook", func() bool {
		s := session()
		return s.State == api.Idle && s.Evidence.Source == "hook" && s.Evidence.Rule == "hook.stop"
	})

	// Denied: refused with the rule's message, which the model is told.
	qs.Send("clean-now please")
	qs.WaitForText("Clean refused.", 60*time.Second)
	noDialog()
	if !told("Policy: never rm -rf; remove the files one by one.") {
		t.Fatalf("the deny message never reached the model:\n%s", fakeAPI.Summary())
	}
	if p := permissions(); len(p) != 2 || p[1].Decision != "deny" || p[1].Rule != "no-rm-rf" || p[1].Tool != "Bash" {
		t.Fatalf("audit after the denied command: %+v", p)
	}
	idle()

	// No rule decides: Qwen's own dialog shows, awaiting_input by the hook
	// and the screen, one wake with the dialog's question.
	before, err := r.svc.Wakes(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}, IncludeAcked: true, IncludeResolved: true})
	if err != nil {
		t.Fatal(err)
	}
	qs.Send("other-now please")
	qs.WaitForText(dialog, 60*time.Second)
	var s api.Session
	testkit.WaitForValue(t, 30*time.Second, "the dialog reported", func() (api.Session, bool) {
		s = session()
		return s, s.State == api.AwaitingInput && s.Kind == "permission" && s.Evidence.Source == "hook" && strings.HasPrefix(s.Question, dialog)
	})
	raised := func() []api.Wake {
		all, _ := r.svc.Wakes(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}, IncludeAcked: true, IncludeResolved: true})
		return slices.DeleteFunc(all, func(x api.Wake) bool {
			return slices.ContainsFunc(before, func(b api.Wake) bool { return b.ID == x.ID })
		})
	}
	testkit.WaitFor(t, 10*time.Second, "the dialog's wake", func() bool { return len(raised()) > 0 })
	if p := permissions(); len(p) != 3 || p[2].Decision != "" || p[2].Origin != "nobody" || !strings.Contains(p[2].Result, "no rule decides") {
		t.Fatalf("audit after the undecided command: %+v", p)
	}
	time.Sleep(3 * time.Second) // a second wake would come within the screen's next captures
	if w := raised(); len(w) != 1 || w[0].Resolved || w[0].Pane != qs.Pane || !strings.Contains(w[0].Question, dialog) {
		t.Fatalf("%d wakes for the dialog, want one, unresolved, with its question: %+v", len(w), w)
	}
	qs.Keys("1") // Allow once, as a person at the pane
	qs.WaitForText("Other done.", 60*time.Second)
	if !told("deployed --other") {
		t.Fatalf("the command allowed in Qwen's dialog never ran:\n%s", fakeAPI.Summary())
	}
	idle()
	p = permissions()
	t.Logf("Qwen Code: allowed in %d ms, denied in %d ms; its dialog reported by %s (%s), %q", p[0].WaitedMS, p[1].WaitedMS, s.Evidence.Source, s.Evidence.Rule, s.Question)
}
