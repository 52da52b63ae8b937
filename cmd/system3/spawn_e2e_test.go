package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/lifecycle"
	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/tmux"
)

// TestSpawnRealClaudeCode runs the real system3 binary (this test binary
// as system3) to spawn the real Claude Code CLI, talking to a scripted
// fake API, in a worktree of a temporary repository: the worktree, the
// branch, the tmux session and its CLAUDE_CODE_TASK_LIST_ID must exist,
// the trust dialog of the new worktree must be answered, the fake API must
// receive the first prompt with the goal, and the task the agent creates
// must show in the session's linked task list. Then stop kills the
// session and keeps the worktree.
func TestSpawnRealClaudeCode(t *testing.T) {
	const goal = "Build the zebra-login feature"
	fakeAPI := claudetest.NewFakeAPI(t, claudetest.Rule{Contains: "zebra-login", Steps: []claudetest.Step{
		{Tool: claudetest.TaskCreate("Design the zebra login", "Sketch the login flow", "Designing the zebra login")},
		{Text: "Planned the zebra login."},
	}})
	bin := claudetest.ClaudeBin(t)
	home := agentHome(t)
	writeClaudeHome(t, home)
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "claude")); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(realPath(t, t.TempDir()), "app")
	gitInit(t, repo)
	state := testkit.ShortDir(t)
	srv := tmuxtest.NewStoppedServer(t)
	cfg := map[string]any{"agents": map[string]any{"claude": map[string]any{
		"command": []string{filepath.Join(binDir, "claude")},
		"env": map[string]string{
			"HOME":                          home,
			"ANTHROPIC_BASE_URL":            fakeAPI.URL,
			"ANTHROPIC_API_KEY":             claudetest.FakeKey,
			"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"DISABLE_AUTOUPDATER":                      "1",
			"DISABLE_TELEMETRY":                        "1",
			"DISABLE_ERROR_REPORTING":                  "1",
			"LANG":                                     "C.UTF-8",
		},
	}}}
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	b, _ := json.Marshal(cfg) // JSON is YAML
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{runMainEnv + "=1", "HOME=" + t.TempDir(), "SYSTEM3_STATE_DIR=" + state, "SYSTEM3_CONFIG=" + cfgPath,
		"SYSTEM3_TASKS_DIR=" + filepath.Join(home, ".claude", "tasks"), "SYSTEM3_TMUX_SOCKET_PATH=" + srv.Path}
	system3 := func(args ...string) (string, string, error) {
		t.Helper()
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Dir = repo
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		return out.String(), errb.String(), err
	}

	// A lesson from an earlier initiative, for spawn to pass on.
	const lesson = "Keep zebra login tokens in the session store"
	if out, errOut, err := system3("outcome", "report", "zebra login prototype", "--outcome", "failure", "--learning", lesson); err != nil {
		t.Fatalf("outcome report: %v\n%s\n%s", err, out, errOut)
	}

	out, errOut, err := system3("spawn", "--initiative", "zebra", "--goal", goal, "--context", "Keep it small.", "--json")
	if err != nil {
		t.Fatalf("spawn: %v\nstdout %s\nstderr %s\nlog:\n%s", err, out, errOut, readLog(state))
	}
	var res api.SpawnResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("spawn output is not JSON: %v\n%s", err, out)
	}
	wt := filepath.Join(repo, "trees", "zebra")
	if res.Status != "spawned" || res.Session != "orch-zebra" || res.Worktree != wt || res.Branch != "zebra" || res.TaskList != "PRD-ZEBRA" ||
		!res.AutoTrusted || !strings.Contains(res.Prompt, goal) {
		t.Fatalf("spawn result = %+v", res)
	}
	// The failed initiative's learning is an anti-pattern: injected as
	// one, quoted as its reporter's under the sentence that says so.
	if len(res.Wisdom) != 1 || res.Wisdom[0].Text != lesson || res.Wisdom[0].Kind != "anti-pattern" || res.Wisdom[0].ReportedBy != "cli" ||
		!strings.Contains(res.Prompt, lifecycle.WisdomPreamble+"\n- reported by \"cli\" on ") ||
		!strings.Contains(res.Prompt, `from work that failed or was poorly reasoned: "`+lesson+`"`) {
		t.Fatalf("wisdom = %+v (%s), prompt:\n%s", res.Wisdom, res.WisdomNote, res.Prompt)
	}
	// The worktree, on its branch; the main checkout stays clean.
	if got := gitOut(t, wt, "branch", "--show-current"); got != "zebra" {
		t.Fatalf("worktree branch = %q", got)
	}
	if st := gitOut(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("main checkout not clean after spawn:\n%s", st)
	}
	// The tmux session, and the variable in the agent's environment.
	c := tmux.NewClient(srv)
	ctx := context.Background()
	if ok, err := c.HasSession(ctx, "orch-zebra"); !ok || err != nil {
		t.Fatalf("session orch-zebra: %v %v", ok, err)
	}
	p, err := c.PaneInfo(ctx, res.Pane)
	if err != nil {
		t.Fatal(err)
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/environ")
	if err != nil || !bytes.Contains(environ, []byte("\x00CLAUDE_CODE_TASK_LIST_ID=PRD-ZEBRA\x00")) && !bytes.HasPrefix(environ, []byte("CLAUDE_CODE_TASK_LIST_ID=PRD-ZEBRA\x00")) {
		t.Fatalf("agent environment lacks CLAUDE_CODE_TASK_LIST_ID=PRD-ZEBRA (%v)", err)
	}
	if p.Path != wt {
		t.Errorf("agent runs in %s, want %s", p.Path, wt)
	}
	// Claude Code was started with system3's hooks for this process.
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
	if err != nil || !bytes.Contains(cmdline, []byte("\x00--settings\x00")) || !bytes.Contains(cmdline, []byte(" hook\"")) ||
		!bytes.Contains(cmdline, []byte("PermissionRequest")) {
		t.Fatalf("agent not started with system3's hook settings (%v): %q", err, cmdline)
	}
	// The fake API got the first prompt, with the goal and the context.
	deadline := time.Now().Add(30 * time.Second)
	taskFile := filepath.Join(home, ".claude", "tasks", "PRD-ZEBRA", "1.json")
	testkit.WaitForValue(t, time.Until(deadline), "the first prompt with the goal and the context, and the task file", func() (string, bool) {
		_, ferr := os.Stat(taskFile)
		prompted := false
		for _, pr := range fakeAPI.MainPrompts() {
			if strings.Contains(pr, goal) && strings.Contains(pr, "Keep it small.") && strings.Contains(pr, lesson) {
				prompted = true
			}
		}
		return fmt.Sprintf("prompted %v, task file %v", prompted, ferr), prompted && ferr == nil
	}, func() string {
		screen, _ := c.Capture(ctx, res.Pane, tmux.CaptureOptions{})
		return fmt.Sprintf("prompts %q\nscreen:\n%s", fakeAPI.MainPrompts(), screen)
	})
	// The task shows in the session's linked list.
	var pane statusPane
	testkit.WaitForValue(t, time.Until(deadline), "the status of "+res.Pane+" with its task list", func() (string, bool) {
		code, sout, serr := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": filepath.Join(home, ".claude", "tasks")},
			"--tmux-socket-path", srv.Path, "status", "--json")
		var doc statusDoc
		if code != 0 || json.Unmarshal([]byte(sout), &doc) != nil {
			t.Fatalf("status: %d %s %s", code, sout, serr)
		}
		for _, dp := range doc.Panes {
			if dp.Pane == res.Pane {
				pane = dp
			}
		}
		return fmt.Sprintf("%+v (tasks %+v)", pane, pane.Tasks), pane.TaskList == "PRD-ZEBRA" && pane.Tasks != nil && pane.Tasks.Total == 1
	})
	links, err := os.ReadFile(filepath.Join(state, monitor.LinksFile))
	if err != nil || !strings.Contains(string(links), `"session": "orch-zebra"`) || !strings.Contains(string(links), `"task_list": "PRD-ZEBRA"`) {
		t.Fatalf("links file: %v\n%s", err, links)
	}
	// The log says the trust dialog was answered.
	if lg := readLog(state); !strings.Contains(lg, "answered the folder-trust dialog") {
		t.Errorf("log does not say the trust dialog was answered:\n%s", lg)
	}

	// Stop: the session goes, the worktree stays.
	out, errOut, err = system3("stop", "zebra")
	if err != nil || !strings.Contains(out, "stopped orch-zebra") {
		t.Fatalf("stop: %v\n%s\n%s", err, out, errOut)
	}
	if ok, _ := c.HasSession(ctx, "orch-zebra"); ok {
		t.Fatal("session orch-zebra still exists after stop")
	}
	if _, err := os.Stat(wt); err != nil {
		t.Fatalf("worktree not kept: %v", err)
	}
	// The same name is refused while its branch exists.
	_, errOut, err = system3("spawn", "--initiative", "zebra", "--goal", goal)
	if err == nil || !strings.Contains(errOut, "branch zebra exists") {
		t.Fatalf("second spawn: %v\n%s", err, errOut)
	}
}

// agentHome is a throwaway HOME for a real agent. The agent may still be
// exiting (and writing under ~/.claude) after its tmux session is killed:
// before the directory is removed, its processes are waited for, and
// killed after a few seconds.
func agentHome(t *testing.T) string {
	t.Helper()
	home := realPath(t, t.TempDir())
	t.Cleanup(func() { waitProcessesGone(t, "HOME="+home) })
	return home
}

// waitProcessesGone waits until no process has env in its environment,
// sending SIGKILL to those left after 5 s.
func waitProcessesGone(t *testing.T, env string) {
	t.Helper()
	with := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err == nil && slices.Contains(strings.Split(string(b), "\x00"), env) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	gone := func() bool { return len(with()) == 0 }
	if testkit.Poll(5*time.Second, gone) {
		return
	}
	for _, pid := range with() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if !testkit.Poll(5*time.Second, gone) {
		t.Logf("processes %v with %s outlived SIGKILL", with(), env)
	}
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeClaudeHome writes the CLI's user config: onboarding done and the
// fake key approved; no folder is trusted yet.
func writeClaudeHome(t *testing.T, home string) {
	t.Helper()
	cfg := map[string]any{
		"hasCompletedOnboarding": true,
		"lastOnboardingVersion":  claudetest.PinnedVersion,
		"numStartups":            1,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{claudetest.FakeKey[len(claudetest.FakeKey)-20:]}, "rejected": []string{}},
		"projects":               map[string]any{},
	}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	gitOut(t, "", "init", "-q", "-b", "main", dir)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitOut(t, dir, "add", "README.md")
	gitOut(t, dir, "commit", "-q", "-m", "first")
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := exec.Command(testkit.LookPath(t, "git"), append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func readLog(state string) string {
	b, _ := os.ReadFile(filepath.Join(state, "system3.log"))
	return string(b)
}
