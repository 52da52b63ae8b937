package rules

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// prefilter is a necessary condition for a regular expression to match a
// line: the line contains one of a few literal strings. Checking it is far
// cheaper than running the expression, and most lines of most screens
// fail it, so conditions scan their region quickly (a streaming agent's
// pane is classified many times a second).
type prefilter struct {
	lits []literal
}

// literal is a string the line must contain, exactly or, with fold, in
// any case (the string is then lower-case ASCII).
type literal struct {
	s    string
	fold bool
}

// newPrefilter derives a prefilter from expr, or returns nil when no
// literal is required (the expression then always runs).
func newPrefilter(expr string) *prefilter {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	lits, ok := required(re.Simplify())
	if !ok {
		return nil
	}
	return &prefilter{lits: lits}
}

// required returns literals one of which every match of re contains.
func required(re *syntax.Regexp) ([]literal, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		s := string(re.Rune)
		if s == "" {
			return nil, false
		}
		if re.Flags&syntax.FoldCase == 0 {
			return []literal{{s: s}}, true
		}
		// Case-insensitive literals are compared lower-cased, which is
		// exact for ASCII only.
		for i := 0; i < len(s); i++ {
			if s[i] >= utf8.RuneSelf {
				return nil, false
			}
		}
		return []literal{{s: strings.ToLower(s), fold: true}}, true
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		// Any part that needs a literal will do; the one whose shortest
		// literal is longest rejects the most lines.
		var best []literal
		bestLen := 0
		for _, sub := range re.Sub {
			lits, ok := required(sub)
			if !ok {
				continue
			}
			shortest := len(lits[0].s)
			for _, l := range lits[1:] {
				shortest = min(shortest, len(l.s))
			}
			if shortest > bestLen {
				best, bestLen = lits, shortest
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []literal
		for _, sub := range re.Sub {
			lits, ok := required(sub)
			if !ok {
				return nil, false
			}
			all = append(all, lits...)
		}
		return all, true
	}
	return nil, false
}

// may reports whether line i of s could match: false means it cannot.
func (p *prefilter) may(s *Screen, i int) bool {
	line := s.Lines[i]
	for _, l := range p.lits {
		if l.fold {
			if strings.Contains(s.lower(i), l.s) {
				return true
			}
		} else if strings.Contains(line, l.s) {
			return true
		}
	}
	return false
}

var foldRunes = strings.NewReplacer("ſ", "s", "\u212a", "k")

// foldClass marks the bytes foldASCII looks for: an upper-case ASCII
// letter, and a byte that may start ſ or K.
var foldClass = func() (t [256]byte) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = foldUpper
	}
	for c := 0xc5; c <= 0xff; c++ {
		t[c] = foldWide
	}
	return t
}()

const (
	foldUpper = 1 << iota
	foldWide
)

// lower returns line i folded for case-insensitive literals, which are
// ASCII: ASCII letters lower-cased, and the two non-ASCII letters that
// fold to ASCII ones (K, the Kelvin sign, and ſ, long s) replaced by them;
// other bytes are kept. Lines are folded once per screen, when first
// needed.
func (s *Screen) lower(i int) string {
	if s.lowered == nil {
		s.lowered = make([]string, len(s.Lines))
		s.isLowered = make([]bool, len(s.Lines))
	}
	if !s.isLowered[i] {
		s.lowered[i], s.isLowered[i] = foldASCII(s.Lines[i]), true
	}
	return s.lowered[i]
}

func foldASCII(l string) string {
	// One pass tells whether there is anything to fold: most lines are
	// lower-case ASCII, or have no ſ or K (each starts with a byte >= 0xc5).
	var seen byte
	for i := 0; i < len(l); i++ {
		seen |= foldClass[l[i]]
	}
	if seen&foldWide != 0 && (strings.ContainsRune(l, 'ſ') || strings.ContainsRune(l, '\u212a')) {
		l = foldRunes.Replace(l)
	}
	if seen&foldUpper == 0 {
		return l
	}
	b := []byte(l)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
