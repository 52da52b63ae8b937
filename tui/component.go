package tui

import (
	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
)

// component is what each part of the dashboard is: the sessions table,
// the wake feed, the detail pane and the three inputs (compose, filter,
// form). Update takes the keys the root hands it (only the focused list,
// the open input or the zoomed detail gets them) and the messages meant
// for it, and returns the component's new value, as Bubble Tea components
// do; View draws it; the root sizes it with SetSize on every resize;
// KeyMap is what it takes now, its part of the one key map (keys.go),
// from which the root draws the help bar while it has the keyboard. Views
// that take the whole body while open are panels (panel.go).
type component[T any] interface {
	Update(msg tea.Msg) (T, tea.Cmd)
	View() string
	SetSize(w, h int)
	KeyMap() help.KeyMap
}

var (
	_ component[sessionTable] = (*sessionTable)(nil)
	_ component[wakeFeed]     = (*wakeFeed)(nil)
	_ component[detail]       = (*detail)(nil)
	_ component[compose]      = (*compose)(nil)
	_ component[filterBox]    = (*filterBox)(nil)
	_ component[form]         = (*form)(nil)
)
