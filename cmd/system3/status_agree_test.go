package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// status with no daemon classifies every pane as the monitors do: a bash
// running sleep, or a program that reads the terminal (cat, as a REPL
// would), is the shell at work (builtin.shell_job, as docs/rules.md says),
// whether status looked once or asked running monitors; and the two say
// the same of every pane.
func TestStatusAloneAgreesWithTheMonitors(t *testing.T) {
	bash := testkit.LookPath(t, "bash")
	testkit.LookPath(t, "sleep")
	testkit.LookPath(t, "cat")
	srv := tmuxtest.NewServer(t, "sleep", "600")
	c := tmux.NewClient(srv)
	ctx := context.Background()
	jobs := map[string]string{"sleeping": "sleep", "reading": "cat"}
	lines := map[string]string{"sleeping": "sleep 30", "reading": "cat"}
	for name, job := range jobs {
		pane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: name, Width: 100, Height: 30,
			Command: []string{bash, "--norc", "--noprofile", "-i"}, Env: map[string]string{"PS1": "$ "}})
		if err != nil {
			t.Fatal(err)
		}
		// Keys typed before the prompt would show twice.
		testkit.WaitFor(t, 30*time.Second, name+"'s prompt", func() bool {
			text, err := c.Capture(ctx, pane, tmux.CaptureOptions{})
			return err == nil && strings.Contains(text, "$")
		})
		if _, err := c.SendText(ctx, pane, lines[name], tmux.SendOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 30*time.Second, name+" running "+job, func() bool {
			p, err := c.PaneInfo(ctx, pane)
			return err == nil && p.Command == job
		})
	}
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.ShortDir(t), "SYSTEM3_TASKS_DIR": t.TempDir(), "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	alone := statusNow(t, env)
	if alone.Source != "snapshot" {
		t.Fatalf("source %q, want snapshot: no daemon runs yet", alone.Source)
	}
	startTestMonitors(t, env)
	served := statusNow(t, env)
	if served.Source != "daemon" {
		t.Fatalf("source %q, want daemon", served.Source)
	}
	for name, job := range jobs {
		p, ok := paneOf(alone, name)
		if !ok || p.Agent != "shell" || p.State != "working" || p.Evidence.Rule != "builtin.shell_job" {
			t.Errorf("%s (bash running %s) alone: agent %q, state %s/%s, rule %s; want shell working by builtin.shell_job", name, job, p.Agent, p.State, p.Kind, p.Evidence.Rule)
		}
	}
	if len(alone.Panes) != len(served.Panes) {
		t.Fatalf("alone %d panes, served %d", len(alone.Panes), len(served.Panes))
	}
	for _, a := range alone.Panes {
		s, ok := paneOf(served, a.Session)
		if !ok {
			t.Errorf("%s: missing from the daemon's status", a.Session)
			continue
		}
		for _, f := range []struct{ field, alone, served string }{
			{"agent", a.Agent, s.Agent}, {"state", a.State, s.State}, {"kind", a.Kind, s.Kind}, {"rule", a.Evidence.Rule, s.Evidence.Rule},
		} {
			if f.alone != f.served {
				t.Errorf("%s (%s): %s %q alone, %q through the daemon", a.Session, a.Command, f.field, f.alone, f.served)
			}
		}
	}
}
