package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/monitor/hooks"
)

// system3 hooks print/install --agent opencode: system3's plugin, naming
// the hook command, written whole into $XDG_CONFIG_HOME/opencode/plugins
// (or DIR/.opencode/plugins); a second install changes nothing, and a
// system3.js the user wrote is refused and kept.
func TestHooksForOpencode(t *testing.T) {
	code, out, errOut := invoke(t, nil, "hooks", "print", "--agent", "opencode", "--command", "/opt/system3 hook")
	want, _ := hooks.OpencodePlugin("/opt/system3 hook")
	if code != 0 || out != string(want) {
		t.Fatalf("print: exit %d: %s\n%s", code, errOut, out)
	}

	checkHooksInstall(t, hooksInstall{agent: "opencode", homeEnv: "XDG_CONFIG_HOME", file: filepath.Join("opencode", "plugins", "system3.js"),
		said:    []string{"hooks added for " + strings.Join(hooks.OpencodeEvents, ", "), "from its next start"},
		entries: 1, project: filepath.Join(".opencode", "plugins", "system3.js")})

	home := t.TempDir()
	path := filepath.Join(home, "opencode", "plugins", "system3.js")
	mine := "export const Mine = async () => ({})\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = invoke(t, map[string]string{"XDG_CONFIG_HOME": home}, "hooks", "install", "--agent", "opencode", "--command", "/opt/system3 hook")
	if code == 0 || !strings.Contains(errOut, "system3 did not write it") {
		t.Fatalf("install over the user's system3.js: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(path); string(b) != mine {
		t.Fatalf("the user's system3.js was changed:\n%s", b)
	}
}
