package ipc

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

var (
	wakeAuth = api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/%3", Session: "orch-auth", Pane: "%3", Agent: "claude",
		State: "awaiting_input", Kind: "permission", Question: "Edit auth.go?", Options: []string{"Yes", "No"},
		Evidence: api.Evidence{Source: "screen", Rule: "claude.permission", Lines: []string{"Do you want to make this edit?"}},
		Tasks:    &api.WakeProgress{ListID: "PRD-AUTH", Completed: 1, Total: 3}, SuggestedAction: "answer the prompt"}
	wakeDocs = api.Wake{Reason: api.ReasonErrorLoopDetected, Key: "error_loop/%5", Session: "docs", Pane: "%5", Agent: "codex"}
	wakeBeat = api.Wake{Reason: api.ReasonHeartbeat, Session: "orch-api"}

	testSnapshot = api.Snapshot{Server: "default", Running: true, Taken: testEpoch, Problem: "journal not writable",
		Sessions: []api.Session{{Pane: "%3", Session: "orch-auth", Target: "orch-auth:0.1", Agent: "claude",
			State: api.AwaitingInput, Kind: "permission", Options: []string{"Yes", "No"}, Since: testEpoch,
			Evidence: api.Evidence{Source: "screen", Rule: "claude.permission", Lines: []string{"Do you want"}}}}}
)

// TestMethodsMatchInProcess runs each call on a service directly and, on an
// identical one, through the socket: results and errors must be the same,
// and errors.Is must hold for the sentinels either way.
// peerAck is an acked_by the daemon wrote for a socket peer.
var peerAck = regexp.MustCompile(`"acked_by":"socket:pid=\d+,exe=[^"]*? claims \\"([^"\\]*)\\""`)

func TestMethodsMatchInProcess(t *testing.T) {
	seed := func(t *testing.T, f *fakeService) {
		f.SetSnapshot(testSnapshot)
		f.Raise(t, wakeAuth)
		f.Raise(t, wakeDocs)
		f.Raise(t, wakeBeat)
	}
	journalErr := &wake.JournalError{Path: "/s/wakes.jsonl", Err: errors.New("disk full"), Pending: 1}
	type call = func(context.Context, api.Service) (any, error)
	snapshot := func(ctx context.Context, s api.Service) (any, error) { return s.Snapshot(ctx) }
	wakes := func(f api.WakeFilter) call {
		return func(ctx context.Context, s api.Service) (any, error) { return s.Wakes(ctx, f) }
	}
	wait := func(f api.WakeFilter, timeout time.Duration) call {
		return func(ctx context.Context, s api.Service) (any, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return s.WaitWake(ctx, f)
		}
	}
	// ack acks the nth unacked wake (-1: an unknown id).
	ack := func(n int, by string) call {
		return func(ctx context.Context, s api.Service) (any, error) {
			id := "w-nope"
			if evs, _ := s.Wakes(ctx, api.WakeFilter{}); n >= 0 && n < len(evs) {
				id = evs[n].ID
			}
			return s.Ack(ctx, id, by)
		}
	}
	ackAll := func(ctx context.Context, s api.Service) (any, error) { return s.AckAll(ctx, "cli") }
	allow := func(r api.AllowRequest) call {
		return func(ctx context.Context, s api.Service) (any, error) { return struct{}{}, s.Allow(ctx, r) }
	}
	withPolicy := func(cfg api.PolicyConfig) func(*testing.T, *fakeService) {
		return func(t *testing.T, f *fakeService) {
			p, err := api.NewPolicy(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			f.SetPolicy(p)
		}
	}
	inject := func(r api.InjectRequest) call {
		return func(ctx context.Context, s api.Service) (any, error) { return s.Inject(ctx, r) }
	}
	answer := func(r api.AnswerRequest) call {
		return func(ctx context.Context, s api.Service) (any, error) { return s.Answer(ctx, r) }
	}
	keys := func(ctx context.Context, s api.Service) (any, error) {
		return s.SendKeys(ctx, api.KeysRequest{Target: api.Target{Pane: "%3"}, Keys: []string{"Down", "Enter"}, Origin: "cli"})
	}
	interrupt := func(ctx context.Context, s api.Service) (any, error) {
		return s.Interrupt(ctx, api.InterruptRequest{Target: api.Target{Session: "orch-auth"}, Origin: "tui"})
	}
	preview := func(ctx context.Context, s api.Service) (any, error) {
		return s.Preview(ctx, api.PreviewRequest{Target: api.Target{Session: "orch-auth"}, Lines: 2})
	}
	taskLists := func(id string) call {
		return func(ctx context.Context, s api.Service) (any, error) { return s.TaskLists(ctx, id) }
	}
	task := func(list, id string) call {
		return func(ctx context.Context, s api.Service) (any, error) {
			return s.Task(ctx, api.TaskRequest{List: list, Task: id})
		}
	}
	auditCall := func(ctx context.Context, s api.Service) (any, error) {
		return nil, s.Audit(ctx, api.AuditEntry{Origin: "mcp:x", Action: "tool_call", Tool: "status"})
	}
	hookCall := func(ctx context.Context, s api.Service) (any, error) {
		return s.Hook(ctx, api.HookEvent{Name: api.PermissionRequest, Pane: "%3", ToolName: "Bash", ToolInput: "make deploy",
			Received: time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)})
	}
	link := func(r api.LinkRequest) call {
		return func(ctx context.Context, s api.Service) (any, error) { return s.Link(ctx, r) }
	}
	withPreview := func(_ *testing.T, f *fakeService) { f.SetPreview("%3", "one", "two", "three \x1b[31mred") }
	withLists := func(_ *testing.T, f *fakeService) {
		f.SetTaskLists([]api.TaskListDoc{{ID: "PRD-A", Tasks: []api.TaskDoc{{ID: "1", Subject: "write it", Status: "in_progress"}}}})
	}
	fail := func(method string, err error) func(*testing.T, *fakeService) {
		return func(_ *testing.T, f *fakeService) { f.Fail(method, err) }
	}

	tests := []struct {
		name   string
		prep   func(*testing.T, *fakeService)
		call   call
		want   string // a substring of the result's JSON
		wantIs error
		// peerBound: the socket records the daemon's word about its peer
		// (claiming the name sent), where the in-process call records the
		// name as given.
		peerBound bool
	}{
		{name: "snapshot", call: snapshot, want: `"problem":"journal not writable"`},
		{name: "snapshot error", prep: fail("snapshot", errors.New("tmux wedged")), call: snapshot},
		{name: "wakes all", call: wakes(api.WakeFilter{}), want: `"session":"orch-api"`},
		{name: "wakes filtered", want: `"seq":3`, call: wakes(api.WakeFilter{
			Reasons: []api.Reason{api.ReasonAwaitingInput, api.ReasonHeartbeat}, Session: "orch-*", SinceSeq: 1, Limit: 5})},
		{name: "wakes include acked", call: wakes(api.WakeFilter{IncludeAcked: true, Limit: 1}), want: `"acked_by":"tui"`,
			prep: func(_ *testing.T, f *fakeService) { f.Store.Ack(f.Store.Unacked()[0].ID, "tui") }},
		{name: "wakes bad glob", call: wakes(api.WakeFilter{Session: "["})},
		{name: "wait existing", call: wait(api.WakeFilter{Reasons: []api.Reason{api.ReasonErrorLoopDetected}}, time.Minute), want: `"pane":"%5"`},
		{name: "wait times out", call: wait(api.WakeFilter{Session: "nobody"}, 30*time.Millisecond), wantIs: context.DeadlineExceeded},
		{name: "wait service deadline", prep: fail("wait_wake", context.DeadlineExceeded), call: wait(api.WakeFilter{}, time.Minute),
			wantIs: context.DeadlineExceeded},
		{name: "ack", call: ack(1, "cli"), want: `claims \"cli\"`, peerBound: true},
		{name: "ack unknown", call: ack(-1, "cli"), wantIs: api.ErrUnknownWake},
		{name: "ack not durable", prep: fail("ack", journalErr), call: ack(0, "mcp:x"), want: `claims \"mcp:x\"`, wantIs: wake.ErrNotDurable, peerBound: true},
		{name: "ack all", call: ackAll, want: `"seq":3`, peerBound: true},
		{name: "inject", call: inject(api.InjectRequest{Target: api.Target{Session: "orch-auth"}, Text: "line 1\nline \"2\"", Urgent: true, Origin: "tui"}),
			want: `"text":"line 1\nline \"2\""`},
		{name: "inject unknown", call: inject(api.InjectRequest{Target: api.Target{Session: "nope"}, Text: "x"}), wantIs: api.ErrUnknownTarget},
		{name: "inject empty", call: inject(api.InjectRequest{Target: api.Target{Pane: "%3"}}), wantIs: api.ErrBadRequest},
		{name: "inject dead pane", prep: fail("inject", fmt.Errorf("inject orch-auth:0.1: %w", tmux.ErrPaneDead)),
			call: inject(api.InjectRequest{Target: api.Target{Pane: "%3"}, Text: "x"}), wantIs: tmux.ErrPaneDead},
		{name: "answer", call: answer(api.AnswerRequest{Target: api.Target{Session: "orch-auth"}, Answer: "yes"}), want: `"option":"Yes"`},
		{name: "answer bad", call: answer(api.AnswerRequest{Target: api.Target{Session: "orch-auth"}, Answer: "7"}), wantIs: api.ErrBadAnswer},
		{name: "answer not awaiting", prep: func(_ *testing.T, f *fakeService) {
			s := testSnapshot
			s.Sessions = []api.Session{testSnapshot.Sessions[0]}
			s.Sessions[0].State = api.Working
			f.SetSnapshot(s)
		}, call: answer(api.AnswerRequest{Target: api.Target{Pane: "%3"}, Answer: "1"}), wantIs: api.ErrNotAwaiting},
		{name: "keys", call: keys, want: `"keys":["Down","Enter"]`},
		{name: "interrupt", call: interrupt, want: `"action":"interrupt"`},
		{name: "preview", prep: withPreview, call: preview, want: `"truncated":1`},
		{name: "task lists", prep: withLists, call: taskLists(""), want: `"subject":"write it"`},
		{name: "task list unknown", prep: withLists, call: taskLists("PRD-B"), wantIs: api.ErrUnknownList},
		{name: "one task", prep: withLists, call: task("PRD-A", "1"), want: `"subject":"write it"`},
		{name: "one task unknown", prep: withLists, call: task("PRD-A", "2"), wantIs: api.ErrUnknownTask},
		{name: "link", call: link(api.LinkRequest{Target: api.Target{Session: "orch-auth"}, TaskList: "PRD-AUTH", Origin: "cli"}),
			want: `"task_list":"PRD-AUTH"`},
		{name: "link bad list", call: link(api.LinkRequest{Target: api.Target{Session: "orch-auth"}, TaskList: "../x"}), wantIs: api.ErrBadRequest},
		{name: "link unknown", call: link(api.LinkRequest{Target: api.Target{Session: "nope"}, TaskList: "PRD-A"}), wantIs: api.ErrUnknownTarget},
		{name: "audit", call: auditCall},
		{name: "audit fails", prep: fail("audit", errors.New("disk full")), call: auditCall},
		{name: "hook", call: hookCall},
		{name: "hook refused", prep: fail("hook", fmt.Errorf("%w: the hook event has no name", api.ErrBadRequest)), call: hookCall, wantIs: api.ErrBadRequest},
		{name: "allow", call: allow(api.AllowRequest{Action: "stop", Session: "orch-auth", Origin: "mcp:x"})},
		{name: "allow refused", prep: withPolicy(api.PolicyConfig{AllowSessions: []string{"orch-db"}}),
			call: allow(api.AllowRequest{Action: "stop", Session: "victim2", Origin: "mcp:x"}), wantIs: api.ErrRefused},
		{name: "inject refused", prep: withPolicy(api.PolicyConfig{ReadOnly: true}),
			call: inject(api.InjectRequest{Target: api.Target{Session: "orch-auth"}, Text: "x", Origin: "mcp:x"}), wantIs: api.ErrRefused},
		{name: "ack all closed", prep: func(_ *testing.T, f *fakeService) { f.Store.Close() }, call: ackAll, wantIs: wake.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			direct, remote := newFake(t), newFake(t)
			for _, f := range []*fakeService{direct, remote} {
				seed(t, f)
				if tt.prep != nil {
					tt.prep(t, f)
				}
			}
			c := dial(t, serve(t, remote).path)

			wantV, wantErr := tt.call(ctx, direct)
			gotV, gotErr := tt.call(ctx, c)
			got := testkit.MustJSON(t, gotV)
			if tt.peerBound {
				if !peerAck.MatchString(got) {
					t.Errorf("the socket recorded an ack as the client named it: %s", got)
				}
				got = peerAck.ReplaceAllString(got, `"acked_by":"$1"`)
			}
			if a, b := testkit.MustJSON(t, wantV), got; a != b {
				t.Errorf("result differs:\nin-process %s\nsocket     %s", a, b)
			}
			if !strings.Contains(testkit.MustJSON(t, gotV), tt.want) {
				t.Errorf("result %s lacks %s", testkit.MustJSON(t, gotV), tt.want)
			}
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
				t.Fatalf("error differs:\nin-process %v\nsocket     %v", wantErr, gotErr)
			}
			if tt.wantIs != nil && (!errors.Is(wantErr, tt.wantIs) || !errors.Is(gotErr, tt.wantIs)) {
				t.Errorf("errors.Is(%v, %v) = false", gotErr, tt.wantIs)
			}
		})
	}
}

// TestHookArrivesIntact checks that a hook event crosses the socket whole.
func TestHookArrivesIntact(t *testing.T) {
	f := newFake(t)
	c := dial(t, serve(t, f).path)
	ev := api.HookEvent{Name: api.StopFailure, SessionID: "s1", TranscriptPath: "/t.jsonl", Error: "rate_limit", Pane: "%7",
		ToolName: "Bash", TaskID: "3", Received: time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)}
	if _, err := c.Hook(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	got := f.Hooks()
	if len(got) != 1 {
		t.Fatalf("received %+v", got)
	}
	// The server says how the event came; the rest is the client's.
	if got[0].Sender.Via != api.ViaSocket {
		t.Errorf("sender = %+v", got[0].Sender)
	}
	got[0].Sender = api.HookSender{}
	if !reflect.DeepEqual(got[0], ev) {
		t.Fatalf("received %+v, want %+v", got, ev)
	}
}

func TestPingAndPID(t *testing.T) {
	c := dial(t, serve(t, newFake(t)).path)
	if c.PID() <= 0 {
		t.Errorf("PID = %d", c.PID())
	}
}

func TestWatchStreams(t *testing.T) {
	f := newFake(t)
	srv := serve(t, f)
	c := dial(t, srv.path)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := c.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []api.Update{
		{Kind: api.SessionAdded, Session: testSnapshot.Sessions[0]},
		{Kind: api.SessionChanged, Session: api.Session{Pane: "%3", State: api.Working}, Previous: api.AwaitingInput},
		{Kind: api.Resync, Missed: 7},
	}
	for _, u := range want {
		f.Publish(u)
	}
	for _, u := range want {
		if got := recv(t, ch); !reflect.DeepEqual(got, u) {
			t.Errorf("got %+v\nwant %+v", got, u)
		}
	}
	cancel()
	closed(t, ch)
	testkit.WaitFor(t, 5*time.Second, "the server to end the watch", func() bool { return f.InFlight() == 0 && srv.active.Load() == 0 })
}

func TestSubscribeWakesStreams(t *testing.T) {
	f := newFake(t)
	c := dial(t, serve(t, f).path)
	first := f.Raise(t, wakeAuth)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := c.SubscribeWakes(ctx, api.WakeFilter{Session: "orch-*"})
	if err != nil {
		t.Fatal(err)
	}
	f.Raise(t, wakeDocs) // filtered out
	second := f.Raise(t, wakeBeat)
	if _, err := f.Store.Ack(first.ID, "tui"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		kind     api.WakeMessageKind
		id       string
		replayed bool
	}{{api.WakeRaised, first.ID, true}, {api.WakeRaised, second.ID, false}, {api.WakeAcked, first.ID, false}} {
		m := recv(t, ch)
		if m.Kind != want.kind || m.Event.ID != want.id || m.Replayed != want.replayed {
			t.Errorf("got %s %s replayed=%v, want %s %s replayed=%v", m.Kind, m.Event.ID, m.Replayed, want.kind, want.id, want.replayed)
		}
	}
}

func TestStreamErrorsAndEnds(t *testing.T) {
	t.Run("service refuses", func(t *testing.T) {
		f := newFake(t)
		f.Fail("watch", errors.New("supervisor not running"))
		c := dial(t, serve(t, f).path)
		if _, err := c.Watch(context.Background()); err == nil || err.Error() != "supervisor not running" {
			t.Fatalf("err = %v", err)
		}
		if _, err := c.SubscribeWakes(context.Background(), api.WakeFilter{Session: "["}); err == nil || !strings.Contains(err.Error(), "not a valid glob") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("service ends the stream", func(t *testing.T) {
		f := newFake(t)
		srv := serve(t, f)
		ch, err := dial(t, srv.path).Watch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		f.EndWatches()
		closed(t, ch)
		testkit.WaitFor(t, 5*time.Second, "the server to free the connection", func() bool { return srv.active.Load() == 0 })
	})
	t.Run("server stops", func(t *testing.T) {
		f := newFake(t)
		srv := serve(t, f)
		c := dial(t, srv.path)
		ch, err := c.SubscribeWakes(context.Background(), api.WakeFilter{})
		if err != nil {
			t.Fatal(err)
		}
		srv.stop()
		closed(t, ch)
		testkit.WaitFor(t, 5*time.Second, "the subscription's ctx to end", func() bool { return f.InFlight() == 0 })
		if _, err := c.Snapshot(context.Background()); !errors.Is(err, ErrNoDaemon) {
			t.Errorf("call after the server stopped: %v, want ErrNoDaemon", err)
		}
	})
	t.Run("client closes", func(t *testing.T) {
		f := newFake(t)
		srv := serve(t, f)
		c, err := Dial(context.Background(), srv.path)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := c.Watch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		f.Publish(api.Update{Kind: api.SessionRemoved})
		c.Close()
		closed(t, ch)
		testkit.WaitFor(t, 5*time.Second, "the server to end the watch", func() bool { return f.InFlight() == 0 && srv.active.Load() == 0 })
		if _, err := c.Snapshot(context.Background()); !errors.Is(err, ErrClientClosed) {
			t.Errorf("call after Close: %v", err)
		}
	})
}

// A client that gives up mid-wait must free the server's goroutine and the
// service's wait at once, not when a wake finally comes.
func TestDisconnectFreesWait(t *testing.T) {
	f := newFake(t)
	srv := serve(t, f)
	c := dial(t, srv.path)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.WaitWake(ctx, api.WakeFilter{})
		errc <- err
	}()
	testkit.WaitFor(t, 5*time.Second, "the wait to reach the service", func() bool { return f.InFlight() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("WaitWake = %v, want context.Canceled", err)
	}
	testkit.WaitFor(t, 5*time.Second, "the server to free the wait", func() bool { return f.InFlight() == 0 && srv.active.Load() == 0 })
}

func TestServerStopsMidWait(t *testing.T) {
	f := newFake(t)
	srv := serve(t, f)
	c := dial(t, srv.path)
	errc := make(chan error, 1)
	go func() {
		_, err := c.WaitWake(context.Background(), api.WakeFilter{})
		errc <- err
	}()
	testkit.WaitFor(t, 5*time.Second, "the wait to reach the service", func() bool { return f.InFlight() == 1 })
	srv.stop()
	if err := <-errc; !errors.Is(err, ErrConnLost) {
		t.Errorf("WaitWake = %v, want ErrConnLost", err)
	}
}

func TestWaitWakeReturnsNewWake(t *testing.T) {
	f := newFake(t)
	c := dial(t, serve(t, f).path)
	type result struct {
		ev  api.Wake
		err error
	}
	res := make(chan result, 1)
	go func() {
		ev, err := c.WaitWake(context.Background(), api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}})
		res <- result{ev, err}
	}()
	testkit.WaitFor(t, 5*time.Second, "the wait to reach the service", func() bool { return f.InFlight() == 1 })
	f.Raise(t, wakeBeat)
	raised := f.Raise(t, wakeAuth)
	r := <-res
	if r.err != nil || r.ev.ID != raised.ID || r.ev.Question != "Edit auth.go?" {
		t.Fatalf("WaitWake = %+v, %v", r.ev, r.err)
	}
}

func TestWireFilterMatchesWakeFilter(t *testing.T) {
	wt, ft := reflect.TypeOf(wireFilter{}), reflect.TypeOf(api.WakeFilter{})
	if wt.NumField() != ft.NumField() {
		t.Fatalf("api.WakeFilter has %d fields, wireFilter %d: add the new field to the protocol", ft.NumField(), wt.NumField())
	}
	for i := range wt.NumField() {
		if wt.Field(i).Name != ft.Field(i).Name || wt.Field(i).Type != ft.Field(i).Type {
			t.Errorf("field %d: %s %s vs %s %s", i, wt.Field(i).Name, wt.Field(i).Type, ft.Field(i).Name, ft.Field(i).Type)
		}
	}
	f := api.WakeFilter{Reasons: []api.Reason{api.ReasonSummary}, Session: "a*", SinceSeq: 9, IncludeAcked: true, IncludeResolved: true, Limit: 3}
	if got := toWire(f).filter(); !reflect.DeepEqual(got, f) {
		t.Errorf("round trip = %+v", got)
	}
}
