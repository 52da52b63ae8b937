package remote

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// TestFleet: this machine's service with a host beside it. The host's
// sessions and wakes join this machine's as HOST:NAME; actions on them
// reach the host's daemon with the names it knows and an origin that says
// they were routed, audited here before and after; this machine's names,
// tmux targets included, stay here.
func TestFleet(t *testing.T) {
	t0 := time.Now()
	local := monitortest.NewService(t, nil)
	local.SetSnapshot(api.Snapshot{Running: true, Sessions: []api.Session{session("%1", "orch", api.Idle, t0)}})
	remoteSvc := monitortest.NewService(t, nil)
	remoteSvc.SetSnapshot(api.Snapshot{Running: true, Sessions: []api.Session{session("%7", "orch", api.AwaitingInput, t0)}})
	remoteSvc.SetPreview("%7", "Do you want to proceed?", "❯ 1. Yes")
	rw := remoteSvc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Session: "orch", Pane: "%7", Question: "proceed?"})
	host := startFakeHost(t, filepath.Join(t.TempDir(), "h.sock"), remoteSvc)

	var dials atomic.Int64
	set := &Set{Deadline: 2 * time.Second, links: []*Link{host.link("web1", &dials)}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer set.Close()
	set.Start(ctx)
	var mu sync.Mutex
	var entries []api.AuditEntry
	f := &Fleet{Service: local, Set: set, Via: "via ssh from here", Record: func(e api.AuditEntry) error {
		mu.Lock()
		defer mu.Unlock()
		entries = append(entries, e)
		return nil
	}}

	snap, err := f.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Sessions) != 2 || snap.Sessions[0].Host != "" || snap.Sessions[0].Session != "orch" {
		t.Fatalf("sessions %+v", snap.Sessions)
	}
	if r := snap.Sessions[1]; r.Host != "web1" || r.Session != "web1:orch" || r.Pane != "web1:%7" || r.Target != "web1:orch:0.0" || r.State != api.AwaitingInput {
		t.Fatalf("the host's session is %+v", r)
	}
	evs, err := f.Wakes(ctx, api.WakeFilter{})
	if err != nil || len(evs) != 1 || evs[0].ID != "web1:"+rw.ID || evs[0].Pane != "web1:%7" {
		t.Fatalf("wakes %+v, %v", evs, err)
	}

	// Updates of the host come renamed.
	ups, err := f.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	remoteSvc.Publish(api.Update{Kind: api.SessionChanged, Session: session("%7", "orch", api.Working, t0.Add(time.Second))})
	// A resync or the host's status may come first (the host's stream
	// just opened); the session's update follows.
	for deadline := time.After(10 * time.Second); ; {
		select {
		case u := <-ups:
			if !u.Kind.OfSession() {
				continue
			}
			if u.Session.Pane != "web1:%7" || u.Session.State != api.Working || u.Session.Host != "web1" {
				t.Fatalf("update %+v", u)
			}
		case <-deadline:
			t.Fatal("the host's update never came")
		}
		break
	}

	// So do its wake messages.
	msgs, err := f.SubscribeWakes(ctx, api.WakeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	raised := remoteSvc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Session: "orch", Pane: "%7", Question: "again?"})
	for deadline := time.After(10 * time.Second); ; {
		select {
		case m := <-msgs:
			if m.Kind != api.WakeRaised || m.Event.ID != "web1:"+raised.ID {
				continue
			}
			if m.Event.Session != "web1:orch" || m.Event.Pane != "web1:%7" {
				t.Fatalf("the host's wake came as %+v", m.Event)
			}
		case <-deadline:
			t.Fatal("the host's wake message never came")
		}
		break
	}
	if _, err := remoteSvc.Ack(ctx, raised.ID, "test"); err != nil {
		t.Fatal(err)
	}

	// Actions: to the host, with its names; here, with ours.
	if p, err := f.Preview(ctx, api.PreviewRequest{Target: api.Target{Session: "web1:orch"}}); err != nil || p.Pane != "web1:%7" || len(p.Lines) == 0 {
		t.Fatalf("preview %+v, %v", p, err)
	}
	res, err := f.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: "web1:%7"}, Answer: "1", Origin: "tui"})
	if err != nil || res.Pane != "web1:%7" || !res.Delivered {
		t.Fatalf("answer %+v, %v", res, err)
	}
	if _, err := f.Inject(ctx, api.InjectRequest{Target: api.Target{Session: "web1:orch"}, Text: "go on", Origin: "tui"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inject(ctx, api.InjectRequest{Target: api.Target{Session: "orch"}, Text: "here", Origin: "tui"}); err != nil {
		t.Fatal(err)
	}
	rc := remoteSvc.Calls()
	if len(rc) != 2 || rc[0].Method != "answer" || rc[0].Target.Pane != "%7" || !strings.HasSuffix(rc[0].Origin, `claims "tui via ssh from here"`) ||
		rc[1].Method != "inject" || rc[1].Target.Session != "orch" || rc[1].Text != "go on" {
		t.Fatalf("the host got %+v", rc)
	}
	if lc := local.Calls(); len(lc) != 1 || lc[0].Text != "here" || lc[0].Target.Session != "orch" {
		t.Fatalf("this machine got %+v", lc)
	}
	mu.Lock()
	if len(entries) != 4 || entries[0].Phase != audit.PhaseAttempt || entries[0].Tool != "answer" || entries[0].Target != "web1:%7" ||
		entries[1].Phase != audit.PhaseResult || !entries[1].Sent || entries[0].ID != entries[1].ID || entries[2].Text != "go on" {
		t.Fatalf("audit here: %+v", entries)
	}
	mu.Unlock()
	// A wake of the host, named HOST:ID as this machine shows it, answers
	// there with the host's own id, no target needed.
	if _, err := f.Answer(ctx, api.AnswerRequest{Wake: "web1:" + raised.ID, Answer: "1", Origin: "cli"}); err != nil {
		t.Fatalf("answer by the host's wake: %v", err)
	}
	if rc := remoteSvc.Calls(); len(rc) != 3 || rc[2].Method != "answer" || rc[2].Wake != raised.ID || rc[2].Target.Pane != "%7" {
		t.Fatalf("the host got %+v", rc)
	}
	if _, err := f.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: "%7"}, Wake: "web1:" + raised.ID, Answer: "1", Origin: "cli"}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("a wake of another host than the target: %v", err)
	}

	// An audit entry that cannot be written here: nothing is sent.
	f.Record = func(api.AuditEntry) error { return errors.New("disk full") }
	if _, err := f.Inject(ctx, api.InjectRequest{Target: api.Target{Session: "web1:orch"}, Text: "lost?", Origin: "tui"}); err == nil {
		t.Fatal("sent without an audit entry")
	}
	if n := len(remoteSvc.Calls()); n != 3 {
		t.Fatalf("the host got %d calls", n)
	}
	f.Record = nil

	// Ack on the host.
	if ev, err := f.Ack(ctx, "web1:"+rw.ID, "tui"); err != nil || ev.ID != "web1:"+rw.ID || !ev.Acked {
		t.Fatalf("ack %+v, %v", ev, err)
	}
	if got, _ := remoteSvc.Wakes(ctx, api.WakeFilter{}); len(got) != 0 {
		t.Fatalf("the host still has %+v", got)
	}
	// This machine's policy applies first: a read-only MCP here may not
	// act there, and an allow-list selects hosts' sessions by HOST:NAME.
	before := len(remoteSvc.Calls())
	ro, err := api.NewPolicy(api.PolicyConfig{ReadOnly: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	local.SetPolicy(ro)
	if _, err := f.Inject(ctx, api.InjectRequest{Target: api.Target{Session: "web1:orch"}, Text: "sneak", Origin: "mcp:x"}); !errors.Is(err, api.ErrRefused) {
		t.Fatalf("read-only here, inject there: %v", err)
	}
	if _, err := f.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: "web1:%7"}, Answer: "1", Origin: "tui"}); err != nil {
		t.Fatalf("the operator is not an MCP client: %v", err)
	}
	only, err := api.NewPolicy(api.PolicyConfig{AllowSessions: []string{"web2:*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	local.SetPolicy(only)
	if _, err := f.Interrupt(ctx, api.InterruptRequest{Target: api.Target{Pane: "web1:%7"}, Origin: "mcp:x"}); !errors.Is(err, api.ErrRefused) || !strings.Contains(err.Error(), `"web1:orch"`) {
		t.Fatalf("allow-list web2:*, interrupt web1:%%7: %v", err)
	}
	if got := remoteSvc.Calls(); len(got) != before+1 {
		t.Fatalf("the host got %+v after the refusals", got[before:])
	}
	local.SetPolicy(nil)

	// Mixed hosts are refused.
	if _, err := f.Interrupt(ctx, api.InterruptRequest{Target: api.Target{Session: "web1:orch", Pane: "%1"}}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("mixed target: %v", err)
	}
}

// TestFleetWatchPreview: a host's pane is followed through its daemon's
// stream, renamed for this machine, and a host whose system3 predates the
// stream has its screen read once, then says why it does not follow, and
// is asked nothing more. A host's own status (its tmux server, its
// problem) never comes as this machine's.
func TestFleetWatchPreview(t *testing.T) {
	t0 := time.Now()
	local := monitortest.NewService(t, nil)
	local.SetSnapshot(api.Snapshot{Running: true, Sessions: []api.Session{session("%1", "orch", api.Idle, t0)}})
	local.SetPreview("%1", "here")
	remoteSvc := monitortest.NewService(t, nil)
	remoteSvc.SetSnapshot(api.Snapshot{Running: true, Sessions: []api.Session{session("%7", "orch", api.Working, t0)}})
	remoteSvc.SetPreview("%7", "building…")
	host := startFakeHost(t, filepath.Join(t.TempDir(), "h.sock"), remoteSvc)
	var dials atomic.Int64
	set := &Set{Deadline: 2 * time.Second, links: []*Link{host.link("web1", &dials)}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer set.Close()
	set.Start(ctx)
	f := &Fleet{Service: local, Set: set}
	next := func(ch <-chan api.PreviewUpdate) api.PreviewUpdate {
		t.Helper()
		select {
		case u, ok := <-ch:
			if !ok {
				t.Fatal("the preview stream closed")
			}
			return u
		case <-time.After(10 * time.Second):
			t.Fatal("no screen came")
		}
		return api.PreviewUpdate{}
	}

	if _, err := f.Snapshot(ctx); err != nil { // the host is followed
		t.Fatal(err)
	}
	ups, err := f.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	remoteSvc.Publish(api.Update{Kind: api.StatusChanged, Status: &api.Status{Problem: "the host's journal"}})
	remoteSvc.Publish(api.Update{Kind: api.SessionChanged, Session: session("%7", "orch", api.Idle, t0.Add(time.Second))})
	for deadline := time.After(10 * time.Second); ; {
		select {
		case u := <-ups:
			if u.Kind == api.Resync {
				continue
			}
			if u.Kind != api.SessionChanged || u.Session.Pane != "web1:%7" {
				t.Fatalf("first update from the host: %+v", u)
			}
		case <-deadline:
			t.Fatal("the host's update never came")
		}
		break
	}
	testkit.WaitFor(t, 5*time.Second, "the host's status in its report", func() bool {
		r := set.Report(ctx)
		return len(r) == 1 && r[0].Snapshot.Problem == "the host's journal"
	})

	mine, err := f.WatchPreview(ctx, api.PreviewRequest{Target: api.Target{Pane: "%1"}})
	if err != nil {
		t.Fatal(err)
	}
	if u := next(mine); u.Pane != "%1" || len(u.Lines) != 1 || u.Lines[0] != "here" {
		t.Fatalf("this machine's pane: %+v", u)
	}
	theirs, err := f.WatchPreview(ctx, api.PreviewRequest{Target: api.Target{Pane: "web1:%7"}})
	if err != nil {
		t.Fatal(err)
	}
	if u := next(theirs); u.Pane != "web1:%7" || u.Session != "web1:orch" || u.Lines[0] != "building…" || u.Err != "" {
		t.Fatalf("the host's pane: %+v", u)
	}
	remoteSvc.SetPreview("%7", "built.")
	if u := next(theirs); u.Pane != "web1:%7" || u.Lines[0] != "built." {
		t.Fatalf("the host's pane, changed: %+v", u)
	}

	// An older host: its daemon answers as one without the method does.
	remoteSvc.Fail("watch_preview", &ipc.Error{Code: "bad_request", Message: `unknown method "watch_preview"`})
	octx, ocancel := context.WithCancel(ctx)
	old, err := f.WatchPreview(octx, api.PreviewRequest{Target: api.Target{Pane: "web1:%7"}})
	if err != nil {
		t.Fatalf("an older host's preview: %v", err)
	}
	if u := next(old); u.Pane != "web1:%7" || u.Err != "" || u.Lines[0] != "built." {
		t.Fatalf("an older host's screen: %+v", u)
	}
	if u := next(old); u.Pane != "web1:%7" || !strings.Contains(u.Err, "host web1 runs an older system3") || !strings.Contains(u.Err, "system3 hosts install web1") {
		t.Fatalf("an older host's note: %+v", u)
	}
	previews := remoteSvc.Reads("preview")
	select {
	case u := <-old:
		t.Fatalf("an older host's stream sent %+v", u)
	case <-time.After(300 * time.Millisecond):
	}
	ocancel()
	for range old {
	}
	if got := remoteSvc.Reads("preview"); got != previews {
		t.Fatalf("an older host was read %d more times", got-previews)
	}
}
