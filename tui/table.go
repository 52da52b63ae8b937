package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
)

// sessionRow is a session as the table holds it. rev changes whenever the
// session does, so a row rendered for one rev can be drawn again as is.
type sessionRow struct {
	sess api.Session
	rev  uint64
}

// sessionTable lists the sessions, one row each: target, agent, state,
// time in that state, task progress and what the pane shows.
type sessionTable struct {
	st   *styles
	keys navKeys

	rows           []sessionRow
	cursor, offset int
	w, h           int
	focused        bool
	now            time.Time
	// title heads the table ("Panes · 12", "Panes · 2 of 12 · filter: x"):
	// a row is a pane, counted as status counts panes.
	title string
	// empty is shown instead of rows when there are none.
	empty []string

	cols  columns
	cache *rowCache
	// ver changes with the rows and the size; the view is kept for it.
	ver  uint64
	view *viewCache[tableKey]
}

type tableKey struct {
	ver                  uint64
	cursor, offset, w, h int
	focused              bool
	sec                  int64
	title                string
}

// columns are the widths of the table's columns; 0 hides one.
type columns struct {
	host, target, agent, tasks, what int
}

// hostOf is a session's host for the host column: local for this
// machine's.
func hostOf(s api.Session) string {
	if s.Host == "" {
		return api.LocalHost
	}
	return s.Host
}

// targetIn is a session's target as the table shows it: without its
// HOST: prefix when the host column shows the host.
func targetIn(s api.Session, c columns) string {
	if c.host > 0 && s.Host != "" {
		_, target, _ := api.SplitHost(s.Target, func(h string) bool { return h == s.Host })
		return target
	}
	return s.Target
}

const (
	ageWidth = 5 // "2h05m"
	barCells = 5
	colGap   = "  "
)

// rowKey identifies a rendered row: the same session revision, width,
// selection and age draw the same string.
type rowKey struct {
	pane              string
	rev               uint64
	w                 int
	cols              columns
	selected, focused bool
	age               string
}

// rowCache keeps the rows drawn for the last frame, so a frame that
// changes one row (or none) renders one row (or none).
type rowCache struct {
	prev, cur map[rowKey]string
}

func newSessionTable(st *styles, keys navKeys) sessionTable {
	return sessionTable{st: st, keys: keys, cache: &rowCache{prev: map[rowKey]string{}, cur: map[rowKey]string{}}, view: &viewCache[tableKey]{}}
}

// SetSize sets the table's size, its title line included.
func (t *sessionTable) SetSize(w, h int) {
	if w != t.w {
		t.w = w
		t.cols = t.layout()
	}
	t.h = h
	t.scroll()
}

// SetEmpty sets the lines shown when there are no rows.
func (t *sessionTable) SetEmpty(lines []string) {
	t.empty = lines
	t.ver++
}

// SetRows replaces the rows, keeping the selection on the session in pane
// when it is still there.
func (t *sessionTable) SetRows(rows []sessionRow, pane string) {
	t.rows = rows
	t.ver++
	t.cols = t.layout()
	if i := t.index(pane); i >= 0 {
		t.cursor = i
	}
	t.cursor = clamp(t.cursor, 0, max(0, len(rows)-1))
	t.scroll()
}

func (t *sessionTable) index(pane string) int {
	if pane == "" {
		return -1
	}
	for i, r := range t.rows {
		if r.sess.Pane == pane {
			return i
		}
	}
	return -1
}

// Select moves the selection to the session in pane; false if it is not
// listed.
func (t *sessionTable) Select(pane string) bool {
	i := t.index(pane)
	if i < 0 {
		return false
	}
	t.cursor = i
	t.scroll()
	return true
}

// SelectFirst selects the first row.
func (t *sessionTable) SelectFirst() {
	t.cursor = 0
	t.scroll()
}

// Selected returns the selected session.
func (t sessionTable) Selected() (api.Session, bool) {
	if t.cursor < 0 || t.cursor >= len(t.rows) {
		return api.Session{}, false
	}
	return t.rows[t.cursor].sess, true
}

// Len is the number of rows.
func (t sessionTable) Len() int { return len(t.rows) }

// Update moves the selection.
func (t sessionTable) Update(msg tea.Msg) (sessionTable, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return t, nil
	}
	t.cursor = t.keys.step(km, t.cursor, len(t.rows))
	t.scroll()
	return t, nil
}

// visible is how many rows fit under the title and the column heads.
func (t sessionTable) visible() int { return max(0, t.h-2) }

// scroll keeps the selected row on screen.
func (t *sessionTable) scroll() {
	n := t.visible()
	if n <= 0 {
		t.offset = 0
		return
	}
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+n {
		t.offset = t.cursor - n + 1
	}
	t.offset = clamp(t.offset, 0, max(0, len(t.rows)-n))
}

// layout sizes the columns for the width: the target and agent columns as
// wide as their widest value (within limits), task progress only when some
// session has a task list, and what the pane shows in the rest. Narrow
// terminals lose the task column, then the agent column. The host column
// (only when some session is another host's) stays: without it targets
// would carry the HOST: prefix, which is as wide.
func (t sessionTable) layout() columns {
	var c columns
	tasks, hosts := false, false
	for _, r := range t.rows {
		if r.sess.Host != "" {
			hosts = true
		}
	}
	if hosts {
		c.host = 1 // targets lose their HOST: prefix
	}
	for _, r := range t.rows {
		c.host = max(c.host, width(clean(hostOf(r.sess))))
		c.target = max(c.target, width(clean(targetIn(r.sess, c))))
		c.agent = max(c.agent, width(clean(agentName(r.sess))))
		if r.sess.Tasks != nil {
			tasks = true
			c.tasks = max(c.tasks, len(progressText(r.sess.Tasks)))
		}
	}
	c.target = clamp(c.target, 6, 28)
	c.agent = clamp(c.agent, 5, 12)
	if hosts {
		c.host = clamp(c.host, 5, 12)
	} else {
		c.host = 0
	}
	if tasks {
		c.tasks += 1 + barCells
	}
	fixed := func() int {
		n := 2 + c.target + len(colGap) + badgeWidth + len(colGap) + ageWidth + len(colGap)
		if c.agent > 0 {
			n += c.agent + len(colGap)
		}
		if c.tasks > 0 {
			n += c.tasks + len(colGap)
		}
		if c.host > 0 {
			n += c.host + len(colGap)
		}
		return n
	}
	const minWhat = 16
	if fixed()+minWhat > t.w {
		c.tasks = 0
	}
	if fixed()+minWhat > t.w {
		c.agent = 0
	}
	if fixed()+minWhat > t.w {
		c.target = max(6, t.w-minWhat-(fixed()-c.target))
	}
	c.what = max(0, t.w-fixed())
	return c
}

// View draws the title, the column heads and the visible rows.
// KeyMap is the table's keys: moving the selection.
func (t sessionTable) KeyMap() help.KeyMap { return t.keys }

func (t sessionTable) View() string {
	if t.w <= 0 || t.h <= 0 {
		return ""
	}
	k := tableKey{ver: t.ver, cursor: t.cursor, offset: t.offset, w: t.w, h: t.h, focused: t.focused, sec: t.now.Unix(), title: t.title}
	return t.view.get(k, t.render)
}

func (t sessionTable) render() string {
	lines := make([]string, 0, t.h)
	lines = append(lines, sectionTitle(t.st, t.title, t.w, t.focused))
	if len(t.rows) == 0 {
		for _, l := range t.empty {
			lines = append(lines, "  "+l)
		}
		return block(lines, t.w, t.h)
	}
	lines = append(lines, t.st.Dim.Render(fit(t.head(), t.w)))
	c := t.cache
	for i := t.offset; i < len(t.rows) && i < t.offset+t.visible(); i++ {
		r := t.rows[i]
		k := rowKey{pane: r.sess.Pane, rev: r.rev, w: t.w, cols: t.cols, selected: i == t.cursor, focused: t.focused, age: since(t.now, r.sess.Since)}
		s, ok := c.cur[k]
		if !ok {
			if s, ok = c.prev[k]; !ok {
				s = t.row(r.sess, k.selected, k.age)
			}
			c.cur[k] = s
		}
		lines = append(lines, s)
	}
	// The rows of this frame become the ones the next frame may reuse.
	if len(c.cur) > 0 {
		c.prev, c.cur = c.cur, c.prev
		clear(c.cur)
	}
	return block(lines, t.w, t.h)
}

func (t sessionTable) head() string {
	c := t.cols
	var b strings.Builder
	b.WriteString("  ")
	if c.host > 0 {
		b.WriteString(fit("HOST", c.host) + colGap)
	}
	b.WriteString(fit("SESSION", c.target))
	if c.agent > 0 {
		b.WriteString(colGap + fit("AGENT", c.agent))
	}
	b.WriteString(colGap + fit("STATE", badgeWidth))
	b.WriteString(colGap + fitRight("FOR", ageWidth))
	if c.tasks > 0 {
		b.WriteString(colGap + fit("TASKS", c.tasks))
	}
	b.WriteString(colGap + "WHAT")
	return b.String()
}

// row draws one session. Text from panes is cleaned first: a pane must
// not be able to write escape sequences into the dashboard.
func (t sessionTable) row(s api.Session, selected bool, age string) string {
	c := t.cols
	st := t.st
	var b strings.Builder
	b.Grow(t.w * 2)
	text := func(x string) {
		if selected {
			b.WriteString(st.Selected.Render(x))
			return
		}
		b.WriteString(x)
	}
	marker := "  "
	if selected {
		marker = "▸ "
	}
	pre := marker
	if c.host > 0 {
		pre += fit(clean(hostOf(s)), c.host) + colGap
	}
	pre += fit(clean(targetIn(s, c)), c.target) + colGap
	if c.agent > 0 {
		pre += fit(clean(agentName(s)), c.agent) + colGap
	}
	text(pre)
	b.WriteString(st.badgeStyle(s.State, selected).Render(fit(badge(s.State), badgeWidth)))
	text(colGap + fitRight(age, ageWidth) + colGap)
	if c.tasks > 0 {
		if s.Tasks == nil {
			text(strings.Repeat(" ", c.tasks) + colGap)
		} else {
			p := progressText(s.Tasks)
			text(p + " ")
			done, todo := bar(s.Tasks.Completed, s.Tasks.Total, barCells)
			if selected {
				b.WriteString(st.Selected.Render(done + todo))
			} else {
				b.WriteString(st.BarDone.Render(done) + st.BarTodo.Render(todo))
			}
			text(strings.Repeat(" ", max(0, c.tasks-len(p)-1-barCells)) + colGap)
		}
	}
	text(fit(what(s), c.what))
	return b.String()
}

// agentName is the agent column: the agent, or the command when no agent
// was recognised.
func agentName(s api.Session) string {
	if s.Agent != "" {
		return s.Agent
	}
	if s.Command != "" {
		return s.Command
	}
	return "-"
}

// what is the one line that says what a session is about: its question
// when it waits, its error when it fails (the line the error rule matched,
// not whatever the screen ends with), the task in progress while it works,
// and only else the last line on screen.
func what(s api.Session) string {
	switch s.State {
	case api.AwaitingInput:
		if q := clean(s.Question); q != "" {
			return q
		}
		if s.Kind != "" {
			return s.Kind + " prompt"
		}
	case api.ErrorLoop:
		d := errorLine(s)
		if s.ErrorCount > 0 {
			return strconv.Itoa(s.ErrorCount) + "× " + d
		}
		return d
	case api.Error:
		return errorLine(s)
	case api.RateLimited:
		return limitLine(s)
	case api.Working:
		if t := s.Tasks; t != nil && len(t.InProgress) > 0 {
			now := "now: " + clean(t.InProgress[0])
			if n := len(t.InProgress) - 1; n > 0 {
				now += " (+" + strconv.Itoa(n) + ")"
			}
			return now
		}
	}
	return clean(s.LastLine)
}

// limitLine is what a session held by a usage limit shows: when it resets
// (a wall-clock time, so a cached row stays true; the detail counts
// down) and whether its CLI continues by itself then.
func limitLine(s api.Session) string {
	l := "usage limit"
	if !s.ResetsAt.IsZero() {
		l += ", resets " + s.ResetsAt.Local().Format("Mon 15:04")
	}
	if s.Kind == api.KindAutoResume {
		return l + " · continues by itself"
	}
	return l + " · will not continue by itself"
}

// errorLine is the error a failing session shows: the rule's detail, else
// the first line its evidence matched, else the last line on screen.
func errorLine(s api.Session) string {
	if d := clean(s.Detail); d != "" {
		return d
	}
	if len(s.Evidence.Lines) > 0 {
		if l := clean(s.Evidence.Lines[0]); l != "" {
			return l
		}
	}
	return clean(s.LastLine)
}

// progressText is "done/total".
func progressText(p *api.TaskProgress) string {
	return strconv.Itoa(p.Completed) + "/" + strconv.Itoa(p.Total)
}

// bar is a progress bar of n cells, as its done and to-do parts.
func bar(done, total, n int) (string, string) {
	filled := 0
	if total > 0 {
		filled = clamp(done*n/total, 0, n)
	}
	return strings.Repeat("▰", filled), strings.Repeat("▱", n-filled)
}

// sectionTitle is a section's title rule, heavy when the section has the
// focus (readable without colour too).
func sectionTitle(st *styles, title string, w int, focused bool) string {
	line, style := "─", st.Section
	if focused {
		line, style = "━", st.SectionOn
	}
	head := line + " " + title + " "
	head = truncate(head, w)
	return style.Render(head + strings.Repeat(line, max(0, w-width(head))))
}
