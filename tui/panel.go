package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// A panel takes the dashboard's body while it is open, as the learnings
// do. The root draws the open panel in place of the sessions, sizes it,
// shows its keys in the help bar and hands it every key while it is open
// (help and quit still work unless the panel takes the key); each panel
// reads its own messages. A new panel is its own file, one field and one
// entry in Model.panels (model.go), and its keys (keys.go).
type panel interface {
	// OpenKey is the key of the main view that opens the panel.
	OpenKey(k keyMap) key.Binding
	// Open opens the panel; it may refuse, saying why in the status line.
	Open(m *Model) tea.Cmd
	IsOpen() bool
	// Key handles a key while the panel is open; handled is false for a
	// key that is not the panel's.
	Key(m *Model, msg tea.KeyMsg) (cmd tea.Cmd, handled bool)
	// Receive handles a message meant for the panel (its data, read off
	// the UI goroutine); ok is false for any other message.
	Receive(m *Model, msg tea.Msg) (cmd tea.Cmd, ok bool)
	View() string
	SetSize(w, h int)
	// Name tells the help bar's cache which keys it shows.
	Name() string
	ShortHelp() []key.Binding
}

// openPanel is the panel open, or nil.
func (m *Model) openPanel() panel {
	for _, p := range m.panels() {
		if p.IsOpen() {
			return p
		}
	}
	return nil
}

// panelKey hands a key to the open panel, or opens the panel whose key it
// is; ok is false when no panel took it.
func (m *Model) panelKey(msg tea.KeyMsg) (cmd tea.Cmd, ok bool) {
	k := m.keys
	if p := m.openPanel(); p != nil {
		if cmd, handled := p.Key(m, msg); handled {
			return cmd, true
		}
		switch {
		case key.Matches(msg, k.App.Quit):
			return m.quit(), true
		case key.Matches(msg, k.App.Help):
			m.showHelp = true
		}
		return nil, true
	}
	for _, p := range m.panels() {
		if key.Matches(msg, p.OpenKey(k)) {
			return p.Open(m), true
		}
	}
	return nil, false
}

// panelMsg hands a message to the panel it is meant for.
func (m *Model) panelMsg(msg tea.Msg) (tea.Cmd, bool) {
	for _, p := range m.panels() {
		if cmd, ok := p.Receive(m, msg); ok {
			return cmd, true
		}
	}
	return nil, false
}
