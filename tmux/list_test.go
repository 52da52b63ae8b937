package tmux_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

func TestListPanesSeesEverything(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 20*time.Second)
	start := time.Now().Add(-2 * time.Second)

	dir := filepath.Join(t.TempDir(), "work dir ✓")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(t.TempDir(), "env")

	// Session "second": 100x30, a named window in dir, cursor parked at
	// row 5 column 10, environment passed with -e.
	cursorPane, err := c.NewSession(ctx, tmux.NewSessionOptions{
		Name: "second", WindowName: "win one", Dir: dir, Width: 100, Height: 30,
		Env:     map[string]string{"SYSTEM3_FOO": "bar baz"},
		Command: []string{`printf '%s' "$SYSTEM3_FOO" > ` + envFile + `; printf '\033[2J\033[5;10H'; exec sleep 100`},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A second pane in that window, split off, titled and in copy mode.
	splitPane := tmuxRun(t, srv, "split-window", "-d", "-P", "-F", "#{pane_id}", "-t", cursorPane, "sleep 100")
	tmuxRun(t, srv, "select-pane", "-t", splitPane, "-T", "my title ☃ #x")
	tmuxRun(t, srv, "copy-mode", "-t", splitPane)

	// In "main": a window with scrollback and a dead pane that exited 3.
	histPane := newWindow(t, c, "seq 1 100; exec sleep 100")
	tmuxRun(t, srv, "set-option", "-g", "remain-on-exit", "on")
	deadPane := newWindow(t, c, "sleep 0.2; exit 3")

	var panes []tmux.Pane
	byID := map[string]tmux.Pane{}
	type settled struct{ Cursor, History, Dead tmux.Pane }
	began := time.Now()
	last := testkit.WaitForValue(t, 10*time.Second, "the panes to settle", func() (settled, bool) {
		panes, err = c.ListPanes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byID = map[string]tmux.Pane{}
		for _, p := range panes {
			byID[p.ID] = p
		}
		s := settled{byID[cursorPane], byID[histPane], byID[deadPane]}
		// Rarely (seen under heavy load) tmux never records a dead pane's
		// status; Pane.DeadStatus documents that.
		return s, s.Cursor.CursorY == 4 && s.History.HistorySize > 70 && s.Dead.Dead && (s.Dead.DeadStatus == 3 || time.Since(began) > 3*time.Second)
	})
	if last.Dead.DeadStatus != 3 {
		t.Logf("tmux did not record the exit status of %s", deadPane)
	}
	if len(panes) != 5 {
		t.Fatalf("got %d panes, want 5: %+v", len(panes), panes)
	}
	sessions, err := c.ListSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid := map[string]string{}
	for _, s := range sessions {
		sid[s.Name] = s.ID
		if s.Created.Before(start) || s.Windows == 0 {
			t.Errorf("session %+v", s)
		}
	}
	if len(sessions) != 2 || sid["main"] == "" || sid["second"] == "" {
		t.Fatalf("sessions = %+v", sessions)
	}

	cp := byID[cursorPane]
	want := tmux.Pane{
		ID: cursorPane, SessionID: sid["second"], SessionName: "second", WindowID: cp.WindowID,
		WindowIndex: 0, WindowName: "win one", WindowActive: true, Index: 0, Active: true,
		PID: cp.PID, TTY: cp.TTY, Command: "sleep", Path: dir, Title: cp.Title,
		Width: 100, Height: 30, CursorX: 9, CursorY: 4, Activity: cp.Activity, HistorySize: 0,
	}
	want.ServerPID, _ = strconv.Atoi(tmuxRun(t, srv, "display-message", "-p", "#{pid}"))
	// The split halves the height: 30 = 14 + 1 (border) + 15.
	want.Height = cp.Height
	if cp != want {
		t.Errorf("cursor pane\n got %+v\nwant %+v", cp, want)
	}
	if cp.Height < 14 || cp.Height > 15 || cp.PID <= 0 || !strings.HasPrefix(cp.TTY, "/dev/") || cp.Activity.Before(start) {
		t.Errorf("cursor pane odd values: %+v", cp)
	}
	if b, _ := os.ReadFile(envFile); string(b) != "bar baz" {
		t.Errorf("environment: pane saw SYSTEM3_FOO=%q", b)
	}

	sp := byID[splitPane]
	if sp.Title != "my title ☃ #x" || !sp.InMode || sp.Mode != "copy-mode" || sp.Index != 1 ||
		sp.Active || sp.WindowID != cp.WindowID || sp.SessionName != "second" {
		t.Errorf("split pane %+v", sp)
	}

	hp := byID[histPane]
	if hp.SessionName != "main" || hp.SessionID != sid["main"] || hp.WindowIndex != 1 || hp.WindowActive ||
		hp.Width != 80 || hp.Height != 24 || hp.HistorySize < 70 || hp.Dead || hp.InMode {
		t.Errorf("history pane %+v", hp)
	}

	dp := byID[deadPane]
	if !dp.Dead || (dp.DeadStatus != 3 && dp.DeadStatus != -1) || dp.WindowIndex != 2 { // -1: tmux never recorded it
		t.Errorf("dead pane %+v", dp)
	}

	// PaneInfo returns the same record for one pane.
	one, err := c.PaneInfo(ctx, splitPane)
	if err != nil || one.ID != splitPane || one.Title != sp.Title {
		t.Errorf("PaneInfo = %+v, %v", one, err)
	}
	if _, err := c.PaneInfo(ctx, "%999"); !errors.Is(err, tmux.ErrNotFound) {
		t.Errorf("PaneInfo(%%999) error = %v, want ErrNotFound", err)
	}

	ok, err := c.HasSession(ctx, "second")
	if !ok || err != nil {
		t.Errorf("HasSession(second) = %v, %v", ok, err)
	}
	// Exact matching: "sec" is a prefix, which tmux alone would accept.
	if ok, _ := c.HasSession(ctx, "sec"); ok {
		t.Error("HasSession matched a prefix")
	}
	if err := c.KillSession(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.HasSession(ctx, "second"); ok {
		t.Error("session survived KillSession")
	}
}

func TestListPanesHostilePath(t *testing.T) {
	t.Parallel()
	// pane_current_path is not sanitized by tmux, nor pane_current_command
	// before 3.7: separators, tabs and newlines in them must not break the
	// listing.
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 10*time.Second)
	dir := filepath.Join(t.TempDir(), "a\x1fb\tc\nd:12:e")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), "sl\x1fe\nep")
	if err := os.Symlink(testkit.LookPath(t, "sleep"), prog); err != nil {
		t.Fatal(err)
	}
	v, err := srv.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pane, err := c.NewWindow(ctx, tmux.NewWindowOptions{Session: "main", Dir: dir, Command: []string{prog, "100"}})
	if err != nil {
		t.Fatal(err)
	}
	var p tmux.Pane
	testkit.WaitFor(t, 5*time.Second, "the hostile pane", func() bool {
		panes, err := c.ListPanes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(panes, func(p tmux.Pane) bool { return p.ID == pane })
		if i < 0 {
			return false
		}
		p = panes[i]
		// Until the process has started, tmux reports an escaped argv
		// and no path.
		return p.Path == dir && p.Command == commandSeen(v, filepath.Base(prog))
	})
	if p.Width != 80 || p.SessionName != "main" {
		t.Errorf("fields after the hostile ones are wrong: %+v", p)
	}
}

func TestNoServer(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewStoppedServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 10*time.Second)
	if v, err := srv.Version(ctx); err != nil || !strings.HasPrefix(v, "tmux ") {
		t.Errorf("Version = %q, %v", v, err)
	}
	panes, err := c.ListPanes(ctx)
	if len(panes) != 0 || !errors.Is(err, tmux.ErrNoServer) {
		t.Fatalf("ListPanes = %v, %v; want empty and ErrNoServer", panes, err)
	}
	if !strings.Contains(err.Error(), srv.String()) {
		t.Errorf("error does not name the server: %v", err)
	}
	if _, err := c.ListSessions(ctx); !errors.Is(err, tmux.ErrNoServer) {
		t.Errorf("ListSessions error = %v", err)
	}
	if ok, err := c.HasSession(ctx, "main"); ok || err != nil {
		t.Errorf("HasSession = %v, %v", ok, err)
	}
	if err := c.KillServer(ctx); err != nil {
		t.Errorf("KillServer on no server: %v", err)
	}
	if _, err := tmux.Attach(ctx, srv, "main", tmux.ConnOptions{}); !errors.Is(err, tmux.ErrNoServer) {
		t.Errorf("Attach error = %v, want ErrNoServer", err)
	}
	// Attach must not have started a server.
	if _, err := os.Stat(srv.Path); err == nil {
		t.Error("attaching started a server")
	}
}

func TestCapture(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 10*time.Second)
	pane := newWindow(t, c, `printf 'héllo 中文 🎉 wide\n'; seq 1 50; printf 'tab\there  \n\033[31mred\033[0m end\n'; exec sleep 100`)
	testkit.WaitFor(t, 5*time.Second, "output", func() bool {
		s, err := c.Capture(ctx, pane, tmux.CaptureOptions{})
		return err == nil && strings.HasSuffix(s, "red end")
	})

	visible, err := c.Capture(ctx, pane, tmux.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(visible, "\n")
	// 24 rows: 21 of seq output, the tab line, the red line; the cursor row is blank and trimmed.
	if len(lines) != 23 || lines[0] != "30" || lines[21] != "tab     here" || lines[22] != "red end" {
		t.Errorf("visible capture (%d lines):\n%s", len(lines), visible)
	}

	all, err := c.Capture(ctx, pane, tmux.CaptureOptions{History: 100})
	if err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(all, "\n")
	if lines[0] != "héllo 中文 🎉 wide" || lines[1] != "1" || lines[len(lines)-1] != "red end" || len(lines) != 53 {
		t.Errorf("history capture (%d lines) starts %q", len(lines), lines[:3])
	}
	if some, _ := c.Capture(ctx, pane, tmux.CaptureOptions{History: 5}); !strings.HasPrefix(some, "25\n") {
		t.Errorf("History: 5 starts %q", some[:10])
	}
	if full, _ := c.Capture(ctx, pane, tmux.CaptureOptions{History: -1}); full != all {
		t.Errorf("History: -1 differs from History: 100")
	}

	raw, _ := c.Capture(ctx, pane, tmux.CaptureOptions{KeepTrailing: true})
	if rows := strings.Split(raw, "\n"); len(rows) != 24 || rows[21] != "tab     here  " {
		t.Errorf("KeepTrailing: %d rows, tab row %q", len(rows), rows[21])
	}

	colour, _ := c.Capture(ctx, pane, tmux.CaptureOptions{Escapes: true})
	if !strings.Contains(colour, "\x1b[31mred") {
		t.Errorf("Escapes capture has no colour: %q", colour[len(colour)-40:])
	}

	// A long line wider than the pane comes back joined.
	long := strings.Repeat("x", 100)
	wide := newWindow(t, c, "printf '"+long+"\\n'; exec sleep 100")
	testkit.WaitFor(t, 5*time.Second, "long line", func() bool {
		s, _ := c.Capture(ctx, wide, tmux.CaptureOptions{})
		return s == long
	})

	if _, err := c.Capture(ctx, "%999", tmux.CaptureOptions{}); !errors.Is(err, tmux.ErrNotFound) ||
		err.Error() != "capture %999 on "+srv.String()+": can't find pane: %999" {
		t.Errorf("capture of a missing pane: %v", err)
	}
}

func TestMissingAndWedgedBinary(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 20*time.Second)
	dir := t.TempDir()

	missing := tmux.Server{Path: filepath.Join(dir, "sock"), Bin: filepath.Join(dir, "no-such-tmux")}
	start := time.Now()
	_, err := tmux.NewClient(missing).ListPanes(ctx)
	if !errors.Is(err, tmux.ErrNoTmux) || !strings.Contains(err.Error(), "cannot run tmux binary") || time.Since(start) > time.Second {
		t.Errorf("missing binary: %v", err)
	}
	w := tmux.NewWatcher(missing, tmux.WatcherOptions{})
	if err := w.Run(ctx); err == nil || !strings.Contains(err.Error(), "cannot run tmux binary") {
		t.Errorf("Watcher with a missing binary: %v", err)
	}

	// A tmux that never answers (its child keeps the pipes open, too): the
	// call ends after the deadline plus the 3 s a client's pipes are given
	// to close.
	wedged := filepath.Join(dir, "wedged-tmux")
	// Written by a child process: a file this process holds open for
	// writing can be inherited by a parallel test's fork, and exec then
	// fails with "text file busy" (golang/go#22315).
	if out, err := exec.Command(testkit.LookPath(t, "sh"), "-c", `printf '#!/bin/sh\nsleep 30\n' > "$0" && chmod 755 "$0"`, wedged).CombinedOutput(); err != nil {
		t.Fatalf("write %s: %v %s", wedged, err, out)
	}
	srv := tmux.Server{Path: filepath.Join(dir, "sock"), Bin: wedged, Timeout: 300 * time.Millisecond}
	start = time.Now()
	_, err = tmux.NewClient(srv).Capture(ctx, "%1", tmux.CaptureOptions{})
	took := time.Since(start)
	if !errors.Is(err, ctxDeadline) || !strings.Contains(err.Error(), "did not answer within 300ms") || took > 6*time.Second {
		t.Errorf("wedged capture after %s: %v", took, err)
	}
	start = time.Now()
	_, err = tmux.Attach(ctx, srv, "main", tmux.ConnOptions{})
	if took := time.Since(start); err == nil || took > 6*time.Second {
		t.Errorf("wedged attach after %s: %v", took, err)
	}
	if n := tmuxChildren(t, srv); n != 0 {
		t.Errorf("%d tmux children left", n)
	}
}

func TestResizeWindow(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t, "sleep", "100")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 10*time.Second)
	panes, err := c.ListPanes(ctx)
	if err != nil || len(panes) != 1 {
		t.Fatalf("panes %v, err %v", panes, err)
	}
	if err := c.ResizeWindow(ctx, panes[0].ID, 132, 40); err != nil {
		t.Fatal(err)
	}
	p, err := c.PaneInfo(ctx, panes[0].ID)
	if err != nil || p.Width != 132 || p.Height != 40 {
		t.Fatalf("after resize: %dx%d, err %v", p.Width, p.Height, err)
	}
	if err := c.ResizeWindow(ctx, panes[0].ID, 0, 40); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Fatalf("zero width: err = %v", err)
	}
	if err := c.ResizeWindow(ctx, "%99", 80, 24); !errors.Is(err, tmux.ErrNotFound) {
		t.Fatalf("missing pane: err = %v, want ErrNotFound", err)
	}
}

// A session whose command exits at once is kept, dead, with its exit
// status, when asked; undoing it lets a later exit close the pane as usual.
func TestKeepDeadPane(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t, "sleep", "100")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 20*time.Second)
	for i := 0; i < 5; i++ { // the command exits before tmux returns: no race may lose it
		name := "quick" + string(rune('0'+i))
		pane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: name, KeepDeadPane: true, Command: []string{"sh", "-c", "exit 3"}})
		if err != nil || !strings.HasPrefix(pane, "%") {
			t.Fatalf("new session: %q, %v", pane, err)
		}
		// tmux may never learn the status of a command this quick: it
		// reports none (-1) then, never a wrong one.
		testkit.WaitFor(t, 10*time.Second, "the pane to be dead with status 3 or none", func() bool {
			p, err := c.PaneInfo(ctx, pane)
			return err == nil && p.Dead && (p.DeadStatus == 3 || p.DeadStatus == -1)
		})
	}
	pane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "later", KeepDeadPane: true, Command: []string{"sh", "-c", "read x; exit 4"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetRemainOnExit(ctx, pane, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendText(ctx, pane, "go", tmux.SendOptions{NoVerify: true}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the session to close", func() bool {
		ok, err := c.HasSession(ctx, "later")
		return err == nil && !ok
	})
	if _, err := c.NewSession(ctx, tmux.NewSessionOptions{KeepDeadPane: true, Command: []string{"true"}}); err == nil {
		t.Fatal("KeepDeadPane without a name was accepted")
	}
}

// TestTooOldTmux: a tmux older than 3.2 gets one sentence saying so, from
// every command, and tmux -V runs once.
func TestTooOldTmux(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	fake := filepath.Join(dir, "tmux")
	script := "#!/bin/sh\necho x >> " + count + "\n[ \"$*\" != \"${*%-V}\" ] && { echo 'tmux 3.1c'; exit 0; }\necho 'should not run' >&2; exit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := tmux.NewClient(tmux.Server{Path: filepath.Join(dir, "sock"), Bin: fake})
	ctx := ctxFor(t, 10*time.Second)
	for range 3 {
		_, err := c.ListPanes(ctx)
		if !errors.Is(err, tmux.ErrTooOld) {
			t.Fatalf("ListPanes with tmux 3.1c: %v, want ErrTooOld", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "tmux 3.1c is too old: system3 needs tmux 3.2 or later") || strings.Count(msg, "\n") > 0 {
			t.Errorf("message %q", msg)
		}
	}
	if _, err := tmux.Attach(ctx, c.Server, "main", tmux.ConnOptions{}); !errors.Is(err, tmux.ErrTooOld) {
		t.Errorf("Attach with tmux 3.1c: %v", err)
	}
	b, _ := os.ReadFile(count)
	if n := strings.Count(string(b), "x"); n != 1 {
		t.Errorf("tmux ran %d times, want once (tmux -V)", n)
	}
}

// TestPaneSignalsMatchFullListing: the cheap listing the watcher repeats
// says the same about every pane as a full one, on a real server with a
// live pane, a dead one, one in copy mode and one on the alternate screen,
// over the native client and forked.
func TestPaneSignalsMatchFullListing(t *testing.T) {
	srv := tmuxtest.NewServer(t, "seq 1 100; exec sleep 100")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 20*time.Second)
	dead, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "dead", KeepDeadPane: true, Command: []string{"sh", "-c", "sleep 0.2; exit 5"}})
	if err != nil {
		t.Fatal(err)
	}
	alt, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "alt", Width: 90, Height: 20, Command: []string{"sh", "-c", `printf '\033[?1049hfull screen'; exec sleep 100`}})
	if err != nil {
		t.Fatal(err)
	}
	tmuxRun(t, srv, "copy-mode", "-t", "main")
	testkit.WaitFor(t, 10*time.Second, "the dead pane's status and the alternate screen", func() bool {
		d, err1 := c.PaneInfo(ctx, dead)
		a, err2 := c.PaneInfo(ctx, alt)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		// tmux may never learn the status of a quick command (-1).
		return d.Dead && (d.DeadStatus == 5 || d.DeadStatus == -1) && a.AlternateOn
	})
	for _, mode := range []string{"native", "fork"} {
		if mode == "fork" {
			t.Setenv(tmux.ForkEnv, "1")
		}
		var panes []tmux.Pane
		var sigs []tmux.PaneSignal
		// Nothing changes on this server now, but a listing may fall on a
		// second boundary of window_activity: retry then.
		testkit.WaitFor(t, 10*time.Second, "two listings in the same second", func() bool {
			var err1, err2 error
			panes, err1 = c.ListPanes(ctx)
			sigs, err2 = c.ListPaneSignals(ctx)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v, %v", mode, err1, err2)
			}
			return len(panes) == len(sigs) && (len(panes) == 0 || panes[0].Activity.Unix() == sigs[0].Activity)
		})
		if len(sigs) != 3 {
			t.Fatalf("%s: %d signals, want 3", mode, len(sigs))
		}
		seen := map[string]bool{}
		for i, p := range panes {
			if got, want := sigs[i], p.Signal(); got != want {
				t.Errorf("%s: pane %s:\n signals %+v\n full    %+v", mode, p.ID, got, want)
			}
			seen[fmt.Sprint(p.Dead, p.InMode, p.AlternateOn)] = true
		}
		if len(seen) != 3 {
			t.Errorf("%s: the panes did not show a dead pane, copy mode and the alternate screen: %v", mode, seen)
		}
	}
}
