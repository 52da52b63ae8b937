package ipc

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// startMonitors runs a real tmux watcher and supervisor on srv until the
// test ends.
func startMonitors(t *testing.T, srv tmux.Server) *monitor.Supervisor {
	t.Helper()
	eng, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := wake.Open(wake.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	watcher := tmux.NewWatcher(srv, tmux.WatcherOptions{})
	client := tmux.NewClient(srv)
	sup, err := monitor.New(monitor.Config{Server: srv.String(), Tmux: client, Send: client, Events: watcher.Events(), Rules: eng,
		Wakes: store, Audit: audit.Open(t.TempDir()), HeartbeatEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return watcher.Run(gctx) })
	g.Go(func() error { return sup.Run(gctx) })
	t.Cleanup(func() {
		cancel()
		if err := g.Wait(); err != nil && err != context.Canceled {
			t.Errorf("monitors: %v", err)
		}
		store.Close()
	})
	return sup
}

// TestWatchPreviewFollowsARealPane: over the socket, the preview stream of
// a pane of a private tmux server, watched by real monitors, sends the
// screen at once, then nothing while the pane is idle; a line the pane
// prints within a second; screens while the pane keeps printing, more
// often than the watcher reports it (once a second); and its last screen
// once it stops.
func TestWatchPreviewFollowsARealPane(t *testing.T) {
	srv := tmuxtest.NewServer(t)
	sup := startMonitors(t, srv)
	c := dial(t, serve(t, sup).path)
	tc := tmux.NewClient(srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pane string
	testkit.WaitFor(t, 10*time.Second, "the pane to be watched", func() bool {
		snap, err := sup.Snapshot(ctx)
		if err == nil && len(snap.Sessions) == 1 {
			pane = snap.Sessions[0].Pane
		}
		return pane != ""
	})
	ch, err := c.WatchPreview(ctx, api.PreviewRequest{Target: api.Target{Session: "main"}, Escapes: true})
	if err != nil {
		t.Fatal(err)
	}
	next := func(within time.Duration) (api.PreviewUpdate, bool) {
		t.Helper()
		select {
		case u, ok := <-ch:
			if !ok {
				t.Fatal("the stream closed")
			}
			if u.Err != "" || u.Pane != pane {
				t.Fatalf("screen %+v, want one of %s", u, pane)
			}
			return u, true
		case <-time.After(within):
			return api.PreviewUpdate{}, false
		}
	}
	shows := func(u api.PreviewUpdate, line string) bool {
		return slices.ContainsFunc(u.Lines, func(l string) bool { return strings.TrimSpace(l) == line })
	}
	// quiet reads the screens of a change until none comes for a while
	// (the pane settled), then checks that an idle pane sends nothing.
	quiet := func(what string) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, what+": the screens to stop coming", func() bool {
			_, ok := next(700 * time.Millisecond)
			return !ok
		})
		if u, ok := next(1500 * time.Millisecond); ok {
			t.Fatalf("%s: the idle pane sent a screen: %q", what, u.Lines)
		}
	}

	if _, ok := next(5 * time.Second); !ok {
		t.Fatal("no first screen")
	}
	quiet("at the start")

	if _, err := tc.SendText(ctx, pane, "echo hello-''preview", tmux.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	printed := time.Now()
	for {
		u, ok := next(5 * time.Second)
		if !ok {
			t.Fatal("the printed line never came")
		}
		if shows(u, "hello-preview") {
			if d := time.Since(printed); d > time.Second {
				t.Errorf("the printed line came %v after it was printed, want within a second", d)
			}
			break
		}
	}
	quiet("after one line")

	// Three seconds of printing: the watcher reports the pane about three
	// times; the stream follows it every PreviewEvery.
	if _, err := tc.SendText(ctx, pane, "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo tick-$i; sleep 0.2; done; echo done-''printing", tmux.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	frames := 0
	for {
		u, ok := next(5 * time.Second)
		if !ok {
			t.Fatalf("the last screen never came (%d screens)", frames)
		}
		frames++
		if shows(u, "done-printing") {
			break
		}
	}
	if frames < 5 {
		t.Errorf("%d screens in three seconds of printing, want at least 5", frames)
	}
	t.Logf("%d screens in three seconds of printing", frames)
	quiet("after printing")
}
