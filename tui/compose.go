package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
)

type (
	// composeSendMsg: the operator sent text to the pane the box was
	// opened for.
	composeSendMsg struct {
		sess api.Session
		text string
	}
	// composeCloseMsg: the operator closed the box without sending.
	composeCloseMsg struct{}
)

// compose is the box for guidance to one pane: a multi-line text area with
// the messages sent in this run a key away, and saved templates.
type compose struct {
	st    *styles
	keys  composeKeys
	pkeys pickerKeys

	ta   textarea.Model
	sess api.Session
	w, h int

	// hist holds the messages sent in this run, oldest first; idx is the
	// one shown (len(hist): the draft, kept in draft while recalling).
	hist  []string
	idx   int
	draft string

	templates []Template
	picking   bool
	pick      int
}

func newCompose(st *styles, keys composeKeys, pkeys pickerKeys, templates []Template) compose {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = "┃ "
	ta.Placeholder = "Guidance for the agent. enter sends; alt+enter or ctrl+j starts a new line."
	ta.CharLimit = 0
	ta.MaxHeight = 0
	ta.MaxWidth = 0
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys(keys.Newline.Keys()...))
	// ctrl+t picks a template here, it does not transpose.
	ta.KeyMap.TransposeCharacterBackward = key.NewBinding(key.WithDisabled())
	ta.Cursor.SetMode(cursor.CursorStatic)
	st.styleTextarea(&ta)
	return compose{st: st, keys: keys, pkeys: pkeys, ta: ta, templates: templates}
}

// Open starts a message to sess, with hist the messages sent so far.
func (c *compose) Open(sess api.Session, hist []string) tea.Cmd {
	c.sess = sess
	c.hist = hist
	c.idx = len(hist)
	c.draft = ""
	c.picking, c.pick = false, 0
	c.ta.Reset()
	return c.ta.Focus()
}

// Close drops the text and the focus.
func (c *compose) Close() {
	c.ta.Reset()
	c.ta.Blur()
	c.picking = false
}

// Value is the text as typed.
func (c compose) Value() string { return c.ta.Value() }

// Target is the session the box writes to.
func (c compose) Target() api.Session { return c.sess }

// Picking reports whether the template picker is open.
func (c compose) Picking() bool { return c.picking }

func (c *compose) SetSize(w, h int) {
	c.w, c.h = w, h
	c.ta.SetWidth(max(1, w))
	c.ta.SetHeight(max(1, h-1))
}

// Update edits the text, recalls history, picks templates, and reports a
// send or a cancel as a message.
func (c compose) Update(msg tea.Msg) (compose, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		// Paste results and the like belong to the text area.
		var cmd tea.Cmd
		c.ta, cmd = c.ta.Update(msg)
		return c, cmd
	}
	if c.picking {
		return c.updatePicker(km), nil
	}
	switch {
	case key.Matches(km, c.keys.Send):
		text := c.ta.Value()
		if strings.TrimSpace(text) == "" {
			return c, nil
		}
		sess := c.sess
		return c, func() tea.Msg { return composeSendMsg{sess: sess, text: text} }
	case key.Matches(km, c.keys.Cancel):
		return c, func() tea.Msg { return composeCloseMsg{} }
	case key.Matches(km, c.keys.Template):
		c.picking, c.pick = true, 0
		return c, nil
	case key.Matches(km, c.keys.Prev) && c.atTop() && c.idx > 0:
		if c.idx == len(c.hist) {
			c.draft = c.ta.Value()
		}
		c.idx--
		c.ta.SetValue(c.hist[c.idx])
		return c, nil
	case key.Matches(km, c.keys.Next) && c.atBottom() && c.idx < len(c.hist):
		c.idx++
		if c.idx == len(c.hist) {
			c.ta.SetValue(c.draft)
		} else {
			c.ta.SetValue(c.hist[c.idx])
		}
		return c, nil
	}
	var cmd tea.Cmd
	c.ta, cmd = c.ta.Update(km)
	return c, cmd
}

// atTop: the cursor is on the first row, where up recalls history.
func (c compose) atTop() bool { return c.ta.Line() == 0 && c.ta.LineInfo().RowOffset == 0 }

// atBottom: the cursor is on the last row, where down recalls history.
func (c compose) atBottom() bool {
	li := c.ta.LineInfo()
	return c.ta.Line() == c.ta.LineCount()-1 && li.RowOffset >= li.Height-1
}

func (c compose) updatePicker(km tea.KeyMsg) compose {
	switch {
	case key.Matches(km, c.pkeys.Up):
		c.pick--
	case key.Matches(km, c.pkeys.Down):
		c.pick++
	case key.Matches(km, c.pkeys.Choose):
		if c.pick >= 0 && c.pick < len(c.templates) {
			c.ta.InsertString(c.templates[c.pick].Text)
		}
		c.picking = false
	case key.Matches(km, c.pkeys.Back):
		c.picking = false
	}
	c.pick = clamp(c.pick, 0, max(0, len(c.templates)-1))
	return c
}

// KeyMap is the box's keys, or the template picker's while it is open.
func (c compose) KeyMap() help.KeyMap {
	if c.picking {
		return c.pkeys
	}
	return c.keys
}

func (c compose) View() string {
	if c.w <= 0 || c.h <= 0 {
		return ""
	}
	s := c.sess
	if c.picking {
		return c.pickerView()
	}
	title := "message to " + clean(s.Target) + " (" + clean(agentName(s)) + ", " + badge(s.State) + ")"
	if c.idx < len(c.hist) {
		title += " · sent message " + strconv.Itoa(c.idx+1) + " of " + strconv.Itoa(len(c.hist))
	}
	lines := []string{sectionTitle(c.st, title, c.w, true)}
	lines = append(lines, splitLines(c.ta.View())...)
	return block(lines, c.w, c.h)
}

func (c compose) pickerView() string {
	lines := []string{sectionTitle(c.st, "templates", c.w, true)}
	if len(c.templates) == 0 {
		lines = append(lines, c.st.Dim.Render("  No templates saved. Add them under dashboard.templates in config.yaml (name and text)."))
		return block(lines, c.w, c.h)
	}
	nameW := 0
	for _, t := range c.templates {
		nameW = max(nameW, width(clean(t.Name)))
	}
	nameW = min(nameW, 24)
	n := max(1, c.h-1)
	first := clamp(c.pick-n+1, 0, max(0, len(c.templates)-n))
	for i := first; i < len(c.templates) && i < first+n; i++ {
		t := c.templates[i]
		text := clean(strings.ReplaceAll(t.Text, "\n", " ⏎ "))
		if i == c.pick {
			lines = append(lines, c.st.Selected.Render(fit("▸ "+fit(clean(t.Name), nameW)+"  "+text, c.w)))
			continue
		}
		lines = append(lines, "  "+fit(clean(t.Name), nameW)+"  "+c.st.Dim.Render(text))
	}
	return block(lines, c.w, c.h)
}
