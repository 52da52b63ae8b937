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
	if len(cmd) > maxCommand {
		return Shell{Err: errors.New("the command is too long to read"), Parts: []string{normSpace(cmd)}}
	}
	p := &shellParser{cmd: cmd, stack: []frame{{mode: plain}}}
	for p.i = 0; p.i < len(cmd); p.i++ {
		top := &p.stack[len(p.stack)-1]
		switch top.mode {
		case single:
			p.singleQuoted(top)
		case double:
			p.doubleQuoted(top)
		default:
			p.unquoted(top)
		}
	}
	p.flush()
	p.sh.Err = p.err()
	return p.sh
}

// Quoting inside a frame.
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

// shellParser is ParseShell reading cmd one byte at a time, at i.
type shellParser struct {
	cmd      string
	i        int
	sh       Shell
	cur      strings.Builder // the part being read
	stack    []frame
	unclosed bool // a quote opened inside backticks ran into their end
}

// flush ends the part being read.
func (p *shellParser) flush() {
	if s := normSpace(p.cur.String()); s != "" {
		p.sh.Parts = append(p.sh.Parts, s)
	}
	p.cur.Reset()
}

// open starts a substitution that close ends.
func (p *shellParser) open(close byte) {
	p.sh.Substitution = true
	p.flush()
	p.stack = append(p.stack, frame{mode: plain, close: close})
}

// closeFrame ends the innermost substitution.
func (p *shellParser) closeFrame() {
	p.flush()
	p.stack = p.stack[:len(p.stack)-1]
}

// next reports whether the byte after the current one is c.
func (p *shellParser) next(c byte) bool {
	return p.i+1 < len(p.cmd) && p.cmd[p.i+1] == c
}

// singleQuoted reads a byte inside single quotes: only ' means anything.
func (p *shellParser) singleQuoted(top *frame) {
	c := p.cmd[p.i]
	if c == '\'' {
		top.mode = plain
	}
	p.cur.WriteByte(c)
}

// doubleQuoted reads a byte inside double quotes, where only escapes, the
// closing quote, $( and backticks mean anything.
func (p *shellParser) doubleQuoted(top *frame) {
	c := p.cmd[p.i]
	switch {
	case c == '\\' && p.i+1 < len(p.cmd):
		p.cur.WriteByte(c)
		p.cur.WriteByte(p.cmd[p.i+1])
		p.i++
	case c == '"':
		top.mode = plain
		p.cur.WriteByte(c)
	case c == '$' && p.next('('):
		// Runs even inside double quotes.
		p.open(')')
		p.i++
	case c == '`' && top.close == '`':
		// The shell ends backticks at the next backtick, quotes or
		// not: the quote opened inside them is never closed.
		p.unclosed = true
		p.closeFrame()
	case c == '`':
		p.open('`')
	default:
		p.cur.WriteByte(c)
	}
}

// unquoted reads a byte outside quotes.
func (p *shellParser) unquoted(top *frame) {
	c := p.cmd[p.i]
	switch c {
	case '\\':
		p.escape()
	case '\'':
		top.mode = single
		p.cur.WriteByte(c)
	case '"':
		top.mode = double
		p.cur.WriteByte(c)
	case '`':
		if top.close == '`' {
			p.closeFrame()
			return
		}
		p.open('`')
	case '$':
		if p.next('(') {
			p.open(')')
			p.i++
			return
		}
		p.cur.WriteByte(c)
	case '<', '>':
		p.angle()
	case '(':
		top.depth++
		p.flush()
	case ')':
		p.closeParen(top)
	case ';', '\n', '\r', '{', '}':
		if (c == '{' || c == '}') && !braceIsWord(p.cmd, p.i) {
			p.cur.WriteByte(c)
			return
		}
		p.flush()
	case '&':
		p.ampersand()
	case '|':
		p.flush()
		if p.next('|') || p.next('&') {
			p.i++
		}
	default:
		p.cur.WriteByte(c)
	}
}

// escape reads a backslash outside quotes: a continued line is a blank,
// any other escaped byte is kept with its backslash.
func (p *shellParser) escape() {
	c := p.cmd[p.i]
	if p.i+1 < len(p.cmd) {
		if p.cmd[p.i+1] == '\n' { // a continued line
			p.i++
			p.cur.WriteByte(' ')
			return
		}
		p.cur.WriteByte(c)
		p.cur.WriteByte(p.cmd[p.i+1])
		p.i++
		return
	}
	p.cur.WriteByte(c)
}

// angle reads < or >: a process substitution, or a redirection (the first
// output redirection to a file is noted).
func (p *shellParser) angle() {
	c := p.cmd[p.i]
	if p.next('(') {
		p.open(')')
		p.i++
		return
	}
	if c == '>' {
		if r := redirectTarget(p.cmd, p.i); r != "" && p.sh.Redirect == "" {
			p.sh.Redirect = r
		}
	}
	p.cur.WriteByte(c)
}

// closeParen reads ): the end of a substitution or of a subshell.
func (p *shellParser) closeParen(top *frame) {
	if top.depth == 0 && top.close == ')' {
		p.closeFrame()
		return
	}
	if top.depth > 0 {
		top.depth--
	}
	p.flush()
}

// ampersand reads &: part of a redirection (2>&1, >&2, &> file), or the
// end of a command (& and &&).
func (p *shellParser) ampersand() {
	c := p.cmd[p.i]
	if p.i > 0 && (p.cmd[p.i-1] == '>' || p.cmd[p.i-1] == '<') {
		p.cur.WriteByte(c) // 2>&1, >&2
		return
	}
	if p.next('>') {
		p.cur.WriteByte(c) // &> file
		return
	}
	p.flush()
	if p.next('&') {
		p.i++
	}
}

// err says why the command could not be read: a quote, backtick or
// substitution not closed.
func (p *shellParser) err() error {
	if p.unclosed {
		return errors.New("a quote is not closed")
	}
	for _, f := range p.stack {
		switch {
		case f.mode == single || f.mode == double:
			return errors.New("a quote is not closed")
		case f.close == '`':
			return errors.New("a backtick is not closed")
		case f.close == ')':
			return errors.New("a substitution is not closed")
		}
	}
	return nil
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
