package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
)

type (
	// filterApplyMsg: keep the filter and select the first match.
	filterApplyMsg struct{}
	// filterClearMsg: drop the filter.
	filterClearMsg struct{}
)

// filterBox is the one-line filter input. The table narrows as it is
// typed in; the root reads Value after each key.
type filterBox struct {
	st   *styles
	keys filterKeys
	ti   textinput.Model
	w    int

	matches, total int
}

func newFilterBox(st *styles, keys filterKeys) filterBox {
	ti := textinput.New()
	ti.Prompt = "/ "
	ti.Placeholder = "session, agent, state or host:NAME"
	ti.CharLimit = 200
	ti.Cursor.SetMode(cursor.CursorStatic)
	st.styleTextinput(&ti)
	return filterBox{st: st, keys: keys, ti: ti}
}

// Open starts editing query.
func (f *filterBox) Open(query string) tea.Cmd {
	f.ti.SetValue(query)
	f.ti.CursorEnd()
	return f.ti.Focus()
}

// Close stops editing.
func (f *filterBox) Close() { f.ti.Blur() }

// Reset empties the input.
func (f *filterBox) Reset() { f.ti.Reset() }

// Value is the query as typed.
func (f filterBox) Value() string { return f.ti.Value() }

// SetCounts says how many sessions match, of how many.
func (f *filterBox) SetCounts(matches, total int) { f.matches, f.total = matches, total }

func (f *filterBox) SetSize(w, _ int) {
	f.w = w
	f.ti.Width = max(1, w-30)
}

// Update edits the query and reports apply and clear as messages.
func (f filterBox) Update(msg tea.Msg) (filterBox, tea.Cmd) {
	if km, ok := msg.(tea.KeyMsg); ok {
		switch {
		case key.Matches(km, f.keys.Apply):
			return f, func() tea.Msg { return filterApplyMsg{} }
		case key.Matches(km, f.keys.Clear):
			return f, func() tea.Msg { return filterClearMsg{} }
		}
	}
	var cmd tea.Cmd
	f.ti, cmd = f.ti.Update(msg)
	return f, cmd
}

// KeyMap is the filter's keys while it is typed.
func (f filterBox) KeyMap() help.KeyMap { return f.keys }

func (f filterBox) View() string {
	count := "  " + strconv.Itoa(f.matches) + " of " + strconv.Itoa(f.total) + " " + plural(f.total, "pane", "panes")
	return fit(f.ti.View()+f.st.Dim.Render(count), f.w)
}

// filterTerms splits a query into lower-case words; a session must match
// every one.
func filterTerms(query string) []string {
	return strings.Fields(strings.ToLower(query))
}

// matches reports whether every term occurs in the session's name (target,
// session or window), agent or command, or state (its name, its badge word,
// or its kind). A term host:NAME matches the sessions of that host (local:
// this machine's), by the start of its name.
func matches(s api.Session, terms []string) bool {
	if len(terms) == 0 {
		return true
	}
	hay := strings.ToLower(strings.Join([]string{s.Target, s.Session, s.Window, s.Pane, s.Agent, s.Command,
		string(s.State), lookOf(s.State).word, s.Kind}, "\x00"))
	for _, t := range terms {
		if h, ok := strings.CutPrefix(t, "host:"); ok {
			if !strings.HasPrefix(strings.ToLower(hostOf(s)), h) {
				return false
			}
			continue
		}
		if !strings.Contains(hay, t) {
			return false
		}
	}
	return true
}
