package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

var actionSnapshot = api.Snapshot{Server: "default", Running: true, Sessions: []api.Session{
	{Pane: "%3", Session: "orch-auth", Target: "orch-auth:0.0", Agent: "claude", State: api.AwaitingInput, Kind: "permission",
		Question: "Do you want to proceed?", Options: []string{"Yes", "Yes, and don’t ask again", "No"}},
	{Pane: "%4", Session: "orch-docs", Target: "orch-docs:0.0", Agent: "claude", State: api.Working},
}}

func TestActionCommands(t *testing.T) {
	tests := []struct {
		args  []string
		stdin string
		code  int
		out   []string
		call  string // the service call, as "method target text/answer"
	}{
		{args: []string{"inject", "--session", "orch-docs", "run the tests"}, out: []string{"sent 13 bytes to orch-docs:0.0 (%4): delivered and verified"},
			call: "inject orch-docs run the tests"},
		{args: []string{"inject", "--pane", "%4", "--urgent", "-"}, stdin: "line one\nline two\n\n", out: []string{"sent 17 bytes", "after Escape"},
			call: "inject %4 line one\nline two"},
		{args: []string{"inject", "--session", "orch-docs", "--no-enter", "draft"}, out: []string{"sent 5 bytes"}, call: "inject orch-docs draft"},
		{args: []string{"answer", "--session", "orch-auth", "yes"}, out: []string{`answered orch-auth:0.0 (%3) with "Yes": pressed 1`}, call: "answer orch-auth yes"},
		{args: []string{"answer", "--session", "orch-auth", "no"}, out: []string{`with "No": pressed Escape`}, call: "answer orch-auth no"},
		{args: []string{"answer", "--pane", "%3", "7"}, code: 1, out: []string{"there is no option 7", `1="Yes"`}},
		{args: []string{"answer", "--session", "orch-docs", "1"}, code: 1, out: []string{"orch-docs:0.0 is working", "not waiting"}},
		{args: []string{"interrupt", "--session", "orch-docs"}, out: []string{"interrupt orch-docs:0.0 (%4): pressed Escape"}, call: "interrupt orch-docs "},
		{args: []string{"inject", "--session", "nope", "hi"}, code: 1, out: []string{`"nope" is not a session or pane`, "system3 status"}},
		{args: []string{"inject", "hi"}, code: 1, out: []string{"--session NAME or --pane ID"}},
		{args: []string{"inject", "--session", "a", "--pane", "%1", "hi"}, code: 1, out: []string{"not both"}},
		{args: []string{"inject", "--session", "orch-docs"}, code: 1, out: []string{`"-" to read it from stdin`}},
		{args: []string{"inject", "--session", "orch-docs", "-"}, stdin: "\n\n", code: 1, out: []string{"the text is empty"}},
		{args: []string{"inject", "--session", "orch-docs", "-"}, stdin: strings.Repeat("x", maxInjectText+1), code: 1, out: []string{"over 1024 KB, and one send types at most 256 KB"}},
		{args: []string{"answer", "--session", "orch-auth"}, code: 1, out: []string{"give one OPTION"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f := useFake(t)
			f.SetSnapshot(actionSnapshot)
			var out, errb bytes.Buffer
			vars := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.StateDir(t)}
			code := run(context.Background(), tt.args, strings.NewReader(tt.stdin), &out, &errb, func(k string) string { return vars[k] })
			all := out.String() + errb.String()
			if code != tt.code {
				t.Fatalf("exit %d, want %d; output %q", code, tt.code, all)
			}
			for _, w := range tt.out {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q: %q", w, all)
				}
			}
			calls := f.Calls()
			if tt.call == "" {
				if len(calls) != 0 {
					t.Errorf("calls = %+v, want none", calls)
				}
				return
			}
			if len(calls) != 1 {
				t.Fatalf("calls = %+v, want one", calls)
			}
			c := calls[0]
			got := c.Method + " " + c.Target.String() + " " + c.Text + c.Answer
			if got != tt.call || c.Origin != "cli" {
				t.Errorf("call = %q (origin %q), want %q", got, c.Origin, tt.call)
			}
			if tt.args[0] == "inject" && c.Urgent != strings.Contains(strings.Join(tt.args, " "), "--urgent") {
				t.Errorf("urgent = %v", c.Urgent)
			}
			if tt.args[0] == "inject" && c.NoEnter != strings.Contains(strings.Join(tt.args, " "), "--no-enter") {
				t.Errorf("no-enter = %v", c.NoEnter)
			}
		})
	}
}

func TestInjectJSONAndUnverified(t *testing.T) {
	f := useFake(t)
	f.SetSnapshot(actionSnapshot)
	f.SetUnverified("the input box did not clear")
	code, out, errOut := invoke(t, nil, "inject", "--json", "--session", "orch-docs", "hello")
	var res api.ActionResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.Delivered || res.Verified || res.Pane != "%4" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	code, out, errOut = invoke(t, nil, "inject", "--session", "orch-docs", "hello")
	if code != 0 || !strings.Contains(out, "delivered, not verified") || !strings.Contains(errOut, "the input box did not clear") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestActionsWithRealMonitors injects into a real pane and answers a real
// prompt on a private tmux server, with the monitors this command starts,
// and finds both in the audit log.
func TestActionsWithRealMonitors(t *testing.T) {
	capture, err := filepath.Abs(filepath.Join("..", "..", "monitor", "testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := tmuxtest.NewServer(t, "cat")
	c := tmux.NewClient(srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A prompt on screen; the terminal echoes the key pressed below it.
	script := "cat '" + capture + "'; exec sleep 600"
	if _, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "orch-deploy", Width: 120, Height: 40, Command: []string{"sh", "-c", script}}); err != nil {
		t.Fatal(err)
	}
	state := testkit.ShortDir(t)
	env := map[string]string{"SYSTEM3_STATE_DIR": state}
	args := func(a ...string) []string { return append(socketArgs(srv), a...) }

	text := "line one: $HOME #{pane_id} 'quoted'\nline two"
	code, out, errOut := invoke(t, env, args("inject", "--session", "main", text)...)
	if code != 0 || !strings.Contains(out, "delivered and verified") {
		t.Fatalf("inject: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	waitPane(t, c, "main", func(s string) bool {
		return strings.Count(s, "line one: $HOME #{pane_id} 'quoted'") == 2 && strings.Count(s, "line two") == 2
	})

	// The prompt may take a moment to be classified after start.
	testkit.Poll(15*time.Second, func() bool {
		code, out, errOut = invoke(t, env, args("answer", "--session", "orch-deploy", "yes")...)
		return code == 0
	})
	if code != 0 || !strings.Contains(out, `with "Yes": pressed 1`) {
		t.Fatalf("answer: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	waitPane(t, c, "orch-deploy", func(s string) bool { return strings.HasSuffix(s, "\n1") })

	entries, err := audit.Read(filepath.Join(state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Action != "inject" || entries[0].Text != text || entries[0].Origin != "cli" || !entries[0].Checked ||
		entries[1].Action != "answer" || entries[1].Keys[0] != "1" || entries[1].Target != "orch-deploy" {
		t.Fatalf("audit entries = %+v", entries)
	}
	if fi, err := os.Stat(filepath.Join(state, audit.File)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

func waitPane(t *testing.T, c *tmux.Client, target string, ok func(string) bool) {
	t.Helper()
	testkit.WaitForValue(t, 10*time.Second, "pane "+target+" to show what is wanted", func() (string, bool) {
		s, err := c.Capture(context.Background(), target, tmux.CaptureOptions{})
		return s, err == nil && ok(s)
	})
}

func TestAuditCommand(t *testing.T) {
	state := testkit.StateDir(t)
	env := map[string]string{"SYSTEM3_STATE_DIR": state}
	code, out, _ := invoke(t, env, "audit")
	if code != 0 || !strings.Contains(out, "nothing audited yet") {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	log := audit.Open(state)
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for _, e := range []api.AuditEntry{
		{Time: at, Origin: "tui", Action: "inject", Target: "orch-a", Pane: "%3", Text: "line 1\n\x1b[31mline 2", Sent: true, Checked: true},
		{Time: at.Add(time.Second), Origin: "mcp:claude-code", Action: "tool_call", Tool: "status", Result: "ok"},
		{Time: at.Add(2 * time.Second), Origin: "cli", Action: "answer", Target: "orch-b", Pane: "%4", Keys: []string{"2"}, Error: "pane is dead"},
		{Time: at.Add(3 * time.Second), Origin: "mcp:x", Action: "inject", Target: "orch-a", Phase: audit.PhaseRefused, Text: "ok \xff\x1b", Error: "the text holds byte 0xff"},
		{Time: at.Add(4 * time.Second), Origin: "cli", Action: "inject", Target: "orch-a", ID: "1", Phase: audit.PhaseAttempt, Text: "hi"},
	} {
		if err := log.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ = invoke(t, env, "audit")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for i, want := range []string{`inject    orch-a (%3) "line 1\n\x1b[31mline 2" ✓ verified`, "tool_call status → ok", "answer    orch-b (%4) keys 2 FAILED: pane is dead",
		`inject    orch-a "ok \xff\x1b" REFUSED: the text holds byte 0xff`, `inject    orch-a "hi" outcome unknown`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want it to contain %q", i, lines[i], want)
		}
	}
	code, out, _ = invoke(t, env, "audit", "--json", "-n", "1")
	var e api.AuditEntry
	if code != 0 || json.Unmarshal([]byte(out), &e) != nil || e.Action != "inject" || e.Phase != audit.PhaseAttempt {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

// TestCLIActionsAreTheOperators: the CLI is the operator, so the MCP rules
// (mcp.allow_sessions, mcp.read_only, mcp.inject_per_minute) do not bind
// it, though its actions pass the same check at the service: here the
// strictest policy refuses every MCP action, and every CLI action, twice
// on one pane, goes through.
func TestCLIActionsAreTheOperators(t *testing.T) {
	f := useFake(t)
	f.SetSnapshot(actionSnapshot)
	p, err := api.NewPolicy(api.PolicyConfig{AllowSessions: []string{"nothing"}, ReadOnly: true, PerMinute: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.SetPolicy(p)
	ctx := context.Background()
	if _, err := f.Inject(ctx, api.InjectRequest{Target: api.Target{Session: "orch-auth"}, Text: "x", Origin: "mcp:x"}); !errors.Is(err, api.ErrRefused) {
		t.Fatalf("MCP inject: %v", err)
	}
	f.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Session: "orch-auth", Pane: "%3"})
	for _, args := range [][]string{
		{"inject", "--session", "orch-auth", "hi"},
		{"answer", "--session", "orch-auth", "yes"},
		{"interrupt", "--session", "orch-auth"},
		{"link", "--session", "orch-auth", "--task-list", "PRD-AUTH"},
		{"ack", "--all"},
	} {
		for i := range 2 {
			var out, errb bytes.Buffer
			vars := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.StateDir(t)}
			if code := run(ctx, args, strings.NewReader(""), &out, &errb, func(k string) string { return vars[k] }); code != 0 {
				t.Fatalf("%s (%d): exit %d: %s%s", strings.Join(args, " "), i+1, code, out.String(), errb.String())
			}
		}
	}
	for _, c := range f.Calls() {
		if c.Origin != "cli" {
			t.Errorf("call %+v is not the CLI's", c)
		}
	}
	if n := len(f.Calls()); n != 8 {
		t.Fatalf("%d pane actions reached the service, want 8: %+v", n, f.Calls())
	}
}
