package tmux

import (
	"strings"
	"unicode/utf8"
)

// quoteArg quotes s as one argument in tmux's command syntax, so that it
// reaches the command byte for byte: no ';' command separators, no ~ or $VAR
// expansion, no escapes. Printable bytes go inside single quotes, where tmux
// treats everything literally; a single quote is written as \' outside the
// quotes; control bytes (which would end a control-mode command line or be
// mangled) and bytes that are not part of valid UTF-8 (tmux's parser splits
// words on them) are written as octal escapes inside double quotes, e.g.
// "\012".
// Formats (#{...}) are never expanded by the parser; whether a command
// expands them in an argument is that command's business.
func quoteArg(s string) string {
	if s == "" {
		return "''"
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	inSingle := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		invalid := false
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size > 1 {
				if !inSingle {
					b.WriteByte('\'')
					inSingle = true
				}
				b.WriteString(s[i : i+size])
				i += size - 1
				continue
			}
			invalid = true
		}
		switch {
		case c == '\'':
			if inSingle {
				b.WriteByte('\'')
				inSingle = false
			}
			b.WriteString(`\'`)
		case c < 0x20 || c == 0x7f || invalid:
			if inSingle {
				b.WriteByte('\'')
				inSingle = false
			}
			b.WriteString(`"\`)
			b.WriteByte('0' + c>>6)
			b.WriteByte('0' + c>>3&7)
			b.WriteByte('0' + c&7)
			b.WriteByte('"')
		default:
			if !inSingle {
				b.WriteByte('\'')
				inSingle = true
			}
			b.WriteByte(c)
		}
	}
	if inSingle {
		b.WriteByte('\'')
	}
	return b.String()
}

// commandLine quotes every argument and joins them into one control-mode
// command line (without the trailing newline). The result never contains a
// newline, so it is always exactly one command.
func commandLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quoteArg(a)
	}
	return strings.Join(q, " ")
}
