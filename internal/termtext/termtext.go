// Package termtext is the one sanitiser for text system3 prints to a
// terminal: what agents printed, what clients sent, what the stores hold
// and what other hosts answered. Nothing in it can move the cursor, change
// colours or the title, write the clipboard, hide or reorder text: every
// control character, escape sequence introducer, C1 control, bidi control
// and invalid byte is shown as a visible escape (\u001b, \u202e, \xff)
// instead. Inside a JSON string that escape is the same character, so
// JSON output stays valid and decodes to what it held. A screen system3
// lays out itself (the dashboard) takes the same text through Plain, which
// removes what Sanitize shows.
package termtext

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// unsafe reports whether r must not reach a terminal as it is: C0 controls
// but tab and newline, DEL, C1 controls, and the bidi controls that
// reorder what follows (U+202A–U+202E, U+2066–U+2069) or mark direction
// (U+200E, U+200F, U+061C).
func unsafe(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// Sanitize returns s with everything that must not reach a terminal made
// visible. Text that is safe comes back unchanged.
func Sanitize(s string) string {
	var b strings.Builder
	appendSafe(&b, s, true)
	return b.String()
}

// Line is Sanitize for one line of a table or a list: a newline or a tab
// would break it, so they are made visible too.
func Line(s string) string {
	s = Sanitize(s)
	return strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(s)
}

// Plain is one line of text for a screen system3 lays out itself (the
// dashboard's tables and panels), where a visible escape would only be
// noise: escape sequences are removed whole, every other control character
// and line break (C0, DEL, C1, U+2028, U+2029) becomes a space, bidi
// controls are dropped, a byte that is not UTF-8 is dropped or becomes
// U+FFFD, and the ends are trimmed. Nothing it returns is unsafe.
func Plain(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			ok = false
			break
		}
	}
	if ok {
		return strings.TrimSpace(s)
	}
	s = ansi.Strip(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029:
			b.WriteByte(' ')
		case unsafe(r):
			// a bidi control: it only reorders what follows
		default:
			b.WriteRune(r) // a byte that is not UTF-8 arrives as U+FFFD
		}
	}
	return strings.TrimSpace(b.String())
}

// appendSafe writes s to b, made safe. With final false, an incomplete
// UTF-8 sequence at the end is left out and its length returned, for a
// writer to keep it for the next write.
func appendSafe(b *strings.Builder, s string, final bool) (pending int) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			if !final && !utf8.FullRuneInString(s[i:]) {
				return len(s) - i
			}
			fmt.Fprintf(b, `\x%02x`, s[i])
			i++
			continue
		}
		if unsafe(r) {
			fmt.Fprintf(b, `\u%04x`, r)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return 0
}

// Writer sanitizes everything written through it, as Sanitize does. A
// character split across two writes is kept until the second; Flush
// writes what is left of an incomplete one. It is the last step of a
// command's text output, so no printing path can forget it.
type Writer struct {
	w       io.Writer
	pending []byte
}

// NewWriter wraps w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write sanitizes p and writes it; it reports len(p) written when the
// sanitized text was.
func (sw *Writer) Write(p []byte) (int, error) {
	s := string(append(sw.pending, p...))
	var b strings.Builder
	n := appendSafe(&b, s, false)
	sw.pending = append(sw.pending[:0], s[len(s)-n:]...)
	if _, err := io.WriteString(sw.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes an incomplete character left by the last write, made
// visible.
func (sw *Writer) Flush() error {
	if len(sw.pending) == 0 {
		return nil
	}
	s := string(sw.pending)
	sw.pending = sw.pending[:0]
	_, err := io.WriteString(sw.w, Sanitize(s))
	return err
}
