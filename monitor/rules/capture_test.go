package rules

import (
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

func TestRedact(t *testing.T) {
	secrets := []string{
		"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcdefgh",
		"sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789",
		"sk-AbCdEfGhIjKlMnOpQrStUv012345",
		"AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
		"ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
		"xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
		"xoxp-123456789012-abcdef",
		"AKIAIOSFODNN7EXAMPLE",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"glpat-AbCdEfGhIjKlMnOpQrSt",
	}
	for _, sec := range secrets {
		for _, tmpl := range []string{
			"%s",
			"export KEY=%s",
			"│ ANTHROPIC_API_KEY=\"%s\" │",
			"curl -H 'x-api-key: %s' https://api",
			"https://example.com/v1?key=%s&alt=sse",
			"● Bash(echo %s)",
			"%s%s", // two in a row
			"  ⎿  Error: invalid key %s (check your settings)",
		} {
			line := strings.ReplaceAll(tmpl, "%s", sec)
			got, n := Redact("before\n" + line + "\nafter")
			if strings.Contains(got, sec) || n == 0 {
				t.Errorf("%q not redacted: %q (%d)", line, got, n)
			}
			if !strings.HasPrefix(got, "before\n") || !strings.HasSuffix(got, "\nafter") {
				t.Errorf("lines around changed: %q", got)
			}
			// What is left of the secret may say what it was, not more.
			if rest := strings.TrimPrefix(strings.Split(got, "\n")[1], ""); strings.Contains(rest, sec[len(sec)-6:]) {
				t.Errorf("the end of %q survived: %q", sec, rest)
			}
		}
	}
	kv := map[string]string{
		"password=hunter2":                            "hunter2",
		"DB_PASSWORD: 'correct horse'":                "correct",
		`{"client_secret": "s3cr3tvalue"}`:            "s3cr3tvalue",
		"Authorization: Bearer abc.def-ghi_jkl~mno":   "abc.def-ghi_jkl~mno",
		"Authorization: Basic dXNlcjpwYXNzd29yZA==":   "dXNlcjpwYXNzd29yZA==",
		"git clone https://bob:tok3n-value@host/repo": "tok3n-value",
		"token=0123456789abcdef0123456789abcdef":      "0123456789abcdef0123456789abcdef",
		"API_KEY=Zm9vYmFyYmF6cXV4cXV1eGNvcmdl":        "Zm9vYmFyYmF6cXV4cXV1eGNvcmdl",
		"mysql --password=pa55w0rd -h db":             "pa55w0rd",
	}
	for line, sec := range kv {
		got, n := Redact(line)
		if strings.Contains(got, sec) || n == 0 || !strings.Contains(got, Redacted) {
			t.Errorf("%q → %q (%d), want %q redacted", line, got, n, sec)
		}
	}
	// A private key block, whole.
	pem := "cat id\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACDx\n-----END OPENSSH PRIVATE KEY-----\n$ "
	got, _ := Redact(pem)
	if strings.Contains(got, "b3BlbnNz") || strings.Contains(got, "QyNTUx") || !strings.HasSuffix(got, "-----END OPENSSH PRIVATE KEY-----\n$ ") {
		t.Errorf("private key: %q", got)
	}
	// Ordinary agent screens are left as they are.
	for _, keep := range []string{
		"✻ Brewed for 2m 3s · ↓ 1.2k tokens",
		"  ⏸ manual mode on · ? for shortcuts",
		"claude --resume 0f8e3c1a-1b2c-4d5e-8f90-123456789abc",
		"max_tokens: 4096",
		"commit 4f9c2e1d8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
		"Do you want to proceed?",
		"│ ● 1. Allow once",
		"the sk-learn docs; a task-runner",
		"keyboard: us",
	} {
		if got, n := Redact(keep); got != keep || n != 0 {
			t.Errorf("%q changed to %q (%d)", keep, got, n)
		}
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("export ANTHROPIC_API_KEY=sk-ant-api03-AbCdEfGhIjKlMnOpQrSt\n$ ")
	f.Add("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n")
	f.Add("password=x token=0123456789abcdef0123")
	f.Fuzz(func(t *testing.T, s string) {
		got, n := Redact(s)
		if n == 0 && got != s {
			t.Fatalf("changed without counting: %q → %q", s, got)
		}
		if strings.Count(got, "\n") != strings.Count(s, "\n") {
			t.Fatalf("line count changed: %q → %q", s, got)
		}
		if again, _ := Redact(got); again != got {
			t.Fatalf("not stable: %q → %q → %q", s, got, again)
		}
	})
}

func TestParseCapture(t *testing.T) {
	file := FormatCapture([]Field{{"agent", "claude"}, {"version", "2.1.330"}, {"state", "awaiting_input"}, {"kind", "permission"},
		{"rule", "claude.permission"}, {"process", "claude"}, {"note", "line\nbreak"}}, "# a root prompt looks like this\n❯ 1. Yes\n")
	c, err := ParseCapture("x.txt", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if c.State != api.AwaitingInput || c.Kind != "permission" || !c.HasKind || c.Agent != "claude" || c.Process != "claude" ||
		c.Screen != "# a root prompt looks like this\n❯ 1. Yes\n" || len(c.Header) != 7 || c.Header[6].Value != "line break" {
		t.Fatalf("parsed %+v", c)
	}
	if in := c.Input(); in.Screen != c.Screen || len(in.Processes) != 1 || in.Processes[0] != "claude" {
		t.Fatalf("input %+v", in)
	}
	bad := map[string]string{
		CaptureMagic + "\n# state: sleepy\n# ---\n$ ":           "unknown state",
		CaptureMagic + "\n# state: idle\n":                      "no end line",
		CaptureMagic + "\nstate: idle\n# ---\n":                 "start with '#'",
		CaptureMagic + "\n# state: idle\n# kind: auth\n# ---\n": "not one of idle's kinds",
	}
	for data, want := range bad {
		if _, err := ParseCapture("bad.txt", []byte(data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", data, err, want)
		}
	}
	// Without a header the whole file is screen, the label from the name.
	c, err = ParseCapture("dir/permission_bash.txt", []byte("$ x\n"))
	if err != nil || c.Screen != "$ x\n" || c.State != api.AwaitingInput || c.Kind != "permission" || !c.HasKind {
		t.Fatalf("no header: %+v, %v", c, err)
	}
}

func TestLabelFromName(t *testing.T) {
	tests := map[string]string{
		"idle.txt":                 "idle",
		"idle_80x24.txt":           "idle",
		"idle.ansi.txt":            "idle",
		"working_spinner.txt":      "working",
		"permission_bash.txt":      "awaiting_input/permission",
		"api_error_500.txt":        "error/api_error",
		"rate_limited.txt":         "rate_limited",
		"rate_limited_5h.txt":      "rate_limited",
		"error_rate_limited.txt":   "error",
		"auth_error.txt":           "error/auth",
		"interrupted.txt":          "idle/interrupted",
		"awaiting_input_other.txt": "awaiting_input",
		"error_loop_tests.txt":     "error_loop",
		"exited_dead.txt":          "exited",
		"unknown_banner.txt":       "unknown",
		"compacted.txt":            "",
		"prompt.txt":               "",
		"shell-idle.txt":           "",
	}
	for name, want := range tests {
		s, k, hasKind := LabelFromName(name)
		got := string(s)
		if hasKind {
			got += "/" + k
		}
		if got != want {
			t.Errorf("%s: label %q, want %q", name, got, want)
		}
	}
}
