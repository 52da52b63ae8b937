package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/lifecycle"
	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// TestRestoreRealClaudeCode spawns the real Claude Code CLI (with
// system3's hooks) against the fake API, lets it finish a turn, kills the
// whole tmux server, and runs `system3 restore --all`: Claude Code must
// come back in its worktree with --resume and the session id its hooks
// reported, the next request the fake API gets must carry the earlier
// conversation, and the session, its task list link and the task list
// must be back. The configured claude command is a wrapper script
// (claude-wrapper, as an nvm shim or a company's wrapper is), so restore
// must know Claude Code by the agent's name and what the monitor saw, not
// by the program's file name.
func TestRestoreRealClaudeCode(t *testing.T) {
	const goal = "Build the yak-shaver feature"
	fakeAPI := claudetest.NewFakeAPI(t,
		claudetest.Rule{Contains: "yak-shaver", Steps: []claudetest.Step{
			{Tool: claudetest.TaskCreate("Shave the yak", "Shave it", "Shaving the yak")},
			{Text: "Planned the yak shaving."},
		}},
		claudetest.Rule{Contains: "after-restore-marker", Steps: []claudetest.Step{{Text: "Still here after the restore."}}},
	)
	bin := claudetest.ClaudeBin(t)
	home := agentHome(t)
	writeClaudeHome(t, home)
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "claude")); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(t.TempDir(), "claude-wrapper")
	script := "#!/bin/sh\nexec '" + filepath.Join(binDir, "claude") + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(realPath(t, t.TempDir()), "app")
	gitInit(t, repo)
	state := testkit.ShortDir(t)
	srv := tmuxtest.NewStoppedServer(t)
	cfg := map[string]any{"agents": map[string]any{"claude": map[string]any{
		"command": []string{wrapper, "--permission-mode", "default"},
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
	tasksDir := filepath.Join(home, ".claude", "tasks")
	env := []string{runMainEnv + "=1", "HOME=" + t.TempDir(), "SYSTEM3_STATE_DIR=" + state, "SYSTEM3_CONFIG=" + cfgPath,
		"SYSTEM3_TASKS_DIR=" + tasksDir, "SYSTEM3_TMUX_SOCKET_PATH=" + srv.Path}
	system3 := func(args ...string) (string, string, error) {
		t.Helper()
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Dir = repo
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		return out.String(), errb.String(), err
	}
	c := tmux.NewClient(srv)
	ctx := context.Background()
	screen := func(pane string) string {
		s, _ := c.Capture(ctx, pane, tmux.CaptureOptions{})
		return s
	}
	waitFor := func(what string, d time.Duration, pane string, ok func() bool) {
		t.Helper()
		testkit.WaitFor(t, d, what, ok, func() string {
			return fmt.Sprintf("prompts %q\nscreen:\n%s\nlog:\n%s", fakeAPI.MainPrompts(), screen(pane), readLog(state))
		})
	}

	out, errOut, err := system3("spawn", "--initiative", "yak", "--goal", goal, "--json")
	if err != nil {
		t.Fatalf("spawn: %v\nstdout %s\nstderr %s\nlog:\n%s", err, out, errOut, readLog(state))
	}
	var res api.SpawnResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("spawn output is not JSON: %v\n%s", err, out)
	}
	// One turn with the fake API: the task is created and the answer shown.
	taskFile := filepath.Join(tasksDir, "PRD-YAK", "1.json")
	waitFor("first turn", 60*time.Second, res.Pane, func() bool {
		_, ferr := os.Stat(taskFile)
		return ferr == nil && strings.Contains(screen(res.Pane), "Planned the yak shaving.")
	})

	// The record, with the session id Claude Code's hooks reported.
	recs := lifecycle.OpenRecords(filepath.Join(state, lifecycle.RecordsFile))
	rec, ok, err := recs.Get("yak")
	if err != nil || !ok {
		t.Fatalf("no record of yak: %v\n%s", err, readLog(state))
	}
	if rec.AgentSessionID == "" || rec.Worktree != res.Worktree || rec.TaskList != "PRD-YAK" || rec.State != lifecycle.RecordRunning || rec.Agent != "claude" ||
		rec.Identified != "claude" {
		t.Fatalf("record = %+v", rec)
	}
	transcripts, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", rec.AgentSessionID+".jsonl"))
	if len(transcripts) != 1 {
		t.Fatalf("no transcript named after the recorded session id %s", rec.AgentSessionID)
	}

	// The tmux server goes down, with every session.
	if err := c.KillServer(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor("server gone", 10*time.Second, "", func() bool {
		_, err := c.ListPanes(ctx)
		return err != nil
	})
	requestsBefore := len(fakeAPI.Requests())

	out, errOut, err = system3("restore", "--all", "--json")
	if err != nil {
		t.Fatalf("restore: %v\nstdout %s\nstderr %s\nlog:\n%s", err, out, errOut, readLog(state))
	}
	var rr api.RestoreResult
	if err := json.Unmarshal([]byte(out), &rr); err != nil || len(rr.Orchestrators) != 1 {
		t.Fatalf("restore output: %v\n%s", err, out)
	}
	o := rr.Orchestrators[0]
	if o.Status != api.RestoreRestored || o.Session != "orch-yak" || o.AgentSessionID != rec.AgentSessionID || len(o.Command) == 0 || o.Command[0] != wrapper {
		t.Fatalf("restore = %+v", o)
	}
	// Claude Code runs again in the worktree, resuming the conversation.
	p, err := c.PaneInfo(ctx, o.Pane)
	if err != nil {
		t.Fatal(err)
	}
	if p.Path != res.Worktree {
		t.Errorf("restored agent runs in %s, want %s", p.Path, res.Worktree)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
	if err != nil || !bytes.Contains(cmdline, []byte("\x00--resume\x00"+rec.AgentSessionID)) || !bytes.Contains(cmdline, []byte("\x00--settings\x00")) ||
		!bytes.Contains(cmdline, []byte("\x00--permission-mode\x00default\x00")) {
		t.Fatalf("restored agent not started with its configured arguments, --resume %s and the hooks (%v): %q", rec.AgentSessionID, err, cmdline)
	}
	// A second restore finds it running.
	out, _, err = system3("restore", "yak")
	if err != nil || !strings.Contains(out, "yak: skipped (already running") {
		t.Fatalf("second restore: %v\n%s", err, out)
	}

	// The next turn carries the earlier conversation.
	if out, errOut, err := system3("inject", "--session", "orch-yak", "after-restore-marker: are you there?"); err != nil {
		t.Fatalf("inject: %v\n%s\n%s", err, out, errOut)
	}
	var resumed claudetest.Request
	waitFor("a request after the restore", 60*time.Second, o.Pane, func() bool {
		for _, r := range fakeAPI.Requests()[requestsBefore:] {
			if r.Kind == claudetest.KindMain && strings.Contains(r.Prompt, "after-restore-marker") {
				resumed = r
				return true
			}
		}
		return false
	})
	if !bytes.Contains(resumed.Body, []byte(goal)) || !bytes.Contains(resumed.Body, []byte("Planned the yak shaving.")) {
		t.Fatalf("the request after the restore does not carry the earlier conversation:\n%.3000s", resumed.Body)
	}
	waitFor("the answer", 60*time.Second, o.Pane, func() bool { return strings.Contains(screen(o.Pane), "Still here after the restore.") })

	// The session, its link and its task list are back.
	var pane statusPane
	waitFor("status shows the task list", 30*time.Second, o.Pane, func() bool {
		pane = statusOf(t, map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": tasksDir}, []string{"--tmux-socket-path", srv.Path, "status", "--json"}, o.Pane)
		return pane.Session == "orch-yak" && pane.TaskList == "PRD-YAK" && pane.Tasks != nil && pane.Tasks.Total == 1 && pane.AgentSessionID != ""
	})
	links, err := os.ReadFile(filepath.Join(state, "links.json"))
	if err != nil || !strings.Contains(string(links), `"session": "orch-yak"`) || !strings.Contains(string(links), `"task_list": "PRD-YAK"`) {
		t.Fatalf("links file: %v\n%s", err, links)
	}
}
