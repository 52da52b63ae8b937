package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// claudeEnv is the environment the real Claude Code CLI runs with here:
// a private HOME and nothing of the developer's.
func claudeEnv(home string) []string {
	return []string{
		"HOME=" + home,
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	}
}

// TestMCPWithClaudeCode registers `system3 serve` with the real, pinned
// Claude Code CLI (`claude mcp add --transport http`) and checks that
// `claude mcp list` health-checks it as connected. Then a Claude Code
// session, driven by the scripted fake Anthropic API, calls
// mcp__system3__status and mcp__system3__inject_guidance, and the guidance
// reaches the target pane.
func TestMCPWithClaudeCode(t *testing.T) {
	claude := claudetest.ClaudeBin(t)
	bin := buildSystem3(t)
	srv := tmuxtest.NewServer(t, "sleep", "600")
	c := tmux.NewClient(srv)
	inbox, err := c.NewSession(context.Background(), tmux.NewSessionOptions{Name: "inbox", Width: 200, Height: 30, Command: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	env := e2eEnv(t)
	url := startServe(t, bin, env, "--tmux-socket-path", srv.Path, "serve", "--listen", "127.0.0.1:0")

	t.Run("mcp add and list", func(t *testing.T) {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"hasCompletedOnboarding": true}`), 0o600); err != nil {
			t.Fatal(err)
		}
		project := t.TempDir()
		run := claudeCLI(t, claude, project, home)
		run("mcp", "add", "--transport", "http", "system3", url)
		out := run("mcp", "list")
		if !strings.Contains(out, "system3: "+url) || !strings.Contains(out, "Connected") {
			t.Fatalf("claude mcp list:\n%s", out)
		}
	})

	t.Run("session calls the tools", func(t *testing.T) {
		const guidance = "From the supervisor: rebase on main, then rerun the tests."
		input, _ := json.Marshal(map[string]string{"session": "inbox", "message": guidance})
		api := claudetest.NewFakeAPI(t, claudetest.Rule{Contains: "supervise-now", Steps: []claudetest.Step{
			{Tool: claudetest.Tool("mcp__system3__status", map[string]any{})},
			{Tool: &claudetest.ToolCall{Name: "mcp__system3__inject_guidance", Input: input}},
			{Text: "Guided the inbox agent."},
		}})
		cfg := filepath.Join(t.TempDir(), "mcp.json")
		conf := `{"mcpServers": {"system3": {"type": "http", "url": "` + url + `"}}}`
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cs := claudetest.Start(t, claudetest.Options{API: api,
			Args: []string{"--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__system3__status,mcp__system3__inject_guidance"},
			Env:  []string{"ENABLE_TOOL_SEARCH=false"},
		})
		cs.Send("supervise-now please")
		cs.WaitForText("Guided the inbox agent.", time.Minute)
		waitScreen(t, c, inbox, guidance)

		// The CLI sent the tools' results back to the model: status's
		// document, then the injection's report.
		var sawStatus, sawInject bool
		for _, r := range api.Requests() {
			sawStatus = sawStatus || strings.Contains(r.Prompt, `"orchestrators"`)
			sawInject = sawInject || (strings.Contains(r.Prompt, `"delivered":true`) && strings.Contains(r.Prompt, inbox))
		}
		if !sawStatus || !sawInject {
			t.Fatalf("tool results not seen by the model (status %v, inject %v); prompts: %q", sawStatus, sawInject, api.MainPrompts())
		}
		audit := auditOf(t, envValue(env, "SYSTEM3_STATE_DIR"))
		if !strings.Contains(audit, `"origin":"mcp:claude-code","action":"inject"`) {
			t.Errorf("audit log lacks the injection by mcp:claude-code:\n%s", audit)
		}
		// Each tool call is audited with the client's name and its session.
		for _, line := range strings.Split(strings.TrimSpace(audit), "\n") {
			var e struct {
				Origin, Action, Tool string
				Session              string `json:"mcp_session"`
				Delivered            bool
			}
			if json.Unmarshal([]byte(line), &e) != nil || e.Action != "tool_call" {
				continue
			}
			if e.Origin != "mcp:claude-code" || !strings.HasPrefix(e.Session, "s3-") || !e.Delivered {
				t.Errorf("tool call entry without its client, session or delivered: %s", line)
			}
		}
	})
}

// TestMCPTokenWithClaudeCode: the real Claude Code CLI, registered without
// the bearer token system3 asks for, tells its user about the token (what
// /register answers it), not only about OAuth; with the token it connects.
func TestMCPTokenWithClaudeCode(t *testing.T) {
	claude := claudetest.ClaudeBin(t)
	bin := buildSystem3(t)
	srv := tmuxtest.NewServer(t, "sleep", "600")
	env := e2eEnv(t)
	tokenCmd := exec.Command(bin, "token")
	tokenCmd.Env = env
	if out, err := tokenCmd.CombinedOutput(); err != nil {
		t.Fatalf("system3 token: %v\n%s", err, out)
	}
	tokenPath := filepath.Join(envValue(env, "SYSTEM3_STATE_DIR"), "mcp-token")
	token, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	url := startServe(t, bin, env, "--tmux-socket-path", srv.Path, "serve", "--listen", "127.0.0.1:0", "--token-file", tokenPath)

	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"hasCompletedOnboarding": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	run := claudeCLI(t, claude, project, home)
	run("mcp", "add", "--transport", "http", "notoken", url)
	run("mcp", "add", "--transport", "http", "withtoken", url, "--header", "Authorization: Bearer "+strings.TrimSpace(string(token)))
	out := run("mcp", "list")
	var without, with string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "notoken:"):
			without = line
		case strings.HasPrefix(line, "withtoken:"):
			with = line
		}
	}
	if !strings.Contains(without, "does not use OAuth") || !strings.Contains(without, "system3 token") {
		t.Errorf("without the token Claude Code says %q; want the words about the token", without)
	}
	if !strings.Contains(with, "Connected") {
		t.Errorf("with the token: %q", with)
	}
	t.Logf("claude mcp list:\n%s", out)
}

// TestMCPSessionCapWithClaudeCode: with mcp.max_sessions 1, a connected
// Claude Code session holds its listening stream open, so it is busy and
// never evicted: another client's initialize is refused with 503 naming
// the setting, and Claude Code's calls go on in the same session.
func TestMCPSessionCapWithClaudeCode(t *testing.T) {
	claudetest.ClaudeBin(t)
	bin := buildSystem3(t)
	srv := tmuxtest.NewServer(t, "sleep", "600")
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte("mcp:\n  max_sessions: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := e2eEnv(t, "SYSTEM3_CONFIG="+cfgPath)
	url := startServe(t, bin, env, "--tmux-socket-path", srv.Path, "serve", "--listen", "127.0.0.1:0")
	api := claudetest.NewFakeAPI(t,
		claudetest.Rule{Contains: "first-call", Steps: []claudetest.Step{{Tool: claudetest.Tool("mcp__system3__status", map[string]any{})}, {Text: "First done."}}},
		claudetest.Rule{Contains: "second-call", Steps: []claudetest.Step{{Tool: claudetest.Tool("mcp__system3__status", map[string]any{})}, {Text: "Second done."}}},
	)
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"system3": {"type": "http", "url": "`+url+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := claudetest.Start(t, claudetest.Options{API: api,
		Args: []string{"--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__system3__status"},
		Env:  []string{"ENABLE_TOOL_SEARCH=false"},
	})
	cs.Send("first-call please")
	cs.WaitForText("First done.", time.Minute)

	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"second","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(init))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "mcp.max_sessions") {
		t.Fatalf("initialize beside a connected Claude Code at the cap: %d %s", resp.StatusCode, body)
	}

	cs.Send("second-call please")
	cs.WaitForText("Second done.", time.Minute)
	results := 0
	for _, r := range api.Requests() {
		if strings.Contains(r.Prompt, `"orchestrators"`) {
			results++
		}
	}
	if results < 2 {
		t.Fatalf("the model saw %d status results, want 2", results)
	}
	sessions := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(auditOf(t, envValue(env, "SYSTEM3_STATE_DIR"))), "\n") {
		var e struct {
			Origin, Action string
			Session        string `json:"mcp_session"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Action == "tool_call" && e.Origin == "mcp:claude-code" {
			sessions[e.Session]++
		}
	}
	if len(sessions) != 1 {
		t.Fatalf("Claude Code's calls were audited in sessions %v, want both in one", sessions)
	}
	for id, n := range sessions {
		if !strings.HasPrefix(id, "s3-") || n != 2 {
			t.Fatalf("sessions %v", sessions)
		}
	}
}

// claudeCLI returns a function that runs the claude CLI with args in
// project, with home as its home, and returns its output; a failure ends
// the test.
func claudeCLI(t *testing.T, claude, project, home string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, args...)
		cmd.Dir, cmd.Env = project, claudeEnv(home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
