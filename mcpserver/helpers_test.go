package mcpserver

import (
	"context"
	"encoding/json"
	"flag"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

var update = flag.Bool("update", false, "rewrite testdata/tools/*.json and docs/mcp.md from the tool definitions")

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// fixture is a fake service with a registry of five panes:
//
//	orch-auth  %1 claude awaiting_input (permission), tasks PRD-AUTH 3/5
//	orch-db    %2 claude working
//	build      %3 shell
//	orch-old   %4 claude exited, tasks PRD-OLD 2/2 (complete)
//	orch-crash %5 codex exited, no task list (failed)
func fixture(t *testing.T) *monitortest.Service {
	t.Helper()
	f := monitortest.NewService(t, monitortest.Ticking(t0))
	f.SetSnapshot(api.Snapshot{Server: "tmux -L test", Running: true, Taken: t0, Sessions: fixtureSessions()})
	f.SetPreview("%1", "● Deploying the build", "  ⎿  $ ./deploy.sh --prod", " Do you want to proceed?", " ❯ 1. Yes", "   2. Yes, and don't ask again", "   3. No", "", "", "")
	f.SetPreview("%2", "✢ Clauding… (esc to interrupt)")
	f.SetTaskLists([]api.TaskListDoc{{
		ID: "PRD-AUTH", Session: "orch-auth", Agent: "claude",
		Progress: api.TaskProgressDoc{Completed: 3, Total: 5, InProgress: []api.TaskActiveDoc{{ID: "4", Subject: "Add cookies", ActiveForm: "Adding cookies"}}, Blocked: []api.TaskBlockedDoc{{ID: "5", Subject: "Docs", WaitingOn: []string{"4"}}}},
		Tasks: []api.TaskDoc{
			{ID: "1", Subject: "Login form", Status: "completed", Description: "Build the form"},
			{ID: "4", Subject: "Add cookies", Status: "in_progress", ActiveForm: "Adding cookies"},
			{ID: "5", Subject: "Docs", Status: "pending", Blocked: true, BlockedBy: []string{"4"}},
		},
	}})
	return f
}

func fixtureSessions() []api.Session {
	s := func(pane, session, agent string, state api.State) api.Session {
		return api.Session{Pane: pane, Session: session, Window: "main", Target: session + ":0.0", Agent: agent, State: state,
			Command: agent, Since: t0, Updated: t0.Add(time.Minute), Options: []string{}, Height: 30, Width: 100}
	}
	auth := s("%1", "orch-auth", "claude", api.AwaitingInput)
	auth.Kind, auth.Question = "permission", "Do you want to proceed?"
	auth.Options = []string{"Yes", "Yes, and don't ask again", "No"}
	auth.Evidence = api.Evidence{Source: "screen", Rule: "claude.permission", Lines: []string{"Do you want to proceed?"}}
	auth.TaskList, auth.Tasks = "PRD-AUTH", &api.TaskProgress{Completed: 3, Total: 5, InProgress: []string{"Add cookies"}}
	db := s("%2", "orch-db", "claude", api.Working)
	build := s("%3", "build", "shell", api.Unknown)
	build.Command = "bash"
	old := s("%4", "orch-old", "claude", api.Exited)
	old.TaskList, old.Tasks = "PRD-OLD", &api.TaskProgress{Completed: 2, Total: 2}
	crash := s("%5", "orch-crash", "codex", api.Exited)
	return []api.Session{auth, db, build, old, crash}
}

// setPolicy makes the fake service apply cfg, as the service of the
// process that runs the monitors does.
func setPolicy(t *testing.T, f *monitortest.Service, cfg api.PolicyConfig, clock func() time.Time) {
	t.Helper()
	p, err := api.NewPolicy(cfg, clock)
	if err != nil {
		t.Fatal(err)
	}
	f.SetPolicy(p)
}

func newServer(t *testing.T, svc api.Service, opts Options, parts ...backend.Parts) *Server {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = func() time.Time { return t0.Add(90 * time.Minute) }
	}
	if opts.Started.IsZero() {
		opts.Started = t0
	}
	if opts.Version == "" {
		opts.Version = "v0.0.0-test"
	}
	var p backend.Parts
	if len(parts) > 0 {
		p = parts[0]
	}
	s, err := New(backend.New(svc, p), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// inProcess connects an mcp-go client to s in-process: every call goes
// through mcp-go's dispatch (schema validation, hooks, middleware).
func inProcess(t *testing.T, s *Server, name string) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(s.MCPServer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c, name)
	return c
}

func initialize(t *testing.T, c *client.Client, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = protocolVersion
	req.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1.0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
}

// call calls a tool and returns its result and the JSON of its text.
func call(t *testing.T, c *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	checkOutput(t, c, tool, res)
	return res, decode(t, res)
}

func text(res *mcp.CallToolResult) string { return resultText(res) }

func decode(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text(res)), &m); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, text(res))
	}
	return m
}

func raise(t testing.TB, f *monitortest.Service, pane, session string, r api.Reason) api.Wake {
	t.Helper()
	return f.Raise(t, api.Wake{Reason: r, Key: string(r) + "/" + pane, Session: session, Pane: pane, Agent: "claude",
		State: "awaiting_input", SuggestedAction: "answer it"})
}

func callErr(c *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	return c.CallTool(ctx, req)
}

// protocolVersion is what today's clients (Claude Code, the TypeScript SDK)
// speak: the last version with sessions and initialize.
var protocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
