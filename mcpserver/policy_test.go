package mcpserver

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/lifecycle"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/tmux"
)

// sessionsTmux is a tmux with fixed sessions for the real lifecycle: a
// killed session is recorded and stays, so a second stop meets the policy
// again rather than "not found".
type sessionsTmux struct {
	mu     sync.Mutex
	names  []string
	killed []string
	made   []string
}

func (s *sessionsTmux) HasSession(ctx context.Context, name string) (bool, error) {
	return slices.Contains(s.names, name), nil
}

func (s *sessionsTmux) NewSession(ctx context.Context, opt tmux.NewSessionOptions) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.made = append(s.made, opt.Name)
	return "", tmux.ErrNoServer
}

func (s *sessionsTmux) KillSession(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killed = append(s.killed, name)
	return nil
}

func (s *sessionsTmux) SetRemainOnExit(ctx context.Context, pane string, on bool) error { return nil }

func (s *sessionsTmux) acted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(slices.Clone(s.killed), s.made...)
}

// policyServer is a server on the fixture whose service applies cfg, with
// the real lifecycle on a fake tmux and the coach with an open alert on
// orch-auth.
func policyServer(t *testing.T, cfg api.PolicyConfig) (*monitortest.Service, *sessionsTmux, *Server) {
	t.Helper()
	f := fixture(t)
	setPolicy(t, f, cfg, nil)
	tm := &sessionsTmux{names: []string{"orch-auth", "orch-db", "build", "victim2"}}
	lc, err := lifecycle.New(lifecycle.Config{Service: f, Tmux: tm})
	if err != nil {
		t.Fatal(err)
	}
	co := coachFixture(t, f)
	formatterLoop(t, co)
	return f, tm, newServer(t, f, Options{}, backend.Parts{Orchestrators: lc, Coach: co})
}

// The write tools that act on a pane or a session, each aimed at orch-auth
// (%1, waiting at a permission prompt).
var paneTools = []struct {
	tool string
	args map[string]any
}{
	{"inject_guidance", map[string]any{"session": "orch-auth", "message": "x", "submit": false}},
	{"answer_prompt", map[string]any{"session": "orch-auth", "answer": "yes"}},
	{"interrupt", map[string]any{"pane": "%1"}},
	{"link_task_list", map[string]any{"session": "orch-auth", "task_list": "PRD-AUTH"}},
	{"request_intervention", map[string]any{"session": "orch-auth"}},
	{"stop_orchestrator", map[string]any{"name": "auth"}},
	{"spawn_orchestrator", map[string]any{"initiative": "auth", "goal": "g", "repo": "/nonexistent"}},
}

// TestWriteToolsMeetTheServicePolicy: every write tool is refused by the
// service's policy (the MCP server itself no longer checks), with a tool
// error that names the rule, and nothing reaches a pane or tmux.
func TestWriteToolsMeetTheServicePolicy(t *testing.T) {
	for _, pt := range paneTools {
		t.Run(pt.tool, func(t *testing.T) {
			// Allowlist.
			f, tm, s := policyServer(t, api.PolicyConfig{AllowSessions: []string{"build"}})
			c := inProcess(t, s, "policy-test")
			res, _ := call(t, c, pt.tool, pt.args)
			if !res.IsError || !strings.Contains(text(res), `is not in mcp.allow_sessions (build)`) {
				t.Fatalf("outside the allowlist: %s", text(res))
			}
			if len(f.Calls()) != 0 || len(tm.acted()) != 0 {
				t.Fatalf("a refused call acted: calls %+v, tmux %v", f.Calls(), tm.acted())
			}

			// Read-only at the service, whatever the MCP server offers.
			f, tm, s = policyServer(t, api.PolicyConfig{ReadOnly: true})
			c = inProcess(t, s, "policy-test")
			res, _ = call(t, c, pt.tool, pt.args)
			if !res.IsError || !strings.Contains(text(res), "read-only") {
				t.Fatalf("read-only: %s", text(res))
			}
			if len(f.Calls()) != 0 || len(tm.acted()) != 0 {
				t.Fatalf("a refused call acted: calls %+v, tmux %v", f.Calls(), tm.acted())
			}

			// Rate: one action a minute on the pane (or session); the
			// second call is refused by the rate, whatever the first did.
			if pt.tool == "request_intervention" {
				return // a reminder is sent once per alert: see TestCoachTools
			}
			_, _, s = policyServer(t, api.PolicyConfig{PerMinute: 1})
			c = inProcess(t, s, "policy-test")
			if res, _ := call(t, c, pt.tool, pt.args); strings.Contains(text(res), "rate limit") {
				t.Fatalf("first call: %s", text(res))
			}
			res, _ = call(t, c, pt.tool, pt.args)
			if !res.IsError || !strings.Contains(text(res), "rate limit: 1 MCP actions on") {
				t.Fatalf("second call in a minute: %s", text(res))
			}
		})
	}
	// Acknowledging is refused when read-only.
	_, _, s := policyServer(t, api.PolicyConfig{ReadOnly: true})
	res, _ := call(t, inProcess(t, s, "policy-test"), "ack_wake", map[string]any{"all": true})
	if !res.IsError || !strings.Contains(text(res), "may not acknowledge wakes") {
		t.Fatalf("read-only ack: %s", text(res))
	}
}

// TestStopOrchestratorCannotEscapeTheAllowlist reproduces the escape: with
// orch-* allowed, stop_orchestrator {"name": "victim2"} found no
// orch-victim2, fell back to the session victim2 and killed it.
func TestStopOrchestratorCannotEscapeTheAllowlist(t *testing.T) {
	f, tm, s := policyServer(t, api.PolicyConfig{AllowSessions: []string{"orch-*", "rec"}})
	c := inProcess(t, s, "attacker")
	for _, name := range []string{"victim2", "orch-victim2", " victim2"} {
		res, _ := call(t, c, "stop_orchestrator", map[string]any{"name": name})
		if name == "orch-victim2" {
			if !res.IsError || !strings.Contains(text(res), "no tmux session orch-victim2") {
				t.Fatalf("stop %q: %s", name, text(res))
			}
			continue
		}
		if !res.IsError || !strings.Contains(text(res), `stop victim2: not allowed: session "victim2" is not in mcp.allow_sessions (orch-*, rec)`) {
			t.Fatalf("stop %q: %s", name, text(res))
		}
	}
	if len(tm.acted()) != 0 || len(f.Calls()) != 0 {
		t.Fatalf("victim2 was touched: tmux %v, calls %+v", tm.acted(), f.Calls())
	}
	// An allowed orchestrator still stops.
	if res, out := call(t, c, "stop_orchestrator", map[string]any{"name": "auth"}); res.IsError || out["session"] != "orch-auth" {
		t.Fatalf("allowed stop: %s", text(res))
	}
}

// TestSpawnOrchestratorRunsOnlyConfiguredAgents reproduces the spawn of a
// program picked by the client: {"agent": "sh", "goal": "x; touch
// $HOME/PWNED_SPAWN"} started sh and typed the goal into it.
func TestSpawnOrchestratorRunsOnlyConfiguredAgents(t *testing.T) {
	f, tm, s := policyServer(t, api.PolicyConfig{})
	c := inProcess(t, s, "attacker")
	for _, agent := range []string{"sh", "/bin/sh", "sh -c 'touch /tmp/x'", "bash", "claude --dangerously-skip-permissions"} {
		res, _ := call(t, c, "spawn_orchestrator", map[string]any{"initiative": "pwn", "goal": "x; touch $HOME/PWNED_SPAWN", "agent": agent})
		if !res.IsError || !strings.Contains(text(res), "aider, claude, cline, codex, copilot, gemini, opencode, qwen") {
			t.Fatalf("agent %q: %s", agent, text(res))
		}
	}
	if len(tm.acted()) != 0 || len(f.Calls()) != 0 || len(f.Allowed()) != 0 {
		t.Fatalf("a refused spawn acted: tmux %v, calls %+v, allow %+v", tm.acted(), f.Calls(), f.Allowed())
	}
	// The tool says which agents there are.
	tool := s.MCPServer().GetTool("spawn_orchestrator").Tool
	agent, _ := tool.InputSchema.Properties["agent"].(map[string]any)
	if got, _ := agent["enum"].([]string); !slices.Equal(got, []string{"aider", "claude", "cline", "codex", "copilot", "gemini", "opencode", "qwen"}) {
		t.Fatalf("agent enum = %v", agent["enum"])
	}
}
