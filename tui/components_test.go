package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/system3-dev/system3/internal/api"
)

func testStyles() *styles { return newStyles(lipgloss.DefaultRenderer(), false) }

func rowsOf(ss []api.Session) []sessionRow {
	rows := make([]sessionRow, len(ss))
	for i, s := range ss {
		rows[i] = sessionRow{sess: s, rev: uint64(i + 1)}
	}
	return rows
}

func TestSessionTableUpdate(t *testing.T) {
	tests := []struct {
		keys []string
		want int // cursor
	}{
		{nil, 0},
		{[]string{"j"}, 1},
		{[]string{"down", "down", "down"}, 3},
		{[]string{"j", "k"}, 0},
		{[]string{"up"}, 0},
		{[]string{"G"}, 6},
		{[]string{"end", "j"}, 6},
		{[]string{"G", "g"}, 0},
		{[]string{"G", "home"}, 0},
		{[]string{"x", "enter", "tab"}, 0}, // not the table's keys
	}
	for _, tt := range tests {
		tb := newSessionTable(testStyles(), newKeyMap().Nav)
		tb.SetSize(80, 5) // three rows visible
		tb.SetRows(rowsOf(fixtureSessions()), "")
		for _, k := range tt.keys {
			tb, _ = tb.Update(keyMsg(k))
		}
		if tb.cursor != tt.want {
			t.Errorf("%v: cursor %d, want %d", tt.keys, tb.cursor, tt.want)
		}
		if tb.cursor < tb.offset || tb.cursor >= tb.offset+tb.visible() {
			t.Errorf("%v: cursor %d outside rows %d..%d", tt.keys, tb.cursor, tb.offset, tb.offset+tb.visible()-1)
		}
		if v := tb.View(); !strings.Contains(v, "▸ "+tb.rows[tb.cursor].sess.Target) {
			t.Errorf("%v: the selected row is not marked:\n%s", tt.keys, v)
		}
	}
}

func TestSessionTableKeepsTheSelectionOnItsPane(t *testing.T) {
	tb := newSessionTable(testStyles(), newKeyMap().Nav)
	tb.SetSize(100, 20)
	ss := fixtureSessions()
	tb.SetRows(rowsOf(ss), "")
	tb.Select("%9")
	slices.Reverse(ss)
	tb.SetRows(rowsOf(ss), "%9")
	if s, _ := tb.Selected(); s.Pane != "%9" {
		t.Fatalf("selected %s after reorder", s.Pane)
	}
	tb.SetRows(rowsOf(ss[:2]), "%9")
	if s, ok := tb.Selected(); !ok || tb.cursor != 1 {
		t.Fatalf("after the pane left: %v %d", s.Pane, tb.cursor)
	}
	tb.SetRows(nil, "")
	if _, ok := tb.Selected(); ok {
		t.Fatal("selected in an empty table")
	}
}

func TestSessionTableColumnsAtEveryWidth(t *testing.T) {
	for w := 30; w <= 200; w += 7 {
		tb := newSessionTable(testStyles(), newKeyMap().Nav)
		tb.SetSize(w, 10)
		tb.SetRows(rowsOf(fixtureSessions()), "")
		for i, l := range strings.Split(tb.View(), "\n") {
			if width(l) != w {
				t.Fatalf("width %d: line %d is %d wide: %q", w, i, width(l), l)
			}
		}
	}
}

func TestWakeFeedUpdate(t *testing.T) {
	f := newWakeFeed(testStyles(), newKeyMap().Nav)
	f.SetSize(80, 3) // two visible
	var items []feedItem
	for i := range 5 {
		items = append(items, feedItem{ev: api.Wake{ID: fmt.Sprint("w", i), Seq: uint64(5 - i), Reason: api.ReasonAwaitingInput}})
	}
	f.SetItems(items)
	f.focused = true
	for _, tt := range []struct {
		key  string
		want int
	}{{"j", 1}, {"j", 2}, {"k", 1}, {"G", 4}, {"g", 0}, {"down", 1}, {"end", 4}, {"home", 0}} {
		f, _ = f.Update(keyMsg(tt.key))
		if f.cursor != tt.want {
			t.Fatalf("%s: cursor %d, want %d", tt.key, f.cursor, tt.want)
		}
		if f.cursor < f.offset || f.cursor > f.offset+1 {
			t.Fatalf("%s: cursor %d not visible from %d", tt.key, f.cursor, f.offset)
		}
	}
	// New wakes keep the selection on the same wake.
	f, _ = f.Update(keyMsg("j"))
	f.SetItems(append([]feedItem{{ev: api.Wake{ID: "new", Seq: 9}}}, items...))
	if it, _ := f.Selected(); it.ev.ID != "w1" {
		t.Fatalf("selection moved to %s", it.ev.ID)
	}
}

func TestWakeBook(t *testing.T) {
	b := newWakeBook()
	ev := func(id string, seq uint64) api.Wake {
		return api.Wake{ID: id, Seq: seq, Reason: api.ReasonAwaitingInput, Pane: "%1"}
	}
	b.apply(api.WakeMessage{Kind: api.WakeRaised, Event: ev("a", 1)})
	b.apply(api.WakeMessage{Kind: api.WakeRaised, Event: ev("b", 2)})
	b.apply(api.WakeMessage{Kind: api.WakeRaised, Event: ev("c", 3)})
	acked := ev("a", 1)
	acked.Acked, acked.AckedBy = true, "cli"
	b.apply(api.WakeMessage{Kind: api.WakeAcked, Event: acked})
	// A replayed raise after the ack does not un-ack it.
	if b.apply(api.WakeMessage{Kind: api.WakeRaised, Event: ev("a", 1), Replayed: true}) {
		t.Fatal("a late raise changed an acked wake")
	}
	resolved := ev("b", 2)
	resolved.Resolved, resolved.Resolution = true, "answered by cli: Yes"
	b.apply(api.WakeMessage{Kind: api.WakeResolved, Event: resolved})
	got := b.sorted()
	var order []string
	for _, it := range got {
		order = append(order, fmt.Sprintf("%s:%v:%v", it.ev.ID, it.ev.Acked, it.ev.Resolved))
	}
	if want := "c:false:false b:false:true a:true:false"; strings.Join(order, " ") != want {
		t.Fatalf("order %v, want %s", order, want)
	}
	// The list of unacknowledged wakes is the truth.
	b.reconcile([]api.Wake{ev("c", 3), ev("d", 4)})
	if n := len(b.byID); n != 4 {
		t.Fatalf("%d wakes", n)
	}
	if !b.byID["b"].ev.Acked || b.byID["d"].ev.Acked {
		t.Fatal("reconcile did not ack b or acked d")
	}
	// Acknowledged wakes are kept up to a limit.
	for i := range keepAcked + 20 {
		e := ev(fmt.Sprint("x", i), uint64(100+i))
		e.Acked = true
		b.apply(api.WakeMessage{Kind: api.WakeAcked, Event: e})
	}
	n := 0
	for _, it := range b.byID {
		if it.ev.Acked {
			n++
		}
	}
	if n != keepAcked || b.byID["c"] == nil {
		t.Fatalf("%d acked kept (want %d), unacked c kept: %v", n, keepAcked, b.byID["c"] != nil)
	}
}

func TestComposeUpdate(t *testing.T) {
	k := newKeyMap()
	sess := fixtureSessions()[1]
	tests := []struct {
		name   string
		keys   []string
		value  string
		msg    any // the message the last command makes
		typing string
	}{
		{name: "typing", typing: "hello", value: "hello"},
		{name: "ctrl+j newline", typing: "a", keys: []string{"ctrl+j"}, value: "a\n"},
		{name: "alt+enter newline", typing: "a", keys: []string{"alt+enter"}, value: "a\n"},
		{name: "enter sends", typing: "go on", keys: []string{"enter"}, value: "go on", msg: composeSendMsg{sess: sess, text: "go on"}},
		{name: "esc cancels", typing: "x", keys: []string{"esc"}, value: "x", msg: composeCloseMsg{}},
		{name: "blank is not sent", typing: "   ", keys: []string{"enter"}, value: "   "},
		{name: "ctrl+t opens the picker, esc closes it", keys: []string{"ctrl+t", "esc"}, value: ""},
		{name: "picker inserts", typing: "Note: ", keys: []string{"ctrl+t", "down", "enter"}, value: "Note: two"},
		{name: "picker ignores letters", keys: []string{"ctrl+t", "q", "enter"}, value: "one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCompose(testStyles(), k.Compose, k.Picker, []Template{{Name: "1", Text: "one"}, {Name: "2", Text: "two"}})
			c.SetSize(80, 6)
			c.Open(sess, nil)
			var cmd tea.Cmd
			for _, r := range tt.typing {
				c, cmd = c.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
			}
			for _, key := range tt.keys {
				c, cmd = c.Update(keyMsg(key))
			}
			if got := c.Value(); got != tt.value {
				t.Errorf("value %q, want %q", got, tt.value)
			}
			var got any
			if cmd != nil {
				got = cmd()
			}
			if tt.msg != nil {
				if fmt.Sprint(got) != fmt.Sprint(tt.msg) {
					t.Errorf("message %#v, want %#v", got, tt.msg)
				}
			} else if _, ok := got.(composeSendMsg); ok {
				t.Errorf("sent %#v", got)
			}
		})
	}
}

func TestFilterBoxUpdate(t *testing.T) {
	f := newFilterBox(testStyles(), newKeyMap().Filter)
	f.SetSize(80, 1)
	f.Open("")
	for _, r := range "gem" {
		f, _ = f.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	f, _ = f.Update(keyMsg("backspace"))
	if f.Value() != "ge" {
		t.Fatalf("value %q", f.Value())
	}
	for key, want := range map[string]any{"enter": filterApplyMsg{}, "esc": filterClearMsg{}} {
		_, cmd := f.Update(keyMsg(key))
		if cmd == nil || cmd() != want {
			t.Errorf("%s: %v", key, cmd)
		}
	}
	f.SetCounts(2, 7)
	if v := f.View(); !strings.Contains(v, "/ ge") || !strings.Contains(v, "2 of 7 panes") || width(v) != 80 {
		t.Errorf("view %q", v)
	}
}

func TestFilterMatches(t *testing.T) {
	s := fixtureSessions()[1] // orch-auth:0.0, claude, awaiting permission
	for q, want := range map[string]bool{
		"": true, "orch": true, "ORCH-AUTH:0": true, "claude": true, "awaiting": true, "await perm": true,
		"%1": true, "codex": false, "orch codex": false, "idle": false,
	} {
		if got := matches(s, filterTerms(q)); got != want {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
	}
}

func TestDetailZoomScroll(t *testing.T) {
	d := newDetail(testStyles(), newKeyMap().Zoom)
	d.SetSize(70, 6) // five lines under the title
	sess := fixtureSessions()[1]
	d.SetSession(sess, 1, true)
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprint("line ", i))
	}
	d.SetPreview(sess.Pane, lines, "")
	d.Zoom(true)
	if d.top != 15 || !d.follow {
		t.Fatalf("zoom starts at %d (follow %v), want the bottom", d.top, d.follow)
	}
	for _, tt := range []struct {
		key    string
		top    int
		follow bool
	}{{"k", 14, false}, {"pgup", 10, false}, {"g", 0, false}, {"j", 1, false}, {"pgdown", 5, false}, {"G", 15, true}, {"down", 15, true}} {
		d, _ = d.Update(keyMsg(tt.key))
		if d.top != tt.top || d.follow != tt.follow {
			t.Fatalf("%s: top %d follow %v, want %d %v", tt.key, d.top, d.follow, tt.top, tt.follow)
		}
	}
	// Following, new output keeps the view at the bottom; scrolled up, it
	// stays where it is.
	d.SetPreview(sess.Pane, append(lines, "line 20", "line 21"), "")
	if d.top != 17 {
		t.Fatalf("following: top %d", d.top)
	}
	d, _ = d.Update(keyMsg("g"))
	d.SetPreview(sess.Pane, append(lines, "line 20", "line 21", "line 22"), "")
	if d.top != 0 {
		t.Fatalf("scrolled: top %d", d.top)
	}
	if v := d.View(); !strings.Contains(v, "lines 1-5 of 23") || !strings.Contains(v, "line 0") {
		t.Fatalf("view:\n%s", v)
	}
	// Another pane's preview is not shown for this one.
	d.SetPreview("%99", []string{"other"}, "")
	if strings.Contains(d.View(), "other") {
		t.Fatal("showed another pane's preview")
	}
}

func TestHelpOverlayFitsAt80x24(t *testing.T) {
	o := newHelpOverlay(testStyles(), newKeyMap())
	o.SetSize(80, 20)
	v := o.View()
	for _, s := range o.sections {
		for _, k := range s.keys {
			if !strings.Contains(v, k.b.Help().Desc) {
				t.Errorf("%q (%s) is not shown at 80×24", k.b.Help().Desc, s.title)
			}
		}
	}
}

// WHAT says what matters for the state; the last screen line is only the
// fallback (a pending task line or a wrapped fragment would mislead).
func TestWhatSaysWhatMatters(t *testing.T) {
	ev := api.Evidence{Source: "screen", Lines: []string{"API Error: 500 Internal server error"}}
	for _, tt := range []struct {
		name string
		s    api.Session
		want string
	}{
		{"working on a task", api.Session{State: api.Working, LastLine: "◻ Update the auth docs",
			Tasks: &api.TaskProgress{InProgress: []string{"Add the login form"}}}, "now: Add the login form"},
		{"two tasks", api.Session{State: api.Working, Tasks: &api.TaskProgress{InProgress: []string{"A", "B"}}}, "now: A (+1)"},
		{"working, no list", api.Session{State: api.Working, LastLine: "✻ Thinking…"}, "✻ Thinking…"},
		{"loop on the matched line", api.Session{State: api.ErrorLoop, ErrorCount: 3, Evidence: ev,
			LastLine: "in a moment. If it persists,…"}, "3× API Error: 500 Internal server error"},
		{"error detail first", api.Session{State: api.Error, Detail: "Rate limit reached", Evidence: ev}, "Rate limit reached"},
		{"question", api.Session{State: api.AwaitingInput, Question: "Proceed?", LastLine: "Esc to cancel"}, "Proceed?"},
		{"idle", api.Session{State: api.Idle, LastLine: "✔ Lint the README"}, "✔ Lint the README"},
		{"usage limit, it goes on by itself", api.Session{State: api.RateLimited, Kind: api.KindAutoResume, LastLine: "Continuing automatically at 2am",
			ResetsAt: time.Date(2026, 11, 22, 2, 0, 0, 0, time.Local)}, "usage limit, resets Sun 02:00 · continues by itself"},
		{"usage limit, cancelled", api.Session{State: api.RateLimited, ResetsAt: time.Date(2026, 11, 22, 2, 0, 0, 0, time.Local)},
			"usage limit, resets Sun 02:00 · will not continue by itself"},
		{"usage limit, no reset said", api.Session{State: api.RateLimited}, "usage limit · will not continue by itself"},
	} {
		if got := what(tt.s); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestMCPStatusNamesMCPOnce(t *testing.T) {
	for _, tt := range []struct {
		s    MCPStatus
		want string
	}{
		{MCPStatus{Err: "MCP port 127.0.0.1:8889 is in use"}, "MCP port 127.0.0.1:8889 is in use"},
		{MCPStatus{Err: "no token"}, "MCP: no token"},
		{MCPStatus{Addr: "127.0.0.1:8889", Clients: 1}, "MCP: 127.0.0.1:8889 (1 client)"},
		{MCPStatus{}, "MCP: off"},
	} {
		if got := tt.s.text(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestUsageText(t *testing.T) {
	u := &api.Usage{Tokens: api.Tokens{Input: 950, Output: 48210, CacheRead: 1_340_000}, CostUSD: 0.0031,
		ByModel: map[string]api.Tokens{"a": {}, "b": {}}}
	if got, want := usageText(u), "1.4M tokens (in 950 · out 48.2k · cache read 1.3M) · ≈ $0.0031"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	u.Unpriced = []string{"b"}
	if got := usageText(u); !strings.HasSuffix(got, "≈ $0.0031 + unpriced b") {
		t.Errorf("one model unpriced: %q", got)
	}
	u.Unpriced, u.CostUSD = []string{"a", "b"}, 0
	if got := usageText(u); !strings.HasSuffix(got, "no price for a, b (usage.prices)") {
		t.Errorf("no prices: %q", got)
	}
}
