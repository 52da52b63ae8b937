package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/monitor/claudetest"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tmux/tmuxtest"
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
		run := func(args ...string) string {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, claude, args...)
			cmd.Dir, cmd.Env = project, claudeEnv(home)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
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
	})
}
