package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// keyMap is every key the dashboard takes, grouped by the component that
// handles it. The help bar, the help overlay and docs/keys.md are all
// rendered from it.
type keyMap struct {
	Nav     navKeys
	Session sessionKeys
	Wakes   wakeKeys
	App     appKeys
	Filter  filterKeys
	Compose composeKeys
	Picker  pickerKeys
	Zoom    zoomKeys
	Learn   learnKeys
	Form    formKeys
}

// navKeys move the selection in the sessions table and the wake feed.
type navKeys struct {
	Up, Down, Top, Bottom key.Binding
}

// sessionKeys act on the selected session.
type sessionKeys struct {
	Zoom, Compose, Answer, Yes, No, Interrupt, Jump, Link key.Binding
	// Remind sends the reminder of a detected behaviour pattern.
	Remind key.Binding
	// Stop stops the selected orchestrator, after a confirmation.
	Stop key.Binding
	// Finish shows the selected orchestrator's diff and asks what to do.
	Finish key.Binding
}

// wakeKeys acknowledge wakes.
type wakeKeys struct {
	Ack, AckAll key.Binding
}

// appKeys work in the main view.
type appKeys struct {
	Focus, Filter, ClearFilter, Learnings, Spawn, Help, Quit key.Binding
	// ForceQuit quits from anywhere, text inputs included.
	ForceQuit key.Binding
	// Restore brings back every orchestrator whose session is gone.
	Restore key.Binding
}

// filterKeys work while the filter is being typed.
type filterKeys struct {
	Apply, Clear key.Binding
}

// composeKeys work in the compose box.
type composeKeys struct {
	Send, Newline, Cancel, Prev, Next, Template key.Binding
}

// pickerKeys work in the template picker.
type pickerKeys struct {
	Up, Down, Choose, Back key.Binding
}

// formKeys work in the spawn, link and stop forms.
type formKeys struct {
	Submit, Next, Prev, Cancel key.Binding
}

// zoomKeys work while the preview is zoomed.
type zoomKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom, Back key.Binding
}

func newKeyMap() keyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return keyMap{
		Nav: navKeys{
			Up:     b([]string{"k", "up"}, "k/↑", "up"),
			Down:   b([]string{"j", "down"}, "j/↓", "down"),
			Top:    b([]string{"g", "home"}, "g", "first"),
			Bottom: b([]string{"G", "end"}, "G", "last"),
		},
		Session: sessionKeys{
			Zoom:      b([]string{"enter"}, "enter", "zoom"),
			Compose:   b([]string{"i"}, "i", "message"),
			Answer:    b([]string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, "1-9", "choose option"),
			Yes:       b([]string{"y"}, "y", "approve"),
			No:        b([]string{"n"}, "n", "decline"),
			Interrupt: b([]string{"x"}, "x", "interrupt"),
			Jump:      b([]string{"o"}, "o", "jump to pane"),
			Link:      b([]string{"t"}, "t", "link task list"),
			Remind:    b([]string{"r"}, "r", "send reminder"),
			Stop:      b([]string{"S"}, "S", "stop (orch-*)"),
			Finish:    b([]string{"F"}, "F", "finish (orch-*)"),
		},
		Wakes: wakeKeys{
			Ack:    b([]string{"a"}, "a", "ack"),
			AckAll: b([]string{"A"}, "A", "ack all"),
		},
		App: appKeys{
			Focus:       b([]string{"tab", "shift+tab"}, "tab", "switch list"),
			Filter:      b([]string{"/"}, "/", "filter"),
			ClearFilter: b([]string{"esc"}, "esc", "clear filter"),
			Learnings:   b([]string{"L"}, "L", "learnings"),
			Spawn:       b([]string{"s"}, "s", "spawn"),
			Help:        b([]string{"?"}, "?", "help"),
			Quit:        b([]string{"q", "ctrl+c"}, "q", "quit"),
			ForceQuit:   b([]string{"ctrl+c"}, "ctrl+c", "quit"),
			Restore:     b([]string{"R"}, "R", "restore"),
		},
		Filter: filterKeys{
			Apply: b([]string{"enter"}, "enter", "apply"),
			Clear: b([]string{"esc"}, "esc", "clear"),
		},
		Compose: composeKeys{
			Send:     b([]string{"enter"}, "enter", "send"),
			Newline:  b([]string{"alt+enter", "ctrl+j"}, "ctrl+j", "new line"),
			Cancel:   b([]string{"esc"}, "esc", "cancel"),
			Prev:     b([]string{"up"}, "↑", "older sent"),
			Next:     b([]string{"down"}, "↓", "newer sent"),
			Template: b([]string{"ctrl+t"}, "ctrl+t", "template"),
		},
		Picker: pickerKeys{
			Up:     b([]string{"k", "up"}, "k/↑", "up"),
			Down:   b([]string{"j", "down"}, "j/↓", "down"),
			Choose: b([]string{"enter"}, "enter", "insert"),
			Back:   b([]string{"esc", "ctrl+t"}, "esc", "back"),
		},
		Learn: learnKeys{
			Up:      b([]string{"k", "up"}, "k/↑", "scroll up"),
			Down:    b([]string{"j", "down"}, "j/↓", "scroll down"),
			Refresh: b([]string{"r"}, "r", "refresh"),
			Back:    b([]string{"esc", "L"}, "esc", "back"),
		},
		Form: formKeys{
			Submit: b([]string{"enter"}, "enter", "submit"),
			Next:   b([]string{"tab", "down"}, "tab", "next field"),
			Prev:   b([]string{"shift+tab", "up"}, "shift+tab", "previous field"),
			Cancel: b([]string{"esc"}, "esc", "cancel"),
		},
		Zoom: zoomKeys{
			Up:       b([]string{"k", "up"}, "k/↑", "scroll up"),
			Down:     b([]string{"j", "down"}, "j/↓", "scroll down"),
			PageUp:   b([]string{"pgup", "ctrl+b"}, "pgup", "page up"),
			PageDown: b([]string{"pgdown", "ctrl+f", " "}, "pgdn", "page down"),
			Top:      b([]string{"g", "home"}, "g", "top"),
			Bottom:   b([]string{"G", "end"}, "G", "bottom"),
			Back:     b([]string{"esc", "enter"}, "esc", "back"),
		},
	}
}

// ShortHelp and FullHelp make each group a help.KeyMap.

func (k navKeys) ShortHelp() []key.Binding { return []key.Binding{k.move()} }

// move stands for up and down in the help bar.
func (k navKeys) move() key.Binding {
	return key.NewBinding(key.WithKeys(append(k.Up.Keys(), k.Down.Keys()...)...), key.WithHelp("j/k", "move"))
}
func (k navKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom}}
}

func (k sessionKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Compose, k.Zoom, k.Interrupt, k.Jump}
}
func (k sessionKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Zoom, k.Compose, k.Answer, k.Yes, k.No, k.Interrupt, k.Jump, k.Link, k.Remind, k.Stop, k.Finish}}
}

// answerHelp is shown while the selected session waits at a prompt.
func (k sessionKeys) answerHelp() []key.Binding { return []key.Binding{k.Answer, k.Yes, k.No} }

func (k wakeKeys) ShortHelp() []key.Binding  { return []key.Binding{k.Ack, k.AckAll} }
func (k wakeKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

func (k appKeys) ShortHelp() []key.Binding { return []key.Binding{k.Focus, k.Filter, k.Help, k.Quit} }
func (k appKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Focus, k.Filter, k.ClearFilter, k.Spawn, k.Restore, k.Learnings, k.Help, k.Quit}}
}

func (k filterKeys) ShortHelp() []key.Binding  { return []key.Binding{k.Apply, k.Clear} }
func (k filterKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

func (k composeKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Send, k.Newline, k.Prev, k.Template, k.Cancel}
}
func (k composeKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Send, k.Newline, k.Cancel, k.Prev, k.Next, k.Template}}
}

func (k formKeys) ShortHelp() []key.Binding { return []key.Binding{k.Submit, k.Next, k.Cancel} }
func (k formKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Submit, k.Next, k.Prev, k.Cancel}}
}

func (k pickerKeys) ShortHelp() []key.Binding  { return []key.Binding{k.Up, k.Down, k.Choose, k.Back} }
func (k pickerKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

func (k zoomKeys) ShortHelp() []key.Binding {
	return []key.Binding{
		k.Back,
		key.NewBinding(key.WithKeys(append(k.Up.Keys(), k.Down.Keys()...)...), key.WithHelp("j/k", "scroll")),
		key.NewBinding(key.WithKeys(append(k.PageUp.Keys(), k.PageDown.Keys()...)...), key.WithHelp("pgup/pgdn", "page")),
	}
}
func (k zoomKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Back}}
}

// ShortHelp is the help bar of the main view.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Nav.Up, k.Nav.Down, k.App.Focus, k.Session.Zoom, k.Session.Compose,
		k.Session.Interrupt, k.Wakes.Ack, k.App.Filter, k.App.Help, k.App.Quit}
}

// FullHelp is every group, in the order of the help overlay.
func (k keyMap) FullHelp() [][]key.Binding {
	var out [][]key.Binding
	for _, s := range k.sections() {
		var bs []key.Binding
		for _, e := range s.keys {
			bs = append(bs, e.b)
		}
		out = append(out, bs)
	}
	return out
}

// keySection is one group of keys in the help overlay and docs/keys.md.
type keySection struct {
	title string
	// note explains when the keys apply, for docs/keys.md.
	note string
	// contextual sections are left out of the help overlay: the help bar
	// shows them while they apply.
	contextual bool
	keys       []keyDoc
}

// keyDoc is one binding with the longer description docs/keys.md gives it.
type keyDoc struct {
	b    key.Binding
	long string
}

// sections groups the key map for the help overlay and the docs.
func (k keyMap) sections() []keySection {
	return []keySection{
		{title: "Move", note: "In the sessions table and the wake feed; `tab` moves the focus between them.", keys: []keyDoc{
			{k.Nav.Up, "Select the previous row."},
			{k.Nav.Down, "Select the next row."},
			{k.Nav.Top, "Select the first row."},
			{k.Nav.Bottom, "Select the last row."},
			{k.App.Focus, "Move the focus between the sessions table and the wake feed. Selecting a wake selects its session."},
		}},
		{title: "Selected session", note: "Act on the selected session (in the wake feed: the wake's session).", keys: []keyDoc{
			{k.Session.Zoom, "Show the pane's live preview full screen, with scrollback."},
			{k.Session.Compose, "Write guidance to the pane in the compose box; it is typed into the pane and submitted."},
			{k.Session.Answer, "When the session waits at a prompt: choose that option (one key sends)."},
			{k.Session.Yes, "When the session waits at a prompt: approve (its Yes option)."},
			{k.Session.No, "When the session waits at a prompt: decline (Escape, or its No option)."},
			{k.Session.Interrupt, "Interrupt what the agent is doing (Escape, or Ctrl-C for aider and shells)."},
			{k.Session.Jump, "Switch your tmux client to the pane, or show the command that attaches to it."},
			{k.Session.Link, "Link the session to a task list (adopt an orchestrator started by hand); an empty id removes the link."},
			{k.Session.Remind, "When system3 detected a loop in the session (a behaviour pattern, shown as `remind` in the detail): type its reminder into the pane (your CLAUDE.md directive quoted, a suggestion, the expected outcome); system3 then measures whether it worked. In the wake feed: the selected wake's reminder."},
			{k.Session.Finish, "Finish the selected orchestrator (a session named `orch-NAME`): its diff against its base branch (stat, then the full diff) opens in the zoomed preview, and a form asks what to do: merge `ff` or `merge`, open a pull request (`pr`), or nothing, and whether to remove the worktree and branch afterwards, as `system3 finish` does (see docs/lifecycle.md). `esc` cancels; nothing is changed until the form is submitted."},
		}},
		{title: "Wakes", keys: []keyDoc{
			{k.Wakes.Ack, "Acknowledge the selected wake, or (focus on sessions) the newest unacknowledged wake of the selected session."},
			{k.Wakes.AckAll, "Acknowledge every unacknowledged wake."},
		}},
		{title: "Dashboard", keys: []keyDoc{
			{k.App.Filter, "Filter the sessions by name, agent or state as you type."},
			{k.App.ClearFilter, "Clear the filter."},
			{k.App.Learnings, "Show the learnings: capabilities, the most seen patterns and anti-patterns, and the recent outcomes (docs/learning.md)."},
			{k.App.Spawn, "Start an orchestrator: a form for the initiative, goal, repository, base, agent, task list and context (see docs/lifecycle.md)."},
			{k.Session.Stop, "Stop the selected session's orchestrator, when it is a spawned one (a session named `orch-NAME`): a confirmation asks whether to remove its worktree too (`y`; empty or `n` keeps it, and the branch is always kept), then its agent is interrupted and its tmux session killed, as `system3 stop NAME` does (see docs/lifecycle.md). Other sessions are not stopped from here; `x` interrupts them."},
			{k.App.Restore, "Restore every recorded orchestrator whose tmux session is gone (after tmux or the machine went down), resuming its agent's conversation, as `system3 restore --all` does; the status line says how many were restored, skipped and failed."},
			{k.App.Help, "Show or hide this help."},
			{k.App.Quit, "Quit (ctrl+c quits from anywhere)."},
		}},
		{title: "Filter", note: "While typing a filter. Every word must match a session's name, agent or state; host:NAME keeps the sessions of one host (local: this machine's).", keys: []keyDoc{
			{k.Filter.Apply, "Keep the filter and select the first match."},
			{k.Filter.Clear, "Clear the filter and close it."},
		}},
		{title: "Compose box", note: "While writing guidance.", keys: []keyDoc{
			{k.Compose.Send, "Send the message to the pane; the status line says whether the pane was seen to take it."},
			{k.Compose.Newline, "Insert a line break (alt+enter does the same)."},
			{k.Compose.Prev, "On the first line: recall the previous message sent in this run."},
			{k.Compose.Next, "On the last line: recall the next message sent in this run."},
			{k.Compose.Template, "Pick a saved template (`dashboard.templates` in config.yaml)."},
			{k.Compose.Cancel, "Close the box without sending."},
		}},
		{title: "Forms", note: "Opened with `s` (spawn), `t` (link), `S` (stop) and `F` (finish); the help bar shows these keys while a form is open.", contextual: true, keys: []keyDoc{
			{k.Form.Submit, "Submit: spawn the orchestrator (the status line follows its steps), link the session, stop the orchestrator (the status line says whether its worktree was kept or removed), or finish it as chosen."},
			{k.Form.Next, "Next field."},
			{k.Form.Prev, "Previous field."},
			{k.Form.Cancel, "Close the form without doing anything."},
		}},
		{title: "Template picker", note: "Opened with `ctrl+t` in the compose box.", contextual: true, keys: []keyDoc{
			{k.Picker.Up, "Previous template."},
			{k.Picker.Down, "Next template."},
			{k.Picker.Choose, "Insert the template into the message."},
			{k.Picker.Back, "Back to the message."},
		}},
		{title: "Learnings", note: "Opened with `L`; the help bar shows these keys there.", contextual: true, keys: []keyDoc{
			{k.Learn.Up, "Scroll up a line."},
			{k.Learn.Down, "Scroll down a line."},
			{k.Learn.Refresh, "Read the learning store again."},
			{k.Learn.Back, "Back to the dashboard (`L` does the same)."},
		}},
		{title: "Zoomed preview", note: "The keys of the selected session work here too.", keys: []keyDoc{
			{k.Zoom.Up, "Scroll up a line."},
			{k.Zoom.Down, "Scroll down a line."},
			{k.Zoom.PageUp, "Scroll up a page."},
			{k.Zoom.PageDown, "Scroll down a page."},
			{k.Zoom.Top, "Go to the oldest line."},
			{k.Zoom.Bottom, "Go to the newest line and follow the pane."},
			{k.Zoom.Back, "Back to the dashboard."},
		}},
	}
}

// step is where a list cursor goes for a navigation key, within n items.
func (k navKeys) step(km tea.KeyMsg, cursor, n int) int {
	switch {
	case key.Matches(km, k.Up):
		cursor--
	case key.Matches(km, k.Down):
		cursor++
	case key.Matches(km, k.Top):
		cursor = 0
	case key.Matches(km, k.Bottom):
		cursor = n - 1
	}
	return clamp(cursor, 0, max(0, n-1))
}
