package tui

import (
	"fmt"
	"io"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// TestViewFillsEverySize: in every mode and at every size, from tiny to
// huge, the view is exactly the window: h lines of w cells.
func TestViewFillsEverySize(t *testing.T) {
	sizes := [][2]int{{20, 5}, {40, 10}, {80, 24}, {100, 30}, {119, 30}, {120, 30}, {150, 6}, {150, 9}, {200, 60}, {300, 100}, {80, 3}}
	modes := map[string][]string{
		"main":    nil,
		"wakes":   {"tab", "j"},
		"help":    {"?"},
		"compose": {"i", "h", "i"},
		"picker":  {"i", "ctrl+t"},
		"filter":  {"/", "c"},
		"zoom":    {"enter"},
		"nomatch": {"/", "z", "z", "z", "enter"},
	}
	svc := newFixtureService(t)
	raiseFixtureWakes(t, svc)
	for mode, keys := range modes {
		h := newHarness(t, svc, Options{Templates: []Template{{Name: "go", Text: "Go on."}}}, 80, 24)
		h.selectPane("%1")
		h.press(keys...)
		for _, size := range sizes {
			h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			checkFills(t, fmt.Sprintf("%s at %dx%d", mode, size[0], size[1]), h.m.View(), size[0], size[1])
		}
	}
	// The empty state too.
	empty := newFixtureService(t)
	snap := fixtureSnapshot()
	snap.Sessions = nil
	empty.SetSnapshot(snap)
	h := newHarness(t, empty, Options{}, 80, 24)
	for _, size := range sizes {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		checkFills(t, fmt.Sprintf("empty at %dx%d", size[0], size[1]), h.m.View(), size[0], size[1])
	}
}

func checkFills(t *testing.T, what, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Errorf("%s: %d lines", what, len(lines))
	}
	for i, l := range lines {
		if width(l) != w {
			t.Errorf("%s: line %d is %d wide: %q", what, i, width(l), l)
			return
		}
	}
}

// colourStyles draws in true colour, or without colour but with
// attributes, whatever the test's default renderer does.
func colourStyles(noColor bool) *styles {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	r.SetHasDarkBackground(true)
	return newStyles(r, noColor)
}

func TestColour(t *testing.T) {
	svc := newFixtureService(t)
	h := newStyledHarness(t, svc, Options{}, colourStyles(false), 100, 30)
	h.selectPane("%1")
	v := h.m.View()
	if !strings.Contains(v, "\x1b[38;5;") {
		t.Error("no colour in the view")
	}
	if !strings.Contains(strings.Join(h.m.detail.lines, "\n"), "\x1b[38;5;174m") {
		t.Error("the preview lost the pane's colours")
	}
	// Every line ends without a colour left on.
	for i, l := range strings.Split(v, "\n") {
		if width(l) != 100 {
			t.Fatalf("line %d is %d wide", i, width(l))
		}
	}
}

// TestNoColor: NO_COLOR (the option or the environment) draws no colour at
// all, from the styles or from the panes, but keeps the selection visible
// with reverse video and the states readable by their symbols.
func TestNoColor(t *testing.T) {
	check := func(t *testing.T, h *harness) {
		t.Helper()
		h.selectPane("%1")
		v := h.m.View()
		for _, seq := range []string{"\x1b[38;", "\x1b[48;", "\x1b[3", "\x1b[4"} {
			if i := strings.Index(v, seq); i >= 0 && !strings.HasPrefix(v[i:], "\x1b[4m") {
				t.Fatalf("colour sequence %q in a no-colour view near %q", seq, v[max(0, i-20):min(len(v), i+20)])
			}
		}
		if !strings.Contains(v, "\x1b[7m") {
			t.Error("the selected row is not in reverse video")
		}
		for _, sym := range []string{"⏸ awaiting", "↻ loop", "✖ error", "■ exited", "● working", "○ idle", "? unknown"} {
			if !strings.Contains(v, sym) {
				t.Errorf("no %q", sym)
			}
		}
	}
	t.Run("option", func(t *testing.T) {
		check(t, newStyledHarness(t, newFixtureService(t), Options{NoColor: true}, colourStyles(true), 100, 30))
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("NO_COLOR", "1")
		if !(Options{}).withDefaults().NoColor {
			t.Fatal("NO_COLOR is not honoured")
		}
		m := New(bare(newFixtureService(t)), Options{})
		if m.st.color {
			t.Fatal("New draws in colour under NO_COLOR")
		}
	})
}

func TestPreviewKeepsColourOnlyWithColour(t *testing.T) {
	line := "\x1b[31mred\x1b[0m \x1b]0;title\x07after"
	for _, tt := range []struct {
		noColor bool
		want    string
	}{{false, "\x1b[31mred\x1b[0m after\x1b[0m"}, {true, "red after"}} {
		svc := newFixtureService(t)
		svc.SetPreview("%4", line)
		h := newStyledHarness(t, svc, Options{NoColor: tt.noColor}, colourStyles(tt.noColor), 100, 30)
		if got := h.m.detail.lines; len(got) != 1 || got[0] != tt.want {
			t.Errorf("noColor %v: %q, want %q", tt.noColor, got, tt.want)
		}
	}
}

// TestSessionTextCannotEscape: text from a pane (last line, question,
// evidence) is drawn without its escape sequences.
func TestSessionTextCannotEscape(t *testing.T) {
	svc := newFixtureService(t)
	snap := fixtureSnapshot()
	s := &snap.Sessions[0]
	s.LastLine = "\x1b]0;owned\x07\x1b[2Jgotcha"
	s.Detail = "\x1b[31mred\x1b[0m detail"
	s.Evidence.Lines = []string{"\x1b[1Aup"}
	svc.SetSnapshot(snap)
	h := newHarness(t, svc, Options{}, 160, 45)
	v := h.m.View()
	if strings.ContainsAny(v, "\x1b\x07") {
		t.Fatalf("an escape sequence from a pane reached the screen: %q", v)
	}
	if !strings.Contains(v, "red detail") {
		t.Fatal("the cleaned text is missing")
	}
}
