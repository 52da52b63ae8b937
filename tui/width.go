package tui

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// The dashboard draws into a terminal that is, often, a tmux pane; tmux
// decides how many cells a character takes with the C library's wcwidth()
// (one code point at a time: 0 for combining marks, 2 for East Asian wide
// and fullwidth characters, 1 for the rest), and tmux 3.5 forces a few
// emoji and the regional indicators to 2. Grapheme-cluster widths (what
// ansi.StringWidth computes) disagree with that for format characters,
// spacing marks, ZWJ sequences, variation selectors and flags: a line the
// dashboard measured as 80 cells could take 81 in tmux, wrap, and scroll the
// header off. So every text bound for the screen goes through screenRune,
// which removes or replaces the characters whose width depends on who draws
// them, and width counts what is left one code point at a time, as tmux
// does.

// replacement stands in for a character whose width is not agreed on: it
// takes one cell everywhere.
const replacement = '\uFFFD'

// widthCond is go-runewidth without the locale's influence (a CJK locale
// would make ambiguous characters wide, which tmux does not).
var widthCond = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}

// screenRune maps one printable rune of text bound for the screen: it
// returns the rune to draw, or ok false when the rune is dropped. Control
// characters are the callers' business (clean makes them spaces, screenLine
// drops them); this decides the rest.
func screenRune(r rune) (rune, bool) {
	if r < 0x7f && r >= 0x20 {
		return r, true
	}
	switch {
	case r == utf8.RuneError:
		return replacement, true
	case r < 0xa0:
		return 0, false // C0, DEL, C1 controls
	case unicode.Is(unicode.Bidi_Control, r),
		r >= 0x200b && r <= 0x200d,                               // zero width space, non-joiner, joiner
		r >= 0x2060 && r <= 0x2064,                               // word joiner, invisible operators
		r == 0xfeff,                                              // byte order mark
		r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef, // variation selectors
		r >= 0x1f3fb && r <= 0x1f3ff, // emoji skin tone modifiers
		r >= 0xe0000 && r <= 0xe007f: // tags
		// Invisible, or meaningful only as part of a sequence whose width
		// tmux and terminals compute differently: dropped.
		return 0, false
	case r >= 0x1160 && r <= 0x11ff, r >= 0xd7b0 && r <= 0xd7ff, // Hangul medial and final jamo: 0 in wcwidth, 1 elsewhere
		r >= 0x1f1e6 && r <= 0x1f1ff,                           // regional indicators: 1 in wcwidth, 2 in tmux 3.5
		r >= 0x3248 && r <= 0x324f, r >= 0x4dc0 && r <= 0x4dff, // wide in wcwidth, ambiguous or narrow in Unicode's tables
		forcedWide(r),
		unicode.Is(unicode15, r),
		unicode.Is(unicode.Cf, r), // format characters: some are 1 in wcwidth (U+0600, U+00AD), 0 elsewhere
		unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r),
		unicode.Is(unicode.Cs, r),
		!unicode.IsGraphic(r) && !unicode.Is(unicode.Co, r): // unassigned
		return replacement, true
	}
	return r, true
}

// forcedWide: emoji that wcwidth counts as 1 but tmux 3.5 draws as 2.
func forcedWide(r rune) bool {
	switch r {
	case 0x261d, 0x26f9, 0x270c, 0x270d, 0x1f3cb, 0x1f3cc, 0x1f574, 0x1f575, 0x1f590:
		return true
	}
	return false
}

// unicode15 holds the characters Unicode 15.0 added. A C library whose
// tables are older (glibc 2.36, Debian 12's) does not know them: tmux 3.3a
// then draws nothing for them and tmux 3.5 one cell, whatever their width.
var unicode15 = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x0cf3, 0x0cf3, 1},
		{0x0ece, 0x0ece, 1},
	},
	R32: []unicode.Range32{
		{0x10efd, 0x10eff, 1},
		{0x1123f, 0x11241, 1},
		{0x11b00, 0x11b09, 1},
		{0x11f00, 0x11f10, 1},
		{0x11f12, 0x11f3a, 1},
		{0x11f3e, 0x11f59, 1},
		{0x1342f, 0x1342f, 1},
		{0x13440, 0x13455, 1},
		{0x1b132, 0x1b132, 1},
		{0x1b155, 0x1b155, 1},
		{0x1d2c0, 0x1d2d3, 1},
		{0x1df25, 0x1df2a, 1},
		{0x1e030, 0x1e06d, 1},
		{0x1e08f, 0x1e08f, 1},
		{0x1e4d0, 0x1e4f9, 1},
		{0x1f6dc, 0x1f6dc, 1},
		{0x1f774, 0x1f776, 1},
		{0x1f77b, 0x1f77f, 1},
		{0x1f7d9, 0x1f7d9, 1},
		{0x1fa75, 0x1fa77, 1},
		{0x1fa87, 0x1fa88, 1},
		{0x1faad, 0x1faaf, 1},
		{0x1fabb, 0x1fabd, 1},
		{0x1fabf, 0x1fabf, 1},
		{0x1face, 0x1facf, 1},
		{0x1fada, 0x1fadb, 1},
		{0x1fae8, 0x1fae8, 1},
		{0x1faf7, 0x1faf8, 1},
		{0x2b739, 0x2b739, 1},
		{0x31350, 0x323af, 1},
	},
}

// cells is the number of cells tmux gives r, for a rune screenRune keeps.
func cells(r rune) int {
	switch {
	case r >= 0x20 && r < 0x7f:
		return 1
	case r < 0xa0:
		return 0
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case widthCond.RuneWidth(r) == 2:
		return 2
	}
	return 1
}

// How screenRune and cells treat a rune, in one byte: the width of a rune
// kept as it is (0, 1, 2), or dropped, or replaced by U+FFFD.
const (
	classDrop    = 3
	classReplace = 4
)

var (
	bmpOnce  sync.Once
	bmpClass []uint8 // the class of every rune below U+10000, built on first use
)

// class is screenRune and cells in one look-up for the common runes.
func class(r rune) uint8 {
	if r < 0x80 {
		if r >= 0x20 && r < 0x7f {
			return 1
		}
		return classDrop
	}
	if r < 0x10000 {
		bmpOnce.Do(func() {
			t := make([]uint8, 0x10000)
			for i := range t {
				t[i] = classify(rune(i))
			}
			bmpClass = t
		})
		return bmpClass[r]
	}
	return classify(r)
}

func classify(r rune) uint8 {
	out, ok := screenRune(r)
	switch {
	case !ok:
		return classDrop
	case out != r:
		return classReplace
	}
	return uint8(cells(r))
}

// drawnCells is the width of any rune as it will be drawn: what screenRune
// makes of it.
func drawnCells(r rune) int {
	switch c := class(r); c {
	case classDrop:
		return 0
	case classReplace:
		return 1
	default:
		return int(c)
	}
}

// escapeLen is the length of the escape sequence at s[i] (s[i] is ESC).
func escapeLen(s string, i int) int {
	if i+1 >= len(s) {
		return len(s) - i
	}
	switch s[i+1] {
	case '[':
		j := i + 2
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
			j++
		}
		if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
			j++
		}
		return j - i
	case ']', 'P', '_', '^', 'X':
		for j := i + 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1 - i
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2 - i
			}
		}
		return len(s) - i
	case '(', ')', '*', '+', '#', '%':
		return min(3, len(s)-i)
	}
	if c := s[i+1]; c < 0x20 || c >= 0x7f {
		return 1 // a lone escape: what follows is not part of it
	}
	return 2
}

// isSGR: seq is one colour sequence (CSI, parameters, m), the only escape
// sequence the dashboard draws.
func isSGR(seq string) bool {
	if len(seq) < 3 || seq[0] != 0x1b || seq[1] != '[' || seq[len(seq)-1] != 'm' {
		return false
	}
	for i := 2; i < len(seq)-1; i++ {
		if seq[i] < 0x30 || seq[i] > 0x3f {
			return false
		}
	}
	return true
}

// width is the number of terminal cells s takes, escape sequences aside,
// counted as tmux counts them. Plain ASCII, the common case, is counted
// without decoding.
func width(s string) int {
	if printableASCII(s) {
		return len(s)
	}
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			i += escapeLen(s, i)
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n += drawnCells(r)
	}
	return n
}

// cut returns the longest prefix of s (escape sequences included, and every
// escape sequence after the cut, so colours are still reset) that takes at
// most w cells, and the prefix's width.
func cut(s string, w int) (string, int) {
	var b strings.Builder
	n := 0
	full := false
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			l := escapeLen(s, i)
			b.WriteString(s[i : i+l])
			i += l
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		c := drawnCells(r)
		if !full && n+c <= w {
			b.WriteString(s[i : i+size])
			n += c
		} else {
			full = true
		}
		i += size
	}
	return b.String(), n
}

// truncate cuts s (which may hold escape sequences) to at most w cells,
// ending in an ellipsis when something was cut.
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	p, _ := cut(s, w-1)
	return insertBeforeTrailingEscapes(p, ellipsis)
}

// insertBeforeTrailingEscapes puts text after the last printable character
// of s, before the escape sequences that follow it, so the ellipsis keeps the
// colour of what it ends.
func insertBeforeTrailingEscapes(s, text string) string {
	end := len(s)
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			i += escapeLen(s, i)
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		end = i
	}
	return s[:end] + text + s[end:]
}

// fit cuts or pads s to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := width(s)
	if n > w {
		s = truncate(s, w)
		n = width(s)
	}
	if n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// sanitize passes every rune of an already laid-out line through
// screenRune and keeps colour sequences, dropping every other escape or
// control sequence. It is the last gate before the terminal: the
// components clean what they show, and this catches whatever did not go
// through clean or screenLine.
func sanitize(s string) string {
	if !needsSanitizing(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			l := escapeLen(s, i)
			if isSGR(s[i : i+l]) {
				b.WriteString(s[i : i+l])
			}
			i += l
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if out, ok := screenRune(r); ok {
			b.WriteRune(out)
		}
	}
	return b.String()
}

// needsSanitizing: s holds a rune screenRune drops or replaces, a byte
// that is not UTF-8, or an escape sequence that is not a colour.
func needsSanitizing(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0x1b {
			l := escapeLen(s, i)
			if !isSGR(s[i : i+l]) {
				return true
			}
			i += l
			continue
		}
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return true
		}
		if k := class(r); k == classDrop || k == classReplace {
			return true
		}
		i += size
	}
	return false
}

// frame is the last step of View: every line sanitized and cut to w cells,
// so nothing the components missed can make the terminal wrap a line.
func frame(s string, w int) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = sanitize(l)
		if width(l) > w {
			l, _ = cut(l, w)
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// printableASCII reports whether s is printable ASCII only: one cell per
// byte, nothing to decode or drop.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
