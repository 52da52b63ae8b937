package approval

import (
	"errors"
	"strings"
)

// Shell is a shell command taken apart for matching: the simple commands
// it runs, and what makes it unsafe to allow by its parts.
type Shell struct {
	// Parts are the simple commands, split on &&, ||, ;, |, &, newlines,
	// and the edges of substitutions and subshells, each trimmed with its
	// runs of blanks made one space. The text inside a $( ) or backticks
	// is a part of its own, so a deny rule sees it.
	Parts []string
	// Substitution: the command holds $( ), backticks, <( ) or >( ): text
	// it runs is decided only when it runs, so no allow rule applies.
	Substitution bool
	// Redirect is the first redirection of output to a file (> file,
	// >> file, &> file), "" when none: an allow rule for a command is not
	// an allow to overwrite files. 2>&1 and > /dev/null are not counted.
	Redirect string
	// Err says why the command could not be read (an unclosed quote): an
	// allow rule then does not apply.
	Err error
}

// maxCommand bounds the command read; a longer one is not split (and so
// never allowed by its parts).
const maxCommand = 64 << 10

// ParseShell splits a shell command into the simple commands it runs.
// It reads quotes as the shell does (nothing is special inside single
// quotes; inside double quotes only $( and backticks are), and backslash
// escapes, but it does not expand anything: it is for deciding whether
// every part is one a rule allows, erring on the side of not allowing.
func ParseShell(cmd string) Shell {
	var sh Shell
	if len(cmd) > maxCommand {
		sh.Err = errors.New("the command is too long to read")
		sh.Parts = []string{normSpace(cmd)}
		return sh
	}
	var cur strings.Builder
	flush := func() {
		if p := normSpace(cur.String()); p != "" {
			sh.Parts = append(sh.Parts, p)
		}
		cur.Reset()
	}
	const (
		plain = iota
		single
		double
	)
	mode := plain
	inBacktick := false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch mode {
		case single:
			if c == '\'' {
				mode = plain
			}
			cur.WriteByte(c)
			continue
		case double:
			switch {
			case c == '\\' && i+1 < len(cmd):
				cur.WriteByte(c)
				cur.WriteByte(cmd[i+1])
				i++
				continue
			case c == '"':
				mode = plain
				cur.WriteByte(c)
				continue
			case c == '$' && i+1 < len(cmd) && cmd[i+1] == '(':
				// Runs even inside double quotes.
				sh.Substitution = true
				flush()
				i++
				continue
			case c == '`':
				sh.Substitution = true
				flush()
				continue
			case c == ')':
				// The end of a $( opened inside the quotes: another part.
				flush()
				continue
			}
			cur.WriteByte(c)
			continue
		}
		switch c {
		case '\\':
			if i+1 < len(cmd) {
				if cmd[i+1] == '\n' { // a continued line
					i++
					cur.WriteByte(' ')
					continue
				}
				cur.WriteByte(c)
				cur.WriteByte(cmd[i+1])
				i++
				continue
			}
			cur.WriteByte(c)
		case '\'':
			mode = single
			cur.WriteByte(c)
		case '"':
			mode = double
			cur.WriteByte(c)
		case '`':
			sh.Substitution = true
			inBacktick = !inBacktick
			flush()
		case '$':
			if i+1 < len(cmd) && cmd[i+1] == '(' {
				sh.Substitution = true
				flush()
				i++
				continue
			}
			cur.WriteByte(c)
		case '<', '>':
			if i+1 < len(cmd) && cmd[i+1] == '(' {
				sh.Substitution = true
				flush()
				i++
				continue
			}
			if c == '>' {
				if r := redirectTarget(cmd, i); r != "" && sh.Redirect == "" {
					sh.Redirect = r
				}
			}
			cur.WriteByte(c)
		case ';', '\n', '\r', '(', ')', '{', '}':
			if (c == '{' || c == '}') && !braceIsWord(cmd, i) {
				cur.WriteByte(c)
				continue
			}
			flush()
		case '&':
			if i > 0 && (cmd[i-1] == '>' || cmd[i-1] == '<') {
				cur.WriteByte(c) // 2>&1, >&2
				continue
			}
			if i+1 < len(cmd) && cmd[i+1] == '>' {
				cur.WriteByte(c) // &> file
				continue
			}
			flush()
			if i+1 < len(cmd) && cmd[i+1] == '&' {
				i++
			}
		case '|':
			flush()
			if i+1 < len(cmd) && (cmd[i+1] == '|' || cmd[i+1] == '&') {
				i++
			}
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	switch {
	case mode == single || mode == double:
		sh.Err = errors.New("a quote is not closed")
	case inBacktick:
		sh.Err = errors.New("a backtick is not closed")
	}
	return sh
}

// braceIsWord reports whether the brace at i stands alone as the shell's
// { or } (a group), not inside a word like ${HOME} or a{b,c}.
func braceIsWord(cmd string, i int) bool {
	before := i == 0 || isBlank(cmd[i-1]) || cmd[i-1] == ';' || cmd[i-1] == '&' || cmd[i-1] == '|'
	after := i+1 == len(cmd) || isBlank(cmd[i+1]) || cmd[i+1] == ';'
	return before && after
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// redirectTarget returns the file an output redirection at cmd[i] ('>')
// writes to, "" for a duplication of a descriptor (2>&1, >&2) or
// /dev/null.
func redirectTarget(cmd string, i int) string {
	j := i + 1
	if j < len(cmd) && (cmd[j] == '>' || cmd[j] == '|') {
		j++
	}
	if j < len(cmd) && cmd[j] == '&' {
		// >&2 duplicates a descriptor; >&file (a bash spelling) writes.
		k := j + 1
		for k < len(cmd) && cmd[k] >= '0' && cmd[k] <= '9' {
			k++
		}
		if k > j+1 || (k < len(cmd) && cmd[k] == '-') {
			return ""
		}
		j++
	}
	for j < len(cmd) && (cmd[j] == ' ' || cmd[j] == '\t') {
		j++
	}
	k := j
	for k < len(cmd) && !isBlank(cmd[k]) && !strings.ContainsRune(";&|()<>", rune(cmd[k])) {
		k++
	}
	target := cmd[j:k]
	if target == "/dev/null" {
		return ""
	}
	if target == "" {
		return ">"
	}
	return target
}

// normSpace trims s and makes each run of blanks one space.
func normSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
