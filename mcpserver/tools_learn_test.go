package mcpserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/learn"
)

// learnStore is a learning store in a temp dir.
func learnStore(t *testing.T) *learn.Store {
	t.Helper()
	s, err := learn.OpenOptions(t.TempDir(), learn.Options{Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const testReasoning = "The goal was to add login. First I wrote tests, then the handler. I chose sessions because they exist. The risk was lockouts, so I kept a fallback. Verified: tests pass."

// TestLearnTools calls the learning tools through mcp-go's dispatch
// against a real store.
func TestLearnTools(t *testing.T) {
	type tc struct {
		name    string
		opts    learn.Options
		setup   func(t *testing.T, s *learn.Store)
		tool    string
		args    map[string]any
		wantErr string
		check   func(t *testing.T, s *learn.Store, out map[string]any, txt string)
	}
	seed := func(t *testing.T, s *learn.Store) {
		for _, o := range []api.Outcome{
			{Initiative: "add OAuth login", Outcome: "success", ReasoningPath: testReasoning, Domain: "auth", Learnings: []string{"Keep OAuth tokens in the session store"}},
			{Initiative: "add OAuth refresh", Outcome: "failure", ReasoningPath: "did it", Domain: "auth", Learnings: []string{"Refreshing OAuth tokens in handlers races"}},
		} {
			if _, err := s.ReportOutcome(context.Background(), o); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []tc{
		{name: "report_outcome stores a pattern", tool: "report_outcome",
			args: map[string]any{"initiative": "add login", "outcome": "success", "reasoning_path": testReasoning,
				"learnings": []any{"Write the login tests first"}, "blockers": []any{"flaky CI"}, "domain": "auth"},
			check: func(t *testing.T, s *learn.Store, out map[string]any, txt string) {
				if out["validated"] != true || out["pattern_stored"] != true || out["capability_updated"] != true || out["confidence"] != 0.67 ||
					out["kind"] != "pattern" || out["evidence"] != "1 successful initiative out of 1" {
					t.Errorf("got %s", txt)
				}
				c := out["criteria"].([]any)[0].(map[string]any)
				if c["name"] != "goal_defined" || c["evidence"] != "The goal was to add login" {
					t.Errorf("criteria[0] = %v", c)
				}
				items, _ := s.Learnings(context.Background(), api.LearningPattern, 0)
				if len(items) != 1 || items[0].Text != "Write the login tests first" {
					t.Errorf("stored %+v", items)
				}
			}},
		{name: "report_outcome with poor reasoning says what was missing", tool: "report_outcome",
			args: map[string]any{"initiative": "quick fix", "outcome": "success", "reasoning_path": "fixed it", "learnings": []any{"Patched prod directly"}},
			check: func(t *testing.T, s *learn.Store, out map[string]any, txt string) {
				if out["validated"] != false || out["pattern_stored"] != false || out["kind"] != "anti-pattern" || out["domain"] != "general" ||
					!strings.Contains(out["next"].(string), "goal clearly defined, steps sequenced") {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "report_outcome bad outcome", tool: "report_outcome", args: map[string]any{"initiative": "x", "outcome": "done"},
			wantErr: `outcome "done" is not one of success, partial, failure. Send instead: initiative (string; required)`},
		{name: "report_outcome blank initiative", tool: "report_outcome", args: map[string]any{"initiative": "  ", "outcome": "success"},
			wantErr: `initiative is empty; name what was attempted`},
		{name: "report_outcome needs an initiative", tool: "report_outcome", args: map[string]any{"outcome": "success"},
			wantErr: `missing required argument "initiative"`},
		{name: "capability_check per domain", tool: "capability_check", setup: seed,
			check: func(t *testing.T, s *learn.Store, out map[string]any, txt string) {
				c := out["capabilities"].([]any)[0].(map[string]any)
				if out["count"] != 1.0 || c["domain"] != "auth" || c["confidence"] != 0.5 || c["evidence"] != "1 successful initiative out of 2" {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "capability_check by kind of initiative", tool: "capability_check", setup: seed, args: map[string]any{"capability": "oauth login"},
			check: func(t *testing.T, s *learn.Store, out map[string]any, txt string) {
				c := out["capabilities"].([]any)[0].(map[string]any)
				if c["name"] != "oauth login" || c["attempts"] != 1.0 || c["confidence"] != 0.67 {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "capability_check nothing yet", tool: "capability_check", args: map[string]any{"domain": "ops"},
			check: func(t *testing.T, s *learn.Store, out map[string]any, txt string) {
				if out["count"] != 0.0 || !strings.Contains(out["next"].(string), "report_outcome") {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "capability_check stopwords", tool: "capability_check", args: map[string]any{"capability": "the"}, wantErr: "has no words to match"},
		{name: "reflect ranks patterns and anti-patterns", tool: "reflect", setup: seed, args: map[string]any{"query": "OAuth tokens", "budget": "low"},
			check: func(t *testing.T, s *learn.Store, out map[string]any, txt string) {
				p, a := out["patterns"].([]any), out["anti_patterns"].([]any)
				if len(p) != 1 || len(a) != 1 || p[0].(map[string]any)["text"] != "Keep OAuth tokens in the session store" ||
					out["confidence"] != 0.4 || out["mode"] != "retrieval" || !strings.Contains(out["note"].(string), "retrieval only") {
					t.Errorf("got %s", txt)
				}
				if c := out["capabilities"].([]any); len(c) != 1 || !strings.HasPrefix(c[0].(map[string]any)["note"].(string), "auth: confidence 0.50") {
					t.Errorf("capabilities = %v", c)
				}
			}},
		{name: "reflect high without a command says so", tool: "reflect", setup: seed, args: map[string]any{"query": "OAuth", "budget": "high"},
			check: func(t *testing.T, s *learn.Store, out map[string]any, txt string) {
				if out["mode"] != "retrieval" || !strings.Contains(out["note"].(string), "no learn.reflect_command is configured") {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "reflect high with a command writes", tool: "reflect", setup: seed, opts: learn.Options{ReflectCommand: "grep -c OAuth"},
			args: map[string]any{"query": "OAuth", "budget": "high"},
			check: func(t *testing.T, s *learn.Store, out map[string]any, txt string) {
				if out["mode"] != "written" || out["reflection"] != "3" {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "reflect bad budget", tool: "reflect", args: map[string]any{"query": "x", "budget": "max"}, wantErr: "budget (string; one of low, mid, high; default mid)"},
		{name: "reflect no words", tool: "reflect", args: map[string]any{"query": "?!"}, wantErr: "has no words to search for"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Clock = func() time.Time { return t0 }
			ls, err := learn.OpenOptions(t.TempDir(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer ls.Close()
			if tt.setup != nil {
				tt.setup(t, ls)
			}
			f := fixture(t)
			c := inProcess(t, newServer(t, f, Options{}, backend.Parts{Learn: ls}), "learn-test")
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
				tt.check(t, ls, out, txt)
			}
			var audited bool
			for _, e := range f.AuditEntries() {
				if e.Action == "tool_call" && e.Tool == tt.tool && e.Origin == "mcp:learn-test" && (tt.wantErr != "") == (e.Error != "") {
					audited = true
				}
			}
			if !audited {
				t.Errorf("no audit entry for the call: %+v", f.AuditEntries())
			}
		})
	}
}

// Read-only leaves report_outcome out and keeps the read learning tools.
func TestLearnToolsReadOnly(t *testing.T) {
	s := newServer(t, fixture(t), Options{ReadOnly: true}, backend.Parts{Learn: learnStore(t)})
	c := inProcess(t, s, "ro")
	res, _ := call(t, c, "reflect", map[string]any{"query": "anything"})
	if res.IsError {
		t.Fatalf("reflect: %s", text(res))
	}
	if _, err := callErr(c, "report_outcome", map[string]any{"initiative": "x", "outcome": "success"}); err == nil {
		t.Fatal("report_outcome is offered read-only")
	}
}
