package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/testsupport/facadetest"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestLifecycleTools(t *testing.T) {
	spawnErr := &api.SpawnError{Initiative: "auth", Step: api.StepCheck, Err: fmt.Errorf("%w: branch auth exists", api.ErrOrchestratorExists)}
	tests := []struct {
		name    string
		opts    Options
		noLife  bool
		script  func(lc *facadetest.Orchestrators)
		tool    string
		args    map[string]any
		wantErr string
		check   func(t *testing.T, f *monitortest.Service, lc *facadetest.Orchestrators, out map[string]any)
	}{
		{name: "spawn", tool: "spawn_orchestrator", args: map[string]any{"initiative": "auth", "goal": "Add login", "repo": "/repo", "base": "main", "context": "OAuth", "no_auto_trust": true},
			check: func(t *testing.T, f *monitortest.Service, lc *facadetest.Orchestrators, out map[string]any) {
				if out["status"] != "spawned" || out["session"] != "orch-auth" || out["task_list"] != "PRD-AUTH" || out["wisdom_note"] != "none configured" ||
					!strings.Contains(out["next"].(string), "wait_for_wake") {
					t.Errorf("out = %v", out)
				}
				r := lc.Spawns()[0]
				if r.Initiative != "auth" || r.Goal != "Add login" || r.Repo != "/repo" || r.Base != "main" || r.Context != "OAuth" || !r.NoAutoTrust || r.Origin != "mcp:lc-test" {
					t.Errorf("request = %+v", r)
				}
			}},
		{name: "spawn bad name", tool: "spawn_orchestrator", args: map[string]any{"initiative": "a.b", "goal": "g"}, wantErr: "initiative"},
		{name: "spawn blank goal", tool: "spawn_orchestrator", args: map[string]any{"initiative": "a", "goal": "  "}, wantErr: "goal is empty"},
		{name: "spawn command line refused", tool: "spawn_orchestrator", args: map[string]any{"initiative": "a", "goal": "g", "agent": "rm -rf /"}, wantErr: "aider, claude, codex, gemini"},
		{name: "spawn a configured agent", tool: "spawn_orchestrator", args: map[string]any{"initiative": "a", "goal": "g", "agent": "codex"},
			check: func(t *testing.T, f *monitortest.Service, lc *facadetest.Orchestrators, out map[string]any) {
				if r := lc.Spawns()[0]; r.Agent != "codex" || r.Command != "" {
					t.Errorf("request = %+v", r)
				}
			}},
		{name: "spawn fails", tool: "spawn_orchestrator", script: func(lc *facadetest.Orchestrators) { lc.Fail("spawn", spawnErr) }, args: map[string]any{"initiative": "auth", "goal": "g"},
			wantErr: `failed at step "check repository": already exists: branch auth exists; pick another initiative name`},
		{name: "spawn without lifecycle", noLife: true, tool: "spawn_orchestrator", args: map[string]any{"initiative": "a", "goal": "g"}, wantErr: "cannot start or stop"},
		{name: "stop", tool: "stop_orchestrator", args: map[string]any{"name": "auth"},
			script: func(lc *facadetest.Orchestrators) {
				lc.SetStop(api.StopResult{Status: "stopped", Session: "orch-auth", Interrupted: true, Worktree: "/repo/trees/auth", Branch: "auth"})
			},
			check: func(t *testing.T, f *monitortest.Service, lc *facadetest.Orchestrators, out map[string]any) {
				if out["status"] != "stopped" || out["interrupted"] != true || out["worktree_removed"] != false {
					t.Errorf("out = %v", out)
				}
				if r := lc.Stops()[0]; r.Name != "auth" || r.RemoveWorktree || r.Origin != "mcp:lc-test" {
					t.Errorf("request = %+v", r)
				}
			}},
		{name: "stop unknown", tool: "stop_orchestrator", args: map[string]any{"name": "nope"},
			script: func(lc *facadetest.Orchestrators) {
				lc.Fail("stop", fmt.Errorf("%w: no tmux session orch-nope", api.ErrOrchestratorNotFound))
			},
			wantErr: "call list_sessions"},
		{name: "stop keeps a dirty worktree", tool: "stop_orchestrator", args: map[string]any{"name": "auth", "remove_worktree": true},
			script: func(lc *facadetest.Orchestrators) {
				lc.SetStop(api.StopResult{Status: "stopped", Session: "orch-auth"})
				lc.Fail("stop", errors.New("worktree has uncommitted changes"))
			},
			wantErr: "stopped orch-auth, but: worktree has uncommitted changes"},
		{name: "link", tool: "link_task_list", args: map[string]any{"session": "orch-db", "task_list": "PRD-DB"},
			check: func(t *testing.T, f *monitortest.Service, lc *facadetest.Orchestrators, out map[string]any) {
				if out["task_list"] != "PRD-DB" || out["pane"] != "%2" {
					t.Errorf("out = %v", out)
				}
				c := f.Calls()
				if len(c) != 1 || c[0].Method != "link" || c[0].TaskList != "PRD-DB" || c[0].Origin != "mcp:lc-test" {
					t.Errorf("calls = %+v", c)
				}
				if l := lc.Links(); len(l) != 1 || l[0].TaskList != "PRD-DB" || l[0].Target.Session != "orch-db" {
					t.Errorf("lifecycle told of %+v", l)
				}
			}},
		{name: "unlink", tool: "link_task_list", args: map[string]any{"session": "orch-auth", "task_list": ""},
			check: func(t *testing.T, f *monitortest.Service, lc *facadetest.Orchestrators, out map[string]any) {
				if out["tasks"] != "link removed" {
					t.Errorf("out = %v", out)
				}
				if l := lc.Links(); len(l) != 1 || l[0].TaskList != "" {
					t.Errorf("lifecycle told of %+v", l)
				}
			}},
		{name: "link bad id", tool: "link_task_list", args: map[string]any{"session": "orch-db", "task_list": "../etc"}, wantErr: "not a task list id"},
		{name: "link no target", tool: "link_task_list", args: map[string]any{"task_list": "X"}, wantErr: "name the session"},
		{name: "link unknown session", tool: "link_task_list", args: map[string]any{"session": "nope", "task_list": "X"}, wantErr: "list_sessions",
			check: func(t *testing.T, f *monitortest.Service, lc *facadetest.Orchestrators, out map[string]any) {
				if l := lc.Links(); len(l) != 0 {
					t.Errorf("a failed link reached the records: %+v", l)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fixture(t)
			lc := &facadetest.Orchestrators{}
			if tt.script != nil {
				tt.script(lc)
			}
			var parts backend.Parts
			if !tt.noLife {
				parts.Orchestrators = lc.Plain()
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
	lc := &facadetest.Orchestrators{}
	lc.SetSteps(30*time.Millisecond, facadetest.SpawnSteps...)
	c := inProcess(t, newServer(t, f, Options{ProgressEvery: 10 * time.Millisecond}, backend.Parts{Orchestrators: lc}), "progress-test")
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
	testkit.WaitForValue(t, 5*time.Second, "progress with every step and the end", func() (string, bool) {
		mu.Lock()
		joined := strings.Join(msgs, "|")
		mu.Unlock()
		ok := true
		for _, want := range []string{"doing " + api.StepCheck, "doing " + api.StepWorktree, "doing " + api.StepReady, "spawned orch-auth"} {
			ok = ok && strings.Contains(joined, want)
		}
		return joined, ok
	})
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
	s, err := New(unavailableOrchestrators{backend.New(f, backend.Parts{})}, Options{Version: "v0.0.0-test"})
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
