package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tasks"
	"github.com/system3-dev/system3/tmux"
)

// runMainEnv makes the test binary run system3 itself with its arguments,
// so tests can run any system3 command (the dashboard, the demo) in a tmux
// pane: SYSTEM3_TEST_RUN_MAIN=1 <test binary> demo.
const runMainEnv = "SYSTEM3_TEST_RUN_MAIN"

// The test binary doubles as system3 for the fake agents it starts in tmux
// panes: run as `<test binary> fake-agent ...` (as startDemo and
// startFakeAgents run os.Executable()), it is `system3 fake-agent ...`.
func init() {
	if len(os.Args) < 2 || os.Args[1] != "fake-agent" && os.Getenv(runMainEnv) != "1" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// agentServer is a private tmux server that keeps a dead pane (and its
// last screen) as the demo's does, so a crashed agent shows as exited.
func agentServer(t testing.TB) tmux.Server {
	t.Helper()
	srv := tmuxtest.NewStoppedServer(t)
	f, err := os.OpenFile(srv.Config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("set -g remain-on-exit on\n"); err != nil {
		t.Fatal(err)
	}
	return srv
}

// startTestAgents runs one fake agent per session on srv (this test binary
// as `system3 fake-agent`), writing task lists under tasksDir when it is
// set, and returns each session's pane id. The server's cleanup stops them.
func startTestAgents(t testing.TB, srv tmux.Server, tasksDir string, sessions ...demoSession) map[string]string {
	t.Helper()
	cmd, err := fakeAgentCommand()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	panes, err := startFakeAgents(ctx, tmux.NewClient(srv), fakeAgentSpawn{Command: cmd, TasksDir: tasksDir, Width: 100, Height: 30}, sessions)
	if err != nil {
		t.Fatal(err)
	}
	return panes
}

// agentSession is a session running one script, named after it.
func agentSession(script string) demoSession {
	return demoSession{Name: "fa-" + script, Script: script, TaskList: "LIST-" + strings.ToUpper(script)}
}

// serveMonitors runs system3's monitors in this process for srv and
// tasksDir, as the dashboard does, and returns the environment with which
// invoke'd commands (status, wait) use them.
func serveMonitors(t testing.TB, srv tmux.Server, tasksDir string) map[string]string {
	t.Helper()
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.ShortDir(t), "SYSTEM3_TASKS_DIR": tasksDir, "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	startTestMonitors(t, env)
	return env
}

// startTestMonitors runs system3's monitors in this process with the
// settings env gives (as the dashboard does) until the test ends, and
// returns their service.
func startTestMonitors(t testing.TB, env map[string]string) api.Service {
	t.Helper()
	a := &app{App: core.App{Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}, stdin: strings.NewReader(""), stdout: io.Discard}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	ctx, cancel := context.WithCancel(context.Background())
	svc, stop, err := a.StartMonitors(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := stop(); err != nil {
			t.Errorf("stop monitors: %v", err)
		}
	})
	return svc
}

// statusNow runs `system3 status --json` with env.
func statusNow(t *testing.T, env map[string]string) statusDoc {
	t.Helper()
	code, out, errOut := invoke(t, env, "status", "--json")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	var doc statusDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return doc
}

func paneOf(doc statusDoc, session string) (statusPane, bool) {
	for _, p := range doc.Panes {
		if p.Session == session {
			return p, true
		}
	}
	return statusPane{}, false
}

// awaitStatus polls status until check passes for every session named in
// checks (it returns "" when a pane is as wanted, else what is wrong), and
// fails the test with the screens when timeout passes first.
func awaitStatus(t *testing.T, env map[string]string, srv tmux.Server, timeout time.Duration, checks map[string]func(statusPane) string) statusDoc {
	t.Helper()
	var doc statusDoc
	testkit.WaitForValue(t, timeout, "every pane as wanted (what is not)", func() (string, bool) {
		doc = statusNow(t, env)
		var wrong []string
		for name, check := range checks {
			p, ok := paneOf(doc, name)
			switch {
			case !ok:
				wrong = append(wrong, name+": no such pane")
			default:
				if msg := check(p); msg != "" {
					wrong = append(wrong, fmt.Sprintf("%s: %s (state %s/%s, rule %s, question %q, options %q)", name, msg, p.State, p.Kind, p.Evidence.Rule, p.Question, p.Options))
				}
			}
		}
		slices.Sort(wrong)
		return strings.Join(wrong, "\n"), len(wrong) == 0
	}, func() string {
		var screens strings.Builder
		c := tmux.NewClient(srv)
		for name := range checks {
			if p, ok := paneOf(doc, name); ok {
				s, err := c.Capture(context.Background(), p.Pane, tmux.CaptureOptions{})
				if err != nil {
					s = "capture: " + err.Error()
				}
				fmt.Fprintf(&screens, "\n--- %s (%s, %s, pid %d, dead %v):\n%s\n", name, p.Pane, p.Command, p.PID, p.Dead, s)
			}
		}
		return "screens:" + screens.String()
	})
	return doc
}

var (
	permissionOptions = []string{"Yes", "Yes, and don’t ask again for: npm run migrate *", "No"}
	questionOptions   = []string{"Postgres", "SQLite", "Redis", "Type something.", "Chat about this"}
)

// expectScript checks that a pane shows what its script is for. monitored
// says whether the states come from running monitors (which remember error
// loops and the agent of a dead pane) or from one look.
func expectScript(script string, monitored bool) func(statusPane) string {
	return func(p statusPane) string {
		if p.Agent != "claude" && !(script == "crash" && !monitored) {
			return "agent " + p.Agent + ", want claude"
		}
		switch script {
		case "working":
			if p.State != "working" || p.Evidence.Rule != "claude.working_footer" {
				return "want working"
			}
		case "permission":
			if p.State != "awaiting_input" || p.Kind != "permission" || p.Evidence.Rule != "claude.permission" ||
				p.Question != "Do you want to proceed?" || !slices.Equal(p.Options, permissionOptions) ||
				!strings.Contains(p.Detail, "npm run migrate -- --env staging") {
				return "want the permission prompt"
			}
		case "question":
			if p.State != "awaiting_input" || p.Kind != "question" || p.Evidence.Rule != "claude.question" ||
				p.Question != "Which database should we use?" || !slices.Equal(p.Options, questionOptions) {
				return "want the database question"
			}
		case "errorloop":
			if monitored && (p.State != "error_loop" || p.Evidence.Rule != "monitor.error_loop") {
				return "want error_loop"
			}
			if !monitored && (p.State != "error" || p.Kind != "api_error") {
				return "want error/api_error"
			}
		case "idle":
			if p.State != "idle" || p.Kind != "" || p.Evidence.Rule != "claude.idle" {
				return "want idle"
			}
		case "crash":
			// tmux reports the status once it has reaped the process,
			// which can lag: no status (nil) means not yet.
			if p.State != "exited" || p.Kind != "dead" || !p.Dead || (p.ExitStatus != nil && *p.ExitStatus != 1) {
				return "want exited (status 1)"
			}
		}
		return ""
	}
}

// expectTasks checks the task list linked to a pane.
func expectTasks(list string, total int, ok func(completed int, inProgress []string) bool) func(statusPane) string {
	return func(p statusPane) string {
		if p.TaskList != list || p.Tasks == nil || p.Tasks.Total != total {
			return fmt.Sprintf("task list %q %+v, want %s with %d tasks", p.TaskList, p.Tasks, list, total)
		}
		if !ok(p.Tasks.Completed, p.Tasks.InProgress) {
			return fmt.Sprintf("tasks %d/%d, in progress %q", p.Tasks.Completed, p.Tasks.Total, p.Tasks.InProgress)
		}
		return ""
	}
}

func both(checks ...func(statusPane) string) func(statusPane) string {
	return func(p statusPane) string {
		for _, c := range checks {
			if msg := c(p); msg != "" {
				return msg
			}
		}
		return ""
	}
}

// Every script, run in tmux and watched by system3's real monitors, is
// classified as intended, with its task list linked through the
// CLAUDE_CODE_TASK_LIST_ID in its environment.
func TestFakeAgentScriptsClassified(t *testing.T) {
	srv := agentServer(t)
	tasksDir := filepath.Join(t.TempDir(), "tasks")
	var sessions []demoSession
	for _, s := range []string{"working", "permission", "question", "errorloop", "idle", "crash"} {
		sessions = append(sessions, agentSession(s))
	}
	startTestAgents(t, srv, tasksDir, sessions...)
	env := serveMonitors(t, srv, tasksDir)

	checks := map[string]func(statusPane) string{}
	for _, s := range sessions {
		checks[s.Name] = expectScript(s.Script, true)
	}
	checks["fa-working"] = both(checks["fa-working"], expectTasks("LIST-WORKING", 5, func(_ int, ip []string) bool { return len(ip) == 1 }))
	checks["fa-permission"] = both(checks["fa-permission"], expectTasks("LIST-PERMISSION", 3, func(c int, ip []string) bool {
		return c == 1 && slices.Equal(ip, []string{"Run the migration on staging"})
	}))
	checks["fa-idle"] = both(checks["fa-idle"], expectTasks("LIST-IDLE", 3, func(c int, _ []string) bool { return c == 3 }))
	doc := awaitStatus(t, env, srv, 25*time.Second, checks)
	if doc.Source != "daemon" {
		t.Errorf("status source %q, want daemon", doc.Source)
	}

	// The monitors raised the wakes a supervisor waits for.
	for reason, session := range map[string]string{"error_loop_detected": "fa-errorloop", "worker_failed": "fa-crash", "awaiting_input": "fa-permission"} {
		code, out, errOut := invoke(t, env, "wait", "--json", "--reason", reason, "--session", session, "--timeout", "10s")
		var ev struct{ Reason, Session, Agent string }
		if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || ev.Reason != reason || ev.Session != session || ev.Agent != "claude" {
			t.Errorf("wait --reason %s: exit %d, %s %s", reason, code, out, errOut)
		}
	}
}

// The permission script: "1" lets the command run and the turn finish with
// every task done; a new prompt asks again, and Escape declines it.
func TestFakeAgentPermissionFlow(t *testing.T) {
	t.Parallel()
	srv := agentServer(t)
	tasksDir := filepath.Join(t.TempDir(), "tasks")
	s := agentSession("permission")
	pane := startTestAgents(t, srv, tasksDir, s)[s.Name]
	env := map[string]string{"SYSTEM3_TMUX_SOCKET_PATH": srv.Path, "SYSTEM3_TASKS_DIR": tasksDir}
	c := tmux.NewClient(srv)
	ctx := context.Background()

	awaitStatus(t, env, srv, 20*time.Second, map[string]func(statusPane) string{s.Name: expectScript("permission", false)})
	if err := c.SendKeys(ctx, pane, "1"); err != nil {
		t.Fatal(err)
	}
	awaitStatus(t, env, srv, 10*time.Second, map[string]func(statusPane) string{s.Name: func(p statusPane) string {
		if p.State != "working" {
			return "want working after approval"
		}
		return ""
	}})
	awaitStatus(t, env, srv, 30*time.Second, map[string]func(statusPane) string{s.Name: both(expectScript("idle", false),
		expectTasks(s.TaskList, 3, func(c int, _ []string) bool { return c == 3 }))})
	screen, _ := c.Capture(ctx, pane, tmux.CaptureOptions{})
	for _, want := range []string{"● Bash(npm run migrate -- --env staging)", "Batch 12 run: 1 migrations", " · done "} {
		if !strings.Contains(screen, want) {
			t.Errorf("after approval the screen lacks %q:\n%s", want, screen)
		}
	}

	// The task files are Claude Code's, written whole.
	lists, err := tasks.Load(tasksDir, filepath.Join(tasksDir, "..", "todos"))
	if err != nil {
		t.Fatal(err)
	}
	l, ok := tasks.Find(lists, s.TaskList)
	if !ok || len(l.Tasks) != 3 || len(l.Errors) != 0 || l.Progress.Completed != 3 || l.Tasks[0].ActiveForm != "Writing the invoice_totals migration" {
		t.Fatalf("task list = %+v", l)
	}

	if _, err := c.SendText(ctx, pane, "now dry-run the backfill", tmux.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitStatus(t, env, srv, 20*time.Second, map[string]func(statusPane) string{s.Name: func(p statusPane) string {
		if p.State != "awaiting_input" || p.Kind != "permission" || !strings.Contains(p.Detail, "--dry-run") {
			return "want a second permission prompt"
		}
		return ""
	}})
	if err := c.SendKeys(ctx, pane, tmux.KeyEscape); err != nil {
		t.Fatal(err)
	}
	awaitStatus(t, env, srv, 10*time.Second, map[string]func(statusPane) string{s.Name: func(p statusPane) string {
		if p.State != "idle" || p.Kind != "interrupted" {
			return "want idle/interrupted after Escape"
		}
		return ""
	}})
	screen, _ = c.Capture(ctx, pane, tmux.CaptureOptions{})
	if !strings.Contains(screen, "Did not run 1 call") {
		t.Errorf("declined call not shown:\n%s", screen)
	}
}

// The question script: a digit answers, the answer is echoed and the work
// goes on; the idle script echoes guidance typed into it and answers.
func TestFakeAgentQuestionAndGuidance(t *testing.T) {
	t.Parallel()
	srv := agentServer(t)
	q, idle := agentSession("question"), agentSession("idle")
	panes := startTestAgents(t, srv, "", q, idle)
	env := map[string]string{"SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	c := tmux.NewClient(srv)
	ctx := context.Background()

	awaitStatus(t, env, srv, 20*time.Second, map[string]func(statusPane) string{q.Name: expectScript("question", false), idle.Name: expectScript("idle", false)})
	if err := c.SendKeys(ctx, panes[q.Name], "2"); err != nil {
		t.Fatal(err)
	}
	res, err := c.SendText(ctx, panes[idle.Name], "Also document --log-level, please", tmux.SendOptions{})
	if err != nil || !res.Verified {
		t.Fatalf("send guidance: %+v, %v", res, err)
	}
	awaitStatus(t, env, srv, 10*time.Second, map[string]func(statusPane) string{q.Name: func(p statusPane) string {
		if p.State != "working" {
			return "want working after the answer"
		}
		return ""
	}})
	awaitStatus(t, env, srv, 20*time.Second, map[string]func(statusPane) string{idle.Name: expectScript("idle", false), q.Name: expectScript("idle", false)})
	for name, wants := range map[string][]string{
		q.Name:    {"● Answered Claude's questions:", "· Which database should we use? → SQLite", "Going with SQLite"},
		idle.Name: {"❯ Also document --log-level, please", "Noted: “Also document --log-level, please”"},
	} {
		screen, _ := c.Capture(ctx, panes[name], tmux.CaptureOptions{})
		for _, want := range wants {
			if !strings.Contains(screen, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, screen)
			}
		}
	}
}

// The agent redraws at the pane's new width, leaves on SIGTERM with its
// terminal restored, and quits on Ctrl-C twice like Claude Code.
func TestFakeAgentResizeAndSignals(t *testing.T) {
	t.Parallel()
	srv := agentServer(t)
	w, idle := agentSession("working"), agentSession("idle")
	panes := startTestAgents(t, srv, "", w, idle)
	env := map[string]string{"SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	c := tmux.NewClient(srv)
	ctx := context.Background()
	awaitStatus(t, env, srv, 20*time.Second, map[string]func(statusPane) string{w.Name: expectScript("working", false), idle.Name: expectScript("idle", false)})

	if err := c.ResizeWindow(ctx, panes[w.Name], 60, 20); err != nil {
		t.Fatal(err)
	}
	narrow := strings.Repeat("─", 60)
	testkit.WaitForValue(t, 10*time.Second, "the screen redrawn at 60 columns", func() (string, bool) {
		screen, _ := c.Capture(ctx, panes[w.Name], tmux.CaptureOptions{})
		return screen, slices.Contains(strings.Split(screen, "\n"), narrow) && !strings.Contains(screen, narrow+"─")
	})
	awaitStatus(t, env, srv, 5*time.Second, map[string]func(statusPane) string{w.Name: expectScript("working", false)})

	// Guidance typed while it works is submitted and acknowledged.
	if res, err := c.SendText(ctx, panes[w.Name], "Use PKCE for both providers", tmux.SendOptions{}); err != nil || !res.Verified {
		t.Fatalf("send guidance: %+v, %v", res, err)
	}
	testkit.WaitForValue(t, 20*time.Second, "the guidance acknowledged", func() (string, bool) {
		screen, _ := c.Capture(ctx, panes[w.Name], tmux.CaptureOptions{History: 200})
		return screen, strings.Contains(screen, "❯ Use PKCE for both providers") && strings.Contains(screen, "take that into account")
	})

	p, err := c.PaneInfo(ctx, panes[w.Name])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, k := range []tmux.Key{tmux.KeyCtrlC, tmux.KeyCtrlC} {
		if err := c.SendKeys(ctx, panes[idle.Name], k); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	type exit struct {
		Pane tmux.Pane
		Err  error
	}
	for name, pane := range panes {
		began := time.Now()
		e := testkit.WaitForValue(t, 10*time.Second, name+" to exit cleanly", func() (exit, bool) {
			p, err := c.PaneInfo(ctx, pane)
			// Rarely (under heavy load) tmux never records the status
			// (-1); any other status is a failure.
			return exit{p, err}, err == nil && p.Dead && (p.DeadStatus == 0 || p.DeadStatus == -1 && time.Since(began) > 5*time.Second)
		})
		if e.Pane.DeadStatus == -1 {
			t.Logf("tmux did not record the exit status of %s", name)
		}
	}
	screen, _ := c.Capture(ctx, panes[idle.Name], tmux.CaptureOptions{})
	if !strings.Contains(screen, "Resume this session with:") {
		t.Errorf("Ctrl-C twice: no resume hint:\n%s", screen)
	}
}

func TestFakeAgentUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "--script is required"},
		{[]string{"--script", "nope"}, `unknown script "nope"`},
		{[]string{"--script", "idle", "--task-list", "X"}, "go together"},
		{[]string{"--script", "idle", "--tasks-dir", "/tmp", "--task-list", "../x"}, "not a plain directory name"},
	} {
		a := &app{App: core.App{Stderr: io.Discard, Getenv: func(string) string { return "" }}, stdin: strings.NewReader(""), stdout: io.Discard}
		cmd := newFakeAgentCmd(a)
		cmd.SetArgs(tt.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("fake-agent %q: %v, want %q", tt.args, err, tt.want)
		}
	}
	cmd := newFakeAgentCmd(&app{})
	if !cmd.Hidden || !strings.Contains(cmd.Long, "errorloop") {
		t.Errorf("fake-agent must be hidden and list its scripts")
	}
}
