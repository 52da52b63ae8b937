package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// learnItems is how many outcomes, patterns and anti-patterns the panel
// asks for.
const learnItems = 8

// learnSummaryMsg: the learning store as read for the panel.
type learnSummaryMsg struct {
	sum api.LearnSummary
	err error
	at  time.Time
}

func fetchLearn(ctx context.Context, src facade.Learning, clock func() time.Time) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		sum, err := src.Learnings(ctx, learnItems)
		return learnSummaryMsg{sum: sum, err: err, at: clock()}
	}
}

// learnKeys work in the learnings panel.
type learnKeys struct {
	Up, Down, Refresh, Back key.Binding
}

func (k learnKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Back,
		key.NewBinding(key.WithKeys(append(k.Up.Keys(), k.Down.Keys()...)...), key.WithHelp("j/k", "scroll")), k.Refresh}
}
func (k learnKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.Refresh, k.Back}}
}

// learnPanel shows the learning store: capabilities, the most seen
// patterns and anti-patterns, and the recent outcomes.
type learnPanel struct {
	st     *styles
	keys   learnKeys
	open   bool
	loaded bool
	sum    api.LearnSummary
	err    error
	at     time.Time
	offset int
	w, h   int
}

func newLearnPanel(st *styles, keys learnKeys) learnPanel { return learnPanel{st: st, keys: keys} }

func (p *learnPanel) SetSize(w, h int) { p.w, p.h = w, h }

var _ panel = (*learnPanel)(nil)

func (p *learnPanel) OpenKey(k keyMap) key.Binding { return k.App.Learnings }
func (p *learnPanel) IsOpen() bool                 { return p.open }
func (p *learnPanel) Name() string                 { return "learn" }
func (p *learnPanel) ShortHelp() []key.Binding     { return p.keys.ShortHelp() }

// Open shows the panel and reads the store.
func (p *learnPanel) Open(m *Model) tea.Cmd {
	if !m.feats.Learning {
		m.setStatus(levelWarn, "no learning store in this dashboard")
		return nil
	}
	p.open, p.offset = true, 0
	m.detail.Zoom(false)
	return fetchLearn(m.ctx, m.svc, m.opts.Clock)
}

// Key scrolls, reads the store again, or closes the panel.
func (p *learnPanel) Key(m *Model, msg tea.KeyMsg) (tea.Cmd, bool) {
	switch {
	case key.Matches(msg, p.keys.Back):
		p.open = false
	case key.Matches(msg, p.keys.Refresh):
		return fetchLearn(m.ctx, m.svc, m.opts.Clock), true
	case key.Matches(msg, p.keys.Up):
		p.offset = max(0, p.offset-1)
	case key.Matches(msg, p.keys.Down):
		p.offset = clamp(p.offset+1, 0, max(0, len(p.lines())-p.h))
	default:
		return nil, false
	}
	return nil, true
}

// Receive takes a summary read from the store.
func (p *learnPanel) Receive(m *Model, msg tea.Msg) (tea.Cmd, bool) {
	sm, ok := msg.(learnSummaryMsg)
	if !ok {
		return nil, false
	}
	p.loaded, p.at, p.err = true, sm.at, sm.err
	if sm.err == nil {
		p.sum = sm.sum
	} else {
		m.setStatus(levelWarn, "cannot read the learning store: "+sm.err.Error())
	}
	return nil, true
}

func (p learnPanel) View() string {
	if p.w <= 0 || p.h <= 0 {
		return ""
	}
	title := "Learnings"
	if p.loaded {
		title += " · as of " + p.at.Format("15:04:05")
	}
	lines := p.lines()
	off := clamp(p.offset, 0, max(0, len(lines)-(p.h-1)))
	lines = lines[off:]
	return block(append([]string{sectionTitle(p.st, title, p.w, true)}, lines...), p.w, p.h)
}

// lines is the panel's content, one string per line, each fitted to the
// width.
func (p learnPanel) lines() []string {
	st := p.st
	var out []string
	add := func(s string) { out = append(out, fit(s, p.w)) }
	switch {
	case !p.loaded:
		add(st.Dim.Render("  reading the learning store…"))
		return out
	case p.err != nil:
		add(st.Problem.Render(truncate("  cannot read the learning store: "+clean(p.err.Error()), p.w)))
		return out
	}
	s := p.sum
	if len(s.Outcomes) == 0 && len(s.Capabilities) == 0 {
		add("")
		add(st.Bold.Render("  Nothing learnt yet."))
		add("")
		add("  Supervising agents report how initiatives ended with the MCP tool")
		add("  report_outcome; people with:")
		add("    " + st.Command.Render(`system3 outcome report "add OAuth login" --outcome success --learning "..."`))
		add("  Then reflect recalls what worked and what failed (docs/learning.md).")
		return out
	}
	head := func(t string) { add(""); add(st.Bold.Render(t)) }
	head("Capabilities")
	if len(s.Capabilities) == 0 {
		add(st.Dim.Render("  none yet"))
	}
	dw := 8
	for _, c := range s.Capabilities {
		dw = max(dw, width(clean(c.Domain)))
	}
	dw = min(dw, 24)
	for _, c := range s.Capabilities {
		add(fmt.Sprintf("  %s  %s  %s", fit(clean(c.Domain), dw), confBar(st, c.Confidence), st.Dim.Render(clean(c.Evidence))))
	}
	items := func(title, mark string, its []api.LearnItem) {
		head(title)
		if len(its) == 0 {
			add(st.Dim.Render("  none yet"))
		}
		for _, it := range its {
			seen := ""
			if it.Seen > 1 {
				seen = fmt.Sprintf(" ×%d", it.Seen)
			}
			add(truncate(fmt.Sprintf("  %s %s %s", mark, st.Dim.Render("["+clean(it.Domain)+seen+"]"), clean(it.Text)), p.w))
		}
	}
	items("Top patterns", "✓", s.Patterns)
	items("Top anti-patterns", "✗", s.AntiPatterns)
	head("Recent outcomes")
	for _, o := range s.Outcomes {
		n := 0
		for _, c := range o.Criteria {
			if c.Evidenced {
				n++
			}
		}
		word := "validated"
		if !o.Validated {
			word = "weak"
		}
		add(truncate(fmt.Sprintf("  %s  %-7s  %s  %s  %s", st.Dim.Render(fitRight(since(p.at, o.At), 6)+" ago"), o.Outcome,
			fit(clean(o.Domain), dw), st.Dim.Render(fit(fmt.Sprintf("%s %d/5", word, n), 13)), clean(o.Initiative)), p.w))
	}
	return out
}

// confBar is a confidence as a number and a ten-cell bar.
func confBar(st *styles, c float64) string {
	n := clamp(int(c*10+0.5), 0, 10)
	return fmt.Sprintf("%.2f ", c) + st.BarDone.Render(strings.Repeat("█", n)) + st.BarTodo.Render(strings.Repeat("░", 10-n))
}
