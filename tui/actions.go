package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
)

func (m *Model) setStatus(level statusLevel, text string) {
	m.status = status{text: text, level: level, at: m.now}
}

func (m *Model) closeInput() {
	switch m.input {
	case inputCompose:
		m.compose.Close()
	case inputFilter:
		m.filter.Close()
	case inputForm:
		m.form.Close()
	}
	m.input = inputNone
}

// selected is the session the keys act on.
func (m *Model) selected() (api.Session, bool) {
	s, ok := m.table.Selected()
	if !ok {
		m.setStatus(levelWarn, "no session selected")
	}
	return s, ok
}

// key handles a key press: the open input or overlay first, then the
// zoomed preview, then the main view.
func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if key.Matches(msg, k.App.ForceQuit) {
		return m.quit()
	}
	switch m.input {
	case inputCompose:
		var cmd tea.Cmd
		m.compose, cmd = m.compose.Update(msg)
		return cmd
	case inputFilter:
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		m.setQuery(m.filter.Value())
		return cmd
	case inputForm:
		var cmd tea.Cmd
		m.form, cmd = m.form.Update(msg)
		return cmd
	}
	// Keys typed faster than the terminal is read arrive as one message
	// ("qq"); outside a text box each is a command of its own.
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
		cmds := make([]tea.Cmd, 0, len(msg.Runes))
		for _, r := range msg.Runes {
			cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
		}
		return tea.Batch(cmds...)
	}
	if m.showHelp {
		switch {
		case key.Matches(msg, k.App.Quit):
			return m.quit()
		case key.Matches(msg, k.App.Help, k.App.ClearFilter):
			m.showHelp = false
		}
		return nil
	}
	if cmd, ok := m.panelKey(msg); ok {
		return cmd
	}
	if m.detail.zoomed {
		switch {
		case key.Matches(msg, k.Zoom.Back):
			m.detail.Zoom(false)
			return nil
		case key.Matches(msg, k.Zoom.Up, k.Zoom.Down, k.Zoom.PageUp, k.Zoom.PageDown, k.Zoom.Top, k.Zoom.Bottom):
			var cmd tea.Cmd
			m.detail, cmd = m.detail.Update(msg)
			return cmd
		case key.Matches(msg, k.App.Focus, k.App.Filter):
			return nil // the lists are hidden; the session keys below still work
		}
	}
	for _, b := range m.mainKeys() {
		if key.Matches(msg, b.keys...) {
			return b.do(msg)
		}
	}
	return nil
}

// keyAction is what a key of the main view does.
type keyAction struct {
	keys []key.Binding
	do   func(tea.KeyMsg) tea.Cmd
}

// mainKeys are the main view's keys, in the order they are tried: each
// binding with its action, as the help overlay describes them (keys.go).
func (m *Model) mainKeys() []keyAction {
	k := m.keys
	on := func(do func() tea.Cmd, keys ...key.Binding) keyAction {
		return keyAction{keys: keys, do: func(tea.KeyMsg) tea.Cmd { return do() }}
	}
	return []keyAction{
		on(m.quit, k.App.Quit),
		on(func() tea.Cmd { m.showHelp = true; return nil }, k.App.Help),
		on(m.switchFocus, k.App.Focus),
		on(func() tea.Cmd { m.showHelp = false; return m.openSpawn() }, k.App.Spawn),
		on(m.openLink, k.Session.Link),
		on(m.openStop, k.Session.Stop),
		on(m.openFinish, k.Session.Finish),
		on(func() tea.Cmd { m.showHelp = false; return m.restoreAll() }, k.App.Restore),
		on(m.openFilter, k.App.Filter),
		on(m.clearFilter, k.App.ClearFilter),
		{keys: []key.Binding{k.Nav.Up, k.Nav.Down, k.Nav.Top, k.Nav.Bottom}, do: m.navigate},
		on(m.zoom, k.Session.Zoom),
		on(m.openCompose, k.Session.Compose),
		{keys: []key.Binding{k.Session.Answer}, do: func(msg tea.KeyMsg) tea.Cmd { return m.answer(msg.String()) }},
		on(func() tea.Cmd { return m.answer("yes") }, k.Session.Yes),
		on(func() tea.Cmd { return m.answer("no") }, k.Session.No),
		on(m.interrupt, k.Session.Interrupt),
		on(m.jump, k.Session.Jump),
		on(m.remind, k.Session.Remind),
		on(m.ack, k.Wakes.Ack),
		on(m.ackAll, k.Wakes.AckAll),
	}
}

// switchFocus moves the keys between the sessions and the wakes.
func (m *Model) switchFocus() tea.Cmd {
	if m.focus == focusSessions {
		m.focus = focusWakes
		m.followWake()
	} else {
		m.focus = focusSessions
	}
	m.table.focused, m.feed.focused = m.focus == focusSessions, m.focus == focusWakes
	return nil
}

func (m *Model) openFilter() tea.Cmd {
	m.input = inputFilter
	m.showHelp = false
	return m.filter.Open(m.query)
}

func (m *Model) clearFilter() tea.Cmd {
	if m.query != "" {
		m.filter.Reset()
		m.setQuery("")
		m.setStatus(levelInfo, "filter cleared")
	}
	return nil
}

// navigate moves the selection of the focused list.
func (m *Model) navigate(msg tea.KeyMsg) tea.Cmd {
	if m.focus == focusWakes {
		m.feed, _ = m.feed.Update(msg)
		m.followWake()
	} else {
		m.table, _ = m.table.Update(msg)
	}
	return nil
}

func (m *Model) zoom() tea.Cmd {
	if _, ok := m.selected(); !ok {
		return nil
	}
	m.detail.Zoom(true) // sync opens the stream again, with scrollback
	return nil
}

func (m *Model) openCompose() tea.Cmd {
	s, ok := m.selected()
	if !ok {
		return nil
	}
	m.input = inputCompose
	return m.compose.Open(s, slices.Clone(m.history))
}

func (m *Model) interrupt() tea.Cmd {
	s, ok := m.selected()
	if !ok {
		return nil
	}
	m.setStatus(levelInfo, "interrupting "+clean(s.Target)+"…")
	return interrupt(m.ctx, m.svc, s)
}

func (m *Model) jump() tea.Cmd {
	s, ok := m.selected()
	if !ok {
		return nil
	}
	if m.opts.Jump == nil || s.Host != "" {
		// Another host's pane is reached through ssh, from a terminal.
		m.setStatus(levelInfo, "attach with: "+m.attachHint(s))
		return nil
	}
	return jump(m.opts.Jump, s)
}

func (m *Model) ackAll() tea.Cmd {
	if !slices.ContainsFunc(m.feed.items, func(it feedItem) bool { return !it.ev.Acked }) {
		m.setStatus(levelInfo, "no unacknowledged wakes")
		return nil
	}
	return ackAll(m.ctx, m.svc)
}

// followWake selects the session of the selected wake, when it is listed.
func (m *Model) followWake() {
	if it, ok := m.feed.Selected(); ok {
		m.table.Select(it.ev.Pane)
	}
}

func (m *Model) quit() tea.Cmd {
	m.stop()
	return tea.Quit
}

// answer answers the selected session's prompt with one key.
func (m *Model) answer(ans string) tea.Cmd {
	s, ok := m.selected()
	if !ok {
		return nil
	}
	if s.State != api.AwaitingInput {
		m.setStatus(levelWarn, fmt.Sprintf("%s is %s, not waiting at a prompt; i sends it a message", clean(s.Target), badge(s.State)))
		return nil
	}
	if at, busy := m.answered[s.Pane]; busy && m.now.Sub(at) < answerHold {
		m.setStatus(levelWarn, "waiting for "+clean(s.Target)+" to take the last answer")
		return nil
	}
	m.answered[s.Pane] = m.now
	m.setStatus(levelInfo, "answering "+clean(s.Target)+": "+ans+"…")
	return answer(m.ctx, m.svc, s, ans)
}

// ack acknowledges the selected wake (focus on wakes) or the newest
// unacknowledged wake of the selected session.
func (m *Model) ack() tea.Cmd {
	if m.focus == focusWakes {
		it, ok := m.feed.Selected()
		switch {
		case !ok:
			m.setStatus(levelInfo, "no wake selected")
			return nil
		case it.ev.Acked:
			m.setStatus(levelInfo, "that wake is already acknowledged")
			return nil
		}
		return ack(m.ctx, m.svc, it.ev.ID)
	}
	s, ok := m.selected()
	if !ok {
		return nil
	}
	for _, it := range m.book.forPane(s.Pane) {
		if !it.ev.Acked {
			return ack(m.ctx, m.svc, it.ev.ID)
		}
	}
	m.setStatus(levelInfo, "no unacknowledged wake for "+clean(s.Target))
	return nil
}

// reminder is the reminder `r` sends: the selected wake's (focus on
// wakes), else the newest of the selected session's wakes whose loop is
// still on.
func (m *Model) reminder() (api.Session, api.Reminder, bool) {
	if m.focus == focusWakes {
		if it, ok := m.feed.Selected(); ok && it.ev.Reminder != nil {
			// Selecting a wake selects its session, when it is listed.
			s, ok := m.table.Selected()
			if !ok || s.Pane != it.ev.Pane {
				s = api.Session{Pane: it.ev.Pane, Session: it.ev.Session, Target: it.ev.Session}
			}
			return s, *it.ev.Reminder, true
		}
	}
	s, ok := m.table.Selected()
	if !ok {
		return api.Session{}, api.Reminder{}, false
	}
	if r := reminderOf(m.book.forPane(s.Pane)); r != nil {
		return s, *r, true
	}
	return s, api.Reminder{}, false
}

// reminderOf is the newest reminder among a pane's wakes (newest first)
// whose condition still holds.
func reminderOf(items []feedItem) *api.Reminder {
	for _, it := range items {
		if it.ev.Reminder != nil && !it.ev.Resolved {
			return it.ev.Reminder
		}
	}
	return nil
}

// remind sends the reminder of the loop detected in the selected session.
func (m *Model) remind() tea.Cmd {
	s, r, ok := m.reminder()
	if !ok {
		if s.Pane == "" {
			m.setStatus(levelWarn, "no session selected")
		} else {
			m.setStatus(levelInfo, "no reminder for "+clean(s.Target)+": system3 has detected no loop there")
		}
		return nil
	}
	m.setStatus(levelInfo, "sending the "+clean(r.Pattern)+" reminder to "+clean(s.Target)+"…")
	return remind(m.ctx, m.svc, s, r)
}

func (m *Model) onAction(msg actionMsg) {
	target := msg.target
	if msg.res.Target != "" {
		target = msg.res.Target
	}
	target = clean(target)
	if msg.err != nil {
		if msg.action == "answer" {
			delete(m.answered, msg.pane)
		}
		verb := map[string]string{"inject": "not sent to", "remind": "reminder not sent to", "answer": "no answer sent to", "interrupt": "could not interrupt"}[msg.action]
		m.setStatus(levelError, "✖ "+verb+" "+target+": "+clean(msg.err.Error()))
		return
	}
	keys := strings.Join(msg.res.Keys, " ")
	switch msg.action {
	case "inject":
		switch {
		case msg.res.Verified:
			m.setStatus(levelOK, "sent to "+target+" ✓ verified")
		case msg.res.Delivered:
			d := clean(msg.res.Detail)
			if d == "" {
				d = "the pane did not visibly take the text"
			}
			m.setStatus(levelWarn, "delivered to "+target+", not verified: "+d)
		default:
			m.setStatus(levelError, "✖ not delivered to "+target+": "+clean(msg.res.Detail))
		}
	case "remind":
		switch {
		case !msg.res.Delivered:
			m.setStatus(levelError, "✖ reminder not delivered to "+target+": "+clean(msg.res.Detail))
		case msg.note != nil:
			m.setStatus(levelWarn, "reminder sent to "+target+", but its effect will not be measured: "+clean(msg.note.Error()))
		case msg.res.Verified:
			m.setStatus(levelOK, clean(msg.what)+" reminder sent to "+target+" ✓ verified; system3 measures whether it works")
		default:
			m.setStatus(levelWarn, clean(msg.what)+" reminder delivered to "+target+", not verified: "+clean(msg.res.Detail))
		}
	case "answer":
		what := "“" + msg.what + "”"
		if o := clean(msg.res.Option); o != "" {
			what = "“" + o + "”"
		}
		m.setStatus(levelOK, "answered "+target+" (keys "+keys+"): "+what)
	case "interrupt":
		m.setStatus(levelOK, "interrupted "+target+" (keys "+keys+")")
	}
}

func (m *Model) onAck(msg ackMsg) {
	for _, ev := range msg.evs {
		if ev.ID != "" {
			m.book.apply(api.WakeMessage{Kind: api.WakeAcked, Event: ev})
			m.dirtyWakes = true
		}
	}
	switch {
	case msg.err != nil:
		m.setStatus(levelError, "✖ ack failed: "+clean(msg.err.Error()))
	case msg.all && len(msg.evs) == 0:
		m.setStatus(levelInfo, "no unacknowledged wakes")
	case msg.all:
		m.setStatus(levelOK, fmt.Sprintf("acknowledged %d %s", len(msg.evs), plural(len(msg.evs), "wake", "wakes")))
	case len(msg.evs) == 1:
		ev := msg.evs[0]
		m.setStatus(levelOK, "acknowledged "+string(ev.Reason)+" for "+m.where(ev))
	}
}
