package tui

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/termtext"
)

func TestScreenLine(t *testing.T) {
	tests := []struct {
		name, in     string
		color, plain string
	}{
		{"plain", "hello", "hello", "hello"},
		{"colour kept and reset", "\x1b[31mred\x1b[39m", "\x1b[31mred\x1b[39m\x1b[0m", "red"},
		{"cursor moves dropped", "a\x1b[2Jb\x1b[10;1Hc", "abc", "abc"},
		{"OSC title dropped (BEL)", "\x1b]0;pwned\x07text", "text", "text"},
		{"OSC hyperlink dropped (ST)", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link", "link"},
		{"charset selection dropped", "\x1b(Bok", "ok", "ok"},
		{"control characters dropped", "a\rb\x00c\x7fd\x08e", "abcde", "abcde"},
		{"tabs expand to tab stops", "ab\tc", "ab      c", "ab      c"},
		{"truncated sequence dropped", "ok\x1b[31", "ok", "ok"},
		{"lone escape dropped", "ok\x1b", "ok", "ok"},
		{"C1 controls dropped", "a\u009bb", "ab", "ab"},
		{"wide runes kept", "日本\tx", "日本    x", "日本    x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := screenLine(tt.in, true); got != tt.color {
				t.Errorf("colour: %q, want %q", got, tt.color)
			}
			if got := screenLine(tt.in, false); got != tt.plain {
				t.Errorf("plain: %q, want %q", got, tt.plain)
			}
		})
	}
}

// FuzzScreenLine: whatever a pane holds, the preview line carries no
// escape but colour (and none at all without colour), and no control
// character.
func FuzzScreenLine(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[1;31mx\x1b[0m", "\x1b]0;t\x07", "\x1b[?1049h", "a\tb", "\x1b", "\x1b[", "\x1bP1;2|x\x1b\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		plain := screenLine(s, false)
		for _, r := range plain {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("control %U left in %q (from %q)", r, plain, s)
			}
		}
		colour := screenLine(s, true)
		if stripped := ansi.Strip(colour); stripped != plain {
			t.Fatalf("colour line %q strips to %q, plain is %q", colour, stripped, plain)
		}
		for i := 0; i < len(colour); i++ {
			if colour[i] != 0x1b {
				continue
			}
			j := i + 2
			for j < len(colour) && (colour[j] < 0x40 || colour[j] > 0x7e) {
				j++
			}
			if i+1 >= len(colour) || colour[i+1] != '[' || j >= len(colour) || colour[j] != 'm' {
				t.Fatalf("non-colour escape at %d in %q (from %q)", i, colour, s)
			}
		}
	})
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  plain  ", "plain"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"two\nlines", "two lines"},
		{"tab\there", "tab here"},
		{"bidi \u202eevil", "bidi evil"},
		{"bad \xff byte", "bad  byte"},
		{"✻ Implementing…", "✻ Implementing…"},
	}
	for _, tt := range tests {
		if got := clean(tt.in); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// clean is the one sanitiser's Plain, narrowed for width: it keeps nothing
// termtext would change, and differs from Plain only by what screenRune
// drops or replaces.
func FuzzClean(f *testing.F) {
	f.Add("\x1b]52;c;ZXZpbA==\x07 \x1b[2J\u202egnp.exe \u009b31m \xff end")
	f.Add("✻ Implementing… 世界")
	f.Fuzz(func(t *testing.T, s string) {
		got, plain := clean(s), termtext.Plain(s)
		if termtext.Line(got) != got {
			t.Fatalf("clean(%q) = %q, which the sanitiser would change", s, got)
		}
		if printableASCII(plain) && got != plain {
			t.Fatalf("clean(%q) = %q, termtext.Plain = %q", s, got, plain)
		}
	})
}

func TestSince(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{0, "0s"},
		{59 * time.Second, "59s"},
		{time.Minute, "1m"},
		{59*time.Minute + 59*time.Second, "59m"},
		{time.Hour + 5*time.Minute, "1h05m"},
		{23*time.Hour + 59*time.Minute, "23h59m"},
		{49 * time.Hour, "2d01h"},
	}
	for _, tt := range tests {
		if got := since(now, now.Add(-tt.d)); got != tt.want {
			t.Errorf("since(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := since(now, time.Time{}); got != "-" {
		t.Errorf("since(zero) = %q", got)
	}
}

func TestFitAndTruncate(t *testing.T) {
	tests := []struct {
		in string
		w  int
	}{
		{"short", 10}, {"exactly10!", 10}, {"much longer than ten", 10}, {"日本語のテキスト", 7},
		{"\x1b[31mcoloured text here\x1b[0m", 8}, {"", 3}, {"x", 0},
	}
	for _, tt := range tests {
		if got := fit(tt.in, tt.w); width(got) != tt.w {
			t.Errorf("fit(%q, %d) is %d wide: %q", tt.in, tt.w, width(got), got)
		}
		if got := truncate(tt.in, tt.w); width(got) > tt.w {
			t.Errorf("truncate(%q, %d) is %d wide", tt.in, tt.w, width(got))
		}
	}
	if got := truncate("much longer", 6); got != "much …" {
		t.Errorf("truncate ends %q", got)
	}
	if got := fitRight("7s", 5); got != "   7s" {
		t.Errorf("fitRight %q", got)
	}
}

func TestWidthFastPath(t *testing.T) {
	for _, s := range []string{"ascii only", "", "with ✓ symbol", "\x1b[1mbold\x1b[0m", "日本"} {
		if got, want := width(s), ansi.StringWidth(s); got != want {
			t.Errorf("width(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"orch-auth:0.0", "orch-auth:0.0"},
		{"my session:1.0", "'my session:1.0'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
		{"/tmp/tmux-1000/default", "/tmp/tmux-1000/default"},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTmuxArgs(t *testing.T) {
	tests := []struct{ server, want string }{
		{"default tmux server", "tmux"},
		{"tmux server -L work", "tmux -L work"},
		{"tmux server -S /tmp/my sock", "tmux -S '/tmp/my sock'"},
	}
	for _, tt := range tests {
		if got := tmuxArgs(tt.server); got != tt.want {
			t.Errorf("tmuxArgs(%q) = %q, want %q", tt.server, got, tt.want)
		}
	}
}

func TestMCPStatusText(t *testing.T) {
	tests := []struct {
		s    MCPStatus
		want string
	}{
		{MCPStatus{Addr: "127.0.0.1:8889"}, "MCP: 127.0.0.1:8889"},
		{MCPStatus{Addr: "127.0.0.1:8889", Clients: 2}, "MCP: 127.0.0.1:8889 (2 clients)"},
		{MCPStatus{Err: "port taken"}, "MCP: port taken"},
		{MCPStatus{}, "MCP: off"},
	}
	for _, tt := range tests {
		if got := tt.s.text(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.s, got, tt.want)
		}
	}
}

// TestEveryStateHasALook: a badge for every state, readable without colour.
func TestEveryStateHasALook(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range append(api.AllStates(), "something-new") {
		b := badge(s)
		if width(b) > badgeWidth || !utf8.ValidString(b) {
			t.Errorf("badge %q for %s", b, s)
		}
		if s != "something-new" && seen[b] {
			t.Errorf("badge %q used twice", b)
		}
		seen[b] = true
	}
	if !strings.HasPrefix(badge("something-new"), "?") {
		t.Error("an unknown state is not shown as unknown")
	}
}
