package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

// TestTools calls every tool through mcp-go's dispatch (schema validation,
// middleware, hooks) against the fake service.
func TestTools(t *testing.T) {
	type tc struct {
		name    string
		opts    Options
		policy  *api.PolicyConfig
		setup   func(t *testing.T, f *monitortest.Service)
		tool    string
		args    map[string]any
		wantErr string // substring of the tool error; "" expects success
		check   func(t *testing.T, f *monitortest.Service, out map[string]any, txt string)
	}
	tests := []tc{
		{name: "status counts and orders orchestrators", tool: "status",
			setup: func(t *testing.T, f *monitortest.Service) { raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput) },
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				want := map[string]any{"version": "v0.0.0-test", "uptime": "1h30m0s", "needs_person": 1.0, "other_panes": 1.0, "tmux_running": true}
				for k, v := range want {
					if out[k] != v {
						t.Errorf("%s = %v, want %v", k, out[k], v)
					}
				}
				bs := out["by_status"].(map[string]any)
				if bs["blocked"] != 1.0 || bs["active"] != 1.0 || bs["complete"] != 1.0 || bs["failed"] != 1.0 {
					t.Errorf("by_status = %v", bs)
				}
				orch := out["orchestrators"].([]any)
				first := orch[0].(map[string]any)
				if len(orch) != 4 || first["name"] != "orch-auth" || first["status"] != "blocked" || first["tasks"] != "3/5" || first["needs_person"] != 1.0 {
					t.Errorf("orchestrators = %v", orch)
				}
				if !strings.Contains(out["next"].(string), "get_session") {
					t.Errorf("next = %v", out["next"])
				}
			}},
		{name: "list_sessions leaves out shells", tool: "list_sessions",
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["count"] != 4.0 || out["watched"] != 5.0 || strings.Contains(txt, `"build"`) {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "list_sessions filters by status", tool: "list_sessions", args: map[string]any{"state": "failed"},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				rows := out["sessions"].([]any)
				if len(rows) != 1 || rows[0].(map[string]any)["name"] != "orch-crash" {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "list_sessions filters by detailed state and glob", tool: "list_sessions", args: map[string]any{"state": "exited", "name": "orch-o*"},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				rows := out["sessions"].([]any)
				if len(rows) != 1 || rows[0].(map[string]any)["status"] != "complete" {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "list_sessions with shells", tool: "list_sessions", args: map[string]any{"include_shells": true, "agent": "shell"},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["count"] != 1.0 {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "list_sessions rejects a bad state", tool: "list_sessions", args: map[string]any{"state": "sleeping"},
			wantErr: "Send instead: state (string; one of active"},
		{name: "list_sessions rejects a bad glob", tool: "list_sessions", args: map[string]any{"name": "orch-["},
			wantErr: "not a valid glob"},
		{name: "get_session shows question, tasks, wakes and screen", tool: "get_session", args: map[string]any{"session": "orch-auth", "lines": 4},
			setup: func(t *testing.T, f *monitortest.Service) { raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput) },
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["question"] != "Do you want to proceed?" || len(out["options"].([]any)) != 3 || out["status"] != "blocked" {
					t.Errorf("got %s", txt)
				}
				if ev := out["evidence"].(map[string]any); ev["rule"] != "claude.permission" {
					t.Errorf("evidence = %v", ev)
				}
				screen := out["screen"].(string)
				// Trailing blank lines dropped, then the last 4 of 6 kept.
				if !strings.HasPrefix(screen, "[… 2 earlier lines not shown; pass lines up to 500") || !strings.HasSuffix(screen, "   3. No") || out["screen_lines_cut"] != 2.0 {
					t.Errorf("screen = %q", screen)
				}
				if items := out["task_items"].([]any); len(items) != 3 {
					t.Errorf("task_items = %v", items)
				}
				if w := out["recent_wakes"].([]any); len(w) != 1 {
					t.Errorf("recent_wakes = %v", w)
				}
				if !strings.Contains(out["next"].(string), "answer_prompt") {
					t.Errorf("next = %v", out["next"])
				}
			}},
		{name: "get_session by pane", tool: "get_session", args: map[string]any{"pane": "%2"},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["name"] != "orch-db" || out["screen"] != "✢ Clauding… (esc to interrupt)" || out["screen_lines_cut"] != 0.0 {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "get_session needs a name", tool: "get_session", args: map[string]any{}, wantErr: `name the session: {"session"`},
		{name: "get_session unknown session", tool: "get_session", args: map[string]any{"session": "nope"}, wantErr: "call list_sessions"},
		{name: "get_session lines capped", tool: "get_session", args: map[string]any{"session": "orch-db", "lines": 501}, wantErr: "lines (integer; 1 to 500; default 40)"},
		{name: "get_session unknown argument", tool: "get_session", args: map[string]any{"session": "orch-db", "bogus": 1}, wantErr: "bogus"},
		{name: "list_wakes unacked with cursor", tool: "list_wakes",
			setup: func(t *testing.T, f *monitortest.Service) {
				raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput)
				ev := raise(t, f, "%2", "orch-db", api.ReasonAPIError)
				raise(t, f, "%5", "orch-crash", api.ReasonWorkerFailed)
				if _, err := f.Store.Ack(ev.ID, "tui"); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["count"] != 2.0 || out["cursor"] != 3.0 || out["more"] != false {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "list_wakes pages", tool: "list_wakes", args: map[string]any{"include_acked": true, "limit": 1, "since": 1},
			setup: func(t *testing.T, f *monitortest.Service) {
				raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput)
				raise(t, f, "%2", "orch-db", api.ReasonAPIError)
				raise(t, f, "%5", "orch-crash", api.ReasonWorkerFailed)
			},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["count"] != 1.0 || out["cursor"] != 2.0 || out["more"] != true {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "list_wakes bad reason", tool: "list_wakes", args: map[string]any{"reasons": []any{"bored"}}, wantErr: "items one of awaiting_input"},
		{name: "list_tasks all", tool: "list_tasks",
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				l := out["lists"].([]any)[0].(map[string]any)
				if l["progress"] != "3/5" || l["blocked"] != 1.0 || strings.Contains(txt, "Build the form") {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "list_tasks one with descriptions", tool: "list_tasks", args: map[string]any{"list": "PRD-AUTH"},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if !strings.Contains(txt, "Build the form") || !strings.Contains(txt, `"blocked_by":["4"]`) {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "list_tasks unknown", tool: "list_tasks", args: map[string]any{"list": "NOPE"}, wantErr: "call list_tasks without list"},
		{name: "wait_for_wake returns a pending wake at once", tool: "wait_for_wake", args: map[string]any{"reasons": []any{"awaiting_input"}},
			setup: func(t *testing.T, f *monitortest.Service) {
				raise(t, f, "%2", "orch-db", api.ReasonAPIError)
				raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput)
			},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				w := out["wake"].(map[string]any)
				if out["status"] != "wake" || w["session"] != "orch-auth" || out["cursor"] != 2.0 {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "wait_for_wake since skips a seen wake", tool: "wait_for_wake", args: map[string]any{"since": 1, "max_wait_seconds": 0},
			setup: func(t *testing.T, f *monitortest.Service) { raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput) },
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["status"] != "waiting" || out["cursor"] != 1.0 {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "wait_for_wake over the cap", tool: "wait_for_wake", args: map[string]any{"max_wait_seconds": 60}, wantErr: "max_wait_seconds (integer; 0 to 25; default 20)"},
		{name: "wait_for_wake bad glob", tool: "wait_for_wake", args: map[string]any{"session": "[", "max_wait_seconds": 0}, wantErr: "not a valid glob"},
		{name: "inject_guidance", tool: "inject_guidance", args: map[string]any{"session": "orch-db", "message": "Run the tests\nthen commit."},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				c := f.Calls()
				if len(c) != 1 || c[0].Text != "Run the tests\nthen commit." || c[0].Target != (api.Target{Session: "orch-db"}) || c[0].Urgent || c[0].NoEnter || c[0].Origin != "mcp:table-test" {
					t.Errorf("calls = %+v", c)
				}
				if out["delivered"] != true || out["verified"] != true || out["pane"] != "%2" || out["priority"] != "normal" || out["submitted"] != true {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "inject_guidance urgent without enter", tool: "inject_guidance", args: map[string]any{"pane": "%1", "message": "stop", "priority": "urgent", "submit": false},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				c := f.Calls()
				if len(c) != 1 || !c[0].Urgent || !c[0].NoEnter {
					t.Errorf("calls = %+v", c)
				}
			}},
		{name: "inject_guidance unverified says what to do", tool: "inject_guidance", args: map[string]any{"session": "orch-db", "message": "hi"},
			setup: func(t *testing.T, f *monitortest.Service) { f.SetUnverified("input box still shows the text") },
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["verified"] != false || !strings.Contains(out["next"].(string), "get_session") {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "inject_guidance needs a message", tool: "inject_guidance", args: map[string]any{"session": "orch-db"}, wantErr: `invalid arguments: missing required argument "message". Send instead:`},
		{name: "inject_guidance bad priority", tool: "inject_guidance", args: map[string]any{"session": "orch-db", "message": "x", "priority": "high"}, wantErr: "priority (string; one of normal, urgent; default normal)"},
		{name: "inject_guidance needs a target", tool: "inject_guidance", args: map[string]any{"message": "x"}, wantErr: "name the session"},
		{name: "inject_guidance ambiguous session", tool: "inject_guidance", args: map[string]any{"session": "dup", "message": "x"},
			setup: func(t *testing.T, f *monitortest.Service) {
				ss := fixtureSessions()
				a, b := ss[1], ss[1]
				a.Session, a.Pane, a.Target = "dup", "%8", "dup:0.0"
				b.Session, b.Pane, b.Target = "dup", "%9", "dup:0.1"
				f.SetSnapshot(api.Snapshot{Server: "tmux -L test", Sessions: append(ss, a, b)})
			},
			wantErr: "pass pane (like %3)"},
		{name: "inject_guidance outside the allowlist", tool: "inject_guidance", policy: &api.PolicyConfig{AllowSessions: []string{"orch-a*"}},
			args: map[string]any{"session": "orch-db", "message": "x"}, wantErr: `session "orch-db" is not in mcp.allow_sessions (orch-a*)`,
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if len(f.Calls()) != 0 {
					t.Errorf("refused call reached the service: %+v", f.Calls())
				}
			}},
		{name: "inject_guidance inside the allowlist", tool: "inject_guidance", policy: &api.PolicyConfig{AllowSessions: []string{"orch-a*"}},
			args: map[string]any{"session": "orch-auth", "message": "x"}},
		{name: "answer_prompt", tool: "answer_prompt", args: map[string]any{"session": "orch-auth", "answer": "yes"},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["option"] != "Yes" || fmt.Sprint(out["keys"]) != "[1]" {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "answer_prompt by its wake alone", tool: "answer_prompt", args: map[string]any{"wake": "PLACEHOLDER", "answer": "yes"},
			setup: func(t *testing.T, f *monitortest.Service) { raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput) },
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if c := f.Calls(); len(c) != 1 || c[0].Method != "answer" || c[0].Wake == "" || out["pane"] != "%1" {
					t.Errorf("got %s, calls %+v", txt, c)
				}
			}},
		{name: "answer_prompt bad option", tool: "answer_prompt", args: map[string]any{"session": "orch-auth", "answer": "7"}, wantErr: "there is no option 7"},
		{name: "answer_prompt not waiting", tool: "answer_prompt", args: map[string]any{"session": "orch-db", "answer": "1"}, wantErr: "use inject_guidance to send it text"},
		{name: "interrupt", tool: "interrupt", args: map[string]any{"session": "orch-db"},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if c := f.Calls(); len(c) != 1 || c[0].Method != "interrupt" || out["pane"] != "%2" {
					t.Errorf("got %s, calls %+v", txt, c)
				}
			}},
		{name: "ack_wake one", tool: "ack_wake", args: map[string]any{"id": "PLACEHOLDER"},
			setup: func(t *testing.T, f *monitortest.Service) { raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput) },
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["count"] != 1.0 || f.Store.Unacked() != nil {
					t.Errorf("got %s", txt)
				}
				a := out["acked"].([]any)[0].(map[string]any)
				if a["acked_by"] != "mcp:table-test" {
					t.Errorf("acked_by = %v", a["acked_by"])
				}
			}},
		{name: "ack_wake all", tool: "ack_wake", args: map[string]any{"all": true},
			setup: func(t *testing.T, f *monitortest.Service) {
				raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput)
				raise(t, f, "%2", "orch-db", api.ReasonAPIError)
			},
			check: func(t *testing.T, f *monitortest.Service, out map[string]any, txt string) {
				if out["count"] != 2.0 {
					t.Errorf("got %s", txt)
				}
			}},
		{name: "ack_wake unknown", tool: "ack_wake", args: map[string]any{"id": "w0000000099-x"}, wantErr: "call list_wakes"},
		{name: "ack_wake neither", tool: "ack_wake", args: map[string]any{}, wantErr: "not both and not neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fixture(t)
			if tt.policy != nil {
				setPolicy(t, f, *tt.policy, nil)
			}
			if tt.setup != nil {
				tt.setup(t, f)
			}
			for _, k := range []string{"id", "wake"} {
				if tt.args[k] == "PLACEHOLDER" {
					tt.args[k] = f.Store.Unacked()[0].ID
				}
			}
			s := newServer(t, f, tt.opts)
			c := inProcess(t, s, "table-test")
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
			if !res.IsError && res.StructuredContent == nil {
				t.Error("no structured content")
			}
			if tt.check != nil {
				tt.check(t, f, out, txt)
			}
			// Every call, accepted or refused, is audited with its origin.
			var entry *struct{ tool, origin, args, err string }
			for _, e := range f.AuditEntries() {
				if e.Action == "tool_call" && e.Tool == tt.tool {
					entry = &struct{ tool, origin, args, err string }{e.Tool, e.Origin, e.Args, e.Error}
				}
			}
			if entry == nil || entry.origin != "mcp:table-test" || (tt.wantErr != "") != (entry.err != "") {
				t.Errorf("audit entry = %+v", entry)
			}
		})
	}
}

// The rate limit counts actions per pane per minute on the injected clock;
// the service keeps the count, so a refusal is the service's.
func TestInjectRateLimit(t *testing.T) {
	f := fixture(t)
	now := t0
	setPolicy(t, f, api.PolicyConfig{PerMinute: 2}, func() time.Time { return now })
	s := newServer(t, f, Options{})
	c := inProcess(t, s, "rate")
	args := map[string]any{"session": "orch-db", "message": "x"}
	for i := range 2 {
		if res, _ := call(t, c, "inject_guidance", args); res.IsError {
			t.Fatalf("call %d refused: %s", i, text(res))
		}
	}
	res, _ := call(t, c, "interrupt", map[string]any{"session": "orch-db"})
	if !res.IsError || !strings.Contains(text(res), "rate limit: 2 MCP actions on pane %2 in the last minute (mcp.inject_per_minute is 2); try again in 1m0s") {
		t.Fatalf("third action: %s", text(res))
	}
	// Another pane has its own budget; a minute later the first has too.
	if res, _ := call(t, c, "inject_guidance", map[string]any{"session": "orch-auth", "message": "x"}); res.IsError {
		t.Fatalf("other pane refused: %s", text(res))
	}
	now = now.Add(time.Minute)
	if res, _ := call(t, c, "inject_guidance", args); res.IsError {
		t.Fatalf("after a minute: %s", text(res))
	}
	if n := len(f.Calls()); n != 4 {
		t.Fatalf("%d actions reached the service, want 4", n)
	}
}

// Internal failures of the service are protocol errors, not tool errors.
func TestServiceFailureIsAnError(t *testing.T) {
	f := fixture(t)
	f.Fail("snapshot", errors.New("socket gone"))
	c := inProcess(t, newServer(t, f, Options{}), "fail")
	req := map[string]any{}
	_, err := callErr(c, "status", req)
	if err == nil || !strings.Contains(err.Error(), "socket gone") {
		t.Fatalf("err = %v", err)
	}
	var entries int
	for _, e := range f.AuditEntries() {
		if e.Tool == "status" && strings.Contains(e.Error, "socket gone") {
			entries++
		}
	}
	if entries != 1 {
		t.Fatalf("failed call not audited: %+v", f.AuditEntries())
	}
}

func TestCoarseState(t *testing.T) {
	for _, s := range fixtureSessions() {
		want := map[string]string{"%1": "blocked", "%2": "active", "%3": "active", "%4": "complete", "%5": "failed"}[s.Pane]
		if got := rowOf(s).Status; got != want {
			t.Errorf("%s (%s): %s, want %s", s.Pane, s.State, got, want)
		}
	}
	raw, _ := json.Marshal(api.States())
	if string(raw) != `["working","idle","awaiting_input","error","error_loop","rate_limited","exited","unknown"]` {
		t.Errorf("states = %s", raw)
	}
}
