package tmux

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestQuoteArg(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"plain", "'plain'"},
		{"a;b", "'a;b'"},
		{"it's", `'it'\''s'`},
		{"'", `\'`},
		{"''", `\'\'`},
		{"$HOME ~ #{pane_id} \\", `'$HOME ~ #{pane_id} \'`},
		{"a\nb", `'a'"\012"'b'`},
		{"\t", `"\011"`},
		{"\x7f", `"\177"`},
		{"é🎉", "'é🎉'"},
		{"a\xffb\xe4\xb8", `'a'"\377"'b'"\344""\270"`},
	}
	for _, tt := range tests {
		if got := quoteArg(tt.in); got != tt.want {
			t.Errorf("quoteArg(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if strings.ContainsAny(quoteArg(tt.in), "\n\r") {
			t.Errorf("quoteArg(%q) contains a line break", tt.in)
		}
	}
	if got := commandLine([]string{"send-keys", "-t", "%1", "--", "a b"}); got != `'send-keys' '-t' '%1' '--' 'a b'` {
		t.Errorf("commandLine = %s", got)
	}
}

func TestTargetOf(t *testing.T) {
	if got := targetOf([]string{"capture-pane", "-p", "-t", "%3"}); got != "%3" {
		t.Errorf("targetOf = %q", got)
	}
	if got := targetOf([]string{"send-keys", "-l", "--", "-t", "x"}); got != "" {
		t.Errorf("targetOf looked past -- : %q", got)
	}
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Op: "capture", Target: "%3", Server: Server{Name: "x"}.String(), Msg: "can't find pane: %3", Err: classify("can't find pane: %3")}
	if got, want := e.Error(), "capture %3 on tmux server -L x: can't find pane: %3"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, ErrNotFound) {
		t.Error("not ErrNotFound")
	}
	for _, msg := range []string{"no server running on /tmp/x", "error connecting to /tmp/x (No such file or directory)"} {
		if classify(msg) != ErrNoServer {
			t.Errorf("classify(%q) is not ErrNoServer", msg)
		}
	}
	for s, want := range map[Server]string{
		{}:                      "default tmux server",
		{Name: "foo"}:           "tmux server -L foo",
		{Path: "/p", Name: "o"}: "tmux server -S /p",
	} {
		if got := s.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", s, got, want)
		}
	}
}

func TestQueueCoalescesAndBounds(t *testing.T) {
	q := newQueue(4, 8)
	q.push(Event{Kind: EventOutput, PaneID: "%1", Data: []byte("abc")})
	q.push(Event{Kind: EventWindowAdd, WindowID: "@1"})
	q.push(Event{Kind: EventOutput, PaneID: "%1", Data: []byte("defghij")})
	q.push(Event{Kind: EventWindowAdd, WindowID: "@1"}) // duplicate of a waiting event
	q.push(Event{Kind: EventOutput, PaneID: "%2"})
	if n := q.len(); n != 3 {
		t.Fatalf("queued %d events, want 3", n)
	}
	ctx := context.Background()
	e, _ := q.pop(ctx)
	if e.PaneID != "%1" || string(e.Data) != "abcdefgh" || !e.Truncated {
		t.Errorf("coalesced event = %+v", e)
	}
	// Once delivered, a pane's next output is a new event.
	q.push(Event{Kind: EventOutput, PaneID: "%1", Data: []byte("x")})
	q.push(Event{Kind: EventOutput, PaneID: "%3"})
	if n := q.len(); n != 4 {
		t.Fatalf("queued %d events, want 4", n)
	}
	q.push(Event{Kind: EventOutput, PaneID: "%4"}) // overflow
	e, _ = q.pop(ctx)
	if e.Kind != EventResync || q.len() != 0 {
		t.Errorf("after overflow got %+v with %d left", e, q.len())
	}
	q.push(Event{Kind: EventOutput, PaneID: "%1"})
	if e, _ := q.pop(ctx); e.PaneID != "%1" {
		t.Errorf("after overflow the pane map was stale: %+v", e)
	}

	// Only the newest listing waits, in the place of the first.
	q.push(Event{Kind: EventListed, Panes: []Pane{{ID: "%1"}}})
	q.push(Event{Kind: EventSessionsChanged})
	q.push(Event{Kind: EventListed, Panes: []Pane{{ID: "%1"}, {ID: "%2"}}})
	if n := q.len(); n != 2 {
		t.Fatalf("queued %d events, want 2", n)
	}
	if e, _ := q.pop(ctx); e.Kind != EventListed || len(e.Panes) != 2 {
		t.Errorf("waiting listing = %+v, want the newer one", e)
	}
	q.pop(ctx)

	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, ok := q.pop(cctx); ok {
		t.Error("pop on an empty queue returned an event")
	}
}

func TestTailProbeAndFindRow(t *testing.T) {
	for in, want := range map[string]string{
		"hello world":            "hello world",
		"line one\nline two  \n": "line two",
		"a\tb":                   "b",
		"0123456789abcdefghij":   "456789abcdefghij",
		"中文🎉中文🎉中文🎉中文🎉中文🎉中文🎉": "🎉中文🎉中文🎉中文🎉中文🎉中文🎉",
		"\n\n": "",
	} {
		if got := tailProbe(in); got != want {
			t.Errorf("tailProbe(%q) = %q, want %q", in, got, want)
		}
	}
	sc := screen{rows: []string{"> hello world", "transcript", "❯ hello world", "", "footer y"}, cy: 2}
	if got := findTextRow(sc, "hello world"); got != 2 {
		t.Errorf("findTextRow = %d, want 2", got)
	}
	if got := findTextRow(sc, "absent"); got != -1 {
		t.Errorf("findTextRow(absent) = %d", got)
	}
	// A one-letter answer is only looked for near the cursor.
	far := screen{rows: []string{"y", "", "", "", "", "", "❯ "}, cy: 6}
	if got := findTextRow(far, "y"); got != -1 {
		t.Errorf("findTextRow(y) far from the cursor = %d", got)
	}
	marker := screen{rows: []string{"❯ [Pasted text #1 +20 lines]", ""}, cy: 0}
	if got := findTextRow(marker, "long\ntext"); got != 0 {
		t.Errorf("findTextRow(marker) = %d", got)
	}
}

func TestParseKey(t *testing.T) {
	for in, want := range map[string]Key{
		"Enter": KeyEnter, "enter": KeyEnter, "ESC": KeyEscape, "escape": KeyEscape,
		"C-c": KeyCtrlC, "ctrl+c": KeyCtrlC, "7": Key7, "y": KeyY, "btab": KeyBTab,
		"shift-tab": KeyBTab, "backspace": KeyBackspace, "BSpace": KeyBackspace, "up": KeyUp,
	} {
		if got, err := ParseKey(in); err != nil || got != want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "Y", "x", "C-d", "Enter Enter", "hello", "F1", "M-x", ";", "10"} {
		if k, err := ParseKey(in); err == nil || !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseKey(%q) = %q, %v; want ErrInvalidKey", in, k, err)
		}
	}
	if Key("C-d").Valid() {
		t.Error("C-d is valid")
	}
	for _, k := range AllowedKeys() {
		if got, err := ParseKey(string(k)); err != nil || got != k {
			t.Errorf("ParseKey(%q) = %q, %v", k, got, err)
		}
	}
}

func TestLockPaneSerialisesAndCleansUp(t *testing.T) {
	c := NewClient(Server{})
	ctx := context.Background()
	unlock, err := c.lockPane(ctx, "%1")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.lockPane(short, "%1"); err == nil {
		t.Fatal("second lock on the same pane did not wait")
	}
	other, err := c.lockPane(ctx, "%2")
	if err != nil {
		t.Fatal(err)
	}
	other()
	unlock()
	if n := len(c.locks); n != 0 {
		t.Errorf("%d pane locks left behind", n)
	}
}

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		in           string
		major, minor int
		known, ok    bool
	}{
		{"tmux 3.3a", 3, 3, true, true},
		{"tmux 3.5a\n", 3, 5, true, true},
		{"tmux 3.2", 3, 2, true, true},
		{"tmux 3.1c", 3, 1, true, true},
		{"tmux 2.9a", 2, 9, true, true},
		{"tmux 3.7c", 3, 7, true, true},
		{"tmux 10.0", 10, 0, true, true},
		{"tmux next-3.6", 3, 6, true, true},
		{"tmux master", 0, 0, false, true},
		{"tmux openbsd-7.5", 0, 0, false, true},
		{"screen 4", 0, 0, false, false},
		{"tmux x.y", 0, 0, false, false},
	} {
		major, minor, known, ok := ParseVersion(c.in)
		if major != c.major || minor != c.minor || known != c.known || ok != c.ok {
			t.Errorf("ParseVersion(%q) = %d %d %v %v, want %d %d %v %v", c.in, major, minor, known, ok, c.major, c.minor, c.known, c.ok)
		}
	}
}
