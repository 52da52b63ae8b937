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
	// A frame is the text of one substitution ($( ), <( ), >( ) or
	// backticks): commands inside it are split like any others, even when
	// it stands inside double quotes, so a deny rule sees each of them.
	// The frame at the bottom is the command itself.
	type frame struct {
		mode  int  // quoting inside this frame
		close byte // ')' or '`' ends it; 0 for the command itself
		depth int  // subshell parentheses open inside it
	}
	stack := []frame{{mode: plain}}
	unclosed := false // a quote opened inside backticks ran into their end
	open := func(close byte) {
		sh.Substitution = true
		flush()
		stack = append(stack, frame{mode: plain, close: close})
	}
	closeFrame := func() {
		flush()
		stack = stack[:len(stack)-1]
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		top := &stack[len(stack)-1]
		switch top.mode {
		case single:
			if c == '\'' {
				top.mode = plain
			}
			cur.WriteByte(c)
			continue
		case double:
			switch {
			case c == '\\' && i+1 < len(cmd):
				cur.WriteByte(c)
				cur.WriteByte(cmd[i+1])
				i++
			case c == '"':
				top.mode = plain
				cur.WriteByte(c)
			case c == '$' && i+1 < len(cmd) && cmd[i+1] == '(':
				// Runs even inside double quotes.
				open(')')
				i++
			case c == '`' && top.close == '`':
				// The shell ends backticks at the next backtick, quotes or
				// not: the quote opened inside them is never closed.
				unclosed = true
				closeFrame()
			case c == '`':
				open('`')
			default:
				cur.WriteByte(c)
			}
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
			top.mode = single
			cur.WriteByte(c)
		case '"':
			top.mode = double
			cur.WriteByte(c)
		case '`':
			if top.close == '`' {
				closeFrame()
				continue
			}
			open('`')
		case '$':
			if i+1 < len(cmd) && cmd[i+1] == '(' {
				open(')')
				i++
				continue
			}
			cur.WriteByte(c)
		case '<', '>':
			if i+1 < len(cmd) && cmd[i+1] == '(' {
				open(')')
				i++
				continue
			}
			if c == '>' {
				if r := redirectTarget(cmd, i); r != "" && sh.Redirect == "" {
					sh.Redirect = r
				}
			}
			cur.WriteByte(c)
		case '(':
			top.depth++
			flush()
		case ')':
			if top.depth == 0 && top.close == ')' {
				closeFrame()
				continue
			}
			if top.depth > 0 {
				top.depth--
			}
			flush()
		case ';', '\n', '\r', '{', '}':
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
	if unclosed {
		sh.Err = errors.New("a quote is not closed")
	}
	for _, f := range stack {
		switch {
		case f.mode == single || f.mode == double:
			sh.Err = errors.New("a quote is not closed")
		case f.close == '`':
			sh.Err = errors.New("a backtick is not closed")
		case f.close == ')':
			sh.Err = errors.New("a substitution is not closed")
		}
		if sh.Err != nil {
			break
		}
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
