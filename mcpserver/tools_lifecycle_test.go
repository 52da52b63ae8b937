package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/monitor/monitortest"
)

// fakeLifecycle records requests and answers with canned results.
type fakeLifecycle struct {
	mu     sync.Mutex
	spawns []api.SpawnRequest
	stops  []api.StopRequest
	err    error
	stopR  api.StopResult
	delay  time.Duration
	links  []api.LinkRequest
}

func (f *fakeLifecycle) Linked(_ context.Context, req api.LinkRequest, _ api.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.links = append(f.links, req)
}

func (f *fakeLifecycle) Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error) {
	f.mu.Lock()
	f.spawns = append(f.spawns, req)
	err, delay := f.err, f.delay
	f.mu.Unlock()
	for _, step := range []string{api.StepCheck, api.StepWorktree, api.StepReady} {
		if req.Progress != nil {
			req.Progress(step, "doing "+step)
		}
		select {
		case <-ctx.Done():
			return api.SpawnResult{}, ctx.Err()
		case <-time.After(delay):
		}
	}
	if err != nil {
		return api.SpawnResult{}, err
	}
	return api.SpawnResult{Status: "spawned", Initiative: req.Initiative, Session: api.OrchestratorSession(req.Initiative), Pane: "%9",
		Worktree: "/repo/trees/" + req.Initiative, Branch: req.Initiative, TaskList: api.DefaultTaskList(req.Initiative), Agent: "claude",
		Wisdom: []api.WisdomItem{}, WisdomNote: "none configured", Prompt: "Goal: " + req.Goal, PromptVerified: true}, nil
}

func (f *fakeLifecycle) AgentNames() []string { return []string{"aider", "claude", "codex", "gemini"} }

func (f *fakeLifecycle) Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, req)
	return f.stopR, f.err
}

func TestLifecycleTools(t *testing.T) {
	spawnErr := &api.SpawnError{Initiative: "auth", Step: api.StepCheck, Err: fmt.Errorf("%w: branch auth exists", api.ErrOrchestratorExists)}
	tests := []struct {
		name    string
		opts    Options
		noLife  bool
		lc      *fakeLifecycle
		tool    string
		args    map[string]any
		wantErr string
		check   func(t *testing.T, f *monitortest.Service, lc *fakeLifecycle, out map[string]any)
	}{
		{name: "spawn", tool: "spawn_orchestrator", args: map[string]any{"initiative": "auth", "goal": "Add login", "repo": "/repo", "base": "main", "context": "OAuth", "no_auto_trust": true},
			check: func(t *testing.T, f *monitortest.Service, lc *fakeLifecycle, out map[string]any) {
				if out["status"] != "spawned" || out["session"] != "orch-auth" || out["task_list"] != "PRD-AUTH" || out["wisdom_note"] != "none configured" ||
					!strings.Contains(out["next"].(string), "wait_for_wake") {
					t.Errorf("out = %v", out)
				}
				r := lc.spawns[0]
				if r.Initiative != "auth" || r.Goal != "Add login" || r.Repo != "/repo" || r.Base != "main" || r.Context != "OAuth" || !r.NoAutoTrust || r.Origin != "mcp:lc-test" {
					t.Errorf("request = %+v", r)
				}
			}},
		{name: "spawn bad name", tool: "spawn_orchestrator", args: map[string]any{"initiative": "a.b", "goal": "g"}, wantErr: "initiative"},
		{name: "spawn blank goal", tool: "spawn_orchestrator", args: map[string]any{"initiative": "a", "goal": "  "}, wantErr: "goal is empty"},
		{name: "spawn command line refused", tool: "spawn_orchestrator", args: map[string]any{"initiative": "a", "goal": "g", "agent": "rm -rf /"}, wantErr: "aider, claude, codex, gemini"},
		{name: "spawn a configured agent", tool: "spawn_orchestrator", args: map[string]any{"initiative": "a", "goal": "g", "agent": "codex"},
			check: func(t *testing.T, f *monitortest.Service, lc *fakeLifecycle, out map[string]any) {
				if r := lc.spawns[0]; r.Agent != "codex" || r.Command != "" {
					t.Errorf("request = %+v", r)
				}
			}},
		{name: "spawn fails", tool: "spawn_orchestrator", lc: &fakeLifecycle{err: spawnErr}, args: map[string]any{"initiative": "auth", "goal": "g"},
			wantErr: `failed at step "check repository": already exists: branch auth exists; pick another initiative name`},
		{name: "spawn without lifecycle", noLife: true, tool: "spawn_orchestrator", args: map[string]any{"initiative": "a", "goal": "g"}, wantErr: "cannot start or stop"},
		{name: "stop", tool: "stop_orchestrator", args: map[string]any{"name": "auth"},
			lc: &fakeLifecycle{stopR: api.StopResult{Status: "stopped", Session: "orch-auth", Interrupted: true, Worktree: "/repo/trees/auth", Branch: "auth"}},
			check: func(t *testing.T, f *monitortest.Service, lc *fakeLifecycle, out map[string]any) {
				if out["status"] != "stopped" || out["interrupted"] != true || out["worktree_removed"] != false {
					t.Errorf("out = %v", out)
				}
				if r := lc.stops[0]; r.Name != "auth" || r.RemoveWorktree || r.Origin != "mcp:lc-test" {
					t.Errorf("request = %+v", r)
				}
			}},
		{name: "stop unknown", tool: "stop_orchestrator", args: map[string]any{"name": "nope"}, lc: &fakeLifecycle{err: fmt.Errorf("%w: no tmux session orch-nope", api.ErrOrchestratorNotFound)},
			wantErr: "call list_sessions"},
		{name: "stop keeps a dirty worktree", tool: "stop_orchestrator", args: map[string]any{"name": "auth", "remove_worktree": true},
			lc:      &fakeLifecycle{stopR: api.StopResult{Status: "stopped", Session: "orch-auth"}, err: errors.New("worktree has uncommitted changes")},
			wantErr: "stopped orch-auth, but: worktree has uncommitted changes"},
		{name: "link", tool: "link_task_list", args: map[string]any{"session": "orch-db", "task_list": "PRD-DB"},
			check: func(t *testing.T, f *monitortest.Service, lc *fakeLifecycle, out map[string]any) {
				if out["task_list"] != "PRD-DB" || out["pane"] != "%2" {
					t.Errorf("out = %v", out)
				}
				c := f.Calls()
				if len(c) != 1 || c[0].Method != "link" || c[0].TaskList != "PRD-DB" || c[0].Origin != "mcp:lc-test" {
					t.Errorf("calls = %+v", c)
				}
				if len(lc.links) != 1 || lc.links[0].TaskList != "PRD-DB" || lc.links[0].Target.Session != "orch-db" {
					t.Errorf("lifecycle told of %+v", lc.links)
				}
			}},
		{name: "unlink", tool: "link_task_list", args: map[string]any{"session": "orch-auth", "task_list": ""},
			check: func(t *testing.T, f *monitortest.Service, lc *fakeLifecycle, out map[string]any) {
				if out["tasks"] != "link removed" {
					t.Errorf("out = %v", out)
				}
				if len(lc.links) != 1 || lc.links[0].TaskList != "" {
					t.Errorf("lifecycle told of %+v", lc.links)
				}
			}},
		{name: "link bad id", tool: "link_task_list", args: map[string]any{"session": "orch-db", "task_list": "../etc"}, wantErr: "not a task list id"},
		{name: "link no target", tool: "link_task_list", args: map[string]any{"task_list": "X"}, wantErr: "name the session"},
		{name: "link unknown session", tool: "link_task_list", args: map[string]any{"session": "nope", "task_list": "X"}, wantErr: "list_sessions",
			check: func(t *testing.T, f *monitortest.Service, lc *fakeLifecycle, out map[string]any) {
				if len(lc.links) != 0 {
					t.Errorf("a failed link reached the records: %+v", lc.links)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fixture(t)
			lc := tt.lc
			if lc == nil {
				lc = &fakeLifecycle{}
			}
			var parts facade.Parts
			if !tt.noLife {
				parts.Orchestrators = lc
			}
			c := inProcess(t, newServer(t, f, tt.opts, parts), "lc-test")
			res, out := call(t, c, tt.tool, tt.args)
			txt := text(res)
			switch {
			case tt.wantErr == "" && res.IsError:
				t.Fatalf("tool error: %s", txt)
			case tt.wantErr != "" && !res.IsError:
				t.Fatalf("want a tool error containing %q, got %s", tt.wantErr, txt)
			case tt.wantErr != "" && !strings.Contains(txt, tt.wantErr):
				t.Fatalf("tool error %q lacks %q", txt, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, f, lc, out)
			}
			found := false
			for _, e := range f.AuditEntries() {
				if e.Action == "tool_call" && e.Tool == tt.tool && e.Origin == "mcp:lc-test" && (tt.wantErr != "") == (e.Error != "") {
					found = true
				}
			}
			if !found {
				t.Errorf("no audit entry for %s: %+v", tt.tool, f.AuditEntries())
			}
		})
	}
}

// TestSpawnReportsProgress: a client that asks for progress hears each
// step of a spawn before the result.
func TestSpawnReportsProgress(t *testing.T) {
	f := fixture(t)
	lc := &fakeLifecycle{delay: 30 * time.Millisecond}
	c := inProcess(t, newServer(t, f, Options{ProgressEvery: 10 * time.Millisecond}, facade.Parts{Orchestrators: lc}), "progress-test")
	var mu sync.Mutex
	var msgs []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			mu.Lock()
			msgs = append(msgs, fmt.Sprint(n.Params.AdditionalFields["message"]))
			mu.Unlock()
		}
	})
	res := callWithProgress(t, c, "spawn_orchestrator", map[string]any{"initiative": "auth", "goal": "g"})
	if res.IsError {
		t.Fatal(text(res))
	}
	// In-process notifications may arrive after the result.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		joined := strings.Join(msgs, "|")
		mu.Unlock()
		ok := true
		for _, want := range []string{"doing " + api.StepCheck, "doing " + api.StepWorktree, "doing " + api.StepReady, "spawned orch-auth"} {
			ok = ok && strings.Contains(joined, want)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress %q lacks a step or the end", joined)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func callWithProgress(t *testing.T, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	req.Params.Meta = &mcp.Meta{ProgressToken: "p1"}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A part the service lacks (a daemon whose orchestrators could not be set
// up) is a tool error that says so, not an internal error.
func TestUnavailablePartIsAToolError(t *testing.T) {
	f := fixture(t)
	s, err := New(unavailableOrchestrators{facade.New(f, facade.Parts{})}, Options{Version: "v0.0.0-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := inProcess(t, s, "unavailable")
	res, _ := call(t, c, "stop_orchestrator", map[string]any{"name": "auth"})
	if !res.IsError || !strings.Contains(text(res), "cannot start or stop orchestrators") || !strings.Contains(text(res), "tell the operator") {
		t.Fatalf("stop_orchestrator: error %v, %q", res.IsError, text(res))
	}
}

// unavailableOrchestrators says it has orchestrators, then has none (a
// daemon's part that failed after its features were read).
type unavailableOrchestrators struct{ facade.Service }

func (u unavailableOrchestrators) Features(ctx context.Context) (facade.Features, error) {
	f, err := u.Service.Features(ctx)
	f.Orchestrators = true
	return f, err
}
