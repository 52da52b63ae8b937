package monitor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// live is the monitors as system3 runs them (tmux watcher, supervisor,
// wake store with its journal) on a private tmux server.
type live struct {
	t     *testing.T
	srv   tmux.Server
	store *wake.Store
	sup   *Supervisor

	mu      sync.Mutex
	updates []api.Update
}

func startLive(t *testing.T, srv tmux.Server) *live {
	t.Helper()
	eng, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := wake.Open(wake.Config{Dir: t.TempDir(), KeepAcked: 10000})
	if err != nil {
		t.Fatal(err)
	}
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{})
	client := tmux.NewClient(srv)
	sup, err := New(Config{Server: srv.String(), Tmux: client, Events: w.Events(), Rules: eng, Wakes: store, HeartbeatEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	l := &live{t: t, srv: srv, store: store, sup: sup}
	ctx, cancel := context.WithCancel(context.Background())
	ups, err := sup.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	run := func(f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil {
				t.Errorf("monitor stopped: %v", err)
			}
		}()
	}
	run(w.Run)
	run(sup.Run)
	run(store.Run)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for u := range ups {
			l.mu.Lock()
			l.updates = append(l.updates, u)
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		store.Close()
	})
	return l
}

// await polls the snapshot until ok says it is as wanted ("" means yes, else
// what is wrong) and returns it, failing the test after timeout.
func (l *live) await(timeout time.Duration, ok func(api.Snapshot) string) api.Snapshot {
	l.t.Helper()
	return testkit.WaitForValue(l.t, timeout, "the snapshot wanted", func() (awaited, bool) {
		snap, err := l.sup.Snapshot(context.Background())
		if err != nil {
			l.t.Fatal(err)
		}
		wrong := ok(snap)
		return awaited{snap, wrong}, wrong == ""
	}).snap
}

// awaited is a snapshot and what is wrong with it ("" nothing), shown as
// a failed await shows the last one: what is wrong, then the sessions.
type awaited struct {
	snap  api.Snapshot
	wrong string
}

func (a awaited) String() string {
	var b strings.Builder
	for _, s := range a.snap.Sessions {
		fmt.Fprintf(&b, "\n  %s %s %s %s/%s %q", s.Pane, s.Target, s.Agent, s.State, s.Kind, s.Question)
	}
	return fmt.Sprintf("%s (running %v, problem %q)%s", a.wrong, a.snap.Running, a.snap.Problem, b.String())
}

// wakes counts every wake raised so far by reason and session.
func (l *live) wakes() map[string]int {
	l.t.Helper()
	evs, err := l.store.List(api.AllWakes())
	if err != nil {
		l.t.Fatal(err)
	}
	n := map[string]int{}
	for _, ev := range evs {
		n[string(ev.Reason)+" "+ev.Session]++
	}
	return n
}

func sessionNamed(snap api.Snapshot, name string) (api.Session, bool) {
	for _, s := range snap.Sessions {
		if s.Session == name {
			return s, true
		}
	}
	return api.Session{}, false
}

// prompting says "" when every named session shows the permission prompt.
func prompting(names ...string) func(api.Snapshot) string {
	return func(snap api.Snapshot) string {
		for _, n := range names {
			s, ok := sessionNamed(snap, n)
			switch {
			case !ok:
				return n + " is not in the snapshot"
			case s.State != api.AwaitingInput || s.Kind != "permission" || s.Question != "Do you want to proceed?":
				return fmt.Sprintf("%s is %s/%s, want the permission prompt", n, s.State, s.Kind)
			}
		}
		return ""
	}
}

func permissionCapture(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newSession starts a detached 120x40 session running a shell command line,
// retrying while a server that was just killed still holds the socket.
func newSession(t *testing.T, srv tmux.Server, name, command string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		pane, err := tmux.NewClient(srv).NewSession(ctx, tmux.NewSessionOptions{Name: name, Width: 120, Height: 40, Command: []string{"sh", "-c", command}})
		if err == nil {
			return pane
		}
		if !errors.Is(err, tmux.ErrNoServer) || ctx.Err() != nil {
			t.Fatalf("new session %s: %v", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tmuxDo(t *testing.T, srv tmux.Server, args ...string) {
	t.Helper()
	if out, err := exec.Command(tmuxtest.Bin(), append([]string{"-S", srv.Path}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// The tmux server killed under running monitors is a state, not a crash:
// the snapshot says so, the agents that died with it raise one
// worker_failed each, and when a server comes back its sessions are
// adopted and classified, each prompt raising exactly one new wake.
func TestResilienceTmuxServerRestart(t *testing.T) {
	srv := tmuxtest.NewStoppedServer(t)
	prompt := "cat '" + permissionCapture(t) + "'; exec sleep 600"
	names := []string{"orch-a", "orch-b"}
	for _, n := range names {
		newSession(t, srv, n, prompt)
	}
	l := startLive(t, srv)
	l.await(15*time.Second, prompting(names...))

	for round := 1; round <= 2; round++ {
		if err := tmux.NewClient(srv).KillServer(context.Background()); err != nil {
			t.Fatal(err)
		}
		l.await(10*time.Second, func(snap api.Snapshot) string {
			if snap.Running || len(snap.Sessions) > 0 || !strings.Contains(snap.Problem, "no tmux server is running") {
				return "the snapshot does not show the server gone"
			}
			return ""
		})
		start := time.Now()
		for _, n := range names {
			newSession(t, srv, n, prompt)
		}
		snap := l.await(15*time.Second, prompting(names...))
		recovered := time.Since(start)
		t.Logf("round %d: recovered in %s (design bound: the watcher's 1s retry + attach + one capture)", round, recovered.Round(time.Millisecond))
		if snap.Problem != "" || !snap.Running {
			t.Fatalf("after recovery: running %v, problem %q", snap.Running, snap.Problem)
		}

		// Whatever the watcher and the rescans do next, no wake is raised
		// twice: one prompt per session per server, one worker_failed per
		// session per kill.
		time.Sleep(1500 * time.Millisecond)
		got := l.wakes()
		want := map[string]int{}
		for _, n := range names {
			want["awaiting_input "+n] = round + 1
			want["worker_failed "+n] = round
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			var b strings.Builder
			evs, _ := l.store.List(api.AllWakes())
			for _, ev := range evs {
				fmt.Fprintf(&b, "\n  %s %s %s %s %s %q", ev.Time.Format("15:04:05.000"), ev.Reason, ev.Session, ev.Pane, ev.Evidence.Rule, ev.Evidence.Lines)
			}
			t.Fatalf("round %d: wakes raised %v, want %v:%s", round, got, want, b.String())
		}
	}
}

// Renaming a session and moving a window to another session keep the pane,
// its state and its wake: the snapshot and the update stream show the new
// place, and nothing is raised again.
func TestResilienceSessionRenamedAndWindowMoved(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	pane := newSession(t, srv, "orch-a", "cat '"+permissionCapture(t)+"'; exec sleep 600")
	newSession(t, srv, "other", "exec sleep 600")
	l := startLive(t, srv)
	l.await(15*time.Second, prompting("orch-a"))

	tmuxDo(t, srv, "rename-session", "-t", "orch-a", "orch-renamed")
	snap := l.await(10*time.Second, prompting("orch-renamed"))
	if s, _ := sessionNamed(snap, "orch-renamed"); s.Pane != pane || s.Target != "orch-renamed:0.0" {
		t.Fatalf("after the rename: pane %s target %s, want %s orch-renamed:0.0", s.Pane, s.Target, pane)
	}
	l.awaitUpdate(pane, "orch-renamed")
	// The open wake follows the rename: a reader waiting on the new name
	// gets it.
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	ev, err := l.store.Wait(wctx, api.WakeFilter{Session: "orch-ren*"})
	wcancel()
	if err != nil || ev.Pane != pane || ev.Session != "orch-renamed" {
		t.Fatalf("Wait(orch-ren*) = %+v, %v; want the wake of %s under its new name", ev, err, pane)
	}

	tmuxDo(t, srv, "move-window", "-s", "orch-renamed:0", "-t", "other:7")
	snap = l.await(10*time.Second, prompting("other"))
	if s, _ := sessionNamed(snap, "other"); s.Pane != pane || s.Target != "other:7.0" || s.WindowIndex != 7 {
		t.Fatalf("after the move: pane %s target %s, want %s other:7.0", s.Pane, s.Target, pane)
	}
	if _, ok := sessionNamed(snap, "orch-renamed"); ok {
		t.Fatal("the emptied session is still listed")
	}
	l.awaitUpdate(pane, "other")
	time.Sleep(500 * time.Millisecond)
	testkit.WaitForValue(t, 10*time.Second, "only the first prompt's wake, under the session it is in now", func() (map[string]int, bool) {
		got := l.wakes()
		return got, len(got) == 1 && got["awaiting_input other"] == 1
	})
	// The new name is journaled: a restart reads it back.
	evs, warnings, err := wake.ReadJournal(l.store.Path())
	if err != nil || len(warnings) > 0 || len(evs) != 1 || evs[0].Session != "other" {
		t.Fatalf("journal after the rename: %+v, %v, %v; want the wake under session other", evs, warnings, err)
	}
}

// awaitUpdate waits for an update that shows pane in session: a dashboard
// that follows updates must see renames too.
func (l *live) awaitUpdate(pane, session string) {
	l.t.Helper()
	testkit.WaitFor(l.t, 5*time.Second, fmt.Sprintf("an update that shows pane %s in session %s", pane, session), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, u := range l.updates {
			if u.Session.Pane == pane && u.Session.Session == session && u.Kind != api.SessionRemoved {
				return true
			}
		}
		return false
	})
}

// Panes that print a 1 MB line, binary garbage and floods of escape
// sequences neither stop the monitors nor hide a prompt: the prompt that
// follows the flood is found, and a pane flooding forever does not delay
// another pane's prompt.
func TestResilienceHostileOutput(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	flood := `yes "$(printf '\033[2J\033[H\033[?1049h\033[31;1mred\033]0;title\007\033[?1049l\033[99999;99999H\033P+q\033\\')" | head -c 2000000`
	newSession(t, srv, "orch-flood", strings.Join([]string{
		`head -c 1048576 /dev/zero | tr '\0' x; echo`,
		`head -c 1048576 /dev/urandom`,
		flood,
		`printf '\033[0m\033c'; clear; cat '` + permissionCapture(t) + `'; exec sleep 600`,
	}, "; "))
	newSession(t, srv, "flooding", `while :; do `+flood+`; head -c 65536 /dev/urandom; done`)
	// Its screen ends in one line of a megabyte (a capture joins wrapped
	// lines: the whole screen is one line).
	newSession(t, srv, "longline", `head -c 1048576 /dev/zero | tr '\0' x; exec sleep 600`)
	l := startLive(t, srv)
	l.await(60*time.Second, prompting("orch-flood"))

	// With one pane still flooding, a new prompt elsewhere is found.
	start := time.Now()
	newSession(t, srv, "orch-late", "cat '"+permissionCapture(t)+"'; exec sleep 600")
	snap := l.await(30*time.Second, prompting("orch-late"))
	t.Logf("a prompt next to a flooding pane was found in %s", time.Since(start).Round(time.Millisecond))
	if _, ok := sessionNamed(snap, "flooding"); !ok {
		t.Fatal("the flooding pane is not listed")
	}
	snap = l.await(10*time.Second, func(snap api.Snapshot) string {
		if s, ok := sessionNamed(snap, "longline"); !ok || !strings.HasPrefix(s.LastLine, "xxxxxxxx") {
			return "the long line is not shown yet"
		}
		return ""
	})
	for _, s := range snap.Sessions {
		if n := utf8.RuneCountInString(s.LastLine); n > rules.MaxLineRunes {
			t.Errorf("%s: last line of %d characters", s.Target, n)
		}
		for _, e := range s.Evidence.Lines {
			if n := utf8.RuneCountInString(e); n > rules.MaxLineRunes {
				t.Errorf("%s: evidence line of %d characters", s.Target, n)
			}
		}
	}
}
