package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/hooks"
)

// system3 hooks print/install --agent qwen: Claude Code's hooks but the
// task events, into $QWEN_HOME/settings.json (or DIR/.qwen/settings.json),
// keeping a user's settings and hooks; a second install changes nothing.
func TestHooksForQwen(t *testing.T) {
	code, out, errOut := invoke(t, nil, "hooks", "print", "--agent", "qwen", "--command", "/opt/system3 hook")
	if code != 0 {
		t.Fatalf("print: exit %d: %s", code, errOut)
	}
	var doc map[string]map[string][]struct {
		Matcher string
		Hooks   []struct {
			Type, Command string
			Timeout       int
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc) != 1 || len(doc["hooks"]) != len(hooks.QwenEvents) || doc["hooks"][api.TaskCreated] != nil {
		t.Fatalf("print --agent qwen: %s", out)
	}
	if g := doc["hooks"][api.PermissionRequest]; len(g) != 1 || g[0].Hooks[0].Command != "/opt/system3 hook" || g[0].Hooks[0].Timeout != hooks.PermissionTimeout {
		t.Fatalf("PermissionRequest: %+v", g)
	}

	qwenHome := t.TempDir()
	path := filepath.Join(qwenHome, "settings.json")
	os.WriteFile(path, []byte(`{"model": {"name": "qwen3-coder"}, "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "say done"}]}]}}`), 0o600)
	env := map[string]string{"QWEN_HOME": qwenHome}
	code, out, errOut = invoke(t, env, "hooks", "install", "--agent", "qwen", "--command", "/opt/system3 hook")
	if code != 0 || !strings.Contains(out, "hooks added for "+strings.Join(hooks.QwenEvents, ", ")) || !strings.Contains(out, "disableAllHooks") {
		t.Fatalf("install: exit %d, %s\n%s", code, errOut, out)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"say done"`) || !strings.Contains(string(b), `"name": "qwen3-coder"`) || strings.Count(string(b), "/opt/system3 hook") != len(hooks.QwenEvents) {
		t.Fatalf("installed:\n%s", b)
	}
	if code, out, _ = invoke(t, env, "hooks", "install", "--agent", "qwen", "--command", "/opt/system3 hook"); code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("again: exit %d\n%s", code, out)
	}
	proj := t.TempDir()
	if code, _, errOut = invoke(t, nil, "hooks", "install", "--agent", "qwen", "--project", proj, "--command", "/opt/system3 hook"); code != 0 {
		t.Fatalf("--project: exit %d, %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(proj, ".qwen", "settings.json")); err != nil {
		t.Fatalf("--project: %v", err)
	}
}
