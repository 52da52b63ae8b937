package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/monitor/hooks"
)

// system3 hooks print/install --agent cline: the Cline CLI's hook files,
// one shell script per event, into $CLINE_DIR/hooks (or
// DIR/.clinerules/hooks), beside the user's own hooks, which keep running;
// a second install changes nothing; a file of system3's name that is the
// user's is refused, with nothing changed.
func TestHooksForCline(t *testing.T) {
	const cmdline = "/opt/system3 hook"
	code, out, errOut := invoke(t, nil, "hooks", "print", "--agent", "cline", "--command", cmdline)
	if code != 0 || strings.Count(out, "exec "+cmdline+"\n") != len(hooks.ClineEvents) || !strings.Contains(out, "==> TaskComplete.sh <==") {
		t.Fatalf("print: exit %d: %s\n%s", code, errOut, out)
	}

	home := t.TempDir()
	dir := filepath.Join(home, "hooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "PreToolUse")
	if err := os.WriteFile(mine, []byte("#!/bin/sh\necho mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CLINE_DIR": home}
	code, out, errOut = invoke(t, env, "hooks", "install", "--agent", "cline", "--command", cmdline)
	if code != 0 || !strings.Contains(out, "hooks added for "+strings.Join(hooks.ClineEvents, ", ")) || !strings.Contains(out, "CLINE_SESSION_BACKEND_MODE=local") {
		t.Fatalf("install: exit %d, %s\n%s", code, errOut, out)
	}
	for _, ev := range hooks.ClineEvents {
		if b, err := os.ReadFile(filepath.Join(dir, hooks.ClineFile(ev))); err != nil || !strings.Contains(string(b), "exec "+cmdline) {
			t.Fatalf("%s: %v\n%s", ev, err, b)
		}
	}
	if b, _ := os.ReadFile(mine); string(b) != "#!/bin/sh\necho mine\n" {
		t.Fatalf("the user's hook changed: %q", b)
	}
	if code, out, _ = invoke(t, env, "hooks", "install", "--agent", "cline", "--command", cmdline); code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("install again: exit %d\n%s", code, out)
	}
	proj := t.TempDir()
	if code, _, errOut = invoke(t, nil, "hooks", "install", "--agent", "cline", "--project", proj, "--command", cmdline); code != 0 {
		t.Fatalf("install --project: exit %d, %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(proj, ".clinerules", "hooks", "TaskStart.sh")); err != nil {
		t.Fatalf("install --project: %v", err)
	}

	theirs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(theirs, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(theirs, "hooks", "TaskComplete.sh"), []byte("#!/bin/sh\nnotify-send done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = invoke(t, map[string]string{"CLINE_DIR": theirs}, "hooks", "install", "--agent", "cline", "--command", cmdline)
	if es, _ := os.ReadDir(filepath.Join(theirs, "hooks")); code == 0 || !strings.Contains(errOut, "not system3's") || len(es) != 1 {
		t.Fatalf("a user's TaskComplete.sh: exit %d, %d files, %s", code, len(es), errOut)
	}
}
