package mcpserver

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/coach"
	"github.com/system3-dev/system3/internal/learn"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

// coachFixture is a real coach on a temporary database, with the built-in
// patterns, the directive fixtures of internal/coach, and f as the pane
// typist.
func coachFixture(t *testing.T, f *monitortest.Service) *coach.Coach {
	t.Helper()
	db, err := learn.OpenDB(filepath.Join(t.TempDir(), learn.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	td := filepath.Join("..", "internal", "coach", "testdata")
	c, err := coach.New(context.Background(), coach.Config{DB: db, Patterns: e.Patterns(), Inject: f,
		Directives: coach.DirectiveFiles(filepath.Join(td, "home", ".claude"), filepath.Join(td, "project")),
		Clock:      func() time.Time { return t0.Add(90 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// formatterLoop feeds the coach a formatter loop in pane %1 (orch-auth)
// up to its preventive alert, and returns it.
func formatterLoop(t *testing.T, c *coach.Coach) api.CoachAlert {
	t.Helper()
	at := t0.Add(80 * time.Minute)
	var got []api.CoachAlert
	for i, tc := range []api.ToolCall{
		{Tool: "Bash", Command: "gofmt -l ."}, {Tool: "Edit", File: "auth.go"},
		{Tool: "Bash", Command: "gofmt -l ."}, {Tool: "Edit", File: "auth.go"},
	} {
		tc.Time, tc.Pane, tc.Session, tc.Target, tc.Agent, tc.Repo = at.Add(time.Duration(i)*time.Second), "%1", "orch-auth", "orch-auth:0.0", "claude", "/src/auth"
		a, err := c.Handle(context.Background(), tc)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a...)
	}
	if len(got) != 1 {
		t.Fatalf("formatter loop raised %+v", got)
	}
	return got[0]
}

func TestCoachTools(t *testing.T) {
	type tc struct {
		name    string
		opts    Options
		policy  *api.PolicyConfig
		setup   func(t *testing.T, c *coach.Coach)
		tool    string
		args    map[string]any
		wantErr string
		check   func(t *testing.T, f *monitortest.Service, c *coach.Coach, out map[string]any, txt string)
	}
	loop := func(t *testing.T, c *coach.Coach) { formatterLoop(t, c) }
	tests := []tc{
		{name: "history lists the alert and the interventions' standing", tool: "query_pattern_history", setup: loop,
			check: func(t *testing.T, f *monitortest.Service, c *coach.Coach, out map[string]any, txt string) {
				alerts := out["alerts"].([]any)
				a := alerts[0].(map[string]any)
				if out["count"] != 1.0 || a["pattern"] != "formatter_loop" || a["status"] != "active" || a["subject"] != "auth.go" ||
					!strings.Contains(a["reminder"].(string), "⚠️ Loop detected: Formatter loop") {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "history filters by pattern and status", tool: "query_pattern_history", setup: loop,
			args: map[string]any{"pattern": "test_error_loop", "status": "open"},
			check: func(t *testing.T, f *monitortest.Service, c *coach.Coach, out map[string]any, txt string) {
				if out["count"] != 0.0 {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "history since a duration", tool: "query_pattern_history", setup: loop, args: map[string]any{"since": "1h", "session": "orch-auth"},
			check: func(t *testing.T, f *monitortest.Service, c *coach.Coach, out map[string]any, txt string) {
				if out["count"] != 1.0 {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "history rejects a bad since", tool: "query_pattern_history", args: map[string]any{"since": "yesterday"}, wantErr: `"24h"`},
		{name: "history rejects an unknown status", tool: "query_pattern_history", args: map[string]any{"status": "great"}, wantErr: "status"},
		{name: "request sends the open alert's reminder", tool: "request_intervention", setup: loop, args: map[string]any{"session": "orch-auth"},
			check: func(t *testing.T, f *monitortest.Service, c *coach.Coach, out map[string]any, txt string) {
				a := out["alert"].(map[string]any)
				if out["sent"] != true || a["status"] != "sent" || a["sent_by"] != "mcp:tools-test" {
					t.Errorf("got %s", txt)
				}
				calls := f.Calls()
				if len(calls) != 1 || calls[0].Target.Pane != "%1" || !strings.HasPrefix(calls[0].Text, "⚠️ Loop detected: Formatter loop") ||
					!strings.Contains(calls[0].Text, `Your directive: "Never fix formatting by hand`) || calls[0].Origin != "coach:mcp:tools-test" {
					t.Errorf("typed %+v", calls)
				}
			}},
		{name: "request only composes with send false", tool: "request_intervention", args: map[string]any{"pane": "%2", "pattern": "test_error_loop", "send": false},
			check: func(t *testing.T, f *monitortest.Service, c *coach.Coach, out map[string]any, txt string) {
				a := out["alert"].(map[string]any)
				if out["sent"] != false || a["status"] != "active" || a["pane"] != "%2" || len(f.Calls()) != 0 ||
					!strings.Contains(a["reminder"].(string), "Error loop on the same test") {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "composing is allowed outside the allowlist", tool: "request_intervention", policy: &api.PolicyConfig{AllowSessions: []string{"orch-db"}},
			args: map[string]any{"session": "orch-auth", "pattern": "formatter_loop", "send": false},
			check: func(t *testing.T, f *monitortest.Service, c *coach.Coach, out map[string]any, txt string) {
				if out["sent"] != false || len(f.Calls()) != 0 {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "sending is not", tool: "request_intervention", policy: &api.PolicyConfig{AllowSessions: []string{"orch-db"}}, setup: loop,
			args: map[string]any{"session": "orch-auth"}, wantErr: "mcp.allow_sessions"},
		{name: "request without a loop says what to do", tool: "request_intervention", args: map[string]any{"session": "orch-db"}, wantErr: "name a pattern"},
		{name: "request with an unknown pattern", tool: "request_intervention", args: map[string]any{"session": "orch-db", "pattern": "nope"}, wantErr: "system3://patterns"},
		{name: "request for an unknown session", tool: "request_intervention", args: map[string]any{"session": "ghost"}, wantErr: "list_sessions"},
		{name: "report counts as evidence", tool: "report_intervention",
			args: map[string]any{"pattern_id": "formatter_loop", "intervention_id": "read-the-lint-rule", "worked": true, "notes": "it ran the linter docs"},
			check: func(t *testing.T, f *monitortest.Service, c *coach.Coach, out map[string]any, txt string) {
				if out["reported"] != 1.0 || out["reported_worked"] != 1.0 || out["effectiveness"] != 2.0/3 || out["chosen"] != true {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "report settles a sent reminder", tool: "report_intervention",
			setup: func(t *testing.T, c *coach.Coach) {
				a := formatterLoop(t, c)
				if _, err := c.MarkSent(context.Background(), a.ID, "tui"); err != nil {
					t.Fatal(err)
				}
			},
			args: map[string]any{"pattern_id": "formatter_loop", "intervention_id": "run-the-formatter", "worked": false, "alert_id": 1},
			check: func(t *testing.T, f *monitortest.Service, c *coach.Coach, out map[string]any, txt string) {
				if out["shown"] != 1.0 || out["worked"] != 0.0 || out["reported"] != 0.0 {
					t.Errorf("got %s", txt)
				}
				a, _ := c.Alert(context.Background(), 1)
				if a.Status != api.CoachStatusFailed || !strings.Contains(a.Outcome, "reported by mcp:tools-test: did not work") {
					t.Errorf("alert = %+v", a)
				}
			}},
		{name: "report of an unknown intervention lists the ids", tool: "report_intervention",
			args: map[string]any{"pattern_id": "formatter_loop", "intervention_id": "nope", "worked": true}, wantErr: "run-the-formatter, read-the-lint-rule"},
		{name: "report needs worked", tool: "report_intervention", args: map[string]any{"pattern_id": "formatter_loop", "intervention_id": "x"}, wantErr: "worked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fixture(t)
			co := coachFixture(t, f)
			if tt.policy != nil {
				setPolicy(t, f, *tt.policy, nil)
			}
			if tt.setup != nil {
				tt.setup(t, co)
			}
			s := newServer(t, f, tt.opts, backend.Parts{Coach: co})
			c := inProcess(t, s, "tools-test")
			res, err := callErr(c, tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			txt := text(res)
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(txt, tt.wantErr) {
					t.Fatalf("want a tool error with %q, got %v: %s", tt.wantErr, res.IsError, txt)
				}
				return
			}
			if res.IsError {
				t.Fatalf("tool error: %s", txt)
			}
			if tt.check != nil {
				tt.check(t, f, co, decode(t, res), txt)
			}
		})
	}
}

// TestCoachOverHTTP calls every coaching tool and reads every coaching
// resource through the real Streamable HTTP handler; without a coach none
// of them is offered.
func TestCoachOverHTTP(t *testing.T) {
	f := fixture(t)
	co := coachFixture(t, f)
	alert := formatterLoop(t, co)
	s := newServer(t, f, Options{Token: "tok-0123456789abcdef-0123"}, backend.Parts{Coach: co})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c, _ := httpClient(t, ts.URL+EndpointPath, "http-coach", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer tok-0123456789abcdef-0123"}))
	ctx := context.Background()

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	// 10 monitor tools, 5 lifecycle ones and the 3 coaching ones.
	if err != nil || len(tools.Tools) != 18 {
		t.Fatalf("tools: %d, %v", len(tools.Tools), err)
	}
	if _, out := call(t, c, "query_pattern_history", map[string]any{"pattern": "formatter_loop"}); out["count"] != 1.0 {
		t.Fatalf("history = %v", out)
	}
	if _, out := call(t, c, "request_intervention", map[string]any{"pane": "%1"}); out["sent"] != true {
		t.Fatalf("request = %v", out)
	}
	if _, out := call(t, c, "report_intervention", map[string]any{"pattern_id": "formatter_loop", "intervention_id": alert.Intervention, "worked": true, "alert_id": alert.ID}); out["worked"] != 1.0 {
		t.Fatalf("report = %v", out)
	}

	read := func(uri string) string {
		t.Helper()
		rr := mcp.ReadResourceRequest{}
		rr.Params.URI = uri
		got, err := c.ReadResource(ctx, rr)
		if err != nil || len(got.Contents) != 1 {
			t.Fatalf("read %s: %v %v", uri, got, err)
		}
		return got.Contents[0].(mcp.TextResourceContents).Text
	}
	if txt := read(PatternsURI); !strings.Contains(txt, `"count": 4`) || !strings.Contains(txt, `"by": "text match"`) || !strings.Contains(txt, `"chosen": true`) {
		t.Fatalf("patterns = %s", txt)
	}
	if txt := read("system3://patterns/formatter_loop"); !strings.Contains(txt, `"recent_alerts"`) || !strings.Contains(txt, `"status": "worked"`) {
		t.Fatalf("pattern = %s", txt)
	}
	if txt := read(ActiveAlertsURI); !strings.Contains(txt, `"count": 0`) {
		t.Fatalf("active alerts = %s", txt)
	}
	if txt := read(DirectivesURI); !strings.Contains(txt, "user/style-and-formatting/never-fix-formatting-by-hand") || !strings.Contains(txt, `"links"`) {
		t.Fatalf("directives = %s", txt)
	}
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "system3://patterns/nope"
	if _, err := c.ReadResource(ctx, rr); err == nil || !strings.Contains(err.Error(), "no pattern") {
		t.Fatalf("unknown pattern: %v", err)
	}

	plain := newServer(t, fixture(t), Options{})
	for _, name := range []string{"query_pattern_history", "request_intervention", "report_intervention"} {
		if plain.MCPServer().GetTool(name) != nil {
			t.Errorf("%s registered without a coach", name)
		}
	}
}
