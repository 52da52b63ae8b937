package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/chattest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/hooks"
)

// TestHooksRealOpencode: the real opencode (1.18.33) against the fake,
// system3's plugin installed by system3 hooks install --agent opencode
// --project into the project it then starts in. The plugin reports to
// system3 from inside opencode's process, below the pane's: a turn
// running is working by its session.status (busy), its end idle by its
// session.idle (as a Stop); a permission opencode asks is awaiting_input
// by its permission.asked (a permission_prompt Notification) confirmed by
// the screen, with one wake that has the dialog's question, and answered
// at the pane the turn goes on to its end, idle by the plugin again. No
// policy decides opencode's tool calls, so the audit has no entry of the
// approval policy.
func TestHooksRealOpencode(t *testing.T) {
	fakeAPI := chattest.NewFakeAPI(t,
		chattest.Rule{Contains: "hello-now", Steps: []chattest.Step{{Text: "Hello back, slowly.", Chunks: 8, ChunkDelay: 500 * time.Millisecond}}},
		chattest.Rule{Contains: "other-now", Steps: []chattest.Step{{Text: "Running.", Tool: chattest.Shell(chattest.Opencode, "./deploy.sh --other", "Something else")}, {Text: "Other done."}}},
	)
	state := testkit.ShortDir(t)
	home := filepath.Join(t.TempDir(), "home")
	project := filepath.Join(home, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	installHooks(t, "opencode", state, strings.Join(hooks.OpencodeEvents, ", "), nil, "--project", project)
	if _, err := os.Stat(filepath.Join(project, ".opencode", "plugins", hooks.OpencodePluginFile)); err != nil {
		t.Fatal(err)
	}
	oc := chattest.Start(t, chattest.Opencode, chattest.Options{API: fakeAPI, Home: home, Env: []string{"TMUX_PANE=%0"}, ReadyTimeout: 90 * time.Second})
	if real, _ := filepath.EvalSymlinks(project); oc.Pane != "%0" || oc.Dir != real {
		t.Fatalf("the CLI runs in pane %s, in %s", oc.Pane, oc.Dir)
	}
	r := startPermissionRig(t, state, oc.Socket(), oc.Pane, oc.Dir, oc.Capture, fakeAPI.Summary)
	ctx := context.Background()
	session := r.session
	byHook := func(state api.State, rule string) func() bool {
		return func() bool {
			s := session()
			return s.State == state && s.Evidence.Source == "hook" && s.Evidence.Rule == rule
		}
	}
	r.idle("opencode")

	// A turn: working by the plugin while it runs, idle by it at its end.
	oc.Send("hello-now please")
	testkit.WaitFor(t, 60*time.Second, "working by the plugin", byHook(api.Working, "hook.user_prompt_submit"))
	oc.WaitForText("Hello back, slowly.", 60*time.Second)
	testkit.WaitFor(t, 30*time.Second, "idle by the plugin", byHook(api.Idle, "hook.stop"))

	// A permission asked: awaiting_input by the plugin and the screen, one
	// wake with the dialog's question.
	before, err := r.svc.Wakes(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}, IncludeAcked: true, IncludeResolved: true})
	if err != nil {
		t.Fatal(err)
	}
	const dialog = "Permission required"
	oc.Send("other-now please")
	oc.WaitForText(dialog, 60*time.Second)
	s := testkit.WaitForValue(t, 30*time.Second, "the dialog reported by the plugin", func() (api.Session, bool) {
		s := session()
		return s, s.State == api.AwaitingInput && s.Kind == "permission" && s.Evidence.Source == "hook" &&
			s.Evidence.Rule == "hook.notification.permission_prompt" && s.Question == dialog
	}, oc.Capture)
	if !slices.ContainsFunc(s.Evidence.Lines, func(l string) bool { return strings.Contains(l, "opencode asks to run bash: ./deploy.sh --other") }) {
		t.Fatalf("the evidence does not name the command: %+v", s.Evidence)
	}
	raised := func() []api.Wake {
		all, _ := r.svc.Wakes(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}, IncludeAcked: true, IncludeResolved: true})
		return slices.DeleteFunc(all, func(x api.Wake) bool {
			return slices.ContainsFunc(before, func(b api.Wake) bool { return b.ID == x.ID })
		})
	}
	testkit.WaitFor(t, 10*time.Second, "the dialog's wake", func() bool { return len(raised()) > 0 })
	time.Sleep(3 * time.Second) // a second wake would come within the screen's next captures
	if w := raised(); len(w) != 1 || w[0].Resolved || w[0].Pane != oc.Pane || w[0].Question != dialog {
		t.Fatalf("%d wakes for the dialog, want one, unresolved, with its question: %+v", len(w), w)
	}
	oc.Keys("Enter") // Allow once, as a person at the pane
	oc.WaitForText("Other done.", 60*time.Second)
	if !fakeAPI.Told("deployed --other") {
		t.Fatalf("the command allowed in opencode's dialog never ran:\n%s", fakeAPI.Summary())
	}
	testkit.WaitFor(t, 30*time.Second, "idle by the plugin after the dialog", byHook(api.Idle, "hook.stop"))
	if p := permissions(state); len(p) != 0 {
		t.Fatalf("the approval policy decided opencode's calls: %+v", p)
	}
}
