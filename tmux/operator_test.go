package tmux_test

import (
	"context"
	osexec "os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
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

func TestArgv(t *testing.T) {
	t.Setenv(tmux.BinEnv, "")
	for _, c := range []struct {
		srv  tmux.Server
		args []string
		want []string
	}{
		{tmux.Server{}, []string{"list-panes", "-a"}, []string{"tmux", "list-panes", "-a"}},
		{tmux.Server{Name: "work"}, nil, []string{"tmux", "-L", "work"}},
		{tmux.Server{Path: "/tmp/my dir/sock", Bin: "/opt/tmux"}, []string{"capture-pane", "-p"},
			[]string{"/opt/tmux", "-S", "/tmp/my dir/sock", "capture-pane", "-p"}},
	} {
		if got := c.srv.Argv(c.args...); !slices.Equal(got, c.want) {
			t.Errorf("%v.Argv(%q) = %q, want %q", c.srv, c.args, got, c.want)
		}
	}
	t.Setenv(tmux.BinEnv, "/opt/tmux-3.5a/tmux")
	if got, want := (tmux.Server{Path: "/s"}).Argv("ls"), []string{"/opt/tmux-3.5a/tmux", "-S", "/s", "ls"}; !slices.Equal(got, want) {
		t.Errorf("with %s set: %q, want %q", tmux.BinEnv, got, want)
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
	// to srv's main session, made by the tmux under test: tmux 3.8's
	// server does not take a 3.3a client.
	term := tmuxtest.NewServer(t, "env", "-u", "TMUX", tmuxtest.Bin(), "-S", srv.Path, "attach", "-t", "main")
	clientSession := func() string {
		out, err := tmuxOut(ctx, srv, "list-clients", "-F", "#{client_session}")
		if err != nil {
			return ""
		}
		return strings.TrimSpace(out)
	}
	testkit.WaitFor(t, 10*time.Second, "the client in session main", func() bool { return clientSession() == "main" })

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
	testkit.WaitFor(t, 10*time.Second, "the client in session work", func() bool { return clientSession() == "work" })
	if err := op.DisplayMessage(ctx, "wake #{pane_id}: orch-a needs you"); err != nil {
		t.Fatalf("DisplayMessage: %v", err)
	}
	// The message is on the attached terminal's status line, verbatim.
	testkit.WaitFor(t, 10*time.Second, "the message on the status line", func() bool {
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

func TestEnclosingServer(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tt := range []struct {
		name string
		env  map[string]string
		want tmux.Server
		ok   bool
		cmd  string
	}{
		{"outside tmux", map[string]string{}, tmux.Server{}, false, "tmux"},
		{"default server", map[string]string{"TMUX": "/tmp/tmux-1000/default,77,0"}, tmux.Server{}, true, "tmux"},
		{"-L name", map[string]string{"TMUX": "/tmp/tmux-1000/work,77,0"}, tmux.Server{Name: "work"}, true, "tmux -L work"},
		{"TMUX_TMPDIR", map[string]string{"TMUX": "/run/t/tmux-1000/w2,1,2", "TMUX_TMPDIR": "/run/t"}, tmux.Server{Name: "w2"}, true, "tmux -L w2"},
		{"-S path", map[string]string{"TMUX": "/home/me/my sock,77,0"}, tmux.Server{Path: "/home/me/my sock"}, true, "tmux -S '/home/me/my sock'"},
		{"other uid's dir", map[string]string{"TMUX": "/tmp/tmux-0/work,77,0"}, tmux.Server{Path: "/tmp/tmux-0/work"}, true, "tmux -S /tmp/tmux-0/work"},
	} {
		got, ok := tmux.EnclosingServer(1000, env(tt.env))
		if got != tt.want || ok != tt.ok || got.Command() != tt.cmd {
			t.Errorf("%s: %+v %v %q, want %+v %v %q", tt.name, got, ok, got.Command(), tt.want, tt.ok, tt.cmd)
		}
	}
}
