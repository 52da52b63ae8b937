package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// invoke runs system3 in-process with a private state dir and the given
// extra environment, and returns its exit status and output.
func invoke(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	// A private HOME: no test reads the developer's config, rules or tasks.
	vars := map[string]string{
		"HOME":              t.TempDir(),
		"SYSTEM3_STATE_DIR": testkit.StateDir(t),
	}
	for k, v := range env {
		vars[k] = v
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb, func(k string) string { return vars[k] })
	return code, out.String(), errb.String()
}

func socketArgs(s tmux.Server) []string {
	return []string{"--tmux-socket-path", s.Path}
}

func TestStatusListsPanesOnPrivateServer(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	c := tmux.NewClient(srv)
	ctx := context.Background()
	if _, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "orch-auth", Command: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := invoke(t, nil, append(socketArgs(srv), "status")...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"2 sessions, 2 panes", "orch-auth", "main", "sleep", "unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = invoke(t, nil, append(socketArgs(srv), "status", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var doc statusDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, out)
	}
	if doc.Schema != "system3.status/v2" || !doc.ServerRunning || len(doc.Panes) != 2 {
		t.Fatalf("unexpected document: %+v", doc)
	}
	seen := map[string]bool{}
	for _, p := range doc.Panes {
		seen[p.Session] = true
		if !strings.HasPrefix(p.Pane, "%") || p.PID <= 0 || p.Command != "sleep" || p.Width == 0 {
			t.Errorf("pane fields incomplete: %+v", p)
		}
	}
	if !seen["main"] || !seen["orch-auth"] {
		t.Errorf("sessions = %v, want main and orch-auth", seen)
	}
}

func TestStatusClassifiesPanes(t *testing.T) {
	capture, err := filepath.Abs(filepath.Join("..", "..", "monitor", "testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := tmuxtest.NewServer(t, "sleep", "600")
	c := tmux.NewClient(srv)
	ctx := context.Background()
	pane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "orch-deploy", Width: 120, Height: 40,
		Command: []string{"sh", "-c", "cat '" + capture + "'; exec sleep 600"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitForValue(t, 10*time.Second, "the capture on screen", func() (string, bool) {
		screen, _ := c.Capture(ctx, pane, tmux.CaptureOptions{})
		return screen, strings.Contains(screen, "Esc to cancel")
	})
	code, out, errOut := invoke(t, nil, append(socketArgs(srv), "status", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc statusDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var got *statusPane
	for i := range doc.Panes {
		if doc.Panes[i].Pane == pane {
			got = &doc.Panes[i]
		}
	}
	if doc.Source != "snapshot" {
		t.Errorf("source = %q, want snapshot (no system3 serves this state dir)", doc.Source)
	}
	for _, p := range doc.Panes {
		if p.Since.After(doc.GeneratedAt) {
			t.Errorf("pane %s since %s is later than generated_at %s", p.Pane, p.Since, doc.GeneratedAt)
		}
	}
	if got == nil || got.Agent != "claude" || got.State != "awaiting_input" || got.Kind != "permission" ||
		got.Question != "Do you want to proceed?" || len(got.Options) != 4 || got.Evidence.Rule != "claude.permission" {
		t.Fatalf("pane %s = %+v", pane, got)
	}
	code, out, _ = invoke(t, nil, append(socketArgs(srv), "status")...)
	if code != 0 || !strings.Contains(out, "awaiting_input/permission") || !strings.Contains(out, "Do you want to proceed?") {
		t.Fatalf("text status (exit %d):\n%s", code, out)
	}
}

func TestStatusWithoutServer(t *testing.T) {
	srv := tmuxtest.NewStoppedServer(t)
	code, out, _ := invoke(t, nil, append(socketArgs(srv), "status")...)
	// The hint starts the server that was asked for, not the default one.
	if want := "start one with `tmux -S " + srv.Path + " new -s NAME`"; code != 0 || !strings.Contains(out, "no tmux server is running") || !strings.Contains(out, want) {
		t.Fatalf("exit %d, output %q, want %q", code, out, want)
	}
	code, out, _ = invoke(t, nil, append(socketArgs(srv), "status", "--json")...)
	var doc statusDoc
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.ServerRunning || doc.Panes == nil {
		t.Fatalf("exit %d, document %q", code, out)
	}
}

// Inside tmux with no server flags, status names the enclosing server
// (from $TMUX), not "default tmux server".
func TestStatusNamesTheEnclosingServer(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	code, out, errOut := invoke(t, map[string]string{"TMUX": srv.Path + ",1234,0"}, "status")
	if code != 0 || !strings.HasPrefix(out, "tmux server -S "+srv.Path+": 1 session, 1 pane, no wake needs a person") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestSocketFromEnvironment(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	code, out, errOut := invoke(t, map[string]string{"SYSTEM3_TMUX_SOCKET_PATH": srv.Path}, "status")
	if code != 0 || !strings.Contains(out, "1 session, 1 pane,") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestTasksCommand(t *testing.T) {
	root := filepath.Join(t.TempDir(), "tasks")
	list := filepath.Join(root, "PRD-AUTH-001")
	if err := os.MkdirAll(list, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"1.json": `{"id":"1","subject":"Implement login form","status":"completed","blocks":["2"],"blockedBy":[]}`,
		"2.json": `{"id":"2","subject":"Add session cookies","activeForm":"Adding session cookies","status":"in_progress","blocks":[],"blockedBy":["1"]}`,
		"3.json": `{"id":"3","subject":"Write docs","status":"pending"`, // truncated mid-write
		".lock":  "",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(list, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"SYSTEM3_TASKS_DIR": root}

	code, out, errOut := invoke(t, env, "tasks")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"PRD-AUTH-001", "1/2", "Implement login form", "Adding session cookies", "3.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("tasks output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = invoke(t, env, "tasks", "--json", "PRD-AUTH-001")
	var doc struct {
		Schema string `json:"schema"`
		Lists  []struct {
			ID    string            `json:"id"`
			Tasks []json.RawMessage `json:"tasks"`
		} `json:"lists"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("exit %d, output %q", code, out)
	}
	if doc.Schema != "system3.tasks/v1" || len(doc.Lists) != 1 || doc.Lists[0].ID != "PRD-AUTH-001" || len(doc.Lists[0].Tasks) != 2 {
		t.Fatalf("unexpected document: %s", out)
	}

	code, _, errOut = invoke(t, env, "tasks", "NOPE")
	if code != 1 || !strings.Contains(errOut, `no task list "NOPE"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}

	code, out, _ = invoke(t, map[string]string{"SYSTEM3_TASKS_DIR": filepath.Join(root, "missing")}, "tasks")
	if code != 0 || !strings.Contains(out, "does not exist yet") {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

func TestUsageAndConfigErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(bad, []byte("tmux: [unclosed"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"both sockets", []string{"--tmux-socket", "a", "--tmux-socket-path", "/b", "status"}, "choose one"},
		{"broken config", []string{"--config", bad, "status"}, "fix the file"},
		{"extra argument", []string{"status", "extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := invoke(t, nil, tt.args...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want non-zero and %q", code, errOut, tt.want)
			}
		})
	}
}

// An unknown command used to print the root's help and exit 0 when it came
// with --help or after help, and an unknown subcommand of a group always did.
func TestUnknownCommandFailsEverywhere(t *testing.T) {
	for _, args := range [][]string{
		{"nosuch"}, {"nosuch", "--help"}, {"nosuch", "-h"}, {"help", "nosuch"},
		{"--state-dir", "/tmp", "nosuch", "--help"},
		{"hooks", "nosuch"}, {"hooks", "nosuch", "--help"}, {"help", "hooks", "nosuch"},
		{"outcome", "nosuch"},
	} {
		code, out, errOut := invoke(t, nil, args...)
		if code == 0 || !strings.Contains(errOut, `unknown command "nosuch"`) || out != "" {
			t.Errorf("%q: exit %d, stdout %.60q, stderr %q; want non-zero, no help, unknown command", args, code, out, errOut)
		}
	}
	for _, args := range [][]string{{"stauts"}, {"stauts", "--help"}, {"help", "stauts"}} {
		if code, _, errOut := invoke(t, nil, args...); code == 0 || !strings.Contains(errOut, "did you mean status?") {
			t.Errorf("%q: exit %d, stderr %q; want a suggestion", args, code, errOut)
		}
	}
	// Real commands and groups still show their help.
	for _, args := range [][]string{{"--help"}, {"help"}, {"help", "status"}, {"status", "--help"}, {"help", "hooks", "install"}, {"hooks", "--help"}, {"hooks"}} {
		if code, out, errOut := invoke(t, nil, args...); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%q: exit %d, stdout %.60q, stderr %q; want help", args, code, out, errOut)
		}
	}
}

func TestVersionWorksWithBrokenConfig(t *testing.T) {
	code, out, _ := invoke(t, map[string]string{"SYSTEM3_CONFIG": "/nonexistent/config.yaml"}, "version", "--json")
	var v map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["version"] == "" {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	a := &app{}
	for _, c := range newRootCmd(a).Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		code, out, _ := invoke(t, nil, c.Name(), "--help")
		if code != 0 || !strings.Contains(out, "Usage:") || c.Short == "" {
			t.Errorf("%s --help: exit %d, output %q", c.Name(), code, out)
		}
	}
}

func TestLogWrittenToStateDir(t *testing.T) {
	state := testkit.StateDir(t)
	code, _, _ := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": t.TempDir()}, "--log-level", "debug", "tasks")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	data, err := os.ReadFile(filepath.Join(state, "system3.log"))
	if err != nil || !strings.Contains(string(data), "command start") {
		t.Fatalf("log = %q, %v", data, err)
	}
}

// A flag's value placeholder is one word (pflag takes the first
// `backquoted` text of its usage as the placeholder, so a quoted command
// there would show as "--pane system3 status").
func TestFlagPlaceholdersAreWords(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " \t") {
				t.Errorf("%s --%s shows the placeholder %q", c.CommandPath(), f.Name, name)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&app{}))
}

// Mistyped commands and flags fail with the names they resemble.
func TestDidYouMean(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"stauts"}, `unknown command "stauts" for "system3": did you mean status?`},
		{[]string{"status", "--tmux-sockt", "x"}, "unknown flag: --tmux-sockt; did you mean --tmux-socket?"},
		{[]string{"tasks", "--jsn"}, "unknown flag: --jsn; did you mean --json?"},
		{[]string{"tasks", "--zzzzzz"}, "unknown flag: --zzzzzz (run `system3 tasks --help` for the flags)"},
		{[]string{"--tmux-socket", "/tmp/tmux-0/work", "status"}, "--tmux-socket-path /tmp/tmux-0/work"},
	} {
		code, out, errOut := invoke(t, nil, tt.args...)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q", tt.args, code, out, errOut, tt.want)
		}
	}
}

// With no daemon, status used to print needs_person 0 and no problem, exit
// 0, for a journal that serve and wait refuse to start on. It must report
// what the daemon would.
func TestStatusReportsUnreadableJournal(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	state := testkit.StateDir(t)
	// A directory where the journal should be: unreadable for root too.
	if err := os.Mkdir(filepath.Join(state, "wakes.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SYSTEM3_STATE_DIR": state}
	code, out, errOut := invoke(t, env, append(socketArgs(srv), "status", "--json")...)
	if code == 0 || !strings.Contains(errOut, "cannot read the wake journal") || strings.Contains(out, `"needs_person": 0`) {
		t.Fatalf("status: exit %d, stdout %q, stderr %q; want a failure naming the journal", code, out, errOut)
	}
	wcode, _, werr := invoke(t, env, append(socketArgs(srv), "wait", "--timeout", "1s")...)
	if wcode == 0 || !strings.Contains(werr, "cannot read the wake journal") {
		t.Fatalf("wait: exit %d, stderr %q", wcode, werr)
	}
}

// A journal that cannot be written is a problem the daemon shows; status
// shows it too.
func TestStatusReportsUnwritableJournal(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	state := filepath.Join(t.TempDir(), "state")
	// The state dir is a file: nothing can be written under it.
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state}, append(socketArgs(srv), "status", "--json")...)
	var doc statusDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if !strings.Contains(doc.Problem, "cannot write the wake journal") {
		t.Fatalf("problem = %q, want the journal's", doc.Problem)
	}
}
