package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/hooks"
)

const permissionPayload = `{"session_id":"sess-1","transcript_path":"/tmp/t.jsonl","cwd":"/p","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"./deploy.sh --prod"}}`

type hookRun struct {
	code     int
	stdout   string
	stderr   string
	took     time.Duration
	finished bool
}

// runHookProcess runs `system3 hook` as Claude Code does: a process of its
// own with the payload on stdin (this test binary doubles as system3).
// With keepOpen, stdin is never closed. A run that has not returned
// within 10 s is killed and reported as not finished.
func runHookProcess(t *testing.T, stateDir, stdin string, keepOpen bool, env ...string) hookRun {
	t.Helper()
	return runHookArgs(t, []string{"hook"}, stateDir, stdin, keepOpen, env...)
}

// runHookArgs is runHookProcess with the command's arguments.
func runHookArgs(t *testing.T, args []string, stateDir, stdin string, keepOpen bool, env ...string) hookRun {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append([]string{runMainEnv + "=1", "HOME=" + t.TempDir(), "SYSTEM3_STATE_DIR=" + stateDir, "TMUX_PANE=%42", "PATH=/usr/bin:/bin"}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, stdin)
	if !keepOpen {
		w.Close()
	} else {
		t.Cleanup(func() { w.Close() })
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	r := hookRun{}
	select {
	case err = <-done:
		r.finished = true
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		err = <-done
	}
	r.took = time.Since(start)
	r.code = cmd.ProcessState.ExitCode()
	r.stdout, r.stderr = out.String(), errb.String()
	t.Logf("system3 hook returned in %v (exit %d)", r.took, r.code)
	return r
}

func (r hookRun) check(t *testing.T) {
	t.Helper()
	if !r.finished || r.code != 0 || r.stdout != "" {
		t.Fatalf("system3 hook: finished %v, exit %d, stdout %q, stderr %q", r.finished, r.code, r.stdout, r.stderr)
	}
}

func drainSpool(t *testing.T, stateDir string) []api.HookEvent {
	t.Helper()
	evs, skipped, err := hooks.Spool{Path: filepath.Join(stateDir, hooks.SpoolFile)}.Drain()
	if err != nil || skipped != 0 {
		t.Fatalf("drain spool: %v (%d skipped)", err, skipped)
	}
	return evs
}

func TestHookWithoutDaemonSpools(t *testing.T) {
	dir := testkit.ShortDir(t)
	runHookProcess(t, dir, permissionPayload, false).check(t)
	evs := drainSpool(t, dir)
	if len(evs) != 1 || evs[0].Name != api.PermissionRequest || evs[0].Pane != "%42" || evs[0].ToolInput != "./deploy.sh --prod" ||
		evs[0].SessionID != "sess-1" || evs[0].Received.IsZero() {
		t.Fatalf("spool = %+v", evs)
	}
}

// An agent system3 started has its session's hook token: its spooled
// events carry a proof made with it, and never the token itself.
func TestHookSpoolsItsProof(t *testing.T) {
	dir := testkit.ShortDir(t)
	key, err := hooks.LoadKey(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	token := hooks.SessionToken(key, "orch-auth")
	runHookProcess(t, dir, permissionPayload, false, hooks.TokenEnv+"="+token).check(t)
	raw, _ := os.ReadFile(filepath.Join(dir, hooks.SpoolFile))
	if strings.Contains(string(raw), token) {
		t.Fatalf("the spool holds the token:\n%s", raw)
	}
	evs := drainSpool(t, dir)
	if len(evs) != 1 || !hooks.Proven(evs[0], token) || hooks.Proven(evs[0], hooks.SessionToken(key, "orch-other")) {
		t.Fatalf("spooled %+v", evs)
	}
}

// A daemon that accepts and never answers (or answers the hello and then
// nothing) costs the agent at most the delivery deadline: the event goes
// to the spool.
func TestHookWithSlowDaemonSpools(t *testing.T) {
	for _, hello := range []bool{false, true} {
		name := "silent"
		if hello {
			name = "hello then silent"
		}
		t.Run(name, func(t *testing.T) {
			dir := testkit.ShortDir(t)
			ln, err := net.Listen("unix", filepath.Join(dir, ipc.SocketFile))
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var conns []net.Conn
			var mu sync.Mutex
			wg.Go(func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					mu.Lock()
					conns = append(conns, c)
					mu.Unlock()
					if hello {
						io.WriteString(c, `{"hello":"system3","v":2,"pid":1}`+"\n")
					}
				}
			})
			t.Cleanup(func() {
				ln.Close()
				mu.Lock()
				for _, c := range conns {
					c.Close()
				}
				mu.Unlock()
				wg.Wait()
			})
			r := runHookProcess(t, dir, permissionPayload, false)
			r.check(t)
			if evs := drainSpool(t, dir); len(evs) != 1 || evs[0].Name != api.PermissionRequest {
				t.Fatalf("spool = %+v", evs)
			}
		})
	}
}

func TestHookGarbageIsDropped(t *testing.T) {
	for name, in := range map[string]string{"text": "garbage\x00\xff", "empty": "", "no event": `{"session_id":"x"}`} {
		t.Run(name, func(t *testing.T) {
			dir := testkit.ShortDir(t)
			runHookProcess(t, dir, in, false).check(t)
			if evs := drainSpool(t, dir); len(evs) != 0 {
				t.Fatalf("spooled %+v", evs)
			}
			log, _ := os.ReadFile(filepath.Join(dir, "system3.log"))
			if !strings.Contains(string(log), "hook: payload dropped") {
				t.Fatalf("log:\n%s", log)
			}
		})
	}
}

// Claude Code closes the hook's stdin; if something does not, the hook
// still returns.
func TestHookStdinNeverClosed(t *testing.T) {
	dir := testkit.ShortDir(t)
	runHookProcess(t, dir, `{"hook_event_name":"Stop"}`, true).check(t)
}

func TestHookDeliversToDaemon(t *testing.T) {
	dir := testkit.ShortDir(t)
	svc := monitortest.NewService(t, nil)
	ln, err := ipc.Listen(filepath.Join(dir, ipc.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ipc.NewServer(ln, backend.New(svc, backend.Parts{}), nil).Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	before := time.Now()
	runHookProcess(t, dir, permissionPayload, false).check(t)
	got := svc.Hooks()
	if len(got) != 1 || got[0].Name != api.PermissionRequest || got[0].Pane != "%42" || got[0].TranscriptPath != "/tmp/t.jsonl" || got[0].Received.Before(before) {
		t.Fatalf("delivered %+v", got)
	}
	if evs := drainSpool(t, dir); len(evs) != 0 {
		t.Fatalf("spooled although delivered: %+v", evs)
	}
}

// The monitors read the spool when they start, and empty it.
func TestSpoolReplayedWhenMonitorsStart(t *testing.T) {
	dir := testkit.ShortDir(t)
	runHookProcess(t, dir, permissionPayload, false).check(t)
	if fi, err := os.Stat(filepath.Join(dir, hooks.SpoolFile)); err != nil || fi.Size() == 0 {
		t.Fatalf("nothing spooled: %v", err)
	}
	srv := agentServer(t)
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": dir, "SYSTEM3_TASKS_DIR": t.TempDir(), "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	a := &app{App: core.App{Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}, stdin: strings.NewReader(""), stdout: io.Discard}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, stop, err := a.StartMonitors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if fi, err := os.Stat(filepath.Join(dir, hooks.SpoolFile)); err != nil || fi.Size() != 0 {
		t.Fatalf("spool not emptied on start: %v, %d bytes", err, fi.Size())
	}
	log, _ := os.ReadFile(filepath.Join(dir, "system3.log"))
	if !strings.Contains(string(log), "hook spool replayed") || !strings.Contains(string(log), "events=1") {
		t.Fatalf("log:\n%s", log)
	}
	// With monitors running, the hook is delivered, not spooled.
	runHookProcess(t, dir, permissionPayload, false).check(t)
	if fi, _ := os.Stat(filepath.Join(dir, hooks.SpoolFile)); fi.Size() != 0 {
		t.Fatal("spooled while the monitors run")
	}
}

func TestHooksPrint(t *testing.T) {
	code, out, errOut := invoke(t, nil, "hooks", "print", "--command", "/opt/system3 hook")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Hooks map[string][]struct {
			Matcher string
			Hooks   []struct {
				Type, Command string
				Timeout       int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, e := range hooks.Events {
		if g := doc.Hooks[e]; len(g) != 1 || g[0].Hooks[0].Command != "/opt/system3 hook" || g[0].Hooks[0].Type != "command" {
			t.Fatalf("%s: %+v", e, g)
		}
	}
	// Without --command: this executable, with the chosen state dir.
	dir := testkit.ShortDir(t)
	code, out, _ = invoke(t, map[string]string{"SYSTEM3_STATE_DIR": dir}, "hooks", "print")
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if code != 0 || !strings.Contains(out, exe+" --state-dir "+dir+" hook") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestHooksInstall(t *testing.T) {
	proj := t.TempDir()
	settings := filepath.Join(proj, ".claude", "settings.local.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	existing := "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"matcher\": \"\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"say done\"\n          }\n        ]\n      }\n    ]\n  }\n}\n"
	os.WriteFile(settings, []byte(existing), 0o600)
	args := []string{"hooks", "install", "--project", proj, "--command", "/opt/system3 hook"}

	code, out, errOut := invoke(t, nil, append(args, "--dry-run")...)
	if code != 0 || !strings.Contains(out, "+            \"command\": \"/opt/system3 hook\",") || !strings.Contains(out, "dry run") {
		t.Fatalf("dry run: exit %d, %s\n%s", code, errOut, out)
	}
	if b, _ := os.ReadFile(settings); string(b) != existing {
		t.Fatal("dry run changed the file")
	}

	code, out, errOut = invoke(t, nil, args...)
	if code != 0 || !strings.Contains(out, "--- "+settings) || !strings.Contains(out, "the previous file is "+settings+".system3-backup-") {
		t.Fatalf("install: exit %d, %s\n%s", code, errOut, out)
	}
	b, _ := os.ReadFile(settings)
	if !strings.Contains(string(b), `"say done"`) || strings.Count(string(b), "/opt/system3 hook") != len(hooks.Events) {
		t.Fatalf("installed:\n%s", b)
	}

	code, out, _ = invoke(t, nil, args...)
	if code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("again: exit %d\n%s", code, out)
	}

	bad := filepath.Join(t.TempDir(), ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(bad), 0o755)
	os.WriteFile(bad, []byte("{ // no\n}"), 0o600)
	code, _, errOut = invoke(t, map[string]string{"CLAUDE_CONFIG_DIR": filepath.Dir(bad)}, "hooks", "install", "--user", "--command", "x hook")
	if code != 1 || !strings.Contains(errOut, "not a valid JSON settings object") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("invalid: exit %d, %s", code, errOut)
	}
	if b, _ := os.ReadFile(bad); string(b) != "{ // no\n}" {
		t.Fatal("invalid file changed")
	}
	if code, _, errOut = invoke(t, nil, "hooks", "install", "--project", filepath.Join(proj, "nope"), "--command", "x"); code != 1 || !strings.Contains(errOut, "not a directory") {
		t.Fatalf("missing project: exit %d, %s", code, errOut)
	}
}

// For the Codex CLI, hooks print and install make its hooks.json run
// system3 hook for PermissionRequest only (the approval policy's event),
// with the minute the policy's ask may hold it; install merges into
// $CODEX_HOME/hooks.json, or a project's .codex/hooks.json, keeping what
// is there, and says that Codex must trust the hook first.
func TestHooksForCodex(t *testing.T) {
	code, out, errOut := invoke(t, nil, "hooks", "print", "--agent", "codex", "--command", "/opt/system3 hook")
	if code != 0 {
		t.Fatalf("print: exit %d: %s", code, errOut)
	}
	var doc map[string]map[string][]struct {
		Matcher string
		Hooks   []struct {
			Type, Command string
			Timeout       int
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc) != 1 || len(doc["hooks"]) != 1 {
		t.Fatalf("print --agent codex: %s", out)
	}
	g := doc["hooks"][api.PermissionRequest]
	if len(g) != 1 || g[0].Hooks[0].Command != "/opt/system3 hook" || g[0].Hooks[0].Timeout != hooks.PermissionTimeout {
		t.Fatalf("PermissionRequest: %+v", g)
	}

	checkHooksInstall(t, hooksInstall{agent: "codex", homeEnv: "CODEX_HOME", file: "hooks.json",
		existing: `{"description": "mine", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}`,
		keep:     []string{`"say done"`, `"description": "mine"`}, said: []string{"hooks added for PermissionRequest", "Trust all and continue"},
		entries: 1, project: filepath.Join(".codex", "hooks.json")})
	if code, _, errOut = invoke(t, nil, "hooks", "print", "--agent", "aider"); code != 1 || !strings.Contains(errOut, "claude, codex, gemini, copilot, qwen") || !strings.Contains(errOut, "opencode") || !strings.Contains(errOut, "cline") {
		t.Fatalf("--agent aider: exit %d, %s", code, errOut)
	}
}

// For the Gemini CLI, hooks print and install make its settings.json run
// system3 hook for BeforeTool only, for the tools Gemini asks about (a
// regular expression), named system3, with a minute in milliseconds;
// install merges into ~/.gemini/settings.json ($GEMINI_CLI_HOME's), or a
// project's .gemini/settings.json, keeping what is there, once.
func TestHooksForGemini(t *testing.T) {
	code, out, errOut := invoke(t, nil, "hooks", "print", "--agent", "gemini", "--command", "/opt/system3 hook")
	if code != 0 {
		t.Fatalf("print: exit %d: %s", code, errOut)
	}
	var doc map[string]map[string][]struct {
		Matcher string
		Hooks   []struct {
			Name, Type, Command string
			Timeout             int
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	g := doc["hooks"][api.BeforeTool]
	if len(doc) != 1 || len(doc["hooks"]) != 1 || len(g) != 1 || g[0].Matcher != hooks.GeminiMatcher || len(g[0].Hooks) != 1 {
		t.Fatalf("print --agent gemini: %s", out)
	}
	if h := g[0].Hooks[0]; h.Name != "system3" || h.Type != "command" || h.Command != "/opt/system3 hook" || h.Timeout != hooks.PermissionTimeout*1000 {
		t.Fatalf("BeforeTool hook: %+v", h)
	}

	checkHooksInstall(t, hooksInstall{agent: "gemini", homeEnv: "GEMINI_CLI_HOME", file: filepath.Join(".gemini", "settings.json"),
		existing: `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "lint-it"}]}]}}`,
		keep:     []string{`"lint-it"`, `"selectedType": "gemini-api-key"`}, said: []string{"hooks added for BeforeTool", "yolo"},
		entries: 1, project: filepath.Join(".gemini", "settings.json")})
}

const geminiPayload = `{"session_id":"g-1","transcript_path":"/tmp/g.jsonl","cwd":"/p","hook_event_name":"BeforeTool","timestamp":"2026-11-29T00:18:34.085Z","tool_name":"mcp_gh_get_issue","tool_input":{"number":7},"mcp_context":{"server_name":"gh","tool_name":"get_issue"}}`

// A Gemini BeforeTool nothing decides is answered "ask", so Gemini shows
// its own dialog whatever its approval mode: without a daemon (and then
// it is not spooled: nothing would read it), and from a daemon that
// decides nothing. The daemon gets the tool's exact input and its MCP
// server and tool.
func TestHookGeminiUndecidedAsks(t *testing.T) {
	const ask = `{"decision":"ask"}` + "\n"
	dir := testkit.ShortDir(t)
	if r := runHookProcess(t, dir, geminiPayload, false); !r.finished || r.code != 0 || r.stdout != ask {
		t.Fatalf("without a daemon: %+v", r)
	}
	if evs := drainSpool(t, dir); len(evs) != 0 {
		t.Fatalf("spooled %+v", evs)
	}

	svc := monitortest.NewService(t, nil)
	ln, err := ipc.Listen(filepath.Join(dir, ipc.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ipc.NewServer(ln, backend.New(svc, backend.Parts{}), nil).Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if r := runHookProcess(t, dir, geminiPayload, false); !r.finished || r.code != 0 || r.stdout != ask {
		t.Fatalf("from a daemon that decides nothing: %+v", r)
	}
	got := svc.Hooks()
	if len(got) != 1 || got[0].Name != api.BeforeTool || got[0].Pane != "%42" || got[0].ToolName != "mcp_gh_get_issue" ||
		got[0].ToolInputJSON != `{"number":7}` || got[0].MCPServer != "gh" || got[0].MCPTool != "get_issue" {
		t.Fatalf("delivered %+v", got)
	}
}

// system3 hooks print --agent copilot shows GitHub Copilot CLI's settings:
// a flat entry per event (permissionRequest, agentStop), each running
// system3 hook naming its event, a minute for the permissionRequest;
// install merges them into $COPILOT_HOME/settings.json, or a project's
// .github/copilot/settings.local.json, keeping what is there, once.
func TestHooksForCopilot(t *testing.T) {
	code, out, errOut := invoke(t, nil, "hooks", "print", "--agent", "copilot", "--command", "/opt/system3 hook")
	if code != 0 {
		t.Fatalf("print: exit %d: %s", code, errOut)
	}
	var doc map[string]map[string][]struct {
		Type, Bash string
		TimeoutSec int
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc) != 1 || len(doc["hooks"]) != 2 {
		t.Fatalf("print --agent copilot: %s", out)
	}
	for ev, timeout := range map[string]int{"permissionRequest": hooks.PermissionTimeout, "agentStop": hooks.HookTimeout} {
		if e := doc["hooks"][ev]; len(e) != 1 || e[0].Type != "command" || e[0].Bash != "/opt/system3 hook --event "+ev || e[0].TimeoutSec != timeout {
			t.Fatalf("%s: %+v", ev, e)
		}
	}

	checkHooksInstall(t, hooksInstall{agent: "copilot", homeEnv: "COPILOT_HOME", file: "settings.json",
		existing: `{"banner": "never", "hooks": {"agentStop": [{"type": "command", "bash": "say done"}]}}`,
		keep:     []string{`"say done"`, `"banner": "never"`}, said: []string{"hooks added for permissionRequest, agentStop", "disableAllHooks"},
		entries: 2, project: filepath.Join(".github", "copilot", "settings.local.json")})
}

// system3 hook --event takes Copilot's events as the daemon knows them:
// its agentStop, which names no event, as a Stop; its permissionRequest
// by its own name with the tool's exact input; and a daemon that decides
// nothing has the hook print nothing, so Copilot shows its dialog.
func TestHookCopilotEvents(t *testing.T) {
	dir := testkit.ShortDir(t)
	svc := monitortest.NewService(t, nil)
	ln, err := ipc.Listen(filepath.Join(dir, ipc.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ipc.NewServer(ln, backend.New(svc, backend.Parts{}), nil).Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	stop := `{"sessionId":"c-1","timestamp":1795931072184,"cwd":"/p","transcriptPath":"/h/.copilot/session-state/c-1/events.jsonl","stopReason":"end_turn","stop_hook_active":false}`
	runHookArgs(t, []string{"hook", "--event", "agentStop"}, dir, stop, false).check(t)
	perm := `{"hookName":"permissionRequest","sessionId":"c-1","timestamp":1795931071609,"cwd":"/p","toolName":"bash","toolInput":{"command":"./deploy.sh --prod"},"permissionSuggestions":[]}`
	runHookArgs(t, []string{"hook", "--event", "permissionRequest"}, dir, perm, false).check(t)
	got := svc.Hooks()
	if len(got) != 2 || got[0].Name != api.Stop || got[0].SessionID != "c-1" || got[0].TranscriptPath == "" || got[0].Pane != "%42" ||
		got[1].Name != api.CopilotPermissionRequest || got[1].ToolName != "bash" || got[1].ToolInputJSON != `{"command":"./deploy.sh --prod"}` {
		t.Fatalf("delivered %+v", got)
	}
}
