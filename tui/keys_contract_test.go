package tui

import (
	"errors"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

// TestKeyContract presses every key of the contract that acts through the
// service and checks the exact requests the service received and what the
// status line says.
func TestKeyContract(t *testing.T) {
	awaiting := api.Target{Pane: "%1"}
	tests := []struct {
		name   string
		opts   Options
		setup  func(h *harness)
		keys   []string
		text   string // typed after keys, then more keys
		after  []string
		calls  []monitortest.Call
		status string // a substring of the status line
	}{
		{
			name:   "digit answers the option",
			setup:  func(h *harness) { h.selectPane("%1") },
			keys:   []string{"2"},
			calls:  []monitortest.Call{{Method: "answer", Target: awaiting, Answer: "2", Keys: []string{"2"}, Origin: "tui", Prompt: fixturePrompt}},
			status: "answered orch-auth:0.0 (keys 2): “Yes, allow all edits during this session (shift+tab)”",
		},
		{
			name:   "y approves",
			setup:  func(h *harness) { h.selectPane("%1") },
			keys:   []string{"y"},
			calls:  []monitortest.Call{{Method: "answer", Target: awaiting, Answer: "yes", Keys: []string{"1"}, Origin: "tui", Prompt: fixturePrompt}},
			status: "answered orch-auth:0.0 (keys 1): “Yes”",
		},
		{
			name:   "n declines",
			setup:  func(h *harness) { h.selectPane("%1") },
			keys:   []string{"n"},
			calls:  []monitortest.Call{{Method: "answer", Target: awaiting, Answer: "no", Keys: []string{"Escape"}, Origin: "tui", Prompt: fixturePrompt}},
			status: "answered orch-auth:0.0 (keys Escape): “No, and tell Claude what to do differently (esc)”",
		},
		{
			name:   "an answer to a session not at a prompt is not sent",
			setup:  func(h *harness) { h.selectPane("%2") },
			keys:   []string{"1", "y", "n"},
			status: "orch-auth:1.0 is ● working, not waiting at a prompt",
		},
		{
			name:   "a second key before the pane moves on is held back",
			setup:  func(h *harness) { h.selectPane("%1") },
			keys:   []string{"1", "2"},
			calls:  []monitortest.Call{{Method: "answer", Target: awaiting, Answer: "1", Keys: []string{"1"}, Origin: "tui", Prompt: fixturePrompt}},
			status: "waiting for orch-auth:0.0 to take the last answer",
		},
		{
			name:   "an option the prompt does not have is refused by the service",
			setup:  func(h *harness) { h.selectPane("%1") },
			keys:   []string{"7"},
			status: "✖ no answer sent to orch-auth:0.0: the answer matches no option: there is no option 7",
		},
		{
			name:   "i, text and enter inject the exact multi-line text",
			setup:  func(h *harness) { h.selectPane("%2") },
			keys:   []string{"i"},
			text:   "Use the existing session store.",
			after:  []string{"ctrl+j", "D", "o", "n", "'", "t", " ", "a", "d", "d", " ", "a", " ", "t", "a", "b", "l", "e", ".", "enter"},
			calls:  []monitortest.Call{{Method: "inject", Target: api.Target{Pane: "%2"}, Text: "Use the existing session store.\nDon't add a table.", Origin: "tui"}},
			status: "sent to orch-auth:1.0 ✓ verified",
		},
		{
			name:   "alt+enter inserts a newline too",
			setup:  func(h *harness) { h.selectPane("%2") },
			keys:   []string{"i", "a", "alt+enter", "b", "enter"},
			calls:  []monitortest.Call{{Method: "inject", Target: api.Target{Pane: "%2"}, Text: "a\nb", Origin: "tui"}},
			status: "✓ verified",
		},
		{
			name:   "esc cancels without sending",
			setup:  func(h *harness) { h.selectPane("%2") },
			keys:   []string{"i", "h", "i", "esc"},
			status: "message not sent",
		},
		{
			name:  "enter on an empty box sends nothing",
			setup: func(h *harness) { h.selectPane("%2") },
			keys:  []string{"i", " ", "enter", "esc"},
		},
		{
			name: "a delivery that was not verified says so",
			setup: func(h *harness) {
				h.selectPane("%2")
				h.svc.SetUnverified("the prompt still shows the text")
			},
			keys:   []string{"i", "o", "k", "enter"},
			calls:  []monitortest.Call{{Method: "inject", Target: api.Target{Pane: "%2"}, Text: "ok", Origin: "tui"}},
			status: "delivered to orch-auth:1.0, not verified: the prompt still shows the text",
		},
		{
			name: "a failed injection shows the error",
			setup: func(h *harness) {
				h.selectPane("%2")
				h.svc.Fail("inject", errors.New("tmux: pane %2 is dead"))
			},
			keys:   []string{"i", "o", "k", "enter"},
			status: "✖ not sent to orch-auth:1.0: tmux: pane %2 is dead",
		},
		{
			name:   "ctrl+t inserts a template",
			opts:   Options{Templates: []Template{{Name: "tests", Text: "Run the tests first."}, {Name: "continue", Text: "Continue with the next task."}}},
			setup:  func(h *harness) { h.selectPane("%2") },
			keys:   []string{"i", "ctrl+t", "j", "enter", "enter"},
			calls:  []monitortest.Call{{Method: "inject", Target: api.Target{Pane: "%2"}, Text: "Continue with the next task.", Origin: "tui"}},
			status: "✓ verified",
		},
		{
			name:   "x interrupts",
			setup:  func(h *harness) { h.selectPane("%4") },
			keys:   []string{"x"},
			calls:  []monitortest.Call{{Method: "interrupt", Target: api.Target{Pane: "%4"}, Keys: []string{"Escape"}, Origin: "tui"}},
			status: "interrupted api:1.0 (keys Escape)",
		},
		{
			name:   "o without a jump shows how to attach",
			setup:  func(h *harness) { h.selectPane("%4") },
			keys:   []string{"o"},
			status: "attach with: tmux -L work attach -t api:1.0",
		},
		{
			name: "o jumps through the hook",
			opts: Options{Jump: func(s api.Session) error {
				if s.Pane != "%4" {
					return errors.New("wrong pane " + s.Pane)
				}
				return nil
			}},
			setup:  func(h *harness) { h.selectPane("%4") },
			keys:   []string{"o"},
			status: "switched to api:1.0",
		},
		{
			name:   "a jump that fails shows how to attach",
			opts:   Options{Jump: func(api.Session) error { return errors.New("not inside tmux") }},
			setup:  func(h *harness) { h.selectPane("%4") },
			keys:   []string{"o"},
			status: "cannot switch to api:1.0 (not inside tmux); attach with: tmux -L work attach -t api:1.0",
		},
		{
			name:   "the attach hint comes from the caller when given",
			opts:   Options{AttachHint: func(s api.Session) string { return "ssh box -t tmux attach -t " + s.Target }},
			setup:  func(h *harness) { h.selectPane("%4") },
			keys:   []string{"o"},
			status: "attach with: ssh box -t tmux attach -t api:1.0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newFixtureService(t)
			raiseFixtureWakes(t, svc)
			h := newHarness(t, svc, tt.opts, 100, 30)
			if tt.setup != nil {
				tt.setup(h)
			}
			h.press(tt.keys...)
			h.typeText(tt.text)
			h.press(tt.after...)
			if got := h.calls(); !slices.EqualFunc(got, tt.calls, callEqual) {
				t.Errorf("calls:\n got %+v\nwant %+v", got, tt.calls)
			}
			if !strings.Contains(h.statusText(), tt.status) {
				t.Errorf("status %q does not contain %q", h.statusText(), tt.status)
			}
			if h.m.input != inputNone {
				t.Errorf("an input is still open")
			}
		})
	}
}

func callEqual(a, b monitortest.Call) bool {
	return a.Method == b.Method && a.Target == b.Target && a.Text == b.Text && slices.Equal(a.Keys, b.Keys) &&
		a.Answer == b.Answer && a.Urgent == b.Urgent && a.NoEnter == b.NoEnter && a.Origin == b.Origin
}

// TestAnswerAgainAfterUpdate: once the monitor reports the pane again, a
// new answer may go.
func TestAnswerAgainAfterUpdate(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	h.selectPane("%1")
	h.press("1")
	s, _ := h.m.table.Selected()
	s.Question = "Do you want to run go test ./...?"
	svc.Publish(api.Update{Kind: api.SessionChanged, Session: s})
	h.read()
	h.press("1")
	if n := len(h.calls()); n != 2 {
		t.Fatalf("%d calls, want 2: %+v", n, h.calls())
	}
}

func TestAckKeys(t *testing.T) {
	tests := []struct {
		name   string
		keys   []string
		acked  []api.Reason // the wakes acknowledged by "tui"
		status string
	}{
		{name: "a acks the newest unacked wake of the selected session", keys: []string{"a"},
			acked: []api.Reason{api.ReasonAwaitingInput}, status: "acknowledged awaiting_input for orch-auth:0.0"},
		{name: "a in the wake feed acks the selected wake", keys: []string{"tab", "j", "a"},
			acked: []api.Reason{api.ReasonErrorLoopDetected}, status: "acknowledged error_loop_detected for api:1.0"},
		{name: "A acks all", keys: []string{"A"},
			acked:  []api.Reason{api.ReasonWorkerFailed, api.ReasonErrorLoopDetected, api.ReasonAwaitingInput},
			status: "acknowledged 3 wakes"},
		{name: "a twice acks once", keys: []string{"a", "a"},
			acked: []api.Reason{api.ReasonAwaitingInput}, status: "no unacknowledged wake for orch-auth:0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newFixtureService(t)
			raiseFixtureWakes(t, svc)
			h := newHarness(t, svc, Options{}, 100, 30)
			h.selectPane("%1")
			h.press(tt.keys...)
			all, err := svc.Store.List(api.WakeFilter{IncludeAcked: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []api.Reason
			for _, ev := range all {
				if ev.Acked && ev.AckedBy == "tui" {
					got = append(got, ev.Reason)
				}
			}
			if !slices.Equal(got, tt.acked) {
				t.Errorf("acked by tui: %v, want %v", got, tt.acked)
			}
			if !strings.Contains(h.statusText(), tt.status) {
				t.Errorf("status %q does not contain %q", h.statusText(), tt.status)
			}
			// The feed shows the acks at once, before the subscription
			// reports them.
			if want := 3 - len(tt.acked); h.m.feed.need != want {
				t.Errorf("feed shows %d needing a person, want %d", h.m.feed.need, want)
			}
		})
	}
}

func TestNavigationKeys(t *testing.T) {
	order := []string{"%4", "%1", "%7", "%9", "%11", "%2", "%12"} // api.SortSessions
	tests := []struct {
		keys []string
		want string
	}{
		{nil, "%4"},
		{[]string{"j"}, "%1"},
		{[]string{"down", "down"}, "%7"},
		{[]string{"j", "k"}, "%4"},
		{[]string{"j", "up"}, "%4"},
		{[]string{"k"}, "%4"},
		{[]string{"G"}, "%12"},
		{[]string{"end"}, "%12"},
		{[]string{"G", "j"}, "%12"},
		{[]string{"G", "g"}, "%4"},
		{[]string{"G", "home"}, "%4"},
	}
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	var got []string
	for i := range h.m.table.Len() {
		got = append(got, h.m.table.rows[i].sess.Pane)
	}
	if !slices.Equal(got, order) {
		t.Fatalf("order %v, want %v", got, order)
	}
	for _, tt := range tests {
		h.press("g")
		h.press(tt.keys...)
		if s, _ := h.m.table.Selected(); s.Pane != tt.want {
			t.Errorf("%v: selected %s, want %s", tt.keys, s.Pane, tt.want)
		}
		if h.m.detail.sess.Pane != tt.want {
			t.Errorf("%v: detail shows %s, want %s", tt.keys, h.m.detail.sess.Pane, tt.want)
		}
	}
}

func TestTabMovesFocusAndTheTableFollowsTheWake(t *testing.T) {
	svc := newFixtureService(t)
	raiseFixtureWakes(t, svc)
	h := newHarness(t, svc, Options{}, 100, 30)
	h.press("tab")
	if h.m.focus != focusWakes || !h.m.feed.focused || h.m.table.focused {
		t.Fatal("tab did not move the focus to the wakes")
	}
	// Newest unacked first: awaiting (%1), error loop (%4), worker failed (%9).
	for i, want := range []string{"%1", "%4", "%9", "%9"} {
		if i > 0 {
			h.press("j")
		}
		if s, _ := h.m.table.Selected(); s.Pane != want {
			t.Errorf("after %d j: session %s selected, want %s", i, s.Pane, want)
		}
	}
	h.press("y") // acts on the wake's session: %9 is not at a prompt
	if len(h.calls()) != 0 {
		t.Errorf("calls %+v", h.calls())
	}
	h.press("shift+tab")
	if h.m.focus != focusSessions {
		t.Fatal("shift+tab did not move the focus back")
	}
}

func TestFilterKeys(t *testing.T) {
	tests := []struct {
		typed string
		want  []string // targets listed while typing
	}{
		{"gem", []string{"web:0.1"}},
		{"claude", []string{"orch-auth:0.0", "docs:0.0", "orch-auth:1.0"}},
		{"await", []string{"orch-auth:0.0"}},
		{"idle", []string{"docs:0.0"}},
		{"orch work", []string{"orch-auth:1.0"}},
		{"AUTH", []string{"orch-auth:0.0", "orch-auth:1.0"}},
		{"nothing-like-this", nil},
	}
	for _, tt := range tests {
		t.Run(tt.typed, func(t *testing.T) {
			svc := newFixtureService(t)
			h := newHarness(t, svc, Options{}, 100, 30)
			h.press("G", "/")
			h.typeText(tt.typed)
			if got := h.targets(); !slices.Equal(got, tt.want) {
				t.Fatalf("while typing: %v, want %v", got, tt.want)
			}
			h.press("enter")
			if h.m.input != inputNone {
				t.Fatal("enter did not close the filter")
			}
			if got := h.targets(); !slices.Equal(got, tt.want) {
				t.Fatalf("applied: %v, want %v", got, tt.want)
			}
			s, ok := h.m.table.Selected()
			if len(tt.want) > 0 && (!ok || s.Target != tt.want[0]) {
				t.Errorf("selected %q, want the first match %q", s.Target, tt.want[0])
			}
			h.press("esc")
			if h.m.query != "" || h.m.table.Len() != 7 {
				t.Errorf("esc left filter %q with %d rows", h.m.query, h.m.table.Len())
			}
		})
	}
}

func TestFilterEscWhileTypingClears(t *testing.T) {
	h := newHarness(t, newFixtureService(t), Options{}, 100, 30)
	h.press("/")
	h.typeText("gem")
	h.press("esc")
	if h.m.input != inputNone || h.m.query != "" || h.m.table.Len() != 7 {
		t.Fatalf("input %v, query %q, %d rows", h.m.input, h.m.query, h.m.table.Len())
	}
	// Reopening starts empty.
	h.press("/")
	if v := h.m.filter.Value(); v != "" {
		t.Fatalf("reopened with %q", v)
	}
}

func (h *harness) targets() []string {
	var out []string
	for _, r := range h.m.table.rows {
		out = append(out, r.sess.Target)
	}
	return out
}

func TestComposeHistory(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	h.selectPane("%2")
	for _, msg := range []string{"first", "second"} {
		h.press("i")
		h.typeText(msg)
		h.press("enter")
	}
	h.press("i")
	h.typeText("draft")
	steps := []struct {
		key, want string
	}{
		{"up", "second"},
		{"up", "first"},
		{"up", "first"},
		{"down", "second"},
		{"down", "draft"},
		{"down", "draft"},
	}
	for _, s := range steps {
		h.press(s.key)
		if got := h.m.compose.Value(); got != s.want {
			t.Fatalf("%s: %q, want %q", s.key, got, s.want)
		}
	}
	h.press("up", "enter")
	calls := h.calls()
	if len(calls) != 3 || calls[2].Text != "second" {
		t.Fatalf("calls %+v", calls)
	}
}

// TestComposeKeepsItsTarget: the box writes to the pane it was opened for,
// even when the registry reorders the table underneath.
func TestComposeKeepsItsTarget(t *testing.T) {
	svc := newFixtureService(t)
	h := newHarness(t, svc, Options{}, 100, 30)
	h.selectPane("%11")
	h.press("i")
	h.typeText("next: the changelog")
	s := fixtureSessions()[4] // docs:0.0 (%11)
	if s.Pane != "%11" {
		t.Fatalf("fixture order changed: %s", s.Pane)
	}
	s.State = api.AwaitingInput
	svc.Publish(api.Update{Kind: api.SessionChanged, Session: s})
	h.read()
	h.press("enter")
	calls := h.calls()
	if len(calls) != 1 || calls[0].Target.Pane != "%11" {
		t.Fatalf("calls %+v", calls)
	}
}

func TestZoomKeys(t *testing.T) {
	h := newHarness(t, newFixtureService(t), Options{}, 80, 24)
	h.selectPane("%1")
	for _, back := range []string{"esc", "enter"} {
		h.press("enter")
		if !h.m.detail.zoomed {
			t.Fatal("enter did not zoom")
		}
		if !strings.Contains(h.m.View(), "Do you want to make this edit to login.go?") {
			t.Fatalf("zoomed view lacks the preview:\n%s", h.m.View())
		}
		h.press("k", "g", "G", "pgup", "pgdown", "j", "up", "down")
		h.press(back)
		if h.m.detail.zoomed {
			t.Fatalf("%s did not leave the zoom", back)
		}
	}
	// Session keys work while zoomed.
	h.press("enter", "1")
	if len(h.calls()) != 1 || h.calls()[0].Answer != "1" {
		t.Fatalf("calls %+v", h.calls())
	}
}

func TestHelpAndQuitKeys(t *testing.T) {
	h := newHarness(t, newFixtureService(t), Options{}, 80, 24)
	h.press("?")
	if !h.m.showHelp || !strings.Contains(h.m.View(), "choose option") {
		t.Fatal("? did not show the help")
	}
	h.press("j") // ignored under the overlay
	h.press("?")
	if h.m.showHelp {
		t.Fatal("? did not close the help")
	}
	h.press("?", "esc")
	if h.m.showHelp {
		t.Fatal("esc did not close the help")
	}
	h.press("q")
	if !h.quit || h.m.ctx.Err() == nil {
		t.Fatal("q did not quit and stop the streams")
	}

	h = newHarness(t, newFixtureService(t), Options{}, 80, 24)
	h.press("i", "q") // q is text in the compose box
	if h.quit {
		t.Fatal("q quit from the compose box")
	}
	h.press("ctrl+c")
	if !h.quit {
		t.Fatal("ctrl+c did not quit from the compose box")
	}
}

// TestKeysTypedTogether: keys that arrive in one read ("qq", "jj") act one
// by one outside a text box, and stay text inside one.
func TestKeysTypedTogether(t *testing.T) {
	h := newHarness(t, newFixtureService(t), Options{}, 80, 24)
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj")})
	if s, _ := h.m.table.Selected(); s.Pane != "%7" {
		t.Fatalf(`"jj" selected %s, want the third row %%7`, s.Pane)
	}
	h.press("?")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("qq")})
	if !h.quit {
		t.Fatal(`"qq" under the help overlay did not quit`)
	}

	h = newHarness(t, newFixtureService(t), Options{}, 80, 24)
	h.press("i")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("qq")})
	if h.quit || !strings.Contains(h.m.compose.Value(), "qq") {
		t.Fatalf(`"qq" in the compose box: quit %v, text %q`, h.quit, h.m.compose.Value())
	}
}
