package core

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// newApp is an App set up for a private tmux server and its own state dir
// (short enough for a socket path), as a command would build it.
func newApp(t *testing.T, env map[string]string) *App {
	t.Helper()
	a := &App{Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}
	if err := a.Setup(config.Overrides{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func panes(t *testing.T, svc api.Service) []string {
	t.Helper()
	snap, err := svc.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range snap.Sessions {
		out = append(out, s.Pane)
	}
	return out
}

// TestOpenServiceStartsOrAttaches: the first process to open the state
// dir's service runs the monitors itself; the next one attaches to them
// over the socket and sees the same panes; once the first stops, the lock
// is free and a new process runs monitors of its own again.
func TestOpenServiceStartsOrAttaches(t *testing.T) {
	srv := tmuxtest.NewServer(t, "cat")
	stateDir, err := os.MkdirTemp("", "s3c")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateDir) })
	env := map[string]string{"HOME": t.TempDir(), "XDG_CONFIG_HOME": t.TempDir(), "SYSTEM3_STATE_DIR": stateDir, "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	first := newApp(t, env)
	svc1, close1, err := first.openService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, attached := svc1.(*ipc.Client); attached || svc1 == nil {
		t.Fatalf("the first process got %T, want monitors of its own", svc1)
	}
	if first.SocketErr() != nil {
		t.Fatalf("the monitors do not serve the socket: %v", first.SocketErr())
	}
	want := panes(t, svc1)
	if len(want) != 1 {
		t.Fatalf("panes %q, want the server's one", want)
	}

	second := newApp(t, env)
	svc2, close2, err := second.openService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := svc2.(*ipc.Client)
	if !ok {
		t.Fatalf("the second process got %T, want the first one's over the socket", svc2)
	}
	if c.PID() != os.Getpid() {
		t.Fatalf("attached to pid %d, want this process (%d)", c.PID(), os.Getpid())
	}
	if got := panes(t, svc2); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("over the socket: panes %q, want %q", got, want)
	}
	if err := close2(); err != nil {
		t.Fatal(err)
	}
	if err := close1(); err != nil {
		t.Fatalf("stop the monitors: %v", err)
	}

	third := newApp(t, env)
	svc3, close3, err := third.openService(ctx)
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	defer close3()
	if _, attached := svc3.(*ipc.Client); attached || svc3 == nil {
		t.Fatalf("after the first stopped, got %T, want monitors of its own", svc3)
	}
}
