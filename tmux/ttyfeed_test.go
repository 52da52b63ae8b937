package tmux_test

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
	"golang.org/x/sys/unix"
)

// writeWhen is a pane command that prints nothing until file exists, then
// prints one line and sleeps: the moment it writes is the test's to pick.
func writeWhen(file string) []string {
	return []string{"sh", "-c", "while [ ! -e " + file + " ]; do sleep 0.02; done; echo written; exec sleep 600"}
}

// TestTTYFeedSeesWritesAndTerminals: the kernel tells which pane's
// terminal was written to, and when a terminal is made or freed (a pane
// created or killed), without asking tmux; it does not see a terminal's
// own echo of typed text, which is why the watcher still reads the
// server's read count.
func TestTTYFeedSeesWritesAndTerminals(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("terminal write events need Linux's inotify")
	}
	t.Parallel()
	dir := t.TempDir()
	one, two := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	srv := tmuxtest.NewServer(t, writeWhen(one)...)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 30*time.Second)
	second := newWindow(t, c, writeWhen(two)...)
	echo := newWindow(t, c, "cat") // canonical mode: the terminal echoes what is typed
	panes, err := c.ListPanes(ctx)
	if err != nil || len(panes) != 3 {
		t.Fatalf("ListPanes = %v, %v", panes, err)
	}
	first := panes[0].ID

	feed, err := tmux.NewTTYFeed()
	if err != nil {
		t.Fatalf("no terminal write events on this Linux machine: %v", err)
	}
	defer feed.Close()
	if added, unwatched := feed.Sync(panes); added != 3 || unwatched != 0 {
		t.Fatalf("Sync watched %d panes, %d unwatched; want 3, 0", added, unwatched)
	}
	// drainFor collects events until want says enough, or d passes.
	// A watched terminal that is freed (its pane killed) ends its watch:
	// lost says so.
	lost := false
	drainFor := func(d time.Duration, want func(wrote map[string]bool, topology bool) bool) (map[string]bool, bool) {
		all, topo := map[string]bool{}, false
		testkit.Poll(d, func() bool {
			wrote, topology, l, err := feed.Drain()
			if err != nil {
				t.Fatalf("Drain: %v", err)
			}
			lost = lost || l
			for id := range wrote {
				all[id] = true
			}
			topo = topo || topology
			return want != nil && want(all, topo)
		})
		return all, topo
	}
	drainFor(300*time.Millisecond, nil) // whatever the panes' start wrote

	if err := os.WriteFile(one, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wrote, _ := drainFor(5*time.Second, func(w map[string]bool, _ bool) bool { return w[first] })
	if !wrote[first] || wrote[second] || wrote[echo] {
		t.Fatalf("after %s wrote: events for %v; want %s only", first, wrote, first)
	}

	if _, err := c.SendText(ctx, echo, "typed", tmux.SendOptions{NoEnter: true}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the echo on the screen", func() bool {
		s, err := c.Capture(ctx, echo, tmux.CaptureOptions{})
		return err == nil && len(s) > 0
	})
	if wrote, _ := drainFor(300*time.Millisecond, nil); wrote[echo] {
		t.Errorf("the terminal's own echo made a write event (%v): the watcher's read-count check would be redundant", wrote)
	}

	if lost {
		t.Fatal("events were lost while no pane went away")
	}
	added := newWindow(t, c, "sleep", "600")
	if _, topo := drainFor(5*time.Second, func(_ map[string]bool, t bool) bool { return t }); !topo {
		t.Fatalf("no event for the terminal of new pane %s", added)
	}
	tmuxRun(t, srv, "kill-pane", "-t", second)
	if _, topo := drainFor(5*time.Second, func(_ map[string]bool, t bool) bool { return t }); !topo {
		t.Fatalf("no event for the terminal of killed pane %s", second)
	}
	testkit.WaitFor(t, 5*time.Second, "the killed pane's watch to end", func() bool {
		drainFor(20*time.Millisecond, nil)
		return lost
	})
	panes, err = c.ListPanes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if added, unwatched := feed.Sync(panes); added != 1 || unwatched != 0 || feed.Watching(second) || !feed.Watching(first) {
		t.Fatalf("Sync after a pane came and went: %d added, %d unwatched, watching %s %v, %s %v",
			added, unwatched, second, feed.Watching(second), first, feed.Watching(first))
	}
}

// TestWatcherListsLessWhileTerminalsAreWritten: with terminal write
// events, a pane that keeps printing makes the watcher list panes about
// every LayoutEvery, not at every tick; it is still reported while it
// prints and once it stops.
func TestWatcherListsLessWhileTerminalsAreWritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("terminal write events need Linux's inotify")
	}
	t.Parallel()
	stop := filepath.Join(t.TempDir(), "stop")
	srv := tmuxtest.NewServer(t, "sh", "-c", "while [ ! -e "+stop+" ]; do echo line; sleep 0.03; done; exec sleep 600")
	c := tmux.NewClient(srv)
	newWindow(t, c, "cat")
	ctx := ctxFor(t, 30*time.Second)
	panes, err := c.ListPanes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream := panes[0].ID
	opts := tmux.WatcherOptions{PollInterval: 50 * time.Millisecond, LayoutEvery: 500 * time.Millisecond, FullEvery: 10 * time.Second}
	w := tmux.NewWatcher(srv, opts)
	opts.NoTTYEvents = true
	without := tmux.NewWatcher(srv, opts)
	evs := collect(w)
	collect(without)
	runWatcher(t, w)
	runWatcher(t, without)
	evs.await(t, 5*time.Second, "resync", kind(tmux.EventResync))
	f0, l0, s0 := w.Listings()
	_, wl0, _ := without.Listings()
	evs.await(t, 5*time.Second, "the printing pane", outputFrom(stream, ""))
	time.Sleep(2 * time.Second)
	f1, l1, s1 := w.Listings()
	_, wl1, _ := without.Listings()
	light, skipped, withoutLight := l1-l0, s1-s0, wl1-wl0
	// Ticks are 50 ms apart (up to 250 ms on a loaded machine); with
	// events, one in ten lists, or one in two when ticks are far apart.
	if light == 0 || light*2 > light+skipped+2 || light >= withoutLight {
		t.Fatalf("while a pane printed: %d light listings and %d ticks without one (%d full); %d light listings without terminal events",
			light, skipped, f1-f0, withoutLight)
	}
	t.Logf("while a pane printed: %d light listings, %d ticks without one; without terminal events %d light listings", light, skipped, withoutLight)

	evs.drain()
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	evs.await(t, 5*time.Second, "the pane that stopped printing", outputFrom(stream, ""))
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("the pane that stopped printing was reported %v later", took)
	}
}

// TestQuietFleetIsListedInFullLessOften: with terminal write events, a
// fleet is listed in full every 5 s, not every FullEvery (fullGap;
// TestFullListingsAreSpacedWithEvents), and after 5 s quiet it ticks
// four times less often; here, on a real server, a write is still
// reported at once, and a rename, which writes nothing, still shows. (How many full listings a quiet fleet gets is
// not counted here: a terminal made or freed anywhere on the machine
// lists in full at once.)
func TestQuietFleetIsListedInFullLessOften(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("terminal write events need Linux's inotify")
	}
	t.Parallel()
	srv := tmuxtest.NewServer(t, "cat")
	c := tmux.NewClient(srv)
	newWindow(t, c, "cat")
	ctx := ctxFor(t, 60*time.Second)
	panes, err := c.ListPanes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{PollInterval: 50 * time.Millisecond, FullEvery: time.Second})
	evs := collect(w)
	runWatcher(t, w)
	evs.await(t, 5*time.Second, "resync", kind(tmux.EventResync))
	// Quiet for over 5 s: ticks 200 ms apart, not 50 (about 10 in 2 s,
	// not 40).
	time.Sleep(5500 * time.Millisecond)
	_, _, s0 := w.Listings()
	time.Sleep(2 * time.Second)
	if _, _, s1 := w.Listings(); s1-s0 > 20 {
		t.Errorf("a fleet quiet for 5 s ticked %d times in 2 s, want about 10", s1-s0)
	}
	// A write (cat prints the line back) is reported within a tick or
	// two.
	evs.drain()
	wrote := time.Now()
	if _, err := c.SendText(ctx, panes[0].ID, "hello", tmux.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	evs.await(t, 2*time.Second, "the pane that wrote", outputFrom(panes[0].ID, ""))
	if took := time.Since(wrote); took > 700*time.Millisecond {
		t.Errorf("a write to a quiet fleet was reported %v later", took)
	}
	// Quiet again, then a rename: seen within the 5 s spacing.
	time.Sleep(1500 * time.Millisecond)
	evs.drain()
	tmuxRun(t, srv, "rename-session", "-t", panes[0].SessionName, "renamed")
	evs.await(t, 7*time.Second, "the rename", kind(tmux.EventSessionsChanged))
}

// TestTTYFeedReadsAgainWhenTheBufferFills: a drain that takes a full
// buffer of events reads again, so the events behind them are this
// drain's too; one that leaves room has emptied the queue.
func TestTTYFeedReadsAgainWhenTheBufferFills(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("terminal write events need Linux's inotify")
	}
	t.Parallel()
	srv := tmuxtest.NewServer(t, "exec sleep 600")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 30*time.Second)
	newWindow(t, c, "sleep", "600")
	newWindow(t, c, "sleep", "600")
	panes, err := c.ListPanes(ctx)
	if err != nil || len(panes) != 3 {
		t.Fatalf("ListPanes = %v, %v", panes, err)
	}
	feed, err := tmux.NewTTYFeed()
	if err != nil {
		t.Fatalf("no terminal write events on this Linux machine: %v", err)
	}
	defer feed.Close()
	// Room for the largest event and three without a name (16 bytes):
	// a read of three or more events may have left more behind.
	feed.SetBuffer(unix.SizeofInotifyEvent + unix.NAME_MAX + 1 + 3*unix.SizeofInotifyEvent)
	if added, unwatched := feed.Sync(panes); added != 3 || unwatched != 0 {
		t.Fatalf("Sync watched %d panes, %d unwatched; want 3, 0", added, unwatched)
	}
	ttys := make([]*os.File, 3)
	for i, p := range panes {
		f, err := os.OpenFile(p.TTY, os.O_WRONLY|syscall.O_NOCTTY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ttys[i] = f
	}
	if _, _, _, err := feed.Drain(); err != nil {
		t.Fatal(err)
	}
	// Two panes in turns make events the kernel does not merge (it merges
	// only an event equal to the last one queued): more than one read
	// takes. The third pane writes last.
	for range 40 {
		for _, f := range ttys[:2] {
			if _, err := f.Write([]byte(".")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := ttys[2].Write([]byte(".")); err != nil {
		t.Fatal(err)
	}
	wrote, _, lost, err := feed.Drain()
	if err != nil || lost {
		t.Fatalf("Drain: %v (lost %v)", err, lost)
	}
	for _, p := range panes {
		if !wrote[p.ID] {
			t.Errorf("one drain missed the write to %s behind a full buffer: %v", p.ID, wrote)
		}
	}
	if wrote, _, _, _ := feed.Drain(); len(wrote) != 0 {
		t.Errorf("a second drain found writes %v: the first left events behind", wrote)
	}
}
