package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
)

// formKind says what a form is for.
type formKind int

const (
	formSpawn formKind = iota // start an orchestrator
	formLink                  // link the selected session to a task list
	formStop                  // confirm stopping the selected orchestrator
)

// formFinish chooses how to finish the selected orchestrator.
const formFinish = formStop + 1

type (
	// formSubmitMsg: the operator submitted the form, with every field's
	// value in order.
	formSubmitMsg struct {
		kind   formKind
		values []string
		sess   api.Session
	}
	// formCloseMsg: the operator closed the form.
	formCloseMsg struct{ kind formKind }
)

// formField is one labelled line of a form.
type formField struct {
	label    string
	required bool
	check    func(string) string
	ti       textinput.Model
}

// form is a small stack of one-line text inputs (the spawn form, the
// task list link, the stop confirmation): tab moves between them, enter submits once the
// required ones are filled in.
type form struct {
	st   *styles
	keys formKeys

	kind   formKind
	title  string
	sess   api.Session
	fields []formField
	focus  int
	err    string
	w, h   int
}

// fieldSpec describes a field to open a form with.
type fieldSpec struct {
	label, placeholder, value string
	required                  bool
	limit                     int
	// check, when set, says what is wrong with a value ("" when nothing);
	// the form is not submitted until it passes.
	check func(string) string
}

func newForm(st *styles, keys formKeys) form { return form{st: st, keys: keys} }

// Open starts a form of kind with fields, for sess (the link form's
// session; zero for spawn).
func (f *form) Open(kind formKind, title string, sess api.Session, specs []fieldSpec) tea.Cmd {
	f.kind, f.title, f.sess, f.focus, f.err = kind, title, sess, 0, ""
	f.fields = make([]formField, len(specs))
	for i, s := range specs {
		ti := textinput.New()
		ti.Prompt = ""
		ti.Placeholder = s.placeholder
		ti.CharLimit = s.limit
		ti.Cursor.SetMode(cursor.CursorStatic)
		f.st.styleTextinput(&ti)
		ti.SetValue(s.value)
		ti.CursorEnd()
		f.fields[i] = formField{label: s.label, required: s.required, check: s.check, ti: ti}
	}
	f.SetSize(f.w, f.h)
	return f.fields[0].ti.Focus()
}

// Close drops the fields.
func (f *form) Close() { f.fields = nil }

// Kind is what the form is for.
func (f form) Kind() formKind { return f.kind }

// Height is the lines the form wants: its title, its fields and a line
// for what is missing.
func (f form) Height() int { return len(f.fields) + 2 }

func (f *form) SetSize(w, h int) {
	f.w, f.h = w, h
	for i := range f.fields {
		f.fields[i].ti.Width = max(1, w-f.labelWidth()-6) // the cursor takes a cell past Width
	}
}

func (f form) labelWidth() int {
	n := 0
	for _, fl := range f.fields {
		n = max(n, width(fl.label))
	}
	return n
}

// Update edits the focused field, moves between fields, and reports a
// submit or a close as a message.
func (f form) Update(msg tea.Msg) (form, tea.Cmd) {
	if len(f.fields) == 0 {
		return f, nil
	}
	if km, ok := msg.(tea.KeyMsg); ok {
		switch {
		case key.Matches(km, f.keys.Submit):
			values := make([]string, len(f.fields))
			for i, fl := range f.fields {
				values[i] = strings.TrimSpace(fl.ti.Value())
				if fl.required && values[i] == "" {
					f.err = fl.label + " is required"
					return f, f.move(i - f.focus)
				}
				if fl.check != nil {
					if e := fl.check(values[i]); e != "" {
						f.err = fl.label + ": " + e
						return f, f.move(i - f.focus)
					}
				}
			}
			kind, sess := f.kind, f.sess
			return f, func() tea.Msg { return formSubmitMsg{kind: kind, values: values, sess: sess} }
		case key.Matches(km, f.keys.Cancel):
			kind := f.kind
			return f, func() tea.Msg { return formCloseMsg{kind: kind} }
		case key.Matches(km, f.keys.Next):
			return f, f.move(1)
		case key.Matches(km, f.keys.Prev):
			return f, f.move(-1)
		}
	}
	var cmd tea.Cmd
	f.fields[f.focus].ti, cmd = f.fields[f.focus].ti.Update(msg)
	return f, cmd
}

// move focuses the field d away, wrapping around.
func (f *form) move(d int) tea.Cmd {
	f.fields[f.focus].ti.Blur()
	n := len(f.fields)
	f.focus = ((f.focus+d)%n + n) % n
	return f.fields[f.focus].ti.Focus()
}

// KeyMap is the form's keys.
func (f form) KeyMap() help.KeyMap { return f.keys }

func (f form) View() string {
	if f.w <= 0 || f.h <= 0 || len(f.fields) == 0 {
		return ""
	}
	lines := []string{sectionTitle(f.st, f.title, f.w, true)}
	lw := f.labelWidth()
	for i, fl := range f.fields {
		label := fit(fl.label, lw)
		mark := "  "
		if i == f.focus {
			mark = "▸ "
			label = f.st.SectionOn.Render(label)
		} else {
			label = f.st.Dim.Render(label)
		}
		lines = append(lines, fit(mark+label+"  "+fl.ti.View(), f.w))
	}
	if f.err != "" {
		lines = append(lines, f.st.Dim.Render("  "+clean(f.err)))
	}
	return block(lines, f.w, f.h)
}
