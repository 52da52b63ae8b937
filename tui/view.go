package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"

	"github.com/system3-dev/system3/internal/api"
)

// layout gives each component its size for the window and the mode.
func (m *Model) layout() {
	if m.w <= 0 || m.h <= 0 {
		return
	}
	w := m.w
	body := m.h - m.headerHeight() - 2 // status line and help bar
	switch m.input {
	case inputFilter:
		m.filter.SetSize(w, 1)
		body--
	case inputCompose:
		// The box has room for a few lines, before the body does.
		ch := min(clamp(m.h/5, 3, 9)+1, max(2, body))
		m.compose.SetSize(w, ch)
		body -= ch
	case inputForm:
		fh := min(m.form.Height(), max(2, body))
		m.form.SetSize(w, fh)
		body -= fh
	}
	body = max(body, 0)
	m.overlay.SetSize(w, body)
	if p := m.openPanel(); p != nil {
		p.SetSize(w, body)
		return
	}
	if m.detail.zoomed {
		m.detail.SetSize(w, body)
		return
	}
	feedWant := clamp(len(m.feed.items)+1, 3, max(3, body/3))
	switch {
	case m.emptyState():
		// No sessions: the explanation takes the width; there is no detail.
		feedH := min(feedWant, body/3)
		m.table.SetSize(w, body-feedH)
		m.feed.SetSize(w, feedH)
		m.detail.SetSize(0, 0)
	case w >= wideAt:
		// The table and the wakes on the left, the detail on the right; the
		// wakes get what the table does not need.
		lw := clamp(w*11/20, 60, w-40)
		tableH := min(body, clamp(m.table.Len()+2, 4, max(4, body-feedWant)))
		m.table.SetSize(lw, tableH)
		m.feed.SetSize(lw, body-tableH)
		m.detail.SetSize(w-lw-1, body)
	default:
		// Stacked: the table, the detail, the wakes.
		feedH := clamp(len(m.feed.items)+1, 2, max(2, body/5))
		rest := body - feedH
		tableH := min(rest, clamp(m.table.Len()+2, 4, max(4, rest/2)))
		m.table.SetSize(w, tableH)
		m.feed.SetSize(w, feedH)
		m.detail.SetSize(w, max(0, rest-tableH))
	}
}

// emptyState: connected, and there is nothing to watch.
func (m *Model) emptyState() bool { return m.loaded && len(m.sessions) == 0 }

// View draws the header, the body, the open input, the status line and
// the help bar, exactly filling the window.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	top := m.headerLines()
	var body []string
	p := m.openPanel()
	switch {
	case m.showHelp:
		body = append(body, m.overlay.View())
	case p != nil:
		body = append(body, p.View())
	case m.detail.zoomed:
		body = append(body, m.detail.View())
	case m.w >= wideAt && !m.emptyState():
		left := append(splitLines(m.table.View()), splitLines(m.feed.View())...)
		right := splitLines(m.detail.View())
		sep := m.st.Section.Render("│")
		lpad, rpad := strings.Repeat(" ", m.table.w), strings.Repeat(" ", m.detail.w)
		rows := make([]string, max(len(left), len(right)))
		for i := range rows {
			l, r := lpad, rpad
			if i < len(left) {
				l = left[i]
			}
			if i < len(right) {
				r = right[i]
			}
			rows[i] = l + sep + r
		}
		body = append(body, strings.Join(rows, "\n"))
	default:
		body = append(body, m.table.View(), m.detail.View(), m.feed.View())
	}
	var panel string
	switch m.input {
	case inputFilter:
		panel = m.filter.View()
	case inputCompose:
		panel = m.compose.View()
	case inputForm:
		panel = m.form.View()
	}
	// The status line and the help bar stay at the bottom and the open
	// input above them, whatever the height; the body is cut to fit.
	foot := m.statusLine() + "\n" + m.helpBar()
	if m.h <= 2 {
		return frame(stack(m.w, m.h, foot), m.w)
	}
	parts := top
	bodyH := m.h - 2 - len(top) - len(splitLines(panel))
	if bodyH > 0 {
		parts = append(parts, stack(m.w, bodyH, slices.DeleteFunc(body, func(p string) bool { return p == "" })...))
	}
	if panel != "" {
		parts = append(parts, panel)
	}
	return frame(stack(m.w, m.h-2, parts...)+"\n"+foot, m.w)
}

// headerHeight is the number of header lines, without drawing them.
func (m *Model) headerHeight() int {
	if m.problem != "" || (!m.watch.up && m.watch.err != nil) || (!m.wakeS.up && m.wakeS.err != nil) {
		return 3
	}
	return 2
}

// headerLines: the server, wakes and MCP; the counts per state; and a
// problem line when the service reports one or cannot be reached.
func (m Model) headerLines() []string {
	st := m.st
	k1 := line1Key{w: m.w, server: m.serverName(), down: m.loaded && !m.running, need: m.feed.need, hasMCP: m.mcp != nil}
	if m.mcp != nil {
		k1.mcp = *m.mcp
	}
	if m.hosts != nil {
		k1.hosts, k1.hostsDown = *m.hosts, m.hostsDown
	}
	l1 := m.cache.line1.get(k1, func() string {
		sep := st.Dim.Render(" · ")
		l := st.Title.Render("system3") + sep + clean(k1.server)
		if k1.down {
			l += st.Problem.Render(" (not running)")
		}
		if n := k1.need; n > 0 {
			l += sep + st.Unacked.Render(api.NeedingPersonText(n))
		} else {
			l += sep + st.Dim.Render(api.NeedingPersonText(n))
		}
		if k1.hasMCP {
			if t := k1.mcp.text(); k1.mcp.Err != "" {
				l += sep + st.Problem.Render(t)
			} else {
				l += sep + t
			}
		}
		switch {
		case k1.hostsDown:
			l += sep + st.Problem.Render(k1.hosts)
		case k1.hosts != "":
			l += sep + k1.hosts
		}
		return fit(l, k1.w)
	})
	l2 := m.cache.line2.get(line2Key{w: m.w, rev: m.rev, n: len(m.sessions)}, func() string { return fit(m.countsLine(), m.w) })
	lines := []string{l1, l2}
	var probs []string
	for _, id := range []streamID{streamWatch, streamWakes} {
		s := m.stream(id)
		if !s.up && s.err != nil {
			wait := max(0, s.retryAt.Sub(m.now)).Round(time.Second)
			p := fmt.Sprintf("%s: %v; reconnecting (attempt %d", id, s.err, s.backoff.Failed())
			if wait > 0 {
				p += ", next in " + wait.String()
			}
			p += ")"
			if id == streamWatch && m.loaded {
				p += "; sessions as of " + m.syncedAt.Format("15:04:05")
			}
			probs = append(probs, p)
		}
	}
	if m.problem != "" {
		probs = append(probs, m.problem)
	}
	if len(probs) > 0 {
		lines = append(lines, fit(st.Problem.Render(truncate("⚠ "+clean(strings.Join(probs, "; ")), m.w)), m.w))
	}
	return lines
}

func (m Model) statusLine() string {
	s := m.status
	if s.text == "" {
		return strings.Repeat(" ", m.w)
	}
	style := m.st.status[s.level]
	if s.level == levelWake && m.now.Sub(s.at) < flashFor {
		style = m.st.flash
	}
	return fit(style.Render(truncate(s.text, m.w)), m.w)
}

// helpBar is the short help for what has the keyboard. In the main view
// and the zoomed preview, help and quit stay at the right end whatever
// the width; the keys before them are cut with an ellipsis.
func (m Model) helpBar() string {
	k := m.keys
	var bs, tail []key.Binding
	name := ""
	sel, ok := m.table.Selected()
	awaiting := ok && sel.State == api.AwaitingInput
	switch {
	case m.input == inputCompose:
		bs = m.compose.KeyMap().ShortHelp()
		name = fmt.Sprint("compose", m.compose.Picking())
	case m.input == inputForm:
		bs, name = m.form.KeyMap().ShortHelp(), "form"
	case m.input == inputFilter:
		bs, name = m.filter.KeyMap().ShortHelp(), "filter"
	case m.showHelp:
		bs, name = []key.Binding{k.App.Help, k.App.Quit}, "help"
	case m.openPanel() != nil:
		p := m.openPanel()
		bs, tail, name = p.ShortHelp(), []key.Binding{k.App.Help, k.App.Quit}, p.Name()
	case m.detail.zoomed:
		bs = m.detail.KeyMap().ShortHelp()
		if awaiting {
			bs = append(bs, k.Session.answerHelp()...)
		}
		bs = append(bs, k.Session.Compose, k.Session.Interrupt)
		tail = []key.Binding{k.App.Quit}
		name = fmt.Sprint("zoom", awaiting)
	case m.emptyState():
		bs = []key.Binding{k.App.Focus}
		tail = []key.Binding{k.App.Help, k.App.Quit}
		name = "empty"
	default:
		bs = m.table.KeyMap().ShortHelp()
		if awaiting {
			bs = append(bs, k.Session.answerHelp()...)
		}
		remind := ok && reminderOf(m.book.forPane(sel.Pane)) != nil
		if remind {
			bs = append(bs, k.Session.Remind)
		}
		bs = append(bs, k.Session.Compose, k.Session.Zoom, k.Session.Interrupt, k.Wakes.Ack, k.App.Focus, k.App.Filter)
		if m.query != "" {
			bs = append(bs, k.App.ClearFilter)
		}
		tail = []key.Binding{k.App.Help, k.App.Quit}
		name = fmt.Sprint("main", awaiting, remind, m.query != "")
	}
	return m.cache.help.get(fmt.Sprint(name, m.w), func() string { return m.renderHelp(bs, tail) })
}

func (m Model) renderHelp(bs, tail []key.Binding) string {
	h := m.help
	var text string
	if len(tail) > 0 {
		right := h.ShortHelpView(tail)
		text = shortHelp(h, bs, m.w-width(right)-width(h.ShortSeparator)) + h.Styles.ShortSeparator.Render(h.ShortSeparator) + right
	} else {
		text = shortHelp(h, bs, m.w)
	}
	return fit(text, m.w)
}

// countsLine counts the panes per state, in the order of api.AllStates,
// as compactly as the width needs: "⏸ 2 awaiting", "⏸2 awaiting", "⏸2".
func (m Model) countsLine() string {
	st := m.st
	if len(m.sessions) == 0 {
		return st.Dim.Render("no panes")
	}
	total := fmt.Sprintf("%d %s", len(m.sessions), plural(len(m.sessions), "pane", "panes"))
	forms := []struct {
		format, sep string
	}{{"%s %d %s", "  "}, {"%s %d %s", " "}, {"%s%d %s", " "}, {"%s%d", " "}}
	for i, f := range forms {
		plain, styled := total, total
		for _, s := range api.AllStates() {
			if n := m.counts[s]; n > 0 {
				l := lookOf(s)
				var item string
				if strings.Count(f.format, "%") == 3 {
					item = fmt.Sprintf(f.format, l.sym, n, l.word)
				} else {
					item = fmt.Sprintf(f.format, l.sym, n)
				}
				plain += f.sep + item
				styled += f.sep + st.badgeStyle(s, false).Render(item)
			}
		}
		if cost := m.totalCost(); cost > 0 && width(plain+"  ≈ "+dollars(cost)) <= m.w {
			plain += "  ≈ " + dollars(cost)
			styled += st.Dim.Render("  ≈ " + dollars(cost))
		}
		if width(plain) <= m.w || i == len(forms)-1 {
			return styled
		}
	}
	return ""
}

// totalCost is the estimated cost of every session's usage so far.
func (m Model) totalCost() float64 {
	var c float64
	for _, s := range m.sessions {
		if s.Usage != nil {
			c += s.Usage.CostUSD
		}
	}
	return c
}

// shortHelp renders bindings in at most w cells. bubbles/help cuts with an
// ellipsis, but lets an item through when not even the ellipsis fits, so
// the last items are dropped here until the line fits.
func shortHelp(h help.Model, bs []key.Binding, w int) string {
	h.Width = max(1, w)
	for n := len(bs); n > 0; n-- {
		if s := h.ShortHelpView(bs[:n]); width(s) <= w {
			return s
		}
	}
	return ""
}

// viewCaches keep the header lines between frames.
type viewCaches struct {
	line1 viewCache[line1Key]
	line2 viewCache[line2Key]
	help  viewCache[string]
}

type line1Key struct {
	w      int
	server string
	down   bool
	// need: the wakes that need a person (api.NeedingPerson).
	need   int
	hasMCP bool
	mcp    MCPStatus
	// hosts is the hosts item (hostsText); hostsDown: in the problem style.
	hosts     string
	hostsDown bool
}

type line2Key struct {
	w   int
	rev uint64
	n   int
}
