package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// TestParseOpencode: the events of system3's opencode plugin, as opencode
// 1.18.33 put them on its bus, take the names of Claude Code's events
// that say the same.
func TestParseOpencode(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    api.HookEvent
		wantErr string
	}{
		{name: "turn started", in: `{"type":"session.status","properties":{"sessionID":"ses_1","status":{"type":"busy"}},"directory":"/p"}`,
			want: api.HookEvent{Name: api.UserPromptSubmit, SessionID: "ses_1", Cwd: "/p"}},
		{name: "turn started, sent late", in: `{"type":"session.status","properties":{"sessionID":"ses_1","status":{"type":"busy"}},"at":1796000000123}`,
			want: api.HookEvent{Name: api.UserPromptSubmit, SessionID: "ses_1", Received: time.UnixMilli(1796000000123).UTC()}},
		{name: "turn ended", in: `{"type":"session.idle","properties":{"sessionID":"ses_1"},"directory":"/p"}`,
			want: api.HookEvent{Name: api.Stop, SessionID: "ses_1", Cwd: "/p"}},
		{name: "turn failed", in: `{"type":"session.error","properties":{"sessionID":"ses_1","error":{"name":"APIError",
			"data":{"message":"bad request","statusCode":400}}},"directory":"/p"}`,
			want: api.HookEvent{Name: api.StopFailure, SessionID: "ses_1", Cwd: "/p", Error: "api_error", ErrorDetails: "APIError 400: bad request"}},
		{name: "turn failed on a limit", in: `{"type":"session.error","properties":{"sessionID":"s","error":{"name":"APIError","data":{"message":"slow down","statusCode":429}}}}`,
			want: api.HookEvent{Name: api.StopFailure, SessionID: "s", Error: "rate_limited", ErrorDetails: "APIError 429: slow down"}},
		{name: "turn failed on its key", in: `{"type":"session.error","properties":{"sessionID":"s","error":{"name":"ProviderAuthError","data":{"message":"no key"}}}}`,
			want: api.HookEvent{Name: api.StopFailure, SessionID: "s", Error: "auth", ErrorDetails: "ProviderAuthError: no key"}},
		{name: "permission asked", in: `{"type":"permission.asked","properties":{"id":"per_1","sessionID":"ses_1","permission":"bash",
			"patterns":["echo hello"],"metadata":{"command":"echo hello"},"tool":{"messageID":"msg_1","callID":"call_1"}},"directory":"/p"}`,
			want: api.HookEvent{Name: api.Notification, SessionID: "ses_1", Cwd: "/p", NotificationType: "permission_prompt",
				Message: "opencode asks to run bash: echo hello", ToolName: "bash", ToolInput: "echo hello", ToolUseID: "call_1"}},
		{name: "permission asked without metadata", in: `{"type":"permission.asked","properties":{"sessionID":"s","permission":"external_directory",
			"patterns":["/etc/*","/var/*"],"metadata":{}}}`,
			want: api.HookEvent{Name: api.Notification, SessionID: "s", NotificationType: "permission_prompt",
				Message: "opencode asks to run external_directory: /etc/*, /var/*", ToolName: "external_directory", ToolInput: "/etc/*, /var/*"}},
		{name: "an interrupt", in: `{"type":"session.error","properties":{"sessionID":"s","error":{"name":"MessageAbortedError","data":{}}}}`,
			wantErr: "interrupted"},
		{name: "another status", in: `{"type":"session.status","properties":{"sessionID":"s","status":{"type":"retry"}}}`,
			wantErr: `"retry" is not one system3 takes`},
		{name: "another event", in: `{"type":"message.updated","properties":{"sessionID":"s"}}`,
			wantErr: `"message.updated" is not one system3 takes`},
		{name: "no properties", in: `{"type":"session.idle"}`, wantErr: "no \"hook_event_name\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %+v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Parse =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestStamp: an event is stamped with the time its payload gives when
// that is before it was read, and not long before; else when it was read.
func TestStamp(t *testing.T) {
	read := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		gave time.Time
		want time.Time
	}{
		{"none", time.Time{}, read},
		{"queued a second", read.Add(-time.Second), read.Add(-time.Second)},
		{"from the future", read.Add(time.Second), read},
		{"too old to be queued", read.Add(-maxLate - time.Second), read},
	} {
		if got := Stamp(api.HookEvent{Received: tt.gave}, read).Received; !got.Equal(tt.want) {
			t.Errorf("%s: Received = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestOpencodePlugin: the plugin names the command as a JavaScript
// string, whatever it holds, and begins with system3's mark.
func TestOpencodePlugin(t *testing.T) {
	const cmd = `env A='x "y"' /opt/sys\tem3 hook --state-dir '/s & t'`
	b, err := OpencodePlugin(cmd)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, opencodeMark) || strings.Contains(s, "__SYSTEM3_HOOK_COMMAND__") {
		t.Fatalf("plugin:\n%s", s)
	}
	if want := `const COMMAND = "env A='x \"y\"' /opt/sys\\tem3 hook --state-dir '/s & t'";`; !strings.Contains(s, want) {
		t.Fatalf("plugin does not hold %s:\n%s", want, s)
	}
	if _, err := OpencodePlugin(" "); err == nil {
		t.Fatal("an empty command makes a plugin")
	}
}

// TestInstallFile: the plugin is written once, replaced (with a backup)
// when it changes, and a file of its name that system3 did not write is
// left as it was.
func TestInstallFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "opencode", "plugins", OpencodePluginFile)
	v1, _ := OpencodePlugin("/opt/system3 hook")
	res, err := InstallFile(path, v1)
	if err != nil || !res.Changed || res.Backup != "" || !strings.Contains(res.Diff, "+const COMMAND") {
		t.Fatalf("first install: %+v, %v", res, err)
	}
	if res, err := InstallFile(path, v1); err != nil || res.Changed {
		t.Fatalf("the same again: %+v, %v", res, err)
	}
	v2, _ := OpencodePlugin("/usr/bin/system3 hook")
	if res, err := PlanFile(path, v2); err != nil || !res.Changed || !strings.Contains(res.Diff, "+const COMMAND = \"/usr/bin/system3 hook\"") {
		t.Fatalf("plan: %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(v1) {
		t.Fatal("PlanFile changed the file")
	}
	res, err = InstallFile(path, v2)
	if err != nil || !res.Changed || res.Backup == "" {
		t.Fatalf("another command: %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(res.Backup); string(b) != string(v1) {
		t.Fatalf("backup:\n%s", b)
	}
	mine := []byte("export const Mine = async () => ({})\n")
	if err := os.WriteFile(path, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallFile(path, v2); err == nil || !strings.Contains(err.Error(), "system3 did not write it") {
		t.Fatalf("over the user's file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(mine) {
		t.Fatalf("the user's file was changed:\n%s", b)
	}
}
