package tmux_test

import (
	"context"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tmux/tmuxtest"
)

func TestOperatorFromEnv(t *testing.T) {
	env := map[string]string{"TMUX": "/tmp/tmux-1000/default,4242,0", "TMUX_PANE": "%7"}
	op, ok := tmux.OperatorFromEnv(func(k string) string { return env[k] })
	if !ok || op.Server.Path != "/tmp/tmux-1000/default" || op.Pane != "%7" {
		t.Fatalf("OperatorFromEnv = %+v, %v", op, ok)
	}
	if _, ok := tmux.OperatorFromEnv(func(string) string { return "" }); ok {
		t.Fatal("outside tmux: want no operator")
	}
	get := func(k string) string { return env[k] }
	cases := []struct {
		srv  tmux.Server
		want bool
	}{
		{tmux.Server{}, true}, // the default server from inside tmux is $TMUX's
		{tmux.Server{Path: "/tmp/tmux-1000/default"}, true},
		{tmux.Server{Name: "default"}, true},
		{tmux.Server{Name: "work"}, false},
		{tmux.Server{Path: "/tmp/other"}, false},
	}
	for _, c := range cases {
		if got := op.SameServer(c.srv, 1000, get); got != c.want {
			t.Errorf("SameServer(%v) = %v, want %v", c.srv, got, c.want)
		}
	}
}

func TestAttachCommand(t *testing.T) {
	cases := map[string]string{
		tmux.Server{}.AttachCommand("orch-a:0.1"):                   "tmux attach -t orch-a:0.1",
		tmux.Server{Name: "work"}.AttachCommand("x"):                "tmux -L work attach -t x",
		tmux.Server{Path: "/tmp/my dir/sock"}.AttachCommand("it's"): `tmux -S '/tmp/my dir/sock' attach -t 'it'\''s'`,
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("AttachCommand = %q, want %q", got, want)
		}
	}
}

// TestOperatorSwitchTo attaches a real client (running in a pane of a
// second server, as a terminal would) and moves it to another session's
// pane, then shows it a message.
func TestOperatorSwitchTo(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t, "sleep 600")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := tmux.NewClient(srv)
	target, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "work", Command: []string{"sleep", "600"}, Width: 80, Height: 24})
	if err != nil {
		t.Fatal(err)
	}
	// The "terminal": a pane of another server running a client attached
	// to srv's main session.
	term := tmuxtest.NewServer(t, "env -u TMUX tmux -S "+srv.Path+" attach -t main")
	clientSession := func() string {
		out, err := tmuxOut(ctx, srv, "list-clients", "-F", "#{client_session}")
		if err != nil {
			return ""
		}
		return strings.TrimSpace(out)
	}
	waitUntil(t, func() bool { return clientSession() == "main" })

	panes, err := c.ListPanes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mainPane string
	for _, p := range panes {
		if p.SessionName == "main" {
			mainPane = p.ID
		}
	}
	// What $TMUX says inside srv's main pane.
	pid, _ := tmuxOut(ctx, srv, "display-message", "-p", "#{pid}")
	env := map[string]string{"TMUX": srv.Path + "," + strings.TrimSpace(pid) + ",0", "TMUX_PANE": mainPane}
	op, ok := tmux.OperatorFromEnv(func(k string) string { return env[k] })
	if !ok {
		t.Fatal("no operator")
	}
	if err := op.SwitchTo(ctx, target); err != nil {
		t.Fatalf("SwitchTo: %v", err)
	}
	waitUntil(t, func() bool { return clientSession() == "work" })
	if err := op.DisplayMessage(ctx, "wake #{pane_id}: orch-a needs you"); err != nil {
		t.Fatalf("DisplayMessage: %v", err)
	}
	// The message is on the attached terminal's status line, verbatim.
	waitUntil(t, func() bool {
		out, _ := tmux.NewClient(term).Capture(ctx, "%0", tmux.CaptureOptions{})
		return strings.Contains(out, "wake #{pane_id}: orch-a needs you")
	})
	if err := op.SwitchTo(ctx, "%999"); err == nil {
		t.Fatal("SwitchTo a missing pane: want an error")
	}
}

func tmuxOut(ctx context.Context, s tmux.Server, args ...string) (string, error) {
	out, err := osexec.CommandContext(ctx, tmuxtest.Bin(), append([]string{"-S", s.Path}, args...)...).Output()
	return string(out), err
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
