package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tmux"
)

// The real dashboard, in tmux, with a host behind the real sshd: the
// remote's agent shows in the table with a HOST column, host:remote in the
// filter keeps only that host's rows, and answering its permission prompt
// with 1 reaches the remote agent through its daemon, which audits it as
// the dashboard's, routed over ssh.
func TestDashboardAcrossHostsOverSSH(t *testing.T) {
	w := newHostsWorld(t)
	startTestAgents(t, w.remote, "", agentSession("permission"))
	cfg, err := os.ReadFile(w.env["SYSTEM3_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	dashCfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(dashCfg, append(cfg, []byte("mcp:\n  listen: 127.0.0.1:0\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SYSTEM3_STATE_DIR": w.env["SYSTEM3_STATE_DIR"], "SYSTEM3_CONFIG": dashCfg,
		"SYSTEM3_TASKS_DIR": w.env["SYSTEM3_TASKS_DIR"], "SYSTEM3_TMUX_SOCKET_PATH": w.env["SYSTEM3_TMUX_SOCKET_PATH"]}
	term, pane := terminal(t, env, "tui")
	ctx := context.Background()
	screen := func() string {
		s, _ := term.Capture(ctx, pane, tmux.CaptureOptions{})
		return s
	}
	waitScreen := func(what string, ok func(string) bool) string {
		t.Helper()
		return testkit.WaitForValue(t, 60*time.Second, "the dashboard to show "+what, func() (string, bool) {
			s := screen()
			return s, ok(s)
		})
	}
	// A table row: the host column first, then the target.
	row := func(s, host, target string) string {
		for _, l := range strings.Split(s, "\n") {
			f := strings.Fields(strings.TrimLeft(l, " ▸"))
			if len(f) >= 2 && f[0] == host && f[1] == target {
				return l
			}
		}
		return ""
	}
	// Its wake too: one that came after the filter is typed would take
	// the status line the filter's message is read from.
	waitScreen("the remote agent waiting, with its host, beside this machine's, and its wake", func(s string) bool {
		return strings.Contains(s, "HOST") && strings.Contains(row(s, "remote", "fa-permission:0.0"), "awaiting") && row(s, "local", "main:0.0") != "" &&
			strings.Contains(s, "awaiting_input  remote:fa-permission:0.0")
	})

	for _, k := range []string{"/", "h", "o", "s", "t", ":", "r", "e", "m", "o", "t", "e", "Enter"} {
		if err := tmuxSendRaw(term, pane, k); err != nil {
			t.Fatal(err)
		}
	}
	// The table narrows while the filter is typed; enter keeps it and
	// selects the first match, which the status line says.
	s := waitScreen("only the remote's rows, the filter kept", func(s string) bool {
		return row(s, "remote", "fa-permission:0.0") != "" && row(s, "local", "main:0.0") == "" &&
			strings.Contains(s, "filter: host:remote · selected remote:fa-permission:0.0")
	})
	if !strings.Contains(row(s, "remote", "fa-permission:0.0"), "▸") {
		// The filter selects its first match; the waiting agent sorts first.
		t.Fatalf("the remote agent is not selected:\n%s", s)
	}
	if err := tmuxSendRaw(term, pane, "1"); err != nil {
		t.Fatal(err)
	}
	waitLeftPrompt(t, w.state, "fa-permission")
	entries, err := audit.Read(filepath.Join(w.state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Action == "answer" && e.Phase == audit.PhaseResult && e.Sent && strings.Contains(e.Origin, `claims "tui via ssh from `) {
			return
		}
	}
	t.Fatalf("the remote audit log lacks the dashboard's answer: %+v", entries)
}
