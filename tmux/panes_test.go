package tmux

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// encodePane writes a pane the way tmux expands paneFormat.
func encodePane(p Pane) string {
	b2i := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	str := func(s string) string { return fmt.Sprintf("%d:%s", len(s), s) }
	act := ""
	if !p.Activity.IsZero() {
		act = fmt.Sprint(p.Activity.Unix())
	}
	f := []string{
		p.ID, p.SessionID, str(p.SessionName), p.WindowID, fmt.Sprint(p.WindowIndex), str(p.WindowName),
		b2i(p.WindowActive), fmt.Sprint(p.Index), b2i(p.Active), fmt.Sprint(p.PID), str(p.TTY),
		str(p.Command), str(p.Path), str(p.Title), b2i(p.Dead), fmt.Sprint(p.DeadStatus),
		fmt.Sprint(p.Width), fmt.Sprint(p.Height), fmt.Sprint(p.CursorX), fmt.Sprint(p.CursorY),
		b2i(p.InMode), str(p.Mode), b2i(p.AlternateOn), act, fmt.Sprint(p.HistorySize),
	}
	return strings.Join(f, "\x1f") + "\n"
}

func TestPaneFormatMatchesFields(t *testing.T) {
	if n := strings.Count(paneFormat, "\x1f") + 1; n != len(paneFields) {
		t.Fatalf("format has %d fields, table %d", n, len(paneFields))
	}
	if !strings.Contains(paneFormat, "#{n:pane_current_path}:#{pane_current_path}") {
		t.Errorf("paths are not length-prefixed: %q", paneFormat)
	}
}

func TestParsePanes(t *testing.T) {
	hostile := Pane{
		ID: "%12", SessionID: "$3", SessionName: "s\\001x", WindowID: "@7", WindowIndex: 2,
		WindowName: "w", Index: 1, PID: 4242, TTY: "/dev/pts/9",
		Command: "ev\x1fil\ncmd", Path: "/tmp/a\tb\nc\x1f:12:d", Title: "tï tle 中文 🎉 #{x}",
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
		"%1\x1f$0\n",
		strings.Replace(encodePane(plain), "4:main", "9:main", 1),
		strings.Replace(encodePane(plain), "4:main", "x:main", 1),
		strings.Replace(encodePane(plain), "\x1f80\x1f", "\x1feighty\x1f", 1),
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
	out := "$0\x1f4:main\x1f2\x1f1\x1f1795237000\n$5\x1f5:a\x1fb c\x1f1\x1f0\x1f1795237001\n"
	got, err := parseSessions([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []Session{
		{ID: "$0", Name: "main", Windows: 2, Attached: 1, Created: time.Unix(1795237000, 0)},
		{ID: "$5", Name: "a\x1fb c", Windows: 1, Created: time.Unix(1795237001, 0)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v want %+v", got, want)
	}
}

// FuzzParsePanes: the list-panes parser never panics, and whatever it
// accepts survives a round trip through the encoder.
func FuzzParsePanes(f *testing.F) {
	f.Add([]byte(encodePane(Pane{ID: "%1", Path: "/a\nb", Title: "t"})))
	f.Add([]byte("%0\x1f$0\x1f4:main\x1f@0\x1f0\x1f2:sh\x1f1\x1f0\x1f1\x1f77\x1f10:/dev/pts/1\x1f2:sh\x1f1:/\x1f2:vm\x1f0\x1f\x1f80\x1f24\x1f0\x1f0\x1f0\x1f0:\x1f0\x1f1795237000\x1f0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		panes, err := parsePanes(data)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, p := range panes {
			b.WriteString(encodePane(p))
		}
		again, err := parsePanes([]byte(b.String()))
		if err != nil {
			t.Fatalf("re-encoded output rejected: %v", err)
		}
		if !reflect.DeepEqual(again, panes) {
			t.Fatalf("round trip changed panes:\n%+v\n%+v", panes, again)
		}
	})
}
