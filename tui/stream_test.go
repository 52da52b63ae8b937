package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestRegistryUpdates(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	h.selectPane("%2") // orch-auth:1.0, working

	// It starts waiting: it moves up among those needing a person, and
	// stays selected.
	s := fixtureSessions()[5]
	if s.Pane != "%2" {
		t.Fatalf("fixture order changed: %s", s.Pane)
	}
	s.State, s.Kind, s.Question, s.Options = api.AwaitingInput, "question", "Which database?", []string{"Postgres", "SQLite"}
	svc.Publish(api.Update{Kind: api.SessionChanged, Session: s, Previous: api.Working})
	h.read()
	if got := h.targets(); strings.Join(got, " ") != "api:1.0 orch-auth:0.0 orch-auth:1.0 web:0.1 db:0.0 docs:0.0 scratch:0.0" {
		t.Errorf("order after change: %v", got)
	}
	if sel, _ := h.m.table.Selected(); sel.Pane != "%2" || sel.State != api.AwaitingInput {
		t.Errorf("selected %s (%s), want %%2 awaiting", sel.Pane, sel.State)
	}
	if !strings.Contains(h.m.View(), "Which database?") {
		t.Error("the new question is not shown")
	}

	added := api.Session{Pane: "%20", Session: "new", Target: "new:0.0", Agent: "codex", State: api.Idle, Since: now}
	svc.Publish(api.Update{Kind: api.SessionAdded, Session: added})
	h.read()
	if h.m.table.Len() != 8 || h.m.counts[api.Idle] != 2 {
		t.Errorf("after add: %d rows, %d idle", h.m.table.Len(), h.m.counts[api.Idle])
	}
	svc.Publish(api.Update{Kind: api.SessionRemoved, Session: s})
	h.read()
	if h.m.table.Len() != 7 {
		t.Errorf("after remove: %d rows", h.m.table.Len())
	}
	if sel, ok := h.m.table.Selected(); !ok || sel.Pane == "%2" {
		t.Errorf("the removed session is still selected")
	}
}

func TestResyncTakesANewSnapshot(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	snap := fixtureSnapshot()
	snap.Sessions = snap.Sessions[:2]
	snap.Problem = "the wake journal is not writable: disk full"
	svc.SetSnapshot(snap)
	svc.Publish(api.Update{Kind: api.Resync, Missed: 12})
	h.read()
	if h.m.table.Len() != 2 {
		t.Fatalf("%d rows after resync, want 2", h.m.table.Len())
	}
	if v := h.m.View(); !strings.Contains(v, "⚠ the wake journal is not writable: disk full") {
		t.Fatalf("no problem line:\n%s", v)
	}
}

// TestReconnect: when the service goes away (a daemon that stopped), the
// header says so, the last sessions stay, and the dashboard reconnects
// with backoff.
func TestReconnect(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	gen := h.m.watch.gen
	svc.Fail("watch", errors.New("dial unix system3.sock: connection refused"))
	svc.EndWatches()
	// The registry's stream ends, after whatever the streams (the
	// preview's too) still had on their way.
	for range 8 {
		if h.read(); !h.m.watch.up {
			break
		}
	}
	if h.m.watch.up || h.m.watch.backoff.Failed() != 1 {
		t.Fatalf("watch up %v, attempt %d", h.m.watch.up, h.m.watch.backoff.Failed())
	}
	v := h.m.View()
	if !strings.Contains(v, "session updates: the service closed the stream; reconnecting (attempt 1") {
		t.Fatalf("no reconnecting line:\n%s", v)
	}
	if h.m.table.Len() != 7 {
		t.Fatal("the last known sessions were dropped")
	}

	// The retry fails: attempt 2, longer wait.
	h.send(retryMsg{stream: streamWatch, gen: gen})
	if h.m.watch.backoff.Failed() != 2 || !strings.Contains(h.m.View(), "connection refused; reconnecting (attempt 2") {
		t.Fatalf("attempt %d:\n%s", h.m.watch.backoff.Failed(), h.m.View())
	}
	// A stale retry does nothing.
	h.send(retryMsg{stream: streamWatch, gen: gen})
	if h.m.watch.backoff.Failed() != 2 {
		t.Fatalf("a stale retry counted: attempt %d", h.m.watch.backoff.Failed())
	}

	// The service is back, with a change made while it was away.
	svc.Fail("watch", nil)
	snap := fixtureSnapshot()
	snap.Sessions = snap.Sessions[1:]
	svc.SetSnapshot(snap)
	h.send(retryMsg{stream: streamWatch, gen: h.m.watch.gen})
	if !h.m.watch.up || h.m.watch.backoff.Failed() != 0 || h.m.table.Len() != 6 {
		t.Fatalf("after reconnecting: up %v, attempt %d, %d rows", h.m.watch.up, h.m.watch.backoff.Failed(), h.m.table.Len())
	}
	if strings.Contains(h.m.View(), "reconnecting") {
		t.Fatal("still says reconnecting")
	}
	// And the new stream delivers.
	s := snap.Sessions[0]
	s.State = api.Idle
	svc.Publish(api.Update{Kind: api.SessionChanged, Session: s})
	h.read()
	if h.m.counts[api.Idle] != 2 {
		t.Fatalf("update after reconnect not applied")
	}
}

func TestBackoffGrows(t *testing.T) {
	h := newHarness(t, newFixtureService(t), Options{}, 100, 30)
	var waits []time.Duration
	for range 7 {
		h.m.fail(streamWakes, errors.New("gone"))
		waits = append(waits, h.m.wakeS.retryAt.Sub(h.m.now))
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
}

func TestWakeFeedReconnectReconciles(t *testing.T) {
	svc := newFixtureService(t)
	evs := raiseFixtureWakes(t, svc)
	h := newHarness(t, svc, Options{}, 100, 30)
	if h.m.feed.need != 3 {
		t.Fatalf("%d unacked", h.m.feed.need)
	}
	// The feed ends (the socket closed); meanwhile a wake is acked from
	// the CLI.
	h.m.wakeS.cancel()
	h.read()
	if h.m.wakeS.up || !strings.Contains(h.m.View(), "wakes: the service closed the stream; reconnecting (attempt 1") {
		t.Fatalf("not reconnecting:\n%s", h.m.View())
	}
	if _, err := svc.Store.Ack(evs[2].ID, "cli"); err != nil {
		t.Fatal(err)
	}
	h.send(retryMsg{stream: streamWakes, gen: h.m.wakeS.gen})
	if !h.m.wakeS.up || h.m.feed.need != 2 {
		t.Fatalf("after reconnecting: up %v, %d unacked", h.m.wakeS.up, h.m.feed.need)
	}
}

func TestWakeStreamResync(t *testing.T) {
	svc := newFixtureService(t)
	evs := raiseFixtureWakes(t, svc)
	h := newHarness(t, svc, Options{}, 100, 30)
	// Acked elsewhere while the dashboard missed messages: the resync
	// re-reads the unacknowledged wakes and drops the acked one.
	if _, err := svc.Store.Ack(evs[3].ID, "cli"); err != nil {
		t.Fatal(err)
	}
	h.send(wakeMsg{gen: h.m.wakeS.gen, m: api.WakeMessage{Kind: api.WakeResync, Missed: 1}, ok: true})
	if h.m.feed.need != 2 {
		t.Fatalf("%d unacked after resync, want 2", h.m.feed.need)
	}
	// The ack message that was queued arrives late: nothing changes.
	h.read()
	if h.m.feed.need != 2 {
		t.Fatalf("%d unacked after the late ack, want 2", h.m.feed.need)
	}
}

func TestNewWakeRingsAndFlashes(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{Bell: true}, 100, 30)
	svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/%1", Session: "orch-auth", Pane: "%1",
		Question: "Do you want to make this edit to login.go?", SuggestedAction: "Check it."})
	h.read()
	if got := h.bell.String(); got != "\a" {
		t.Errorf("bell wrote %q", got)
	}
	if s := h.statusText(); s != "⚑ new wake: awaiting_input · orch-auth:0.0 · Do you want to make this edit to login.go?" {
		t.Errorf("status %q", s)
	}
	if h.m.status.level != levelWake {
		t.Error("the new wake does not flash")
	}
	// A burst rings once.
	svc.Raise(t, api.Wake{Reason: api.ReasonErrorLoopDetected, Key: "error_loop_detected/%4", Pane: "%4", Session: "api", SuggestedAction: "Look."})
	h.read()
	if got := h.bell.String(); got != "\a" {
		t.Errorf("a burst rang %q", got)
	}
	// Routine wakes neither ring nor flash.
	h.send(tickMsg{now: now.Add(time.Minute)})
	svc.Raise(t, api.Wake{Reason: api.ReasonHeartbeat, SuggestedAction: "All quiet."})
	h.read()
	if got := h.bell.String(); got != "\a" {
		t.Errorf("a heartbeat rang: %q", got)
	}
	if !strings.Contains(h.statusText(), "error_loop_detected") {
		t.Errorf("a heartbeat took the status line: %q", h.statusText())
	}
	if h.m.feed.need != 2 || len(h.m.feed.items) != 3 {
		t.Errorf("%d need a person of %d listed, want 2 of 3 (the heartbeat is listed, as information)", h.m.feed.need, len(h.m.feed.items))
	}
}

func TestNoBellWithoutTheOption(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	svc.Raise(t, api.Wake{Reason: api.ReasonWorkerFailed, Key: "worker_failed/%9", Pane: "%9", Session: "db"})
	h.read()
	if got := h.bell.String(); got != "" {
		t.Errorf("bell wrote %q", got)
	}
}

func TestResolvedWakeStaysUntilAcked(t *testing.T) {
	svc := newFixtureService(t)
	raiseFixtureWakes(t, svc)
	h := newHarness(t, svc, Options{}, 100, 30)
	if err := svc.Store.Resolve("awaiting_input/%1", "the test ended it"); err != nil {
		t.Fatal(err)
	}
	h.read()
	// An answered prompt's wake leaves the count of wakes that need a
	// person, and is listed as resolved until someone acknowledges it.
	if h.m.feed.need != 2 || h.m.feed.resolved != 1 {
		t.Fatalf("%d unacked, %d resolved", h.m.feed.need, h.m.feed.resolved)
	}
	v := h.m.View()
	for _, want := range []string{"(resolved: the test ended it) Check what", "2 wakes need a person", "Wakes · 2 wakes need a person · 1 resolved"} {
		if !strings.Contains(v, want) {
			t.Fatalf("the view lacks %q:\n%s", want, v)
		}
	}
}

func TestPreviewFollowsTheSelection(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	h.selectPane("%1")
	if h.m.detail.previewFor != "%1" {
		t.Fatalf("preview of %q", h.m.detail.previewFor)
	}
	// Colour is dropped: the tests draw without colour.
	for _, l := range h.m.detail.lines {
		if strings.Contains(l, "\x1b") {
			t.Fatalf("escape left in %q", l)
		}
	}
	// The service pushes what the pane shows now.
	svc.SetPreview("%1", "Edit applied.")
	h.read()
	if !strings.Contains(h.m.View(), "Edit applied.") {
		t.Fatalf("the pushed screen is not shown:\n%s", h.m.View())
	}
	// A preview that cannot be read says why.
	svc.Fail("preview", errors.New("capture %1: pane gone"))
	svc.ScreenChanged("%1")
	h.read()
	if !strings.Contains(h.m.View(), "(as last read; preview unavailable: capture %1: pane gone)") {
		t.Fatalf("no preview error:\n%s", h.m.View())
	}
}

func TestTaskListShown(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 160, 45)
	h.selectPane("%1")
	v := h.m.View()
	for _, want := range []string{"tasks 3/7", "1 in progress · 1 blocked · list auth-list", "▶ 4 Implement login — Implementing login", "✗ 6 Deploy to staging — blocked by 4, 5", "✓ 1 Read the auth spec"} {
		if !strings.Contains(v, want) {
			t.Errorf("no %q in\n%s", want, v)
		}
	}
	svc.Fail("task_lists", errors.New("no such task list: \"auth-list\""))
	s := fixtureSessions()[1]
	s.Tasks = &api.TaskProgress{Completed: 4, Total: 7}
	svc.Publish(api.Update{Kind: api.SessionChanged, Session: s})
	h.read()
	if v := h.m.View(); !strings.Contains(v, "cannot read the list: no such") {
		t.Errorf("no list error in\n%s", v)
	}
}

// TestHeaderFollowsPushedStatus: the header's server state and problem
// come as the registry's StatusChanged updates.
func TestHeaderFollowsPushedStatus(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{MCP: func() MCPStatus { return MCPStatus{Err: "port taken"} }}, 100, 30)
	h.send(tickMsg{now: now.Add(time.Second), mcp: &MCPStatus{Err: "port taken"}})
	svc.Publish(api.Update{Kind: api.StatusChanged, Status: &api.Status{Server: "tmux server -L work", Running: false,
		Problem: "no tmux server is running (tmux server -L work); system3 will pick it up when it starts"}})
	h.read()
	v := h.m.View()
	for _, want := range []string{"tmux server -L work (not running)", "MCP: port taken", "⚠ no tmux server is running"} {
		if !strings.Contains(v, want) {
			t.Errorf("no %q in\n%s", want, v)
		}
	}
}

// TestServerDiesSaysItIsGone: when the tmux server dies the registry says
// so (a StatusChanged update), then its panes leave; as the last one
// leaves, the empty table says the server is not running and how to bring
// the orchestrators back, not the first-start text.
func TestServerDiesSaysItIsGone(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	gone := fixtureSnapshot()
	gone.Sessions, gone.Running = nil, false
	gone.Problem = "no tmux server is running (tmux server -L work); system3 will pick it up when it starts"
	svc.SetSnapshot(gone)
	st := gone.Status()
	svc.Publish(api.Update{Kind: api.StatusChanged, Status: &st})
	h.read()
	for _, s := range fixtureSessions() {
		svc.Publish(api.Update{Kind: api.SessionRemoved, Session: s})
		h.read()
	}
	v := ansi.Strip(h.m.View())
	if !strings.Contains(v, "The tmux server -L work is not running.") || !strings.Contains(v, "system3 restore --all") || strings.Contains(v, "No tmux panes are being watched") {
		t.Fatalf("the dashboard does not say the tmux server is gone:\n%s", v)
	}
}

// TestStaleRowsWhileDisconnected: while the registry stream is down the
// table says its rows are stale, and their ages stop at the last moment
// they were known true instead of counting on; once the stream is back
// they count again. A notice from the dashboard's owner (a takeover) is
// shown in the status line.
func TestStaleRowsWhileDisconnected(t *testing.T) {
	svc := newFixtureService(t)
	notice := ""
	h := newHarness(t, svc, Options{Notice: func() string { return notice }}, 100, 30)
	h.selectPane("%7") // "web:0.1", in its state for 40s
	age := func() string {
		t.Helper()
		for _, l := range strings.Split(ansi.Strip(h.m.View()), "\n") {
			if strings.Contains(l, "web:0.1") {
				return strings.Fields(l[strings.Index(l, "web:0.1"):])[4] // target, agent, glyph, state, age
			}
		}
		t.Fatalf("no web:0.1 row:\n%s", ansi.Strip(h.m.View()))
		return ""
	}
	h.send(tickMsg{now: now.Add(time.Minute)})
	if got := age(); got != "1m" {
		t.Fatalf("connected, a minute later: age %q, want 1m", got)
	}
	svc.Fail("watch", errors.New("dial unix system3.sock: connection refused"))
	svc.EndWatches()
	for range 2 { // the registry's stream and the preview's end
		if h.read(); !h.m.watch.up {
			break
		}
	}
	h.send(tickMsg{now: now.Add(10 * time.Minute)})
	v := ansi.Strip(h.m.View())
	if !strings.Contains(v, "stale, as of") {
		t.Fatalf("the table does not say its rows are stale:\n%s", v)
	}
	if got := age(); got != "1m" {
		t.Fatalf("disconnected, nine minutes later: age %q, want it stopped at 1m", got)
	}
	notice = "the system3 daemon (pid 42) is gone; this dashboard now monitors the state dir itself"
	h.send(tickMsg{now: now.Add(10 * time.Minute), notice: h.m.opts.Notice()})
	if !strings.Contains(h.statusText(), "this dashboard now monitors the state dir itself") {
		t.Fatalf("status %q does not say the dashboard took over", h.statusText())
	}
	svc.Fail("watch", nil)
	h.send(retryMsg{stream: streamWatch, gen: h.m.watch.gen})
	if h.m.stale() {
		t.Fatal("still stale after reconnecting")
	}
	if got := age(); got != "10m" {
		t.Fatalf("reconnected: age %q, want 10m", got)
	}
	if strings.Contains(ansi.Strip(h.m.View()), "stale") {
		t.Fatal("the title still says stale")
	}
}

// TestHeaderNamesDisconnectedHosts: with hosts, the header says how many
// are connected, or names each disconnected one with when it was last
// seen, in the problem style, and follows a host coming back.
func TestHeaderNamesDisconnectedHosts(t *testing.T) {
	svc := newFixtureService(t)
	seen := time.Date(2026, 3, 1, 14, 2, 0, 0, time.Local)
	hosts := []HostStatus{{Name: "web1", LastSeen: seen}, {Name: "gpu", Connected: true, LastSeen: now}, {Name: "new"}}
	h := newHarness(t, svc, Options{Hosts: func() []HostStatus { return hosts }}, 160, 30)
	send := func() string {
		text, down := hostsText(hosts, now)
		h.send(tickMsg{now: now, hosts: &text, hostsDown: down})
		return ansi.Strip(h.m.View())
	}
	want := "hosts: web1 disconnected since " + seen.Format("Jan 2 15:04") + ", new never seen (1 of 3 connected)"
	if now.Sub(seen) < 20*time.Hour {
		want = "hosts: web1 disconnected since 14:02, new never seen (1 of 3 connected)"
	}
	if v := send(); !strings.Contains(v, want) {
		t.Errorf("no %q in\n%s", want, v)
	}
	hosts[0].Connected, hosts[2].Connected = true, true
	if v := send(); !strings.Contains(v, "hosts: 3 connected") || strings.Contains(v, "disconnected") {
		t.Errorf("hosts back, header:\n%s", v)
	}
}

func TestHostsText(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.Local)
	for _, c := range []struct {
		hs   []HostStatus
		want string
		down bool
	}{
		{[]HostStatus{{Name: "a", Connected: true}}, "hosts: 1 connected", false},
		{[]HostStatus{{Name: "a", LastSeen: at.Add(-time.Hour)}, {Name: "b", Connected: true}}, "hosts: a disconnected since 08:30 (1 of 2 connected)", true},
		{[]HostStatus{{Name: "a", LastSeen: at.Add(-48 * time.Hour)}}, "hosts: a disconnected since Feb 27 09:30 (0 of 1 connected)", true},
		{[]HostStatus{{Name: "x\x1b[2Jy"}}, "hosts: xy never seen (0 of 1 connected)", true},
	} {
		got, down := hostsText(c.hs, at)
		if got != c.want || down != c.down {
			t.Errorf("hostsText(%+v) = %q, %v; want %q, %v", c.hs, got, down, c.want, c.down)
		}
	}
}

// After a takeover the monitors start afresh and every state begins "now";
// a pane still in the state the dashboard held keeps its FOR timer, one
// that moved on starts a new one.
func TestTakeoverKeepsForTimers(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	before := map[string]api.Session{}
	for _, s := range h.m.sessions {
		before[s.Pane] = s
	}
	svc.EndWatches()
	h.read()
	snap := fixtureSnapshot()
	for i := range snap.Sessions {
		snap.Sessions[i].Since = now
	}
	snap.Sessions[1].State = api.Idle // %4 moved on while the monitors were away
	svc.SetSnapshot(snap)
	h.send(retryMsg{stream: streamWatch, gen: h.m.watch.gen})
	if !h.m.watch.up {
		t.Fatal("not reconnected")
	}
	for _, s := range h.m.sessions {
		b := before[s.Pane]
		switch {
		case s.Pane == snap.Sessions[1].Pane:
			if !s.Since.Equal(now) {
				t.Errorf("%s changed state but kept its old since %v", s.Pane, s.Since)
			}
		case !s.Since.Equal(b.Since):
			t.Errorf("%s: since %v after the takeover, want %v", s.Pane, s.Since, b.Since)
		}
	}
}

// TestDashboardIsPushedNotPolled: the dashboard follows the selected pane
// with one preview stream, opened again only when the selection or the
// zoom changes, and shows the screens and the header's status the service
// pushes; its ticks ask the service for nothing: no snapshot, no preview.
func TestDashboardIsPushedNotPolled(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	sel, _ := h.m.table.Selected()
	if h.m.previewOf != (previewTarget{pane: sel.Pane}) || h.m.detail.previewFor != sel.Pane || !h.m.preview.up {
		t.Fatalf("preview stream follows %+v, shows %q; want %s's", h.m.previewOf, h.m.detail.previewFor, sel.Pane)
	}
	snaps, previews, streams := svc.Reads("snapshot"), svc.Reads("preview"), svc.Reads("watch_preview")
	if streams != 1 {
		t.Fatalf("%d preview streams opened at the start, want 1", streams)
	}
	ticks := func() {
		t.Helper()
		for i := range 60 { // a minute of ticks
			h.send(tickMsg{now: now.Add(time.Duration(i) * tickEvery)})
		}
		if s, p, w := svc.Reads("snapshot"), svc.Reads("preview"), svc.Reads("watch_preview"); s != snaps || p != previews || w != streams {
			t.Fatalf("ticks asked the service: %d snapshots, %d previews, %d preview streams (want %d, %d, %d)", s, p, w, snaps, previews, streams)
		}
	}
	ticks()

	// A screen the service pushes is shown, through the sanitiser.
	svc.SetPreview(sel.Pane, "\x1b]0;title\x07compiling \x1b[1mmain.go\x1b[0m")
	h.read()
	if got := h.m.detail.lines; len(got) != 1 || got[0] != "compiling main.go" {
		t.Fatalf("pushed screen shown as %q", got)
	}
	// So is the header's status.
	svc.Publish(api.Update{Kind: api.StatusChanged, Status: &api.Status{Server: "tmux server -L work", Running: true, Problem: "cannot write the wake journal"}})
	h.read()
	if !strings.Contains(h.m.View(), "⚠ cannot write the wake journal") {
		t.Fatalf("the pushed problem is not in the header:\n%s", h.m.View())
	}
	if len(h.m.sessions) != len(fixtureSessions()) {
		t.Fatalf("the status update changed the sessions: %d", len(h.m.sessions))
	}
	ticks()

	// Another selection: the old stream ends, a new one follows the pane.
	inFlight := svc.InFlight()
	h.selectPane("%2") // through the rows on the way: one stream each
	if got := svc.Reads("watch_preview"); got <= streams || h.m.previewOf.pane != "%2" {
		t.Fatalf("after selecting %%2: %d streams opened, following %+v", got, h.m.previewOf)
	}
	streams = svc.Reads("watch_preview")
	testkit.WaitFor(t, 5*time.Second, "the first pane's stream to end", func() bool { return svc.InFlight() == inFlight })
	if !strings.Contains(h.m.View(), "Implementing login") {
		t.Fatalf("%%2's screen is not shown:\n%s", h.m.View())
	}
	// Zoomed: a stream with scrollback.
	h.press("enter")
	streams++
	if got := svc.Reads("watch_preview"); got != streams || h.m.previewOf != (previewTarget{pane: "%2", zoomed: true}) {
		t.Fatalf("zoomed: %d streams opened, following %+v", got, h.m.previewOf)
	}
	ticks()

	// The stream ends (the daemon went): it is opened again after a
	// backoff, and reads the screen afresh.
	svc.SetPreview("%2", "after the restart")
	svc.EndWatches()
	// The registry's stream's end and the preview's, after whatever the
	// streams still had on their way.
	for range 8 {
		if h.read(); !h.m.preview.up {
			break
		}
	}
	if h.m.preview.up {
		t.Fatal("the preview stream is still up after it ended")
	}
	h.send(retryMsg{stream: streamPreview, gen: h.m.preview.gen})
	if got := svc.Reads("watch_preview"); got != streams+1 || !h.m.preview.up || !strings.Contains(h.m.View(), "after the restart") {
		t.Fatalf("not reopened (%d streams opened, up %v):\n%s", got, h.m.preview.up, h.m.View())
	}
	if s, p := svc.Reads("snapshot"), svc.Reads("preview"); p != previews || s > snaps+1 {
		t.Fatalf("%d snapshots and %d previews read in all, want at most one more snapshot (the registry's stream ended too) and no preview", s-snaps, p-previews)
	}
}
