package fakeagent

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The screen imitates Claude Code 2.1.x as captured in
// monitor/testdata/captures/claude: a header, the conversation as blocks
// separated by blank lines, then a live area (spinner and input box, or a
// dialog drawn in the input box's place). Colours are the 256-colour
// indexes seen in the *.ansi.txt captures.
const (
	colGrey   = "38;5;246"
	colRule   = "38;5;244"
	colWhite  = "38;5;231"
	colOrange = "38;5;174"
	colBlue   = "38;5;153"
	colYellow = "38;5;220"
	colGreen  = "38;5;114"
	colRed    = "38;5;203"
	colDash   = "38;5;239"
	bgPrompt  = "48;5;237"
	attrBold  = "1"
	attrDim   = "2"
	attrRev   = "7"
)

// nbsp follows the prompt glyph in the input box; submitted prompts in the
// history use a plain space. The detection rules rely on that difference.
const nbsp = "\u00a0"

// line is one row of the screen: its text, and the same text with colours.
type line struct {
	plain  string
	styled string
}

// seg is a piece of a line in one style ("" is the default style).
type seg struct {
	style string
	text  string
}

func mk(segs ...seg) line {
	var p, s strings.Builder
	for _, g := range segs {
		p.WriteString(g.text)
		if g.style == "" || g.text == "" {
			s.WriteString(g.text)
			continue
		}
		s.WriteString("\x1b[" + g.style + "m" + g.text + "\x1b[0m")
	}
	return line{plain: p.String(), styled: s.String()}
}

func plain(text string) line { return line{plain: text, styled: text} }

func width(s string) int { return utf8.RuneCountInString(s) }

// wrap breaks text into lines of at most w runes, at spaces where it can;
// first and rest prefix the first and the following lines.
func wrap(text string, w int, first, rest string) []string {
	var out []string
	for i, para := range strings.Split(text, "\n") {
		prefix := first
		if i > 0 {
			prefix = rest
		}
		avail := max(w-width(prefix), 8)
		if width(para) <= avail { // fits: keep its spacing (tool output columns)
			out = append(out, strings.TrimRight(prefix+para, " "))
			continue
		}
		words := strings.Fields(para)
		if len(words) == 0 {
			out = append(out, strings.TrimRight(prefix, " "))
			continue
		}
		cur := ""
		flush := func() {
			out = append(out, prefix+cur)
			prefix, cur = rest, ""
			avail = max(w-width(prefix), 8)
		}
		for _, word := range words {
			for width(word) > avail { // a word longer than a line is cut
				if cur != "" {
					flush()
				}
				r := []rune(word)
				cur = string(r[:avail])
				word = string(r[avail:])
				flush()
			}
			switch {
			case cur == "":
				cur = word
			case width(cur)+1+width(word) <= avail:
				cur += " " + word
			default:
				flush()
				cur = word
			}
		}
		if cur != "" {
			flush()
		}
	}
	return out
}

// cut shortens s to w runes.
func cut(s string, w int) string {
	if width(s) <= w {
		return s
	}
	return string([]rune(s)[:max(w, 0)])
}

type blockKind int

const (
	bPrompt      blockKind = iota // a submitted prompt: "❯ text"
	bSay                          // assistant text: "● text"
	bTool                         // a tool call: "● Bash(cmd)" and its output under "⎿"
	bDone                         // "✻ Worked for 12s · done 5:32 AM"
	bAPIError                     // "● API Error: ..."
	bDidNotRun                    // a declined tool call
	bInterrupted                  // "⎿  Interrupted · What should Claude do instead?"
	bAnswered                     // the answers to a question dialog
)

// block is one element of the conversation. Tool blocks grow while their
// command runs.
type block struct {
	kind   blockKind
	text   string   // prompt, text, tool title, done line, error
	output []string // tool output lines, answers
	failed bool     // tool failed (red bullet)
	// attached blocks follow the previous one without a blank line.
	attached bool
}

func (b *block) lines(w int) []line {
	var out []line
	switch b.kind {
	case bPrompt:
		for _, l := range wrap(b.text, w, "❯ ", "  ") {
			out = append(out, mk(seg{bgPrompt, l}))
		}
	case bSay:
		for i, l := range wrap(b.text, w, "● ", "  ") {
			if i == 0 {
				out = append(out, mk(seg{colWhite, "●"}, seg{"", strings.TrimPrefix(l, "●")}))
				continue
			}
			out = append(out, plain(l))
		}
	case bTool:
		bullet := colGreen
		if b.failed {
			bullet = colRed
		}
		for i, l := range wrap(b.text, w, "● ", "  ") {
			if i == 0 {
				out = append(out, mk(seg{bullet, "●"}, seg{"", strings.TrimPrefix(l, "●")}))
				continue
			}
			out = append(out, plain(l))
		}
		for i, o := range b.output {
			first := "     "
			if i == 0 {
				first = "  ⎿  "
			}
			for _, l := range wrap(o, w, first, "     ") {
				out = append(out, mk(seg{colGrey, l}))
			}
		}
	case bDone:
		for _, l := range wrap(b.text, w, "✻ ", "  ") {
			out = append(out, mk(seg{colGrey, l}))
		}
	case bAPIError:
		for _, l := range wrap(b.text, w, "● ", "  ") {
			out = append(out, mk(seg{colYellow, l}))
		}
	case bDidNotRun:
		out = append(out, mk(seg{colGrey, "  Did not run 1 call"}))
		for _, l := range wrap(b.text, w, "  ⎿  ", "     ") {
			out = append(out, mk(seg{colGrey, l}))
		}
	case bInterrupted:
		out = append(out, mk(seg{colGrey, cut("  ⎿  Interrupted · What should Claude do instead?", w)}))
	case bAnswered:
		out = append(out, mk(seg{colWhite, "●"}, seg{"", " Answered Claude's questions:"}))
		for i, o := range b.output {
			first := "     "
			if i == 0 {
				first = "  ⎿  "
			}
			for _, l := range wrap("· "+o, w, first, "       ") {
				out = append(out, plain(l))
			}
		}
	}
	return out
}

type mode int

const (
	modeIdle       mode = iota // the input box waits for a prompt
	modeWorking                // spinner, footer offers esc to interrupt
	modeRetrying               // an API error retry countdown in the spinner's place
	modePermission             // a permission dialog replaces the input box
	modeQuestion               // a multiple-choice question replaces the input box
	modeGone                   // the program has quit or crashed: nothing live
)

// String names the mode, for Options.Inputs.
func (m mode) String() string {
	switch m {
	case modeIdle:
		return "idle"
	case modeWorking:
		return "working"
	case modeRetrying:
		return "retrying"
	case modePermission:
		return "permission"
	case modeQuestion:
		return "question"
	}
	return "gone"
}

// spinner is the working line: "✽ Orbiting… (2s · ↓ 22 tokens)".
type spinner struct {
	verb   string
	start  time.Time
	tokens int
	frame  int
	tip    string
}

var spinnerGlyphs = []string{"·", "✢", "✳", "✶", "✻", "✽", "✻", "✶", "✳", "✢"}

// retry is the countdown shown while Claude Code retries a failed request.
type retry struct {
	err      string // "API error", "500 Internal server error"
	attempt  int
	max      int
	until    time.Time // when the next attempt starts; zero: in flight
	inFlight bool
}

// option is one choice of a dialog.
type option struct {
	label string
	desc  string // questions: the line under the label
	note  string // permissions: grey text after the label
}

// dialog is a permission prompt or a question.
type dialog struct {
	// Permission: title ("Bash command"), the description and the command.
	title   string
	desc    string
	command string
	// Question: the chip ("Database") and the question.
	header   string
	question string
	options  []option
	cursor   int
	// typing is set while the "Type something." option takes text.
	typing bool
	typed  []rune
}

// taskView is a task as the panel shows it.
type taskView struct {
	subject string
	status  string
}

// pasted is a long or multi-line paste, shown in the input box as a marker.
type pasted struct{ marker, text string }

// model is everything on screen.
type model struct {
	title, subtitle, dir string
	history              []*block
	mode                 mode
	spin                 spinner
	retry                retry
	dialog               *dialog
	input                []rune
	pastes               int // pasted texts so far, for "[Pasted text #N]"
	pasted               []pasted
	placeholder          string // dim text in an empty input box
	footerNote           string // replaces the footer until footerUntil
	footerUntil          time.Time
	tasks                []taskView
	// panel shows the task list above the idle input box (after a turn that
	// finished; not after an interrupt, as Claude Code does).
	panel bool
}

// maxBlocks bounds the history kept: only the bottom of it is visible.
const maxBlocks = 200

func (m *model) add(b *block) *block {
	m.history = append(m.history, b)
	if n := len(m.history); n > maxBlocks {
		m.history = append([]*block(nil), m.history[n-maxBlocks:]...)
	}
	return b
}

func elapsed(d time.Duration) string {
	s := int(d.Seconds())
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh %dm", s/3600, s/60%60)
}

func tokens(n int) string {
	if n < 1000 {
		return fmt.Sprintf("%d", n)
	}
	return fmt.Sprintf("%.1fk", float64(n)/1000)
}

func taskGlyph(status string) string {
	switch status {
	case statusCompleted:
		return "✔"
	case statusInProgress:
		return "◼"
	}
	return "◻"
}

// panelLines is the task list drawn above the idle input box and under
// dialogs: "1/3 tasks done · 1 in progress" and a line per task.
func (m *model) panelLines(w int) []line {
	if len(m.tasks) == 0 {
		return nil
	}
	done, active := 0, 0
	for _, t := range m.tasks {
		switch t.status {
		case statusCompleted:
			done++
		case statusInProgress:
			active++
		}
	}
	head := fmt.Sprintf("  %d/%d tasks done", done, len(m.tasks))
	if active > 0 {
		head += fmt.Sprintf(" · %d in progress", active)
	}
	out := []line{mk(seg{colGrey, cut(head, w)})}
	for _, t := range m.tasks {
		st := ""
		if t.status == statusInProgress {
			st = attrBold
		}
		out = append(out, mk(seg{"", "  "}, seg{st, cut(taskGlyph(t.status)+" "+t.subject, w-2)}))
	}
	return out
}

func (m *model) rule(w int, style string) line {
	return mk(seg{style, strings.Repeat("─", max(w, 10))})
}

// inputBox is the two rules around the prompt line, and the footer. It
// returns the lines and the column of the caret on the prompt line.
func (m *model) inputBox(w int, now time.Time) ([]line, int) {
	text := string(m.input)
	var prompt line
	caret := 2 + width(text)
	switch {
	case text == "" && m.placeholder != "":
		prompt = mk(seg{colGrey, "❯" + nbsp}, seg{attrDim, cut(m.placeholder, w-2)})
		caret = 2
	default:
		shown := text
		if width(shown) > w-3 { // keep the end of a long input visible
			r := []rune(shown)
			shown = "…" + string(r[len(r)-(w-4):])
		}
		caret = 2 + width(shown)
		prompt = mk(seg{colGrey, "❯" + nbsp}, seg{"", shown}, seg{attrRev, " "})
	}
	footer := "⏸ manual mode on · ? for shortcuts"
	if m.mode == modeWorking || m.mode == modeRetrying {
		footer = "⏸ manual mode on · esc to interrupt"
	}
	if len(m.tasks) > 0 {
		footer += " · ctrl+t to hide tasks"
	}
	if m.footerNote != "" && now.Before(m.footerUntil) {
		footer = m.footerNote
	}
	return []line{m.rule(w, colRule), prompt, m.rule(w, colRule), mk(seg{"", "  "}, seg{colGrey, cut(footer, w-2)})}, caret
}

// live is everything below the history.
func (m *model) live(w int, now time.Time) (lines []line, caretRow, caretCol int) {
	caretRow = -1
	box := func() {
		b, col := m.inputBox(w, now)
		caretRow, caretCol = len(lines)+1, col
		lines = append(lines, b...)
	}
	switch m.mode {
	case modeWorking:
		s := m.spin
		glyph := spinnerGlyphs[s.frame%len(spinnerGlyphs)]
		stats := fmt.Sprintf("(%s · ↓ %s tokens)", elapsed(now.Sub(s.start)), tokens(s.tokens))
		lines = append(lines, plain(""), mk(seg{colOrange, glyph + " " + s.verb + "…"}, seg{"", " "}, seg{colGrey, stats}))
		if len(m.tasks) > 0 {
			for i, t := range m.tasks {
				prefix := "     "
				if i == 0 {
					prefix = "  ⎿  "
				}
				lines = append(lines, mk(seg{colGrey, prefix}, seg{"", cut(taskGlyph(t.status)+" "+t.subject, w-5)}))
			}
		} else if s.tip != "" {
			lines = append(lines, mk(seg{colGrey, cut("  ⎿  Tip: "+s.tip, w)}))
		}
		lines = append(lines, plain(""))
		box()
	case modeRetrying:
		r := m.retry
		when := "retrying…"
		if !r.inFlight {
			secs := int((r.until.Sub(now) + time.Second - 1) / time.Second)
			when = fmt.Sprintf("retrying in %ds", max(secs, 1))
		}
		lines = append(lines, plain(""), mk(seg{colOrange, "✻"}, seg{"", " "}, seg{colRed, cut(fmt.Sprintf("%s · %s · attempt %d/%d", r.err, when, r.attempt, r.max), w-2)}), plain(""))
		box()
	case modeIdle:
		if m.panel && len(m.tasks) > 0 {
			lines = append(lines, plain(""))
			lines = append(lines, m.panelLines(w)...)
		}
		lines = append(lines, plain(""))
		box()
	case modePermission:
		lines = append(lines, m.permissionLines(w)...)
	case modeQuestion:
		var row, col int
		var ql []line
		ql, row, col = m.questionLines(w)
		if row >= 0 {
			caretRow, caretCol = len(lines)+row, col
		}
		lines = append(lines, ql...)
	}
	return lines, caretRow, caretCol
}

func (m *model) permissionLines(w int) []line {
	d := m.dialog
	dash := mk(seg{colDash, strings.Repeat("╌", max(w, 10))})
	out := []line{
		m.rule(w, colBlue),
		mk(seg{"", " "}, seg{attrBold + ";" + colBlue, cut(d.title, w-1)}),
	}
	if d.desc != "" {
		out = append(out, mk(seg{"", " "}, seg{colGrey, cut(d.desc, w-1)}))
	}
	out = append(out, dash)
	for _, l := range wrap(d.command, w, " ", " ") {
		out = append(out, plain(l))
	}
	out = append(out, dash, plain(" This command requires approval"), plain(""), plain(" Do you want to proceed?"))
	for i, o := range d.options {
		label := fmt.Sprintf("%d. ", i+1)
		text := o.label
		if o.note != "" {
			text += " · " + o.note
		}
		text = cut(text, w-3-width(label))
		if i == d.cursor {
			out = append(out, mk(seg{"", " "}, seg{colBlue, "❯"}, seg{"", " "}, seg{colGrey, label}, seg{colBlue, text}))
		} else {
			out = append(out, mk(seg{"", "   "}, seg{colGrey, label}, seg{"", text}))
		}
	}
	out = append(out, plain(""), mk(seg{"", " "}, seg{colGrey, "Esc to cancel · Tab to amend"}))
	if p := m.panelLines(w); len(p) > 0 {
		out = append(out, plain(""))
		out = append(out, p...)
	}
	return out
}

// questionLines draws the AskUserQuestion dialog. The CLI adds "Type
// something." and, below a rule, "Chat about this" to the options given.
func (m *model) questionLines(w int) ([]line, int, int) {
	d := m.dialog
	out := []line{
		m.rule(w, colGrey),
		mk(seg{"38;5;16;48;5;153", " ☐ " + d.header + " "}),
		plain(""),
		mk(seg{attrBold + ";" + colWhite, cut(d.question, w)}),
		plain(""),
	}
	row, col := -1, 0
	n := len(d.options)
	for i, o := range d.options {
		num := fmt.Sprintf("%d.", i+1)
		label := o.label
		if i == n-2 && d.typing {
			label = string(d.typed)
			row, col = len(out), 5+width(label)
		}
		if i == n-1 {
			out = append(out, m.rule(w, colGrey))
		}
		if i == d.cursor {
			out = append(out, mk(seg{colBlue, "❯"}, seg{"", " "}, seg{colGrey, num}, seg{"", " "}, seg{colBlue, cut(label, w-5)}))
		} else {
			out = append(out, mk(seg{"", "  "}, seg{colGrey, num}, seg{"", " " + cut(label, w-5)}))
		}
		if o.desc != "" {
			out = append(out, mk(seg{"", "     "}, seg{colGrey, cut(o.desc, w-5)}))
		}
	}
	out = append(out, plain(""), mk(seg{colGrey, cut("Enter to select · ↑/↓ to navigate · Esc to cancel", w)}))
	if p := m.panelLines(w); len(p) > 0 {
		out = append(out, plain(""))
		out = append(out, p...)
	}
	return out, row, col
}

// header is the logo block at the top of a session.
func (m *model) header(w int) []line {
	return []line{
		mk(seg{colOrange, " ▐▛███▜▌"}, seg{"", "   "}, seg{attrBold, cut(m.title, w-11)}),
		mk(seg{colOrange, "▝▜█████▛▘"}, seg{"", "  "}, seg{colGrey, cut(m.subtitle, w-11)}),
		mk(seg{colOrange, "  ▘▘ ▝▝ "}, seg{"", "   "}, seg{colGrey, cut(m.dir, w-11)}),
	}
}

// render lays out the whole screen at w x h: the bottom h lines of the
// header, history and live area, top-aligned when they fit (as Ink draws).
// It returns the rows and the caret's row and column (row -1: no caret).
func (m *model) render(w, h int, now time.Time) ([]line, int, int) {
	w, h = max(w, 20), max(h, 5)
	all := m.header(w)
	for _, b := range m.history {
		if !b.attached {
			all = append(all, plain(""))
		}
		all = append(all, b.lines(w)...)
	}
	live, row, col := m.live(w, now)
	if row >= 0 {
		row += len(all)
	}
	all = append(all, live...)
	if len(all) > h {
		drop := len(all) - h
		all = all[drop:]
		row -= drop
	}
	if row < 0 {
		row = -1
	}
	return all, row, col
}
