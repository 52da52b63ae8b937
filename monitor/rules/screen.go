package rules

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Screen is a capture prepared for matching: escape sequences removed,
// trailing blanks trimmed, and the agent's input box located once so every
// rule's regions are cheap to compute.
type Screen struct {
	Lines []string
	// nonBlank holds the indexes of lines with visible text.
	nonBlank []int
	// inputTop and inputBottom are the border lines around the input box, or
	// -1 when the screen shows none.
	inputTop, inputBottom int
	// belowRule is the line after the last horizontal rule near the
	// bottom when the screen shows no input box, or -1: what is below
	// it is the agent's input line and footer (the Gemini CLI's), not
	// its conversation.
	belowRule int
	// prompts, when set, are the agent's submitted prompt lines (region
	// turn); nil: "❯ text" and "› text".
	prompts *regexp.Regexp
	// lowered caches lines folded for case-insensitive prefilters.
	lowered   []string
	isLowered []bool
}

// width is the screen's width as far as its text tells: the longest
// line, which a full-width rule or border reaches.
func (s *Screen) width() int {
	w := 0
	for _, l := range s.Lines {
		w = max(w, utf8.RuneCountInString(strings.TrimRight(l, " ")))
	}
	return w
}

// NewScreen prepares a capture (plain text, or with escape sequences).
func NewScreen(capture string) *Screen {
	capture = StripANSI(capture)
	if !utf8.ValidString(capture) {
		capture = strings.ToValidUTF8(capture, "\uFFFD")
	}
	raw := strings.Split(strings.ReplaceAll(capture, "\r\n", "\n"), "\n")
	s := &Screen{Lines: make([]string, 0, len(raw)), inputTop: -1, inputBottom: -1, belowRule: -1}
	for _, l := range raw {
		s.Lines = append(s.Lines, trimRightBlank(l))
	}
	for len(s.Lines) > 0 && s.Lines[len(s.Lines)-1] == "" {
		s.Lines = s.Lines[:len(s.Lines)-1]
	}
	for i, l := range s.Lines {
		if strings.TrimSpace(l) != "" {
			s.nonBlank = append(s.nonBlank, i)
		}
	}
	s.findInputBox()
	return s
}

// trimRightBlank is strings.TrimRight(l, " \t\r\u00a0") on valid UTF-8,
// without the slow path strings.TrimRight takes for a cutset that is not
// ASCII (a tenth of classifying a screen): U+00A0 is the two bytes C2 A0,
// and C2 cannot end another character.
func trimRightBlank(l string) string {
	for len(l) > 0 {
		switch c := l[len(l)-1]; {
		case c == ' ' || c == '\t' || c == '\r':
			l = l[:len(l)-1]
		case c == 0xa0 && len(l) >= 2 && l[len(l)-2] == 0xc2:
			l = l[:len(l)-2]
		default:
			return l
		}
	}
	return l
}

// stripped returns the screen with what strip matches cut from every
// line, or s itself when it matches nothing.
func (s *Screen) stripped(strip *regexp.Regexp) *Screen {
	lines := make([]string, len(s.Lines))
	changed := false
	for i, l := range s.Lines {
		lines[i] = l
		if strip.MatchString(l) {
			lines[i], changed = strip.ReplaceAllString(l, ""), true
		}
	}
	if !changed {
		return s
	}
	return NewScreen(strings.Join(lines, "\n"))
}

// withoutTrailer returns the screen without the run of lines matching
// trailer (and blank lines) at its bottom, or s itself when there is none.
func (s *Screen) withoutTrailer(trailer *regexp.Regexp) *Screen {
	end := len(s.Lines)
	for end > 0 && (strings.TrimSpace(s.Lines[end-1]) == "" || trailer.MatchString(s.Lines[end-1])) {
		end--
	}
	if end == len(s.Lines) {
		return s
	}
	return NewScreen(strings.Join(s.Lines[:end], "\n"))
}

// findInputBox looks, from the bottom, for two horizontal rules with at most
// four lines between them, the first of which is a prompt line. That is the
// shape of the input box of Claude Code and similar Ink-based CLIs; a dialog
// drawn in its place has no such pair, so its regions fall back to the
// bottom of the screen.
func (s *Screen) findInputBox() {
	const maxInner = 4
	bottom := -1
	for i := len(s.Lines) - 1; i >= 0 && i >= len(s.Lines)-12; i-- {
		if isRule(s.Lines[i]) {
			bottom = i
			break
		}
	}
	if bottom < 0 {
		s.findComposer()
		return
	}
	for i := bottom - 1; i >= 0 && i >= bottom-1-maxInner; i-- {
		if isRule(s.Lines[i]) {
			if i+1 < bottom && isPromptLine(s.Lines[i+1]) {
				s.inputTop, s.inputBottom = i, bottom
				return
			}
			break
		}
	}
	// Only an input area and a footer fit below it (the Gemini CLI's:
	// four lines, more while a long prompt is typed); a rule with more
	// below is the conversation's.
	below := 0
	for _, i := range s.nonBlank {
		if i > bottom {
			below++
		}
	}
	if below <= maxBelowRule {
		s.belowRule = bottom + 1
	}
}

// maxBelowRule is how many lines with text may follow the last rule near
// the bottom for what follows it to be taken for an input area and footer.
const maxBelowRule = 8

// findComposer finds an input box drawn without borders, the shape of
// Codex CLI's composer: one prompt line ("› text") between two blank lines,
// with one to three lines of footer below it and nothing else. The blank
// lines stand in for the borders. A numbered menu whose first option starts
// with the same glyph ("› 1. Yes") is followed by its other options, not by
// a blank line, so it is not taken for one.
func (s *Screen) findComposer() {
	n := len(s.nonBlank)
	for k := 2; k <= 4 && k <= n; k++ {
		i := s.nonBlank[n-k]
		if !strings.HasPrefix(s.Lines[i], "› ") && s.Lines[i] != "›" {
			continue
		}
		if i == 0 || i+1 >= len(s.Lines) || strings.TrimSpace(s.Lines[i-1]) != "" || strings.TrimSpace(s.Lines[i+1]) != "" {
			return
		}
		s.inputTop, s.inputBottom = i-1, i+1
		return
	}
}

// isRule reports whether a line is a horizontal border: at least 10 box
// drawing dashes and nothing else.
func isRule(l string) bool {
	n := 0
	for _, r := range l {
		switch r {
		case '─', '━', '═':
			n++
		case ' ':
		default:
			return false
		}
	}
	return n >= 10
}

func isPromptLine(l string) bool {
	t := strings.TrimLeft(l, " ")
	return strings.HasPrefix(t, "❯") || strings.HasPrefix(t, ">") || strings.HasPrefix(t, "│")
}

// HasInputBox reports whether the screen shows an agent's input box.
func (s *Screen) HasInputBox() bool { return s.inputTop >= 0 }

// InputText is the text typed in the input box (without the prompt glyph),
// or "" when there is no input box.
func (s *Screen) InputText() string {
	if !s.HasInputBox() {
		return ""
	}
	var parts []string
	for i := s.inputTop + 1; i < s.inputBottom; i++ {
		t := strings.TrimSpace(s.Lines[i])
		t = strings.TrimPrefix(t, "❯")
		t = strings.TrimPrefix(t, "›")
		t = strings.TrimPrefix(t, ">")
		parts = append(parts, strings.TrimSpace(t))
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

// bounds returns the half-open line range [lo, hi) of a region.
func (s *Screen) bounds(r region) (int, int) {
	n := len(s.Lines)
	switch r.kind {
	case "whole":
		return 0, n
	case "input":
		if s.HasInputBox() {
			return s.inputTop + 1, s.inputBottom
		}
		return n, n
	case "footer":
		if s.HasInputBox() {
			return s.inputBottom + 1, min(n, s.inputBottom+1+r.lines)
		}
		return s.lastNonBlank(n, r.lines), n
	case "above_input":
		if s.HasInputBox() {
			return s.lastNonBlank(s.inputTop, r.lines), s.inputTop
		}
		return s.lastNonBlank(n, r.lines), n
	case "turn":
		end := n
		switch {
		case s.HasInputBox():
			end = s.inputTop
		case s.belowRule >= 0:
			// A prompt typed in an input line below the last rule
			// (" > text", the Gemini CLI's) is not submitted yet: the
			// turn ends at the rule.
			end = s.belowRule - 1
		}
		lo := s.lastNonBlank(end, r.lines)
		for i := end - 1; i >= lo; i-- {
			if s.isSubmittedPrompt(s.Lines[i]) {
				return i, end
			}
		}
		return lo, end
	default: // bottom
		return s.lastNonBlank(n, r.lines), n
	}
}

// isSubmittedPrompt reports whether a line is a prompt in the
// conversation history: one the agent's prompt patterns match, or without
// them "❯ text" (Claude Code) or "› text" (Codex CLI).
func (s *Screen) isSubmittedPrompt(l string) bool {
	if s.prompts != nil {
		return s.prompts.MatchString(l)
	}
	t := strings.TrimSpace(l)
	for _, p := range []string{"❯ ", "› "} {
		if strings.HasPrefix(t, p) && len(t) > len(p) {
			return true
		}
	}
	return false
}

// lastNonBlank returns the index of the k-th non-blank line counting back
// from (not including) end, or the first non-blank line if there are fewer.
func (s *Screen) lastNonBlank(end, k int) int {
	count, lo := 0, end
	for j := len(s.nonBlank) - 1; j >= 0; j-- {
		i := s.nonBlank[j]
		if i >= end {
			continue
		}
		lo = i
		count++
		if count == k {
			break
		}
	}
	return lo
}

// StripANSI removes terminal escape sequences (CSI, OSC, and two-byte ESC
// sequences) so captures taken with colours match the same rules.
func StripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != 0x1b {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			break
		}
		switch s[i+1] {
		case '[': // CSI: parameters, then a final byte in 0x40..0x7e
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
		case ']': // OSC: ends with BEL or ESC \
			j := i + 2
			for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				j++
			}
			if j < len(s) && s[j] == 0x1b {
				j++
			}
			i = j
		default: // ESC, intermediate bytes (0x20-0x2f), final byte
			j := i + 1
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
				j++
			}
			i = j
		}
	}
	return b.String()
}

// LastLine is the last line with text above the input box (or at the
// bottom when there is none), skipping borders: a one-line summary of what
// the agent last said.
func (s *Screen) LastLine() string { return s.lastLine(nil, nil) }

// lastLine is LastLine skipping the lines chrome matches and cutting what
// volatile matches from the line it returns (either may be nil).
func (s *Screen) lastLine(chrome, volatile *regexp.Regexp) string {
	end := len(s.Lines)
	if s.HasInputBox() {
		end = s.inputTop
	}
	for i := end - 1; i >= 0; i-- {
		t := strings.TrimSpace(s.Lines[i])
		if t == "" || isRule(t) || strings.Trim(t, "╌┄┈-▔▁─") == "" || (chrome != nil && chrome.MatchString(s.Lines[i])) {
			continue
		}
		if volatile != nil {
			t = strings.TrimSpace(volatile.ReplaceAllString(t, ""))
		}
		if t != "" {
			return t
		}
	}
	return ""
}
