package tmux_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// runWatcher starts w and returns a stop function that cancels it and
// checks that Run returned nil.
func runWatcher(t *testing.T, w *tmux.Watcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Watcher.Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Watcher.Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func outputFrom(pane, text string) func(tmux.Event) bool {
	return func(e tmux.Event) bool {
		return e.Kind == tmux.EventOutput && e.PaneID == pane && (text == "" || strings.Contains(string(e.Data), text))
	}
}

func TestWatcherEvents(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 30*time.Second)
	panes, err := c.ListPanes(ctx)
	if err != nil || len(panes) != 1 {
		t.Fatalf("ListPanes = %v, %v", panes, err)
	}
	first := panes[0].ID

	w := tmux.NewWatcher(srv, tmux.WatcherOptions{Control: true, OutputBytes: 1 << 16})
	evs := collect(w)
	stop := runWatcher(t, w)
	evs.await(t, 5*time.Second, "initial resync", kind(tmux.EventResync))

	// Output in the first session, decoded.
	tmuxRun(t, srv, "send-keys", "-t", first, "printf 'out-\\033[1mone\\n'", "Enter")
	ev := evs.await(t, 5*time.Second, "output from the first pane", outputFrom(first, "out-\x1b[1mone\r\n"))
	if ev.Data == nil {
		t.Error("no data")
	}

	// A session created after the watcher started: its output arrives too.
	late, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "late", Command: []string{"/bin/sh"}})
	if err != nil {
		t.Fatal(err)
	}
	evs.await(t, 5*time.Second, "sessions-changed", kind(tmux.EventSessionsChanged))
	if n := w.Clients(); n != 2 {
		t.Errorf("%d control clients, want one per session", n)
	}
	tmuxRun(t, srv, "send-keys", "-t", late, "echo late-$((1+1))", "Enter")
	evs.await(t, 5*time.Second, "output from the new session", outputFrom(late, "late-2"))

	// New windows, in either session: the new pane's output arrives too.
	win, err := c.NewWindow(ctx, tmux.NewWindowOptions{Session: "late", Command: []string{"/bin/sh"}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.PaneInfo(ctx, win)
	evs.await(t, 5*time.Second, "window-add", func(e tmux.Event) bool {
		return e.Kind == tmux.EventWindowAdd && e.WindowID == p.WindowID
	})
	tmuxRun(t, srv, "send-keys", "-t", win, "echo win-$((2+2))", "Enter")
	evs.await(t, 5*time.Second, "output from the new window", outputFrom(win, "win-4"))

	// Copy mode, layout, rename, window close.
	tmuxRun(t, srv, "copy-mode", "-t", first)
	evs.await(t, 5*time.Second, "pane-mode-changed", func(e tmux.Event) bool {
		return e.Kind == tmux.EventPaneModeChanged && e.PaneID == first
	})
	tmuxRun(t, srv, "split-window", "-d", "-t", win)
	evs.await(t, 5*time.Second, "layout-change", func(e tmux.Event) bool {
		return e.Kind == tmux.EventLayoutChange && e.WindowID == p.WindowID && e.Layout != ""
	})
	tmuxRun(t, srv, "rename-session", "-t", "late", "later")
	evs.await(t, 5*time.Second, "session-renamed", func(e tmux.Event) bool {
		return e.Kind == tmux.EventSessionRenamed && e.Name == "later"
	})
	tmuxRun(t, srv, "kill-window", "-t", p.WindowID)
	evs.await(t, 5*time.Second, "window-close", func(e tmux.Event) bool {
		return e.Kind == tmux.EventWindowClose && e.WindowID == p.WindowID
	})

	// A killed session's client goes away; the other keeps working.
	if err := c.KillSession(ctx, "later"); err != nil {
		t.Fatal(err)
	}
	evs.await(t, 5*time.Second, "sessions-changed", kind(tmux.EventSessionsChanged))
	testkit.WaitFor(t, 5*time.Second, "one control client", func() bool { return w.Clients() == 1 && controlClients(t, srv) == 1 })

	// The Watcher carries commands for a Client, much faster than forking.
	fast := tmux.NewClient(srv)
	fast.Control = w
	got, err := fast.ListPanes(ctx)
	if err != nil || len(got) != 1 || got[0].ID != first {
		t.Errorf("ListPanes over the control client = %+v, %v", got, err)
	}

	stop()
	if n := controlClients(t, srv); n != 0 {
		t.Errorf("%d control clients left after the watcher stopped", n)
	}
	if n := tmuxChildren(t, srv); n != 0 {
		t.Errorf("%d tmux child processes left", n)
	}
	if _, ok := <-w.Events(); ok {
		t.Error("events channel still open")
	}
}

func TestWatcherSurvivesServerRestart(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewStoppedServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 30*time.Second)

	// Started before any server exists: it waits, cheaply, without failing.
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{Control: true, OutputBytes: 1024})
	evs := collect(w)
	stop := runWatcher(t, w)
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(srv.Path); err == nil {
		t.Fatal("the watcher started a server")
	}

	for round := range 2 {
		pane := tmuxtest.Start(t, srv, "/bin/sh")
		ev := evs.await(t, 10*time.Second, "resync", kind(tmux.EventResync))
		t.Logf("round %d: %s", round, ev)
		msg := fmt.Sprintf("round-%d-$((40+2))", round)
		tmuxRun(t, srv, "send-keys", "-t", pane, "echo "+msg, "Enter")
		evs.await(t, 5*time.Second, "output after (re)connecting", outputFrom(pane, fmt.Sprintf("round-%d-42", round)))
		if n := controlClients(t, srv); n != 1 {
			t.Errorf("round %d: %d control clients", round, n)
		}

		if err := c.KillServer(ctx); err != nil {
			t.Fatal(err)
		}
		evs.await(t, 10*time.Second, "disconnected", kind(tmux.EventDisconnected))
		testkit.WaitFor(t, 5*time.Second, "clients to be reaped", func() bool { return w.Clients() == 0 && tmuxChildren(t, srv) == 0 })
	}

	stop()
	if n := tmuxChildren(t, srv); n != 0 {
		t.Errorf("%d tmux child processes left", n)
	}
}

func TestWatcherQuickRestart(t *testing.T) {
	t.Parallel()
	// The server dies and a new one is up before the watcher looks: it
	// must still resync rather than report nothing.
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 30*time.Second)
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{Control: true})
	evs := collect(w)
	runWatcher(t, w)
	evs.await(t, 5*time.Second, "resync", kind(tmux.EventResync))
	if err := c.KillServer(ctx); err != nil {
		t.Fatal(err)
	}
	pane := tmuxtest.Start(t, srv, "/bin/sh")
	// Whether or not it saw the server gone, it lost its clients and
	// must resync once re-attached.
	evs.await(t, 10*time.Second, "resync after restart", kind(tmux.EventResync))
	tmuxRun(t, srv, "send-keys", "-t", pane, "echo hi", "Enter")
	evs.await(t, 10*time.Second, "output after restart", outputFrom(pane, ""))
}

func TestWatcherPolling(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 30*time.Second)
	panes, _ := c.ListPanes(ctx)
	first := panes[0].ID
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{Poll: true, PollInterval: 100 * time.Millisecond})
	evs := collect(w)
	runWatcher(t, w)
	ev := evs.await(t, 5*time.Second, "resync", kind(tmux.EventResync))
	if !strings.Contains(ev.Reason, "polling") {
		t.Errorf("resync reason %q", ev.Reason)
	}
	tmuxRun(t, srv, "send-keys", "-t", first, "echo polled", "Enter")
	evs.await(t, 5*time.Second, "pane changed", outputFrom(first, ""))
	pane := newWindow(t, c, "/bin/sh")
	// The listing that found the new pane comes first, so a consumer has
	// it without listing again.
	listed := false
	evs.await(t, 5*time.Second, "sessions-changed", func(e tmux.Event) bool {
		if e.Kind == tmux.EventListed && slices.ContainsFunc(e.Panes, func(p tmux.Pane) bool { return p.ID == pane && p.Command != "" }) {
			listed = true
		}
		return e.Kind == tmux.EventSessionsChanged
	})
	if !listed {
		t.Errorf("no listing with the new pane %s came before sessions-changed", pane)
	}
	if n := controlClients(t, srv); n != 0 {
		t.Errorf("polling attached %d control clients", n)
	}
}

func TestWatcherFallsBackToPolling(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	// A tmux whose control mode is broken, like one too old for -f ignore-size.
	wrapper := filepath.Join(t.TempDir(), "tmux")
	script := "#!/bin/sh\nfor a; do [ \"$a\" = -C ] && { echo 'unknown option -- C' >&2; exit 1; }; done\nexec \"${SYSTEM3_TMUX:-tmux}\" \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	srv.Bin = wrapper
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{Control: true, PollInterval: 100 * time.Millisecond})
	evs := collect(w)
	runWatcher(t, w)
	ev := evs.await(t, 5*time.Second, "resync", kind(tmux.EventResync))
	if !strings.Contains(ev.Reason, "polling") || !strings.Contains(ev.Reason, "unknown option") {
		t.Errorf("resync reason %q", ev.Reason)
	}
}

func TestWatcherSlowConsumer(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 30*time.Second)
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{Control: true, Buffer: 8, OutputBytes: 100})
	runWatcher(t, w)
	// Nobody reads while a pane floods and windows come and go.
	panes, _ := c.ListPanes(ctx)
	first := panes[0].ID
	time.Sleep(200 * time.Millisecond)
	tmuxRun(t, srv, "send-keys", "-t", first, "seq 1 20000", "Enter")
	for range 12 {
		newWindow(t, c, "/bin/sh")
	}
	time.Sleep(500 * time.Millisecond)
	// The queue stayed bounded: what waits is a resync and a few events.
	var got []tmux.Event
	for len(got) < 20 {
		select {
		case e := <-w.Events():
			got = append(got, e)
			continue
		case <-time.After(300 * time.Millisecond):
		}
		break
	}
	resync, outputs := 0, 0
	for _, e := range got {
		switch e.Kind {
		case tmux.EventResync:
			resync++
		case tmux.EventOutput:
			outputs++
			if len(e.Data) > 100 {
				t.Errorf("output event carries %d bytes", len(e.Data))
			}
		}
	}
	if resync == 0 || len(got) > 16 {
		t.Errorf("got %d events (%d resync, %d output): %v", len(got), resync, outputs, got)
	}
}

func TestConnCommands(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	ctx := ctxFor(t, 30*time.Second)
	var mu sync.Mutex
	var seen []tmux.Event
	conn, err := tmux.Attach(ctx, srv, "main", tmux.ConnOptions{OnEvent: func(e tmux.Event) {
		mu.Lock()
		seen = append(seen, e)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	lines, err := conn.Command(ctx, "display-message", "-p", "#{session_name}:#{client_control_mode}")
	if err != nil || len(lines) != 1 || lines[0] != "main:1" {
		t.Fatalf("display-message = %q, %v", lines, err)
	}
	if conn.SessionID() == "" {
		t.Error("no session id")
	}

	// Attaching did not change the window size. (A control client only
	// counts for sizing once it is given a size with refresh-client -C,
	// which Conn never does; -f ignore-size only helps while a normal client
	// is attached too.)
	if lines, _ := conn.Command(ctx, "display-message", "-p", "-t", "main:", "#{window_width}x#{window_height}"); lines[0] != "80x24" {
		t.Errorf("window size %q after attaching", lines)
	}

	// Every argument arrives byte for byte: quoting defeats tmux's
	// separators, expansions and escapes.
	for _, s := range []string{
		"plain", "a;b", ";", "\\;", "it's", "''", `"`, `back\slash\\`, "$HOME", "~", "~/x", "#{pane_id}", "#(id)",
		"{", "}", "%if 1", "-x", " lead", "trail ", "tab\there", "nl\nnl", "cr\rcr", "\x01\x1b\x7f", "中文🎉", "\xff\xfe",
	} {
		if _, err := conn.Command(ctx, "set-buffer", "-b", "quote-test", "--", s); err != nil {
			t.Errorf("set-buffer %q: %v", s, err)
			continue
		}
		if got := tmuxRunRaw(t, srv, "show-buffer", "-b", "quote-test"); got != s {
			t.Errorf("quoted %q arrived as %q", s, got)
		}
	}

	// Errors carry tmux's message and match the sentinels.
	_, err = conn.Command(ctx, "capture-pane", "-p", "-t", "%999")
	if !errors.Is(err, tmux.ErrNotFound) || err.Error() != "capture-pane %999 on "+srv.String()+": can't find pane: %999" {
		t.Errorf("error = %v", err)
	}

	// Hooks make tmux run commands for the client, in blocks of their own
	// (flags 0); they must not be mistaken for replies.
	tmuxRun(t, srv, "set-hook", "-g", "after-set-buffer", "display-message -p HOOKED")
	for i := range 5 {
		want := fmt.Sprint("reply-", i)
		if _, err := conn.Command(ctx, "set-buffer", "-b", "hooked", want); err != nil {
			t.Fatal(err)
		}
		lines, err := conn.Command(ctx, "display-message", "-p", want)
		if err != nil || len(lines) != 1 || lines[0] != want {
			t.Fatalf("after a hook: %q, %v", lines, err)
		}
	}
	tmuxRun(t, srv, "set-hook", "-gu", "after-set-buffer")

	// Concurrent callers each get their own reply.
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprint("concurrent-", i)
			lines, err := conn.Command(ctx, "display-message", "-p", want)
			if err != nil || len(lines) != 1 || lines[0] != want {
				t.Errorf("concurrent call %d: %q %v", i, lines, err)
			}
		}()
	}
	wg.Wait()

	// A call that times out leaves the stream in step.
	// wait-for replies at once but holds up the client's queue until the
	// channel is signalled, so the next command's reply comes late.
	if _, err := conn.Command(ctx, "wait-for", "system3-test"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = conn.Command(short, "display-message", "-p", "late")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow command: %v", err)
	}
	tmuxRun(t, srv, "wait-for", "-S", "system3-test")
	lines, err = conn.Command(ctx, "display-message", "-p", "in step")
	if err != nil || len(lines) != 1 || lines[0] != "in step" {
		t.Errorf("after a timeout: %q %v", lines, err)
	}

	// Output notifications for the attached session.
	tmuxRun(t, srv, "send-keys", "-t", "main:", "echo x", "Enter")
	testkit.WaitFor(t, 5*time.Second, "an output event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range seen {
			if e.Kind == tmux.EventOutput {
				return true
			}
		}
		return false
	})

	if n := controlClients(t, srv); n != 1 {
		t.Errorf("%d control clients", n)
	}
	conn.Close()
	if _, err := conn.Command(ctx, "display-message", "-p", "x"); !errors.Is(err, tmux.ErrNoControl) {
		t.Errorf("command after Close: %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "the client to detach", func() bool { return controlClients(t, srv) == 0 })
	mu.Lock()
	last := seen[len(seen)-1]
	mu.Unlock()
	if last.Kind != tmux.EventExit {
		t.Errorf("last event %v, want exit", last)
	}
	if conn.Err() == nil || !errors.Is(conn.Err(), tmux.ErrNoControl) {
		t.Errorf("Err() = %v", conn.Err())
	}
}

func TestControlOutputIsPerSession(t *testing.T) {
	t.Parallel()
	// The tmux fact the Watcher is built on: a control client hears only
	// its own session's panes.
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 20*time.Second)
	other, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "other", Command: []string{"/bin/sh"}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	panesSeen := map[string]bool{}
	conn, err := tmux.Attach(ctx, srv, "main", tmux.ConnOptions{OnEvent: func(e tmux.Event) {
		if e.Kind == tmux.EventOutput {
			mu.Lock()
			panesSeen[e.PaneID] = true
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tmuxRun(t, srv, "send-keys", "-t", other, "echo other", "Enter")
	tmuxRun(t, srv, "send-keys", "-t", "main:", "echo main", "Enter")
	mainPane := tmuxRun(t, srv, "display-message", "-p", "-t", "main:", "#{pane_id}")
	testkit.WaitFor(t, 5*time.Second, "main's output", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return panesSeen[mainPane]
	})
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if panesSeen[other] {
		t.Error("a control client heard another session's pane; the Watcher could use one client")
	}
}

func TestWatcherClientMovedToAnotherSession(t *testing.T) {
	t.Parallel()
	// With detach-on-destroy off, tmux moves a killed session's clients to
	// another session instead of detaching them: the Watcher must not end
	// up with two clients on one session (every event twice).
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 20*time.Second)
	tmuxRun(t, srv, "set-option", "-g", "detach-on-destroy", "off")
	if _, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "doomed"}); err != nil {
		t.Fatal(err)
	}
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{Control: true})
	evs := collect(w)
	runWatcher(t, w)
	evs.await(t, 5*time.Second, "resync", kind(tmux.EventResync))
	testkit.WaitFor(t, 5*time.Second, "two clients", func() bool { return controlClients(t, srv) == 2 })
	if err := c.KillSession(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	evs.await(t, 5*time.Second, "sessions-changed", kind(tmux.EventSessionsChanged))
	testkit.WaitFor(t, 5*time.Second, "one client", func() bool { return w.Clients() == 1 && controlClients(t, srv) == 1 })
}

// TestWatcherDefaultPollsAndSettles: the default Watcher attaches no
// control client; a pane that keeps printing is reported about once per
// BusyGap, and a pane that stops printing is reported within a tick or two
// of its last change, however recently it was reported (a prompt drawn
// after streaming output).
func TestWatcherDefaultPollsAndSettles(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t, "sh", "-c", "i=0; while [ $i -lt 30 ]; do echo line $i; i=$((i+1)); sleep 0.1; done; echo PROMPT; exec sleep 600")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 30*time.Second)
	panes, err := c.ListPanes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pane := panes[0].ID
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{PollInterval: 50 * time.Millisecond, BusyGap: time.Second, Settle: 300 * time.Millisecond})
	evs := collect(w)
	runWatcher(t, w)
	evs.await(t, 5*time.Second, "resync", kind(tmux.EventResync))

	var times []time.Time
	deadline := time.After(15 * time.Second)
	for {
		var ev tmux.Event
		select {
		case ev = <-evs.ch:
		case <-deadline:
			t.Fatalf("the pane never settled on its prompt; reported at %v", times)
		}
		if ev.Kind != tmux.EventOutput || ev.PaneID != pane {
			continue
		}
		times = append(times, time.Now())
		text, err := c.Capture(ctx, pane, tmux.CaptureOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(text, "PROMPT") {
			break
		}
	}
	// Three seconds of output, 30 changes: reported a few times, not 30.
	if len(times) > 8 {
		t.Errorf("a busy pane was reported %d times in 3s (busy gap 1s)", len(times))
	}
	if n := controlClients(t, srv); n != 0 {
		t.Errorf("the default Watcher attached %d control clients", n)
	}
	if n := w.Clients(); n != 0 {
		t.Errorf("Clients() = %d", n)
	}
}

// TestWatcherSkipsListingsWhileNothingIsRead: while no pane writes, the
// tmux server reads nothing and the watcher lists no panes between its full
// listings; a pane that writes after a quiet spell (a prompt drawn by an
// idle agent) is reported as soon as it would be without the gate, and
// quiet panes still get their "gone quiet" report.
func TestWatcherSkipsListingsWhileNothingIsRead(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t, "cat")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 30*time.Second)
	panes, err := c.ListPanes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", panes[0].ServerPID)); err != nil {
		t.Fatalf("the tmux server's /proc/PID/io cannot be read here (%v): the gate this test checks is off", err)
	}
	pane := panes[0].ID
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{PollInterval: 50 * time.Millisecond})
	evs := collect(w)
	runWatcher(t, w)
	evs.await(t, 5*time.Second, "resync", kind(tmux.EventResync))

	// Half a second off the full listings' beat, so the write below is
	// seen by a light listing (or, on a loaded machine, a full one).
	time.Sleep(3500 * time.Millisecond)
	full, listed, skipped := w.Listings()
	// Idle: every light listing follows a full one (which made the server
	// read /proc); every other tick is skipped. (Ticks are 50 ms apart,
	// or up to 250 ms on a loaded machine.)
	if skipped < 5 || listed > full+1 {
		t.Fatalf("idle: %d full listings, %d light listings made, %d skipped", full, listed, skipped)
	}
	evs.drain()
	start := time.Now()
	if _, err := c.SendText(ctx, pane, "hello", tmux.SendOptions{NoEnter: true}); err != nil {
		t.Fatal(err)
	}
	evs.await(t, 5*time.Second, "the pane that wrote", outputFrom(pane, ""))
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the pane was reported %v after it wrote", took)
	}
	time.Sleep(100 * time.Millisecond)
	if f, l, sk := w.Listings(); l == listed && f == full {
		t.Errorf("the write made no listing (%d full, %d light, %d skipped before; %d, %d, %d after; reported after %v)", full, listed, skipped, f, l, sk, time.Since(start))
	}

	// Without the gate every tick lists.
	w2 := tmux.NewWatcher(srv, tmux.WatcherOptions{PollInterval: 50 * time.Millisecond, NoReadGate: true})
	evs2 := collect(w2)
	runWatcher(t, w2)
	evs2.await(t, 5*time.Second, "resync", kind(tmux.EventResync))
	time.Sleep(time.Second)
	if _, listed, skipped := w2.Listings(); skipped != 0 || listed < 2 {
		t.Fatalf("NoReadGate: %d light listings, %d skipped", listed, skipped)
	}
}
