package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// started is a command running in the background.
type started struct {
	out, err *testkit.SyncBuffer
	cancel   context.CancelFunc
	code     chan int
}

func startCmd(t *testing.T, args ...string) *started {
	t.Helper()
	vars := map[string]string{"SYSTEM3_STATE_DIR": testkit.StateDir(t)}
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{out: &testkit.SyncBuffer{}, err: &testkit.SyncBuffer{}, cancel: cancel, code: make(chan int, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.code <- run(ctx, args, strings.NewReader(""), s.out, s.err, func(k string) string { return vars[k] })
	}()
	// The command reads TestStartMonitors, which the next test sets.
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

// waitOut waits until the output contains every want.
func (s *started) waitOut(t *testing.T, want ...string) string {
	t.Helper()
	missing := ""
	out := testkit.WaitForValue(t, 5*time.Second, fmt.Sprintf("the output to hold %q", want), func() (string, bool) {
		out := s.out.String()
		for _, w := range want {
			if !strings.Contains(out, w) {
				missing = w
				return out, false
			}
		}
		return out, true
	}, func() string { return fmt.Sprintf("lacks %q\nstderr: %s", missing, s.err.String()) })
	return out
}

func (s *started) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-s.code:
		return code
	case <-time.After(5 * time.Second):
		t.Fatal("command did not end")
		return -1
	}
}

func TestWatchText(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := useFake(t)
	f.SetSnapshot(api.Snapshot{Server: "default", Running: true, Sessions: []api.Session{sessAuth, sessDocs}})
	auth := f.Raise(t, monitortest.WakeAuth)

	w := startCmd(t, "watch")
	w.waitOut(t,
		"default: 2 sessions, 2 panes; watching",
		"session  orch-auth:0.1 %3  claude  awaiting_input/permission  (rule claude.permission)",
		"session  docs:0.0 %5  codex  working/tool  (rule codex.working)",
		"wake     open     "+auth.ID+"  awaiting_input  orch-auth %3",
	)

	working := sessAuth
	working.State, working.Kind, working.Evidence.Rule = api.Working, "", "claude.working"
	docsAgain := sessDocs
	docsAgain.LastLine = "still working" // no state change: nothing to print
	added := api.Session{Pane: "%7", Session: "api", Target: "api:1.0", Agent: "claude", State: api.Idle}
	f.Publish(api.Update{Kind: api.SessionChanged, Session: working, Previous: api.AwaitingInput})
	f.Publish(api.Update{Kind: api.SessionChanged, Session: docsAgain, Previous: api.Working})
	f.Publish(api.Update{Kind: api.SessionAdded, Session: added})
	f.Publish(api.Update{Kind: api.SessionRemoved, Session: api.Session{Pane: "%5"}})
	docs := f.Raise(t, monitortest.WakeDocs)
	f.Store.Ack(auth.ID, "tui")

	out := w.waitOut(t,
		"session  orch-auth:0.1 %3  claude  awaiting_input/permission → working  (rule claude.working)",
		"session  api:1.0 %7  claude  new, idle",
		"session  docs:0.0 %5  codex  removed",
		"wake     raised   "+docs.ID+"  error_loop_detected  docs %5",
		"wake     acked    "+auth.ID+"  awaiting_input  orch-auth %3  by tui",
	)
	if n := strings.Count(out, "%5  codex"); n != 2 {
		t.Errorf("docs printed %d times, want the snapshot and the removal:\n%s", n, out)
	}
	w.cancel()
	if code := w.exit(t); code != 0 {
		t.Errorf("exit %d after interrupt, stderr %q", code, w.err.String())
	}
	if f.stops.Load() != 1 {
		t.Error("monitors not stopped")
	}
}

// watch counts tmux sessions and panes as status does: one tmux session
// with three panes is "1 session, 3 panes", not three sessions.
func TestWatchCountsSessionsAndPanes(t *testing.T) {
	f := useFake(t)
	panes := []api.Session{sessAuth, sessAuth, sessAuth}
	for i := range panes {
		panes[i].Pane, panes[i].PaneIndex, panes[i].Target = fmt.Sprintf("%%%d", 3+i), i, fmt.Sprintf("orch-auth:0.%d", i)
	}
	f.SetSnapshot(api.Snapshot{Server: "default", Running: true, Sessions: panes})
	w := startCmd(t, "watch")
	w.waitOut(t, "session  orch-auth:0.2 %5")
	if out := w.out.String(); !strings.HasPrefix(out, "default: 1 session, 3 panes; watching") {
		t.Errorf("watch's first line:\n%s", out)
	}
	w.cancel()
	if code := w.exit(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestWatchJSON(t *testing.T) {
	f := useFake(t)
	f.SetSnapshot(api.Snapshot{Server: "default", Running: true, Sessions: []api.Session{sessAuth}})
	w := startCmd(t, "watch", "--json")
	w.waitOut(t, `"kind":"snapshot"`)
	changed := sessAuth
	changed.State, changed.Kind = api.Error, "api_error"
	f.Publish(api.Update{Kind: api.SessionChanged, Session: changed})
	f.Raise(t, monitortest.WakeDocs)
	w.waitOut(t, `"kind":"changed"`, `"type":"wake"`)
	w.cancel()
	if code := w.exit(t); code != 0 {
		t.Fatalf("exit %d", code)
	}

	var lines []watchLine
	for _, l := range strings.Split(strings.TrimSpace(w.out.String()), "\n") {
		var wl watchLine
		if err := json.Unmarshal([]byte(l), &wl); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		lines = append(lines, wl)
	}
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3: %+v", len(lines), lines)
	}
	if l := lines[0]; l.Type != "session" || l.Kind != "snapshot" || l.Session.Pane != "%3" || !l.Time.Equal(testEpoch) {
		t.Errorf("line 1 = %+v", l)
	}
	if l := lines[1]; l.Type != "session" || l.Kind != "changed" || l.Previous != api.AwaitingInput || l.Session.Kind != "api_error" {
		t.Errorf("line 2 = %+v", l)
	}
	if l := lines[2]; l.Type != "wake" || l.Kind != "raised" || l.Wake == nil || l.Wake.Pane != "%5" || l.Replayed {
		t.Errorf("line 3 = %+v", l)
	}
}

func TestWatchResync(t *testing.T) {
	f := useFake(t)
	f.SetSnapshot(api.Snapshot{Server: "default", Running: true, Sessions: []api.Session{sessAuth, sessDocs}})
	w := startCmd(t, "watch")
	w.waitOut(t, "docs:0.0 %5")
	// Updates were dropped; the registry now differs.
	working := sessAuth
	working.State, working.Kind = api.Working, ""
	f.SetSnapshot(api.Snapshot{Server: "default", Running: true, Sessions: []api.Session{working}})
	f.Publish(api.Update{Kind: api.Resync, Missed: 3})
	w.waitOut(t, "awaiting_input/permission → working", "docs:0.0 %5  codex  removed")
	w.cancel()
	w.exit(t)
}

func TestWatchEndsWhenMonitorsStop(t *testing.T) {
	f := useFake(t)
	f.SetSnapshot(api.Snapshot{Server: "/tmp/tmux-1/default", Problem: "tmux is not installed"})
	w := startCmd(t, "watch")
	w.waitOut(t, "no tmux server is running (/tmp/tmux-1/default)", "problem: tmux is not installed")
	f.EndWatches()
	if code := w.exit(t); code != 1 || !strings.Contains(w.err.String(), "the monitors stopped") {
		t.Fatalf("exit %d, stderr %q", code, w.err.String())
	}
}
