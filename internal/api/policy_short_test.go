package api

import "testing"

func TestShortOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"tui":        "tui",
		"mcp:claude": "mcp:claude",
		`socket:pid=4242,exe=/usr/bin/system3 claims "cli"`:                  "cli (pid 4242)",
		`socket:pid=7,exe=/usr/bin/system3 claims "mcp:claude-code"`:         "mcp:claude-code (pid 7)",
		`socket:pid=7,exe=/usr/bin/nc`:                                       "a socket client (pid 7)",
		`socket:pid=4242,agent=claude:987,exe=/usr/bin/system3 claims "cli"`: "cli (pid 4242) run by claude (pid 987)",
	} {
		if got := ShortOrigin(in); got != want {
			t.Errorf("ShortOrigin(%q) = %q, want %q", in, got, want)
		}
	}
}
