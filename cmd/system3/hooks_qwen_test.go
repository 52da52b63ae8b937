package main

import (
	"encoding/json"
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

	checkHooksInstall(t, hooksInstall{agent: "qwen", homeEnv: "QWEN_HOME", file: "settings.json",
		existing: `{"model": {"name": "qwen3-coder"}, "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "say done"}]}]}}`,
		keep:     []string{`"say done"`, `"name": "qwen3-coder"`}, said: []string{"hooks added for " + strings.Join(hooks.QwenEvents, ", "), "disableAllHooks"},
		entries: len(hooks.QwenEvents), project: filepath.Join(".qwen", "settings.json")})
}
