package tui

import (
	"io"
	"os"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/textarea"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/system3-dev/system3/internal/api"
)

// look is how a state is shown: a symbol and a word, readable without
// colour, and a colour for terminals that have it.
type look struct {
	sym, word string
	color     lipgloss.AdaptiveColor
}

// looks covers every state in api.AllStates; anything else is shown as
// unknown.
var looks = map[api.State]look{
	api.AwaitingInput: {"⏸", "awaiting", lipgloss.AdaptiveColor{Light: "130", Dark: "214"}},
	api.ErrorLoop:     {"↻", "loop", lipgloss.AdaptiveColor{Light: "126", Dark: "207"}},
	api.Error:         {"✖", "error", lipgloss.AdaptiveColor{Light: "160", Dark: "203"}},
	api.RateLimited:   {"◷", "limited", lipgloss.AdaptiveColor{Light: "94", Dark: "180"}},
	api.Exited:        {"■", "exited", lipgloss.AdaptiveColor{Light: "243", Dark: "245"}},
	api.Working:       {"●", "working", lipgloss.AdaptiveColor{Light: "28", Dark: "78"}},
	api.Idle:          {"○", "idle", lipgloss.AdaptiveColor{Light: "25", Dark: "75"}},
	api.Unknown:       {"?", "unknown", lipgloss.AdaptiveColor{Light: "243", Dark: "245"}},
}

func lookOf(s api.State) look {
	if l, ok := looks[s]; ok {
		return l
	}
	return looks[api.Unknown]
}

// badge is a state as symbol and word: "⏸ awaiting".
func badge(s api.State) string {
	l := lookOf(s)
	return l.sym + " " + l.word
}

// badgeWidth is the widest badge.
const badgeWidth = 10

// statusLevel is how a status-line message reads.
type statusLevel int

const (
	levelInfo statusLevel = iota
	levelOK
	levelWarn
	levelError
	levelWake
)

// styles holds every colour and text attribute the dashboard uses; it is
// built once, in newStyles, so a theme or NO_COLOR changes one place.
type styles struct {
	r *lipgloss.Renderer
	// color is false when nothing is coloured; pane previews then drop
	// their colour sequences too.
	color bool

	Title     lipgloss.Style // "system3" in the header
	Text      lipgloss.Style
	Dim       lipgloss.Style // secondary text: ages, labels, column heads
	Bold      lipgloss.Style
	Section   lipgloss.Style // a section's title rule
	SectionOn lipgloss.Style // the focused section's title rule
	Label     lipgloss.Style // "why", "asks", "tasks" in the detail pane
	Selected  lipgloss.Style // the selected row
	Problem   lipgloss.Style
	Unacked   lipgloss.Style
	Acked     lipgloss.Style
	BarDone   lipgloss.Style
	BarTodo   lipgloss.Style
	Key       lipgloss.Style // a key in help texts
	Desc      lipgloss.Style // its description
	Empty     lipgloss.Style // the empty-state text
	Command   lipgloss.Style // commands to type, in the empty state and hints

	badge    map[api.State]lipgloss.Style
	badgeSel map[api.State]lipgloss.Style
	status   map[statusLevel]lipgloss.Style
	flash    lipgloss.Style
}

// rendererFor returns the lipgloss renderer for out (nil: standard output).
// Without colour it still draws bold and reverse on a terminal (NO_COLOR
// asks for no colour, and the selection and cursor need an attribute), and
// plain text elsewhere.
func rendererFor(out io.Writer, noColor bool) *lipgloss.Renderer {
	var r *lipgloss.Renderer
	switch {
	case out == nil && !noColor:
		return lipgloss.DefaultRenderer()
	case out == nil:
		r = lipgloss.NewRenderer(os.Stdout)
	default:
		r = lipgloss.NewRenderer(out)
	}
	if noColor {
		if r.Output().ColorProfile() == termenv.Ascii {
			r.SetColorProfile(termenv.Ascii)
		} else {
			r.SetColorProfile(termenv.ANSI)
		}
	}
	return r
}

// newStyles builds the styles on r, without colours when noColor is set.
// It asks r for the terminal's background once, here, so no query happens
// while the program runs.
func newStyles(r *lipgloss.Renderer, noColor bool) *styles {
	r.HasDarkBackground()
	color := !noColor && r.ColorProfile() != termenv.Ascii
	st := func() lipgloss.Style { return r.NewStyle() }
	fg := func(c lipgloss.TerminalColor) lipgloss.Style {
		if noColor {
			return r.NewStyle()
		}
		return r.NewStyle().Foreground(c)
	}
	accent := lipgloss.AdaptiveColor{Light: "25", Dark: "111"}
	dim := lipgloss.AdaptiveColor{Light: "244", Dark: "245"}
	red := lipgloss.AdaptiveColor{Light: "160", Dark: "203"}
	amber := lipgloss.AdaptiveColor{Light: "130", Dark: "214"}
	green := lipgloss.AdaptiveColor{Light: "28", Dark: "78"}
	selBG := lipgloss.AdaptiveColor{Light: "254", Dark: "237"}
	selected := func(base lipgloss.Style) lipgloss.Style {
		if noColor {
			return base.Reverse(true)
		}
		return base.Background(selBG).Bold(true)
	}
	s := &styles{
		r:         r,
		color:     color,
		Title:     fg(accent).Bold(true),
		Text:      st(),
		Dim:       fg(dim),
		Bold:      st().Bold(true),
		Section:   fg(dim),
		SectionOn: fg(accent).Bold(true),
		Label:     fg(dim),
		Selected:  selected(st()),
		Problem:   fg(red).Bold(true),
		Unacked:   fg(amber).Bold(true),
		Acked:     fg(dim),
		BarDone:   fg(green),
		BarTodo:   fg(dim),
		Key:       fg(accent).Bold(true),
		Desc:      fg(dim),
		Empty:     st(),
		Command:   fg(accent).Bold(true),
		badge:     map[api.State]lipgloss.Style{},
		badgeSel:  map[api.State]lipgloss.Style{},
		status: map[statusLevel]lipgloss.Style{
			levelInfo:  st(),
			levelOK:    fg(green),
			levelWarn:  fg(amber),
			levelError: fg(red).Bold(true),
			levelWake:  fg(amber),
		},
		flash: fg(amber).Bold(true).Reverse(true),
	}
	for _, state := range api.AllStates() {
		b := fg(lookOf(state).color)
		s.badge[state] = b
		s.badgeSel[state] = selected(b)
	}
	return s
}

// badgeStyle is the style of a state's badge, on the selected row or not.
func (s *styles) badgeStyle(st api.State, selected bool) lipgloss.Style {
	m := s.badge
	if selected {
		m = s.badgeSel
	}
	if b, ok := m[st]; ok {
		return b
	}
	return m[api.Unknown]
}

// helpModel is a bubbles help model in these styles.
func (s *styles) helpModel() help.Model {
	h := help.New()
	h.ShortSeparator = " · "
	h.Styles = help.Styles{
		Ellipsis:       s.Dim,
		ShortKey:       s.Key,
		ShortDesc:      s.Desc,
		ShortSeparator: s.Dim,
		FullKey:        s.Key,
		FullDesc:       s.Desc,
		FullSeparator:  s.Dim,
	}
	return h
}

// styleTextarea gives the compose box these styles.
func (s *styles) styleTextarea(ta *textarea.Model) {
	focused := textarea.Style{
		Base:             s.r.NewStyle(),
		CursorLine:       s.r.NewStyle(),
		CursorLineNumber: s.Dim,
		EndOfBuffer:      s.Dim,
		LineNumber:       s.Dim,
		Placeholder:      s.Dim,
		Prompt:           s.SectionOn,
		Text:             s.r.NewStyle(),
	}
	blurred := focused
	blurred.Prompt = s.Dim
	ta.FocusedStyle, ta.BlurredStyle = focused, blurred
	ta.Cursor.Style = s.r.NewStyle().Reverse(true)
	ta.Cursor.TextStyle = s.r.NewStyle()
}

// styleTextinput gives the filter input these styles.
func (s *styles) styleTextinput(ti *textinput.Model) {
	ti.PromptStyle = s.SectionOn
	ti.TextStyle = s.r.NewStyle()
	ti.PlaceholderStyle = s.Dim
	ti.Cursor.Style = s.r.NewStyle().Reverse(true)
	ti.Cursor.TextStyle = s.r.NewStyle()
}
