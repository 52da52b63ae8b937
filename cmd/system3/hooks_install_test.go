package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hooksInstall is one agent's `system3 hooks install` case: a settings
// file the user already has (existing, at file under the agent's home,
// named by homeEnv) whose other content (keep) the install keeps, what
// the install says (said), how many of system3's entries the file then
// holds (entries), and where --project DIR writes (project, under DIR).
type hooksInstall struct {
	agent, homeEnv, file, existing string
	keep, said                     []string
	entries                        int
	project                        string
}

// checkHooksInstall installs c's hooks into a home that already has the
// user's settings, checks the user's content is kept and the hooks are
// written once, that a second install changes nothing, and that
// --project writes the project's file.
func checkHooksInstall(t *testing.T, c hooksInstall) {
	t.Helper()
	const cmdline = "/opt/system3 hook"
	home := t.TempDir()
	path := filepath.Join(home, c.file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(c.existing), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{c.homeEnv: home}
	code, out, errOut := invoke(t, env, "hooks", "install", "--agent", c.agent, "--command", cmdline)
	if code != 0 {
		t.Fatalf("install --agent %s: exit %d, %s\n%s", c.agent, code, errOut, out)
	}
	for _, s := range c.said {
		if !strings.Contains(out, s) {
			t.Fatalf("install --agent %s does not say %q:\n%s", c.agent, s, out)
		}
	}
	b, _ := os.ReadFile(path)
	for _, k := range c.keep {
		if !strings.Contains(string(b), k) {
			t.Fatalf("install --agent %s lost %s:\n%s", c.agent, k, b)
		}
	}
	if n := strings.Count(string(b), cmdline); n != c.entries {
		t.Fatalf("install --agent %s wrote %d entries, want %d:\n%s", c.agent, n, c.entries, b)
	}
	if code, out, _ = invoke(t, env, "hooks", "install", "--agent", c.agent, "--command", cmdline); code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("install --agent %s again: exit %d\n%s", c.agent, code, out)
	}
	proj := t.TempDir()
	if code, _, errOut = invoke(t, nil, "hooks", "install", "--agent", c.agent, "--project", proj, "--command", cmdline); code != 0 {
		t.Fatalf("install --agent %s --project: exit %d, %s", c.agent, code, errOut)
	}
	if _, err := os.Stat(filepath.Join(proj, c.project)); err != nil {
		t.Fatalf("install --agent %s --project: %v", c.agent, err)
	}
}
