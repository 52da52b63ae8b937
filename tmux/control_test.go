package tmux

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeOutput(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{``, ""},
		{`plain text`, "plain text"},
		{`hi\015\012`, "hi\r\n"},
		{`back\134slash`, `back\slash`},
		{`\033[31mred\033[0m`, "\x1b[31mred\x1b[0m"},
		{`中文 🎉`, "中文 🎉"},
		{`\377\000`, "\xff\x00"},
		{`trailing\`, `trailing\`},
		{`short\01`, `short\01`},
		{`not octal \089`, `not octal \089`},
		{`too big \400`, `too big \400`},
	}
	for _, tt := range tests {
		if got := decodeOutput(tt.in); string(got) != tt.want {
			t.Errorf("decodeOutput(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseNotification(t *testing.T) {
	tests := []struct {
		line string
		want Event
		ok   bool
	}{
		{`%output %3 hi\015\012`, Event{Kind: EventOutput, PaneID: "%3", Data: []byte("hi\r\n")}, true},
		{`%output %3 `, Event{Kind: EventOutput, PaneID: "%3", Data: []byte{}}, true},
		{`%output bogus x`, Event{}, false},
		{`%extended-output %4 120 : a\040b : c`, Event{Kind: EventOutput, PaneID: "%4", Data: []byte("a b : c")}, true},
		{`%extended-output %4 120 future stuff : x`, Event{Kind: EventOutput, PaneID: "%4", Data: []byte("x")}, true},
		{`%window-add @2`, Event{Kind: EventWindowAdd, WindowID: "@2"}, true},
		{`%window-close @2`, Event{Kind: EventWindowClose, WindowID: "@2"}, true},
		{`%window-renamed @2 my name`, Event{Kind: EventWindowRenamed, WindowID: "@2", Name: "my name"}, true},
		{`%unlinked-window-add @5`, Event{Kind: EventUnlinkedWindowAdd, WindowID: "@5"}, true},
		{`%unlinked-window-close @5`, Event{Kind: EventUnlinkedWindowClose, WindowID: "@5"}, true},
		{`%session-changed $1 b`, Event{Kind: EventSessionChanged, SessionID: "$1", Name: "b"}, true},
		{`%sessions-changed`, Event{Kind: EventSessionsChanged}, true},
		{`%session-renamed $2 cc`, Event{Kind: EventSessionRenamed, SessionID: "$2", Name: "cc"}, true},
		{`%session-renamed plain`, Event{Kind: EventSessionRenamed, Name: "plain"}, true},
		{`%pane-mode-changed %7`, Event{Kind: EventPaneModeChanged, PaneID: "%7"}, true},
		{`%layout-change @1 b25f,80x24,0,0,2 b25f,80x24,0,0,2 *`, Event{Kind: EventLayoutChange, WindowID: "@1", Layout: "b25f,80x24,0,0,2"}, true},
		{`%exit`, Event{Kind: EventExit}, true},
		{`%exit server exited`, Event{Kind: EventExit, Reason: "server exited"}, true},
		{`%client-detached /dev/pts/1`, Event{}, false},
		{`%paste-buffer-changed buffer0`, Event{}, false},
		{`%something-new 1 2 3`, Event{}, false},
		{`not a notification`, Event{}, false},
		{``, Event{}, false},
	}
	for _, tt := range tests {
		got, ok := parseNotification(tt.line, true)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseNotification(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
	// Without decoding, output events carry no data.
	if got, _ := parseNotification(`%output %1 abc`, false); got.Data != nil {
		t.Errorf("undecoded output carried %q", got.Data)
	}
}

// feedAll runs lines through a parser and collects what comes out.
func feedAll(p *ctlParser, text string) (blocks []ctlBlock, events []Event) {
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		b, e := p.feed(line)
		if b != nil {
			blocks = append(blocks, *b)
		}
		if e != nil {
			events = append(events, *e)
		}
	}
	return blocks, events
}

func TestParserBlocks(t *testing.T) {
	// A transcript in the shape tmux 3.3 produces: the attach block (flags
	// 0), notifications, a reply, an error, a hook's block, and a reply
	// whose body looks like protocol lines.
	const transcript = `%begin 1795237434 264 0
%end 1795237434 264 0
%session-changed $0 a
%output %0 echo hi\015\012
%begin 1795237439 283 1
x;y
%end 1795237439 283 1
%begin 1795237439 285 1
parse error: unknown command: bogus-cmd
%error 1795237439 285 1
%begin 1795237819 591 0
HOOKED
%end 1795237819 591 0
%begin 1795237819 600 1
%output %9 fake
%end 1 2 3
%end 1795237819 599 1

%end 1795237819 600 1
%sessions-changed
%unknown-thing
%exit
`
	var p ctlParser
	blocks, events := feedAll(&p, transcript)
	wantBlocks := []ctlBlock{
		{Time: 1795237434, Number: 264, Flags: 0},
		{Time: 1795237439, Number: 283, Flags: 1, Lines: []string{"x;y"}},
		{Time: 1795237439, Number: 285, Flags: 1, Lines: []string{"parse error: unknown command: bogus-cmd"}, Err: true},
		{Time: 1795237819, Number: 591, Flags: 0, Lines: []string{"HOOKED"}},
		{Time: 1795237819, Number: 600, Flags: 1, Lines: []string{"%output %9 fake", "%end 1 2 3", "%end 1795237819 599 1", ""}},
	}
	if !reflect.DeepEqual(blocks, wantBlocks) {
		t.Errorf("blocks:\n got %+v\nwant %+v", blocks, wantBlocks)
	}
	var kinds []EventKind
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	wantKinds := []EventKind{EventSessionChanged, EventOutput, EventSessionsChanged, EventExit}
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Errorf("event kinds = %v, want %v", kinds, wantKinds)
	}
	if p.inBlock {
		t.Error("parser still inside a block")
	}
}

func TestParseGuard(t *testing.T) {
	for _, line := range []string{"%begin 1 2", "%begin a 2 3", "%begin 1 2 3 4", "%end 1 -2 0", "%other 1 2 3"} {
		if _, _, _, _, ok := parseGuard(line); ok {
			t.Errorf("parseGuard(%q) accepted", line)
		}
	}
	g, tm, n, f, ok := parseGuard("%error 17 42 1")
	if !ok || g != "%error" || tm != 17 || n != 42 || f != 1 {
		t.Errorf("parseGuard = %q %d %d %d %v", g, tm, n, f, ok)
	}
}

// FuzzControlParser feeds arbitrary lines to the control-mode parser: it
// must not panic, a finished block must not leave the parser inside a
// block, and decoded output is never longer than its escaped form.
func FuzzControlParser(f *testing.F) {
	f.Add([]byte("%begin 1 2 1\nhello\n%end 1 2 1\n%output %1 a\\015b\n"))
	f.Add([]byte("%begin 1 2 0\n%error 1 2 0\n%exit\n"))
	f.Add([]byte("%extended-output %1 5 : x\\134y\n%layout-change @1 a b c\n"))
	f.Add([]byte("%session-renamed $1 x y\n%window-renamed @3\n%begin 9 9 9\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p ctlParser
		p.decode = true
		for _, line := range bytes.Split(data, []byte("\n")) {
			b, e := p.feed(string(line))
			if b != nil && p.inBlock {
				t.Fatal("block finished but parser still in a block")
			}
			if b != nil && e != nil {
				t.Fatal("both a block and an event from one line")
			}
			if e != nil && e.Kind == EventOutput && len(e.Data) > len(line) {
				t.Fatalf("decoded %d bytes from a %d-byte line", len(e.Data), len(line))
			}
		}
	})
}
