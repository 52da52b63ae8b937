package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return v
}

func allowList(t *testing.T, settings map[string]any) []string {
	t.Helper()
	perms, _ := settings["permissions"].(map[string]any)
	var out []string
	for _, p := range perms["allow"].([]any) {
		out = append(out, p.(string))
	}
	return out
}

// supervise install sets up Claude Code in one command, keeping every
// other setting; again, it changes nothing; uninstall removes what it
// added and nothing else.
func TestSuperviseInstallAndUninstall(t *testing.T) {
	home := t.TempDir()
	claudeDir := filepath.Join(home, ".claude")
	if err := os.MkdirAll(claudeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(claudeDir, "settings.json")
	claudeJSON := filepath.Join(home, ".claude.json")
	os.WriteFile(settings, []byte(`{"model": "opus", "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Bash(rm:*)"]}, "hooks": {"Stop": []}}`), 0o600)
	os.WriteFile(claudeJSON, []byte(`{"numStartups": 7, "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}}, "projects": {"/src": {"allowedTools": []}}}`), 0o600)
	env := map[string]string{"HOME": home}

	code, out, errOut := invoke(t, env, "--tmux-socket", "work", "supervise", "install", "--command", "/opt/s3/system3")
	if code != 0 {
		t.Fatalf("install: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"changed " + settings, "changed " + claudeJSON, "SKILL.md", "supervise my orchestrators", "system3 supervise uninstall"} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}
	skill, err := os.ReadFile(filepath.Join(claudeDir, "skills", "system3-supervise", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: system3-supervise", "allowed-tools: Bash(/opt/s3/system3 --tmux-socket work wait:*)", "/opt/s3/system3 --tmux-socket work wait --for-agent", "run_in_background: true"} {
		if !strings.Contains(string(skill), want) {
			t.Errorf("skill lacks %q:\n%s", want, skill)
		}
	}
	s := readJSON(t, settings)
	allow := allowList(t, s)
	for _, want := range []string{"Bash(npm test:*)", "Bash(/opt/s3/system3 --tmux-socket work wait:*)", "mcp__system3__wait_for_wake", "mcp__system3__get_session"} {
		if !slices.Contains(allow, want) {
			t.Errorf("allow %q lacks %q", allow, want)
		}
	}
	for _, act := range []string{"Bash(/opt/s3/system3 --tmux-socket work answer:*)", "mcp__system3__answer_prompt"} {
		if slices.Contains(allow, act) {
			t.Errorf("acting %q allowed without --allow-actions", act)
		}
	}
	if s["model"] != "opus" || s["hooks"] == nil || s["permissions"].(map[string]any)["deny"] == nil {
		t.Errorf("other settings lost: %v", s)
	}
	cj := readJSON(t, claudeJSON)
	servers := cj["mcpServers"].(map[string]any)
	sys, _ := servers["system3"].(map[string]any)
	if sys["command"] != "/opt/s3/system3" || !slices.Equal(toStrings(sys["args"]), []string{"--tmux-socket", "work", "mcp"}) || servers["github"] == nil || cj["numStartups"] != float64(7) || cj["projects"] == nil {
		t.Errorf(".claude.json after install: %v", cj)
	}

	// Again: nothing to change, no backup.
	code, out, _ = invoke(t, env, "--tmux-socket", "work", "supervise", "install", "--command", "/opt/s3/system3")
	if code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("second install: exit %d:\n%s", code, out)
	}
	// With actions allowed: the acting rules are added.
	if code, _, errOut := invoke(t, env, "--tmux-socket", "work", "supervise", "install", "--command", "/opt/s3/system3", "--allow-actions"); code != 0 {
		t.Fatalf("install --allow-actions: %q", errOut)
	}
	if allow := allowList(t, readJSON(t, settings)); !slices.Contains(allow, "Bash(/opt/s3/system3 --tmux-socket work answer:*)") || !slices.Contains(allow, "mcp__system3__answer_prompt") {
		t.Errorf("--allow-actions did not allow answering: %q", allow)
	}

	code, out, errOut = invoke(t, env, "--tmux-socket", "work", "supervise", "uninstall", "--command", "/opt/s3/system3")
	if code != 0 {
		t.Fatalf("uninstall: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(claudeDir, "skills", "system3-supervise")); !os.IsNotExist(err) {
		t.Errorf("the skill's directory is still there: %v", err)
	}
	if allow := allowList(t, readJSON(t, settings)); !slices.Equal(allow, []string{"Bash(npm test:*)"}) {
		t.Errorf("allow after uninstall = %q", allow)
	}
	cj = readJSON(t, claudeJSON)
	if servers := cj["mcpServers"].(map[string]any); servers["system3"] != nil || servers["github"] == nil {
		t.Errorf("mcpServers after uninstall = %v", servers)
	}
	if code, out, _ := invoke(t, env, "supervise", "uninstall", "--command", "/opt/s3/system3"); code != 0 || !strings.Contains(out, "nothing to change") {
		t.Errorf("a second uninstall: exit %d:\n%s", code, out)
	}
}

// What is not system3's is never overwritten: a skill file someone else
// wrote, another server named system3, a settings file that is not JSON.
func TestSuperviseInstallRefusesWhatIsNotOurs(t *testing.T) {
	for _, tc := range []struct {
		name, path, content, want string
	}{
		{"a foreign skill", ".claude/skills/system3-supervise/SKILL.md", "my own notes", "was not written by system3"},
		{"another system3 server", ".claude.json", `{"mcpServers": {"system3": {"command": "/usr/bin/other", "args": ["serve"]}}}`, "not this system3"},
		{"settings with a comment", ".claude/settings.json", "{ // mine\n}", "not a valid JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			p := filepath.Join(home, tc.path)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(tc.content), 0o600)
			code, _, errOut := invoke(t, map[string]string{"HOME": home}, "supervise", "install", "--command", "system3")
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want it to say %q", code, errOut, tc.want)
			}
			if b, _ := os.ReadFile(p); string(b) != tc.content {
				t.Errorf("%s was changed to %q", tc.path, b)
			}
		})
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
