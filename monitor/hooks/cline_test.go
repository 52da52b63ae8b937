package hooks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// The Cline CLI's payloads (3.0.65, as its hook files got them live: a
// turn's start and end, a shell command before and after it ran) take the
// names system3 keeps them under, with the session cline --id resumes.
func TestParseCline(t *testing.T) {
	cases := []struct {
		file, name, tool, input string
	}{
		{"TaskStart.json", api.UserPromptSubmit, "", ""},
		{"TaskComplete.json", api.Stop, "", ""},
		{"PreToolUse.json", api.ClineToolCall, "run_commands", `{"commands":["echo forbidden-thing"]}`},
		{"PostToolUse.json", api.PostToolUse, "run_commands", ""},
	}
	for _, c := range cases {
		b, err := os.ReadFile(filepath.Join("testdata", "cline", c.file))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if ev.Name != c.name || ev.ToolName != c.tool || ev.ToolInputJSON != c.input || ev.Cwd == "" || !strings.Contains(ev.SessionID, "_") || strings.HasPrefix(ev.SessionID, "conv_") {
			t.Fatalf("%s: %+v", c.file, ev)
		}
		if asks := c.name == api.ClineToolCall; ev.AsksPermission() != asks || ev.PolicyOnly() != asks || ev.CanAllow() == asks {
			t.Fatalf("%s: asks %v, policy only %v, can allow %v", c.file, ev.AsksPermission(), ev.PolicyOnly(), ev.CanAllow())
		}
		if c.name == api.PostToolUse && (ev.ToolResponse == "" || !strings.Contains(ev.ToolInput, "echo hello-probe")) {
			t.Fatalf("%s: %+v", c.file, ev)
		}
	}
	failed := `{"hookName":"tool_result","taskId":"conv_1","sessionContext":{"rootSessionId":"17_abcde"},"tool_result":{"id":"c1","name":"editor","input":{"path":"/p/a.txt"},"output":"","error":"no such file"}}`
	ev, err := Parse([]byte(failed))
	if err != nil || ev.Name != api.PostToolUseFailure || ev.Error != "no such file" || ev.ToolInput != `{"path":"/p/a.txt"}` {
		t.Fatalf("a failed call: %+v, %v", ev, err)
	}
	if tc, ok := ev.ToolCall(); !ok || !tc.Failed || tc.Tool != "editor" {
		t.Fatalf("tool call: %+v", tc)
	}
	// Events system3 does not install are not Cline's to it: such a
	// payload names no event it knows.
	if ev, err := Parse([]byte(`{"hookName":"session_shutdown","taskId":"conv_1"}`)); err != nil || ev.Name != "session_shutdown" {
		t.Fatalf("session_shutdown: %+v, %v", ev, err)
	}
}

// A deny of a Cline tool_call is a cancel with the message, which Cline
// reads; an allow and no decision are the empty reply (Cline's reply
// cannot allow).
func TestClineDecisionReply(t *testing.T) {
	if out := string(DecisionReply(api.ClineToolCall, api.Deny, "Policy: no.").Output()); out != `{"cancel":true,"errorMessage":"Policy: no."}`+"\n" {
		t.Fatalf("deny: %q", out)
	}
	if d := DecisionReply(api.ClineToolCall, api.Deny, "").Permission(); d == nil || d.Behavior != api.Deny || d.Message == "" {
		t.Fatalf("deny without a message: %+v", d)
	}
	for _, b := range []string{api.Allow, api.Ask, ""} {
		if r := DecisionReply(api.ClineToolCall, b, "x"); !r.Empty() {
			t.Fatalf("%q: %+v", b, r)
		}
	}
}

// system3's hook files go beside the user's own, are written once, are
// replaced when the command changes, and a file of their name that is not
// system3's is refused with nothing changed.
func TestInstallCline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "PreToolUse")
	if err := os.WriteFile(own, []byte("#!/bin/sh\necho mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if res, _, err := PlanCline(dir, testCmd); err != nil || !res.Changed || !slices.Equal(res.Added, ClineEvents) || !strings.Contains(res.Diff, "+exec "+testCmd) {
		t.Fatalf("plan: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ClineFile("TaskStart"))); err == nil {
		t.Fatal("the plan wrote a file")
	}
	res, err := InstallCline(dir, testCmd)
	if err != nil || !slices.Equal(res.Added, ClineEvents) || res.Backup != "" {
		t.Fatalf("install: %+v, %v", res, err)
	}
	for _, ev := range ClineEvents {
		p := filepath.Join(dir, ClineFile(ev))
		b, err := os.ReadFile(p)
		fi, _ := os.Stat(p)
		if err != nil || !strings.HasPrefix(string(b), "#!/bin/sh\n"+clineMark+"\n") || !strings.HasSuffix(string(b), "exec "+testCmd+"\n") || fi.Mode().Perm()&0o100 == 0 {
			t.Fatalf("%s: %v\n%s", p, err, b)
		}
	}
	if b, _ := os.ReadFile(own); string(b) != "#!/bin/sh\necho mine\n" {
		t.Fatalf("the user's hook changed: %q", b)
	}
	if res, err := InstallCline(dir, testCmd); err != nil || res.Changed {
		t.Fatalf("again: %+v, %v", res, err)
	}
	if res, err := InstallCline(dir, "/other/system3 hook"); err != nil || len(res.Added) != len(ClineEvents) || res.Backup == "" {
		t.Fatalf("another command: %+v, %v", res, err)
	}

	theirs := filepath.Join(t.TempDir(), "hooks")
	if err := os.MkdirAll(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(theirs, "TaskComplete.sh"), []byte("#!/bin/sh\nnotify-send done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallCline(theirs, testCmd); err == nil || !strings.Contains(err.Error(), "not system3's") {
		t.Fatalf("a user's file of system3's name: %v", err)
	}
	if es, _ := os.ReadDir(theirs); len(es) != 1 {
		t.Fatalf("a refused install wrote %d files", len(es))
	}
	if _, err := ClineScript("a\nb", "TaskStart"); err == nil {
		t.Fatal("a command of two lines was taken")
	}
	var printed strings.Builder
	b, err := ClinePrint(testCmd)
	printed.Write(b)
	if err != nil || strings.Count(printed.String(), "exec "+testCmd) != len(ClineEvents) || !strings.Contains(printed.String(), "==> PreToolUse.sh <==") {
		t.Fatalf("print: %v\n%s", err, b)
	}
}
