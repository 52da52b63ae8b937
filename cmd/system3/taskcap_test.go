package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `system3 tasks` used to print a 3 MB subject as one 3 MB line (1 MB here,
// to stay quick under -race).
func TestTasksCapsHugeSubject(t *testing.T) {
	root := t.TempDir()
	// The file stays under the reader's 4 MB limit.
	big, desc := strings.Repeat("s", 1<<20), strings.Repeat("d", 256<<10)
	dir := filepath.Join(root, "BIG")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	task, _ := json.Marshal(map[string]any{"id": "1", "subject": big, "description": desc, "status": "in_progress", "activeForm": "Working"})
	if err := os.WriteFile(filepath.Join(dir, "1.json"), task, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SYSTEM3_TASKS_DIR": root, "SYSTEM3_TODOS_DIR": filepath.Join(root, "no-todos")}
	for _, args := range [][]string{{"tasks"}, {"tasks", "BIG"}, {"tasks", "--json"}} {
		start := time.Now()
		code, out, errOut := invoke(t, env, args...)
		t.Logf("%v: %d bytes in %s", args, len(out), time.Since(start).Round(time.Millisecond))
		if code != 0 || len(out) > 16<<10 || !strings.Contains(out, "… (+") {
			t.Fatalf("%v: exit %d, %d bytes, stderr %q; want a short report with the marker", args, code, len(out), errOut)
		}
	}
	code, out, errOut := invoke(t, env, "tasks", "BIG", "--task", "1", "--full")
	if code != 0 || !strings.Contains(out, big) || !strings.Contains(out, desc) {
		t.Fatalf("--task 1 --full: exit %d, %d bytes, stderr %q; want the subject and description whole", code, len(out), errOut)
	}
	code, out, _ = invoke(t, env, "tasks", "BIG", "--task", "1", "--json")
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc["subject"] != big {
		t.Fatalf("--task 1 --json: exit %d, not the task whole", code)
	}
	if code, _, errOut := invoke(t, env, "tasks", "BIG", "--task", "9"); code == 0 || !strings.Contains(errOut, `no task "9"`) {
		t.Fatalf("--task 9: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := invoke(t, env, "tasks", "--task", "1"); code == 0 || !strings.Contains(errOut, "--task needs the task's list") {
		t.Fatalf("--task without a list: exit %d, stderr %q", code, errOut)
	}
}
