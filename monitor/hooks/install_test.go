package hooks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

const testCmd = "/usr/local/bin/system3 hook"

func TestSettings(t *testing.T) {
	b, err := Settings(testCmd)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string][]group
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc) != 1 || len(doc["hooks"]) != len(Events) {
		t.Fatalf("settings = %s", b)
	}
	for _, e := range Events {
		g := doc["hooks"][e]
		timeout := HookTimeout
		if e == api.PermissionRequest {
			timeout = PermissionTimeout // held while the policy asks
		}
		if len(g) != 1 || g[0].Matcher != "" || len(g[0].Hooks) != 1 || g[0].Hooks[0] != (command{Type: "command", Command: testCmd, Timeout: timeout}) {
			t.Fatalf("%s: %+v", e, g)
		}
	}
	if b, _ := Settings("a && b > c"); !bytes.Contains(b, []byte(`"a && b > c"`)) {
		t.Fatalf("command escaped: %s", b)
	}
	if _, err := Settings(" "); err == nil {
		t.Fatal("empty command accepted")
	}
}

func copyFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(p, b, 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInstallKeepsExistingHooksAndKeys(t *testing.T) {
	p := copyFixture(t, "existing.json")
	before, _ := os.ReadFile(p)
	res, err := Install(p, testCmd)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || !slices.Equal(res.Added, Events) || res.Backup == "" {
		t.Fatalf("result = %+v", res)
	}
	if b, err := os.ReadFile(res.Backup); err != nil || !bytes.Equal(b, before) {
		t.Fatalf("backup differs from the old file (%v)", err)
	}
	after, _ := os.ReadFile(p)
	var doc struct {
		Model       string              `json:"model"`
		Permissions map[string][]string `json:"permissions"`
		Env         map[string]string   `json:"env"`
		Hooks       map[string][]group  `json:"hooks"`
		Order       []string            `json:"-"`
	}
	if err := json.Unmarshal(after, &doc); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, after)
	}
	if doc.Model != "opus" || doc.Env["FOO"] != "1.50" || doc.Permissions["allow"][0] != "Bash(make test)" {
		t.Fatalf("other keys lost:\n%s", after)
	}
	pre := doc.Hooks["PreToolUse"]
	if len(pre) != 2 || pre[0].Matcher != "Bash" || pre[0].Hooks[0].Command != "~/bin/guard.sh" || pre[0].Hooks[0].Timeout != 10 || pre[1].Hooks[0].Command != testCmd {
		t.Fatalf("PreToolUse = %+v", pre)
	}
	if pc := doc.Hooks["PostCompact"]; len(pc) != 1 || pc[0].Hooks[0].Command != "notify-send compacted" {
		t.Fatalf("PostCompact = %+v", pc)
	}
	// Keys keep their order: model first, env last, hooks where it was.
	s := string(after)
	if !(strings.Index(s, `"model"`) < strings.Index(s, `"permissions"`) && strings.Index(s, `"permissions"`) < strings.Index(s, `"hooks"`) &&
		strings.Index(s, `"hooks"`) < strings.Index(s, `"env"`)) {
		t.Fatalf("key order changed:\n%s", s)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode = %v", fi.Mode())
	}
	// The diff adds lines only: nothing of the user's was removed.
	for l := range strings.SplitSeq(res.Diff, "\n") {
		if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---") && strings.TrimSpace(strings.TrimPrefix(l, "-")) != "]" {
			t.Errorf("diff removes %q", l)
		}
	}
	if !strings.Contains(res.Diff, `+            "command": "`+testCmd+`",`) {
		t.Fatalf("diff:\n%s", res.Diff)
	}

	// Idempotent: a second run changes nothing and backs nothing up.
	res2, err := Install(p, testCmd)
	if err != nil || res2.Changed || res2.Backup != "" || res2.Diff != "" {
		t.Fatalf("second install = %+v, %v", res2, err)
	}
	if again, _ := os.ReadFile(p); !bytes.Equal(again, after) {
		t.Fatal("second install changed the file")
	}
	if m, _ := filepath.Glob(p + ".system3-backup-*"); len(m) != 1 {
		t.Fatalf("backups = %v", m)
	}
}

func TestInstallCompletesAPartialInstall(t *testing.T) {
	p := filepath.Join(t.TempDir(), "settings.json")
	partial := `{"hooks":{"Stop":[{"matcher":"","hooks":[{"type":"command","command":"` + testCmd + `"}]}]}}`
	if err := os.WriteFile(p, []byte(partial), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := Install(p, testCmd)
	if err != nil || slices.Contains(res.Added, api.Stop) || len(res.Added) != len(Events)-1 {
		t.Fatalf("install = %+v, %v", res, err)
	}
	var doc struct{ Hooks map[string][]group }
	b, _ := os.ReadFile(p)
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Hooks[api.Stop]) != 1 {
		t.Fatalf("Stop = %+v (%v)", doc.Hooks[api.Stop], err)
	}
}

func TestInstallCreatesMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "proj", ".claude", "settings.local.json")
	res, err := Install(p, testCmd)
	if err != nil || !res.Changed || res.Backup != "" {
		t.Fatalf("install = %+v, %v", res, err)
	}
	b, _ := os.ReadFile(p)
	want, _ := Settings(testCmd)
	var got, exp any
	json.Unmarshal(b, &got)
	json.Unmarshal(want, &exp)
	if testkit.MustJSON(t, got) != testkit.MustJSON(t, exp) {
		t.Fatalf("created:\n%s", b)
	}
}

func TestInstallRefusesInvalidFiles(t *testing.T) {
	for _, tt := range []struct{ fixture, content, want string }{
		{fixture: "comments.json", want: "not a valid JSON settings object"},
		{fixture: "invalid.json", want: "line 4"},
		{content: `["not", "an", "object"]`, want: "not a JSON object"},
		{content: `{"hooks": []}`, want: `"hooks" is not a JSON object`},
		{content: `{"hooks": {"Stop": {"matcher": ""}}}`, want: `"hooks.Stop" is not an array`},
		{content: `{"a": 1} {"b": 2}`, want: "text follows"},
	} {
		t.Run(tt.fixture+tt.content, func(t *testing.T) {
			var p string
			if tt.fixture != "" {
				p = copyFixture(t, tt.fixture)
			} else {
				p = filepath.Join(t.TempDir(), "settings.json")
				os.WriteFile(p, []byte(tt.content), 0o600)
			}
			before, _ := os.ReadFile(p)
			res, err := Install(p, testCmd)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "nothing was changed") {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if res.Changed || res.Backup != "" {
				t.Fatalf("result = %+v", res)
			}
			if after, _ := os.ReadFile(p); !bytes.Equal(after, before) {
				t.Fatal("the file changed")
			}
			if m, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "*")); len(m) != 1 {
				t.Fatalf("files left behind: %v", m)
			}
		})
	}
}

func TestPlanChangesNothing(t *testing.T) {
	p := copyFixture(t, "existing.json")
	before, _ := os.ReadFile(p)
	res, merged, err := Plan(p, testCmd)
	if err != nil || !res.Changed || res.Diff == "" || res.Backup != "" || len(merged) == 0 {
		t.Fatalf("plan = %+v, %v", res, err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(after, before) {
		t.Fatal("Plan changed the file")
	}
}

func TestDiff(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n"
	new := "a\nX\nb\nc\nd\ne\nf\ng\nh\ni\nY\nk\n"
	want := `--- f
+++ f
@@ -1,4 +1,5 @@
 a
+X
 b
 c
 d
@@ -7,5 +8,5 @@
 g
 h
 i
-j
+Y
 k
`
	if got := Diff("f", old, new); got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	if got := Diff("f", "", "x\n"); got != "--- f\n+++ f\n@@ -0,0 +1,1 @@\n+x\n" {
		t.Fatalf("diff of a new file:\n%s", got)
	}
}

// A PermissionRequest's decision is printed as Claude Code reads it.
func TestPermissionReplyOutput(t *testing.T) {
	for _, tt := range []struct{ behavior, message, want string }{
		{api.Allow, "ignored", `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}` + "\n"},
		{api.Deny, "Never force-push.", `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"Never force-push."}}}` + "\n"},
		{"ask", "", ""},
	} {
		if got := string(PermissionReply(tt.behavior, tt.message).Output()); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.behavior, got, tt.want)
		}
	}
}

// A tool call's decision is printed in the words of the agent that asked:
// Claude Code's and Codex's PermissionRequest as PermissionReply, the
// Gemini CLI's BeforeTool with a top-level decision, where no decision
// is "ask" (Gemini then shows its own dialog), GitHub Copilot CLI's
// permissionRequest with a top-level behavior, where no decision is
// nothing (Copilot then shows its own dialog).
func TestDecisionReplyOutput(t *testing.T) {
	for _, tt := range []struct{ event, behavior, message, want string }{
		{api.PermissionRequest, api.Deny, "No.", `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"No."}}}` + "\n"},
		{api.PermissionRequest, "", "", ""},
		{api.BeforeTool, api.Allow, "ignored", `{"decision":"allow"}` + "\n"},
		{api.BeforeTool, api.Deny, "Never force-push.", `{"decision":"deny","reason":"Never force-push."}` + "\n"},
		{api.BeforeTool, api.Deny, " ", `{"decision":"deny","reason":"The request was denied."}` + "\n"},
		{api.BeforeTool, "", "", `{"decision":"ask"}` + "\n"},
		{api.BeforeTool, "ask", "", `{"decision":"ask"}` + "\n"},
		{api.CopilotPermissionRequest, api.Allow, "ignored", `{"behavior":"allow"}` + "\n"},
		{api.CopilotPermissionRequest, api.Deny, "Never force-push.", `{"behavior":"deny","message":"Never force-push."}` + "\n"},
		{api.CopilotPermissionRequest, api.Deny, "", `{"behavior":"deny","message":"The request was denied."}` + "\n"},
		{api.CopilotPermissionRequest, "", "", ""},
		{api.CopilotPermissionRequest, "ask", "", ""},
	} {
		r := DecisionReply(tt.event, tt.behavior, tt.message)
		if got := string(r.Output()); got != tt.want {
			t.Errorf("%s %s: %q, want %q", tt.event, tt.behavior, got, tt.want)
		}
		if d := r.Permission(); tt.want != "" && (d == nil || (tt.behavior != "" && d.Behavior != tt.behavior)) {
			t.Errorf("%s %s: Permission() = %+v", tt.event, tt.behavior, d)
		}
	}
}

// The Gemini CLI's settings get one BeforeTool group: the tools Gemini
// asks about, system3 by name, a minute in milliseconds. Merging keeps a
// group of the user's for some of those tools, and adds system3's once.
func TestGeminiSettingsMerge(t *testing.T) {
	b, err := SettingsFor(testCmd, GeminiEvents)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hooks":{"BeforeTool":[{"matcher":"` + GeminiMatcher + `","hooks":[{"name":"system3","type":"command","command":"` + testCmd + `","timeout":60000}]}]}}`
	if string(b) != want {
		t.Fatalf("settings:\n%s\nwant\n%s", b, want)
	}
	old := []byte(`{"general": {"vimMode": true}, "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "` + testCmd + `"}]}]}}`)
	merged, added, err := MergeFor(old, testCmd, GeminiEvents)
	if err != nil || !slices.Equal(added, []string{api.BeforeTool}) {
		t.Fatalf("merge: %v, added %v", err, added)
	}
	var doc struct {
		General map[string]bool    `json:"general"`
		Hooks   map[string][]group `json:"hooks"`
	}
	if err := json.Unmarshal(merged, &doc); err != nil || !doc.General["vimMode"] || len(doc.Hooks[api.BeforeTool]) != 2 || doc.Hooks[api.BeforeTool][1].Matcher != GeminiMatcher {
		t.Fatalf("merged (%v):\n%s", err, merged)
	}
	if again, added, err := MergeFor(merged, testCmd, GeminiEvents); err != nil || len(added) != 0 || !bytes.Equal(again, merged) {
		t.Fatalf("merged again: %v, added %v", err, added)
	}
	// The matcher is a regular expression of whole tool names.
	re := regexp.MustCompile(GeminiMatcher)
	for name, asks := range map[string]bool{"run_shell_command": true, "write_file": true, "replace": true, "web_fetch": true, "activate_skill": true,
		"mcp_github_get_issue": true, "read_file": false, "glob": false, "google_web_search": false, "ask_user": false, "run_shell_commandx": false} {
		if re.MatchString(name) != asks {
			t.Errorf("matcher on %s: %v", name, !asks)
		}
	}
}

// GitHub Copilot CLI's settings get flat entries, one per event, each
// running the command with the event's name, a minute for the
// permissionRequest; merging keeps the user's settings and entries, and
// adds system3's once.
func TestCopilotSettingsMerge(t *testing.T) {
	b, err := SettingsFor(testCmd, CopilotEvents)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hooks":{"agentStop":[{"type":"command","bash":"` + testCmd + ` --event agentStop","timeoutSec":5}],` +
		`"permissionRequest":[{"type":"command","bash":"` + testCmd + ` --event permissionRequest","timeoutSec":60}]}}`
	if string(b) != want {
		t.Fatalf("settings:\n%s\nwant\n%s", b, want)
	}
	old := []byte(`{"banner": "never", "trustedFolders": ["/w"], "hooks": {"permissionRequest": [{"type": "command", "bash": "./audit.sh", "timeoutSec": 10}],
  "sessionStart": [{"type": "command", "bash": "echo hi"}]}}`)
	merged, added, err := MergeFor(old, testCmd, CopilotEvents)
	if err != nil || !slices.Equal(added, CopilotEvents) {
		t.Fatalf("merge: %v, added %v", err, added)
	}
	var doc struct {
		Banner  string                    `json:"banner"`
		Trusted []string                  `json:"trustedFolders"`
		Hooks   map[string][]copilotEntry `json:"hooks"`
	}
	if err := json.Unmarshal(merged, &doc); err != nil || doc.Banner != "never" || len(doc.Trusted) != 1 || len(doc.Hooks) != 3 {
		t.Fatalf("merged (%v):\n%s", err, merged)
	}
	if p := doc.Hooks["permissionRequest"]; len(p) != 2 || p[0].Bash != "./audit.sh" || p[1].Bash != testCmd+" --event permissionRequest" || p[1].TimeoutSec != PermissionTimeout {
		t.Fatalf("permissionRequest entries: %+v", p)
	}
	if s := doc.Hooks["sessionStart"]; len(s) != 1 || s[0].Bash != "echo hi" {
		t.Fatalf("the user's sessionStart entry: %+v", s)
	}
	if again, added, err := MergeFor(merged, testCmd, CopilotEvents); err != nil || len(added) != 0 || !bytes.Equal(again, merged) {
		t.Fatalf("merged again: %v, added %v", err, added)
	}
	// Another command is another hook.
	if _, added, err := MergeFor(merged, testCmd+" --state-dir /x", CopilotEvents); err != nil || len(added) != 2 {
		t.Fatalf("another command: %v, added %v", err, added)
	}
	if _, _, err := MergeFor([]byte(`{"hooks": {"agentStop": {"type": "command"}}}`), testCmd, CopilotEvents); err == nil || !strings.Contains(err.Error(), `"hooks.agentStop" is not an array`) {
		t.Fatalf("a hooks entry that is no array: %v", err)
	}
}
