package tmux

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxText is the most bytes one send types into a pane: guidance, not a
// file transfer. A pane's application gets its input through a terminal, so
// a bigger paste only stalls it; the audit log keeps every text up to this
// size whole.
const MaxText = 256 << 10

// ErrNotText matches (errors.Is) CheckText's errors: the text holds a byte
// that a terminal would take as a key or a command rather than as text.
var ErrNotText = errors.New("the text holds a control character or invalid UTF-8")

// ErrTextTooLong matches CheckSize's error.
var ErrTextTooLong = errors.New("the text is too long")

// TextError names the first byte of a text that is not allowed in a pane.
type TextError struct {
	// Offset is the byte offset of Bytes in the text.
	Offset int
	// Bytes is the offending byte, or the bytes of the offending character.
	Bytes string
	// Why says what it is: "a control character", "escape", "invalid UTF-8".
	Why string
}

func (e *TextError) Error() string {
	var what string
	if len(e.Bytes) == 1 {
		what = fmt.Sprintf("byte 0x%02x", e.Bytes[0])
	} else {
		r, _ := utf8.DecodeRuneInString(e.Bytes)
		what = fmt.Sprintf("character U+%04X", r)
	}
	return fmt.Sprintf("the text holds %s (%s) at byte offset %d: only printable characters, newlines and tabs are typed into a pane; remove it, or send it with visible controls (system3 inject --visible-controls, MCP visible_controls true) to type it as the text %s",
		what, e.Why, e.Offset, VisibleText(e.Bytes))
}

func (e *TextError) Unwrap() error { return ErrNotText }

// CheckText reports the first part of s that must not reach a pane, as a
// *TextError, or nil when s is text: printable characters, "\n" and "\t".
// Every other C0 control (NUL, Ctrl-C, carriage return...), ESC (and so
// every escape sequence, bracketed-paste markers included), DEL, the C1
// controls U+0080–U+009F and invalid UTF-8 are refused: a terminal takes
// them as keys or commands, or tmux cuts the text at them (NUL).
func CheckText(s string) error {
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b < 0x20 && b != '\n' && b != '\t' || b == 0x7f {
				return &TextError{Offset: i, Bytes: s[i : i+1], Why: controlName(rune(b))}
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return &TextError{Offset: i, Bytes: s[i : i+1], Why: "not valid UTF-8"}
		case r >= 0x80 && r <= 0x9f:
			return &TextError{Offset: i, Bytes: s[i : i+n], Why: "a C1 control character"}
		}
		i += n
	}
	return nil
}

// CheckSize refuses a text of n bytes over MaxText.
func CheckSize(n int) error {
	if n > MaxText {
		return fmt.Errorf("%w: %d bytes, over the limit of %d bytes (%d KB) one send may type; send less, or point the agent at a file", ErrTextTooLong, n, MaxText, MaxText>>10)
	}
	return nil
}

func controlName(r rune) string {
	switch r {
	case 0:
		return "NUL"
	case 0x1b:
		return "escape"
	case '\r':
		return "carriage return"
	case 0x7f:
		return "delete"
	}
	return "a control character"
}

// VisibleText shows every part of s that CheckText refuses as visible
// text, so the result passes CheckText: a C0 control in caret notation
// ("^C", "^[", "^@"), DEL as "^?", a C1 control as "\u009b" and a byte
// that is not UTF-8 as "\xff". Printable text, "\n" and "\t" are kept.
func VisibleText(s string) string {
	if CheckText(s) == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == 0x7f:
				b.WriteString("^?")
			case c < 0x20 && c != '\n' && c != '\t':
				b.WriteByte('^')
				b.WriteByte(c + 0x40)
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, c)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
