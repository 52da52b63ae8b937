package tmux_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// garbleScript wraps the real tmux. The first control client it starts
// reads noise before tmux's own output (binary bytes, a 200 KB line,
// malformed guards, unknown and truncated notifications) and, half a second
// after attaching, a stray %begin that no %end will ever match: from then
// on that client's replies and notifications are swallowed. Later clients
// are plain tmux.
const garbleScript = `#!/bin/sh
mark="$(dirname "$0")/garbled"
case " $* " in
*" -C "*)
	if [ ! -e "$mark" ]; then
		: > "$mark"
		head -c 4096 /dev/urandom | tr -d '\n'; echo
		head -c 200000 /dev/zero | tr '\0' 'x'; echo
		printf '%%begin\n%%begin x y z\n%%end 1 2 3\n%%error 9 9 9\n%%output\n%%output nopane data\n%%window-add\n%%no-such-notification a b\n%%session-renamed\n%%layout-change @1\n\\\\777\n'
		( sleep 0.5; printf '%%begin 1 999999 1\n' ) &
	fi
	exec "${SYSTEM3_TMUX:-tmux}" "$@" ;;
esac
exec "${SYSTEM3_TMUX:-tmux}" "$@"
`

// A control client that reads garbage, and then a stray block that
// swallows everything, is neither fatal nor silent: the first command that
// gets no reply in time ends that client, the watcher attaches a new one
// and resyncs, and output is reported again.
//
// Not parallel (none of these tests is): other tests count this process's
// tmux children, and these start and kill control clients.
func TestResilienceControlClientGarbage(t *testing.T) {
	srv := tmuxtest.NewServer(t, "/bin/sh")
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "tmux")
	if err := os.WriteFile(wrapper, []byte(garbleScript), 0o755); err != nil {
		t.Fatal(err)
	}
	gs := srv
	gs.Bin, gs.Timeout = wrapper, time.Second
	ctx := ctxFor(t, 60*time.Second)
	pane, err := tmux.NewClient(srv).ListPanes(ctx)
	if err != nil || len(pane) != 1 {
		t.Fatalf("ListPanes = %v, %v", pane, err)
	}
	p := pane[0].ID

	w := tmux.NewWatcher(gs, tmux.WatcherOptions{Control: true, OutputBytes: 1 << 12})
	c := tmux.NewClient(gs)
	c.Control = w
	evs := collect(w)
	runWatcher(t, w)
	evs.await(t, 10*time.Second, "the first resync", kind(tmux.EventResync))
	testkit.WaitFor(t, 5*time.Second, "the garbage to be injected", func() bool {
		_, err := os.Stat(filepath.Join(dir, "garbled"))
		return err == nil
	})
	time.Sleep(700 * time.Millisecond) // past the stray %begin

	tmuxRun(t, srv, "send-keys", "-t", p, "echo after-$((6*7))", "Enter")
	// The first capture may be swallowed and time out; it must end the
	// client rather than leave every later command hanging.
	var screen string
	testkit.WaitFor(t, 20*time.Second, "a capture showing the output", func() bool {
		// Bounded like the supervisor's captures: by a deadline of the
		// caller's no longer than the server's timeout.
		cctx, cancel := context.WithTimeout(ctx, gs.Timeout)
		defer cancel()
		s, err := c.Capture(cctx, p, tmux.CaptureOptions{})
		if err != nil {
			t.Logf("capture: %v", err)
			return false
		}
		screen = s
		return strings.Contains(s, "after-42")
	})
	evs.await(t, 10*time.Second, "a resync after the new client attached", kind(tmux.EventResync))
	tmuxRun(t, srv, "send-keys", "-t", p, "echo again-$((6*7))", "Enter")
	evs.await(t, 10*time.Second, "output through the new client", outputFrom(p, "again-42"))
	if n := controlClients(t, srv); n != 1 {
		t.Errorf("%d control clients attached, want 1", n)
	}
	if !strings.Contains(screen, "after-42") {
		t.Fatalf("screen: %q", screen)
	}
}

// A control client that ends without a word (killed: its output just
// stops) is replaced: resync, then output again, and no process is left
// behind.
func TestResilienceControlClientEOF(t *testing.T) {
	srv := tmuxtest.NewServer(t, "/bin/sh")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 60*time.Second)
	panes, err := c.ListPanes(ctx)
	if err != nil || len(panes) != 1 {
		t.Fatalf("ListPanes = %v, %v", panes, err)
	}
	p := panes[0].ID
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{Control: true, OutputBytes: 1 << 12})
	evs := collect(w)
	stop := runWatcher(t, w)
	evs.await(t, 10*time.Second, "the first resync", kind(tmux.EventResync))

	for round := range 3 {
		var pids []int
		for _, f := range strings.Fields(tmuxRun(t, srv, "list-clients", "-F", "#{client_control_mode}:#{client_pid}")) {
			mode, pid, _ := strings.Cut(f, ":")
			if n, err := strconv.Atoi(pid); err == nil && mode == "1" {
				pids = append(pids, n)
			}
		}
		if len(pids) != 1 {
			t.Fatalf("round %d: control clients %v, want one", round, pids)
		}
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		evs.await(t, 10*time.Second, "a resync after the client died", kind(tmux.EventResync))
		msg := fmt.Sprintf("round-%d-$((6*7))", round)
		tmuxRun(t, srv, "send-keys", "-t", p, "echo "+msg, "Enter")
		evs.await(t, 10*time.Second, "output after re-attaching", outputFrom(p, fmt.Sprintf("round-%d-42", round)))
	}
	stop()
	testkit.WaitFor(t, 5*time.Second, "every control client to be reaped", func() bool { return tmuxChildren(t, srv) == 0 })
}

// Panes killed while they are being captured, over the control client and
// by forking, give "not found" (or, for the pane that goes first, an empty
// screen), never another error or a hang, and the survivors keep working.
func TestResiliencePaneKilledMidCapture(t *testing.T) {
	srv := tmuxtest.NewServer(t, "/bin/sh")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 60*time.Second)
	const n = 12
	var victims []string
	for range n {
		// Each pane keeps writing, so every capture has work to do.
		victims = append(victims, newWindow(t, c, "while :; do echo line $$ $(date +%N); done"))
	}
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{Control: true})
	evs := collect(w)
	runWatcher(t, w)
	evs.await(t, 10*time.Second, "the first resync", kind(tmux.EventResync))
	cc := tmux.NewClient(srv)
	cc.Control = w

	var (
		wg       sync.WaitGroup
		ok, gone atomic.Int64
		mu       sync.Mutex
		bad      []string
	)
	stopCapturing := make(chan struct{})
	for i, pane := range victims {
		for _, client := range []*tmux.Client{c, cc} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stopCapturing:
						return
					default:
					}
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					_, err := client.Capture(cctx, pane, tmux.CaptureOptions{History: 200 * (i % 3)})
					cancel()
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, tmux.ErrNotFound):
						gone.Add(1)
						return
					default:
						mu.Lock()
						bad = append(bad, fmt.Sprintf("%s: %v", pane, err))
						mu.Unlock()
						return
					}
				}
			}()
		}
	}
	testkit.WaitFor(t, 10*time.Second, "captures to run", func() bool { return ok.Load() > 2*n })
	for _, pane := range victims[1:] {
		if err := c.KillPane(ctx, pane); err != nil {
			t.Fatalf("kill %s: %v", pane, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	testkit.WaitFor(t, 10*time.Second, "every capture of a killed pane to report it gone", func() bool { return gone.Load() >= int64(2*(n-1)) })
	close(stopCapturing)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("captures of killed panes failed otherwise:\n%s", strings.Join(bad, "\n"))
	}
	if s, err := cc.Capture(ctx, victims[0], tmux.CaptureOptions{}); err != nil || !strings.Contains(s, "line") {
		t.Fatalf("the surviving pane: %q, %v", s, err)
	}
	if panes, err := cc.ListPanes(ctx); err != nil || len(panes) != 2 {
		t.Fatalf("ListPanes after the kills: %d panes, %v", len(panes), err)
	}
}

// Started from an environment without a UTF-8 locale (cron, systemd, an
// MCP client's minimal environment), system3's tmux clients still list
// panes and capture non-ASCII screens intact, over forks and the control
// client alike.
func TestResilienceNoUTF8Locale(t *testing.T) {
	srv := tmuxtest.NewServer(t, "printf '❯ ünïcödé ─── ✻\\n'; exec sleep 600")
	t.Setenv("LC_ALL", "C")
	t.Setenv("LC_CTYPE", "C")
	t.Setenv("LANG", "C")
	ctx := ctxFor(t, 30*time.Second)
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{Control: true})
	evs := collect(w)
	runWatcher(t, w)
	evs.await(t, 10*time.Second, "the first resync", kind(tmux.EventResync))
	viaControl := tmux.NewClient(srv)
	viaControl.Control = w
	for name, c := range map[string]*tmux.Client{"fork": tmux.NewClient(srv), "control": viaControl} {
		panes, err := c.ListPanes(ctx)
		if err != nil || len(panes) != 1 || panes[0].SessionName != "main" {
			t.Fatalf("%s: ListPanes = %+v, %v", name, panes, err)
		}
		var screen string
		testkit.WaitFor(t, 5*time.Second, name+": the pane's text", func() bool {
			screen, err = c.Capture(ctx, panes[0].ID, tmux.CaptureOptions{})
			return err == nil && strings.Contains(screen, "✻")
		})
		if !strings.Contains(screen, "❯ ünïcödé ─── ✻") {
			t.Fatalf("%s: capture %q", name, screen)
		}
	}
}
