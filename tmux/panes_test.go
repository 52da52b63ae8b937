package tmux

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// encodeValue writes a string value the way tmux prints
// "#{n:X}:#{s/\\\\/\\\\\\\\/:X}": its byte length, then the value with backslashes
// doubled, and, when vis is set (tmux 3.4 and later), passed through
// vis(3) with VIS_OCTAL|VIS_CSTYLE|VIS_NOSLASH as tmux does, keeping valid
// UTF-8 as it is.
func encodeValue(s string, vis bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case !vis || (r != utf8.RuneError && size > 1) || c == ' ' || c == '\t' || c == '\n' || (c > ' ' && c < 0x7f):
			b.WriteString(s[i : i+size])
			i += size
			continue
		case c == '\a':
			b.WriteString(`\a`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\v':
			b.WriteString(`\v`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\r':
			b.WriteString(`\r`)
		default:
			fmt.Fprintf(&b, "\\%03o", c)
		}
		i++
	}
	return b.String()
}

// encodePane writes a pane the way tmux 3.3 expands paneFormat.
func encodePane(p Pane) string { return encodePaneAs(p, false) }

// encodePaneAs writes a pane the way tmux expands paneFormat: as 3.2 and
// 3.3 print it, or, with vis, as 3.4 and later do.
func encodePaneAs(p Pane, vis bool) string {
	b2i := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	str := func(s string) string { return encodeValue(s, vis) }
	act := ""
	if !p.Activity.IsZero() {
		act = fmt.Sprint(p.Activity.Unix())
	}
	f := []string{
		p.ID, p.SessionID, str(p.SessionName), p.WindowID, fmt.Sprint(p.WindowIndex), str(p.WindowName),
		b2i(p.WindowActive), fmt.Sprint(p.Index), b2i(p.Active), fmt.Sprint(p.PID), str(p.TTY),
		str(p.Command), str(p.Path), str(p.Title), b2i(p.Dead), deadStatus(p),
		fmt.Sprint(p.Width), fmt.Sprint(p.Height), fmt.Sprint(p.CursorX), fmt.Sprint(p.CursorY),
		b2i(p.InMode), str(p.Mode), b2i(p.AlternateOn), act, fmt.Sprint(p.HistorySize), fmt.Sprint(p.ServerPID),
	}
	return strings.Join(f, recordSep) + "\n"
}

// deadStatus is pane_dead_status as tmux prints it: empty until it knows.
func deadStatus(p Pane) string {
	if p.DeadStatus < 0 || !p.Dead {
		return ""
	}
	return fmt.Sprint(p.DeadStatus)
}

// A dead pane whose status tmux has not learnt says so (-1), never 0.
func TestDeadStatusUnknown(t *testing.T) {
	for _, want := range []Pane{
		{ID: "%1", SessionID: "$1", WindowID: "@1", Dead: true, DeadStatus: -1},
		{ID: "%2", SessionID: "$1", WindowID: "@1", Dead: true, DeadStatus: 0},
		{ID: "%3", SessionID: "$1", WindowID: "@1", Dead: true, DeadStatus: 7},
		{ID: "%4", SessionID: "$1", WindowID: "@1"},
	} {
		got, err := parsePanes([]byte(encodePane(want)))
		if err != nil || len(got) != 1 || got[0].Dead != want.Dead || got[0].DeadStatus != want.DeadStatus {
			t.Errorf("%s: %+v, %v; want dead %v status %d", want.ID, got, err, want.Dead, want.DeadStatus)
		}
	}
}

func TestPaneFormatMatchesFields(t *testing.T) {
	if n := strings.Count(paneFormat, recordSep) + 1; n != len(paneFields) {
		t.Fatalf("format has %d fields, table %d", n, len(paneFields))
	}
	// tmux 3.4 and later print non-printable bytes of command output as
	// octal escapes: the format itself must be printable ASCII.
	for _, c := range []byte(paneFormat + sessionFormat) {
		if c < ' ' || c > '~' {
			t.Fatalf("format has the non-printable byte %#x: %q", c, paneFormat)
		}
	}
	if !strings.Contains(paneFormat, `#{n:pane_current_path}:#{s/\\/\\\\/:pane_current_path}`) {
		t.Errorf("paths are not length-prefixed: %q", paneFormat)
	}
}

func TestParsePanes(t *testing.T) {
	for _, vis := range []bool{false, true} {
		t.Run(fmt.Sprintf("vis=%v", vis), func(t *testing.T) { testParsePanes(t, vis) })
	}
}

func testParsePanes(t *testing.T, vis bool) {
	encodePane := func(p Pane) string { return encodePaneAs(p, vis) }
	hostile := Pane{
		ID: "%12", SessionID: "$3", SessionName: "s\\001x|~|\\\\", WindowID: "@7", WindowIndex: 2,
		WindowName: "w\\037|~|", Index: 1, PID: 4242, TTY: "/dev/pts/9",
		Command: "ev\x1fil\ncmd\\n", Path: "/tmp/a\tb\nc\x1f:12:d|~|\\037\\\x01\x7f\xff\\\\z\r\a\x00", Title: "tï tle 中文 🎉 #{x}",
		Dead: true, DeadStatus: 3, Width: 100, Height: 30, CursorX: 9, CursorY: 4,
		InMode: true, Mode: "copy-mode", AlternateOn: true, Activity: time.Unix(1795237000, 0), HistorySize: 76,
		Active: true, WindowActive: true,
	}
	plain := Pane{ID: "%0", SessionID: "$0", SessionName: "main", WindowID: "@0", WindowName: "sh",
		Command: "sh", Path: "/", Width: 80, Height: 24}
	out := encodePane(hostile) + encodePane(plain)
	got, err := parsePanes([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Pane{hostile, plain}; !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}

	// No final newline is tolerated; garbage is not.
	if _, err := parsePanes([]byte(strings.TrimSuffix(encodePane(plain), "\n"))); err != nil {
		t.Errorf("missing final newline: %v", err)
	}
	for _, bad := range []string{
		"%1|~|$0\n",
		strings.Replace(encodePane(plain), "4:main", "9:main", 1),
		strings.Replace(encodePane(plain), "4:main", "3:main", 1),
		strings.Replace(encodePane(plain), "4:main", "x:main", 1),
		strings.Replace(encodePane(plain), "|~|80|~|", "|~|eighty|~|", 1),
		strings.Replace(encodePane(plain), "|~|80|~|", "|~|80|~", 1),
		"x" + encodePane(plain)[2:],
	} {
		if _, err := parsePanes([]byte(bad)); err == nil {
			t.Errorf("parsePanes(%q) accepted garbage", bad)
		}
	}
	if got, err := parsePanes(nil); err != nil || len(got) != 0 {
		t.Errorf("empty output: %v %v", got, err)
	}
}

func TestParseSessions(t *testing.T) {
	out := "$0|~|4:main|~|2|~|1|~|1795237000\n$5|~|8:a|~|b\\\\ c|~|1|~|0|~|1795237001\n"
	got, err := parseSessions([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []Session{
		{ID: "$0", Name: "main", Windows: 2, Attached: 1, Created: time.Unix(1795237000, 0)},
		{ID: "$5", Name: "a|~|b\\ c", Windows: 1, Created: time.Unix(1795237001, 0)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v want %+v", got, want)
	}
}

// FuzzParsePanes: the list-panes parser never panics, and whatever it
// accepts survives a round trip through the encoder.
func FuzzParsePanes(f *testing.F) {
	f.Add([]byte(encodePane(Pane{ID: "%1", Path: "/a\nb", Title: "t"})))
	f.Add([]byte(encodePaneAs(Pane{ID: "%1", Path: "/a\nb\\037\x1f\xff", Title: "t"}, true)))
	f.Add([]byte("%0|~|$0|~|4:main|~|@0|~|0|~|2:sh|~|1|~|0|~|1|~|77|~|10:/dev/pts/1|~|2:sh|~|1:/|~|2:vm|~|0|~||~|80|~|24|~|0|~|0|~|0|~|0:|~|0|~|1795237000|~|0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		panes, err := parsePanes(data)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, p := range panes {
			b.WriteString(encodePane(p))
		}
		var v strings.Builder
		for _, p := range panes {
			v.WriteString(encodePaneAs(p, true))
		}
		for _, enc := range []string{b.String(), v.String()} {
			again, err := parsePanes([]byte(enc))
			if err != nil {
				t.Fatalf("re-encoded output rejected: %v", err)
			}
			if !reflect.DeepEqual(again, panes) {
				t.Fatalf("round trip changed panes:\n%+v\n%+v", panes, again)
			}
		}
	})
}
