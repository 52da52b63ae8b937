package tui

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/system3-dev/system3/internal/termtext"
)

// ellipsis marks text cut to fit.
const ellipsis = "…"

// fitRight pads s on the left to w cells (numbers and ages line up).
func fitRight(s string, w int) string {
	n := width(s)
	if n >= w {
		return truncate(s, w)
	}
	return strings.Repeat(" ", w-n) + s
}

// block lays lines out as a w×h rectangle: each line cut or padded to w,
// missing lines blank, extra lines dropped.
func block(lines []string, w, h int) string {
	if w <= 0 || h <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow((w + 1) * h)
	blank := strings.Repeat(" ", w)
	for i := range h {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i < len(lines) {
			b.WriteString(fit(lines[i], w))
		} else {
			b.WriteString(blank)
		}
	}
	return b.String()
}

// splitLines splits a rendered block into its lines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// clean makes one line of text from a pane, a task file or a wake safe to
// print through the one sanitiser (termtext.Plain: escape sequences
// removed, control characters and line breaks spaces, bidi controls
// dropped), then drops or replaces the characters whose width tmux and
// the dashboard could disagree on (screenRune).
func clean(s string) string {
	s = termtext.Plain(s)
	if printableASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if out, ok := screenRune(r); ok {
			b.WriteRune(out)
		}
	}
	return strings.TrimSpace(b.String())
}

// screenLine makes one line of a pane capture safe to draw in the preview:
// colour (SGR) sequences are kept when keepColor is set and every other
// escape or control sequence is dropped, tabs become spaces, and the line
// ends with a colour reset so a colour never leaks into the next line.
func screenLine(s string, keepColor bool) string {
	if printableASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	col, sgr := 0, false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			i = skipEscape(s, i, keepColor, &b, &sgr)
		case c == '\t':
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			i++
		case c < 0x20 || c == 0x7f:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			if r == utf8.RuneError && size == 1 {
				continue
			}
			if out, ok := screenRune(r); ok {
				b.WriteRune(out)
				col += cells(out)
			}
		}
	}
	if sgr {
		b.WriteString("\x1b[0m")
	}
	return b.String()
}

// skipEscape consumes the escape sequence at s[i], copying it to b only when
// it is a colour (SGR) sequence and keepColor is set, and returns the index
// after it.
func skipEscape(s string, i int, keepColor bool, b *strings.Builder, sgr *bool) int {
	if i+1 >= len(s) {
		return len(s)
	}
	switch s[i+1] {
	case '[': // CSI: parameter bytes 0x20-0x3f, then a final byte 0x40-0x7e
		j := i + 2
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
			j++
		}
		if j >= len(s) {
			return len(s)
		}
		if s[j] < 0x40 || s[j] > 0x7e {
			return j // malformed: drop what was read, go on from there
		}
		// Colour is parameters (0x30-0x3f) and m, nothing else: with an
		// intermediate byte (0x20-0x2f) it is another sequence, which
		// terminals read differently, so it is dropped.
		if s[j] == 'm' && keepColor && !strings.ContainsFunc(s[i+2:j], func(r rune) bool { return r < 0x30 }) {
			b.WriteString(s[i : j+1])
			*sgr = true
		}
		return j + 1
	case ']', 'P', '_', '^', 'X': // OSC, DCS, APC, PM, SOS: up to BEL or ST
		for j := i + 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	case '(', ')', '*', '+', '#', '%': // charset and line-size selections take one more byte
		return min(i+3, len(s))
	}
	return i + 2
}

// blankLine reports whether a preview line shows nothing.
func blankLine(s string) bool {
	return strings.TrimSpace(ansi.Strip(s)) == ""
}

// since says how long ago t was, compactly: "12s", "4m", "2h05m", "3d04h".
// Minutes and up drop the seconds so the column changes calmly.
func since(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	default:
		return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
	}
}

// plural picks the singular or plural of a noun for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/%@=+", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// clamp limits v to [lo, hi]; hi wins when lo > hi.
func clamp(v, lo, hi int) int {
	if v < lo {
		v = lo
	}
	if v > hi {
		v = hi
	}
	return v
}

// viewCache keeps a component's last rendered view with the key it was
// rendered for: a frame whose inputs did not change costs a comparison.
type viewCache[K comparable] struct {
	key K
	ok  bool
	s   string
}

// get returns the view for k, rendering it only when k changed.
func (c *viewCache[K]) get(k K, render func() string) string {
	if !c.ok || c.key != k {
		c.key, c.s, c.ok = k, render(), true
	}
	return c.s
}

// stack joins blocks of lines into exactly h lines; the blocks are already
// w cells wide, so nothing is measured again.
func stack(w, h int, blocks ...string) string {
	all := strings.Split(strings.Join(blocks, "\n"), "\n")
	if len(all) > h {
		all = all[:h]
	}
	for len(all) < h {
		all = append(all, strings.Repeat(" ", w))
	}
	return strings.Join(all, "\n")
}
