package tui

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// hostileRunes are characters whose width tmux, terminals and grapheme
// segmentation disagree on, and their neighbours.
var hostileRunes = []rune{
	0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06dd, 0x070f, 0x110bd, 0x110cd, // prepended concatenation marks
	0x00ad, 0x200b, 0x200c, 0x200d, 0x200e, 0x2028, 0x2029, 0x2060, 0x2066, 0xfeff, // format
	0xfe0f, 0xfe0e, 0x1f3fb, 0x1f1e6, 0x1f1f7, 0x261d, 0x270c, 0x26a0, 0x2764, // emoji parts
	0x0300, 0x0301, 0x0903, 0x093f, 0x0915, 0x0e33, 0x1100, 0x1161, 0x11a8, 0xac00, // marks, jamo
	0x4e00, 0x3000, 0xff01, 0x1f600, 0x1f468, 0xe000, 0xf8ff, 0x10ffff, 0x2fffd, 0x0378, // wide, private, unassigned
	0x00e9, 0x2500, 0x2588, 0xfffd, 0x0085, 0x009b, 0x001b, '\t', '\r', 0x7f, // ordinary and controls
}

// hostileText is n random runes, mostly hostile ones, some anywhere in
// Unicode, some ASCII, now and then an escape sequence.
func hostileText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		switch k := rng.IntN(10); {
		case k < 5:
			b.WriteRune(hostileRunes[rng.IntN(len(hostileRunes))])
		case k < 7:
			b.WriteRune(rune(rng.IntN(0x30000)))
		case k < 9:
			b.WriteByte(byte('a' + rng.IntN(26)))
		default:
			b.WriteString([]string{"\x1b[31m", "\x1b[0m", "\x1b]0;t\x07", "\x1b[2J", "\xff", "\x1b"}[rng.IntN(6)])
		}
	}
	return b.String()
}

// TestWidthAgreesWithTmux: for random hostile text, clean and screenLine
// leave text whose width, as the dashboard counts it, is what tmux counts.
func TestWidthAgreesWithTmux(t *testing.T) {
	srv := tmuxtest.NewServer(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var strs []string
	for _, r := range hostileRunes {
		strs = append(strs, clean("a"+string(r)+"b"), ansi.Strip(screenLine("a"+string(r)+"b", true)))
	}
	for range 400 {
		s := hostileText(rng, 1+rng.IntN(12))
		strs = append(strs, clean(s), ansi.Strip(screenLine(s, true)))
	}
	got := tmuxtest.Widths(t, srv, strs)
	bad := 0
	for i, s := range strs {
		if w := width(s); w != got[i] {
			bad++
			if bad <= 10 {
				t.Errorf("%+q: width %d, tmux says %d", s, w, got[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d strings measured differently from tmux", bad, len(strs))
	}
}

// TestTruncateAndFit: cut and padded text takes exactly the cells asked
// for, escape sequences are kept, and a cut ends in an ellipsis.
func TestTruncateAndFit(t *testing.T) {
	tests := []struct {
		in   string
		w    int
		want string
	}{
		{"hello", 10, "hello     "},
		{"hello world", 5, "hell…"},
		{"日本語テキスト", 5, "日本…"},
		{"\x1b[31mredtext\x1b[0m", 4, "\x1b[31mred…\x1b[0m"},
		{"a\u0600b", 3, "a\u0600b"},
		{"\u0600\u0601\u0602\u0603", 3, "\u0600\u0601…"},
		{"e\u0301tude", 3, "e\u0301t…"},
	}
	for _, tt := range tests {
		got := fit(tt.in, tt.w)
		if got != tt.want || width(got) != tt.w {
			t.Errorf("fit(%+q, %d) = %+q (width %d), want %+q", tt.in, tt.w, got, width(got), tt.want)
		}
	}
}

// TestScreenRune: the characters of the report that broke the dashboard
// are replaced by a one-cell placeholder; invisible joiners and selectors
// are dropped; ordinary text is kept.
func TestScreenRune(t *testing.T) {
	for _, r := range []rune{0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06dd, 0x110bd, 0x00ad, 0x1f1e6} {
		if got, ok := screenRune(r); !ok || got != replacement {
			t.Errorf("screenRune(%U) = %U, %v; want the replacement character", r, got, ok)
		}
	}
	for _, r := range []rune{0x200d, 0xfe0f, 0x1f3fb, 0x200e} {
		if got, ok := screenRune(r); ok {
			t.Errorf("screenRune(%U) = %U; want it dropped", r, got)
		}
	}
	for _, r := range []rune{'a', 0xe9, 0x4e00, 0x1f600, 0x0301, 0x093f, 0x2500} {
		if got, ok := screenRune(r); !ok || got != r {
			t.Errorf("screenRune(%U) = %U, %v; want it kept", r, got, ok)
		}
	}
}

// fillHostile replaces every text the fixture's sessions, wakes,
// previews and header show with hostile text.
func fillHostile(t *testing.T, svc *monitortest.Service, rng *rand.Rand) {
	t.Helper()
	snap := fixtureSnapshot()
	txt := func(n int) string { return hostileText(rng, n) }
	for i := range snap.Sessions {
		s := &snap.Sessions[i]
		s.Session, s.Window, s.Target = txt(8), txt(6), txt(12)
		s.Question, s.Detail, s.LastLine, s.Path = txt(40), txt(40), txt(60), txt(20)
		s.Agent, s.Command, s.Kind = txt(5), txt(5), txt(5)
		s.Options = []string{txt(10), txt(30), txt(50)}
		s.Evidence.Lines = []string{txt(30), txt(70)}
	}
	snap.Problem = txt(50)
	svc.SetSnapshot(snap)
	for _, s := range snap.Sessions {
		lines := make([]string, 30)
		for i := range lines {
			lines[i] = txt(rng.IntN(120))
		}
		svc.SetPreview(s.Pane, lines...)
		svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/" + s.Pane, Session: s.Session, Pane: s.Pane,
			Agent: s.Agent, State: "awaiting_input", Question: txt(40), SuggestedAction: txt(80), Options: s.Options})
	}
}

// TestResilienceViewFitsHostileText: at 80×24 and 160×45, with hostile text in
// every field and preview, every frame has exactly the window's lines,
// tmux measures every line as exactly the window's width, and the header
// is the first line.
func TestResilienceViewFitsHostileText(t *testing.T) {
	srv := tmuxtest.NewServer(t)
	for _, size := range [][2]int{{80, 24}, {160, 45}} {
		w, h := size[0], size[1]
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("%dx%d/seed%d", w, h, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				svc := newFixtureService(t)
				fillHostile(t, svc, rng)
				hs := newHarness(t, svc, Options{}, w, h)
				var frames []string
				frames = append(frames, hs.m.View())
				for _, k := range []string{"j", "j", "enter", "esc", "tab", "j", "?", "esc", "/", "x"} {
					hs.press(k)
					frames = append(frames, hs.m.View())
				}
				var lines []string
				for i, f := range frames {
					ls := strings.Split(f, "\n")
					if len(ls) != h {
						t.Fatalf("frame %d has %d lines, want %d:\n%s", i, len(ls), h, f)
					}
					if !strings.HasPrefix(ansi.Strip(ls[0]), "system3") {
						t.Fatalf("frame %d: the first line is not the header: %q", i, ansi.Strip(ls[0]))
					}
					for _, l := range ls {
						if !utf8.ValidString(l) {
							t.Fatalf("frame %d: invalid UTF-8 in %q", i, l)
						}
						lines = append(lines, ansi.Strip(l))
					}
				}
				got := tmuxtest.Widths(t, srv, lines)
				for i, l := range lines {
					if got[i] != w {
						t.Errorf("line %d of frame %d is %d cells in tmux, want %d: %+q", i%h, i/h, got[i], w, l)
					}
				}
			})
		}
	}
}

// FuzzWidth: whatever text reaches the dashboard, what clean, screenLine
// and the last gate (frame) leave holds only characters screenRune keeps
// as they are, and fit, truncate and frame lay it out in exactly (fit) or
// at most (truncate, frame) the cells asked for.
func FuzzWidth(f *testing.F) {
	for _, s := range []string{"plain", "\u0600\u0601\u0602 x", "👨\u200d👩\u200d👧 ⚠\ufe0f 🇫🇷", "कि\u093f e\u0301 日本", "\x1b[31mred\x1b[0m\t|", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if g := sanitize(s); strings.ContainsFunc(ansi.Strip(g), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("sanitize left a control character in %+q (from %+q)", g, s)
		}
		for _, seq := range strings.Split(sanitize(s), "\x1b")[1:] {
			if !isSGR("\x1b" + seq[:strings.IndexByte(seq, 'm')+1]) {
				t.Fatalf("sanitize left an escape that is not a colour: %+q (from %+q)", sanitize(s), s)
			}
		}
		for _, out := range []string{clean(s), ansi.Strip(screenLine(s, true)), sanitize(s)} {
			for _, r := range ansi.Strip(out) {
				if got, ok := screenRune(r); (!ok || got != r) && r != '\t' {
					t.Fatalf("%U left in %+q (from %+q)", r, out, s)
				}
			}
			if again := sanitize(out); again != out {
				t.Fatalf("sanitize is not idempotent: %+q then %+q", out, again)
			}
		}
		line := screenLine(s, true)
		for _, w := range []int{1, 2, 3, 10, 80} {
			if got := width(fit(line, w)); got != w {
				t.Fatalf("fit(%+q, %d) is %d cells", line, w, got)
			}
			if got := width(truncate(line, w)); got > w {
				t.Fatalf("truncate(%+q, %d) is %d cells", line, w, got)
			}
			for _, l := range strings.Split(frame(s, w), "\n") {
				if got := width(l); got > w {
					t.Fatalf("frame line %+q is %d cells, more than %d", l, got, w)
				}
			}
		}
	})
}
