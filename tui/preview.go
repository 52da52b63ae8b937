package tui

import (
	"errors"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// previewTarget is what the preview stream follows: a pane, with its
// scrollback when zoomed. The zero value follows nothing.
type previewTarget struct {
	pane   string
	zoomed bool
}

// followPreview has the preview stream follow the selected pane (none
// while nothing is selected, or while the zoomed view shows other text):
// a new selection or zoom opens a new stream, whose first screen is the
// pane's now. The service sends a screen only when the pane's output
// changed it, so nothing is asked while the pane is idle.
func (m *Model) followPreview(sel api.Session, ok bool) tea.Cmd {
	var want previewTarget
	if ok && !m.detail.showingText() {
		want = previewTarget{pane: sel.Pane, zoomed: m.detail.zoomed}
	}
	if want == m.previewOf {
		return nil
	}
	m.previewOf = want
	m.renew(streamPreview)
	m.preview.backoff.Reset()
	m.preview.up, m.preview.err = false, nil
	return m.start(streamPreview)
}

// onPreviewStream handles the preview stream's messages: its start with
// the pane's screen, each screen after, its end (reconnected with
// backoff, which reads the screen afresh). ok is false for other
// messages.
func (m *Model) onPreviewStream(msg tea.Msg) (cmd tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case previewStartedMsg:
		if msg.gen != m.preview.gen {
			return nil, true
		}
		if msg.err != nil {
			m.detail.SetPreview(m.previewOf.pane, nil, msg.err.Error())
			if errors.Is(msg.err, facade.ErrUnavailable) {
				// A daemon older than this dashboard: trying again is
				// no use until it restarts; a new selection tries.
				m.preview.err = msg.err
				return nil, true
			}
			return m.fail(streamPreview, msg.err), true
		}
		m.screens = msg.ch
		m.preview.up, m.preview.err = true, nil
		m.preview.backoff.Reset()
		m.showScreen(msg.first)
		return nextScreen(msg.ch, msg.gen), true
	case screenMsg:
		if msg.gen != m.preview.gen {
			return nil, true
		}
		if !msg.ok {
			return m.fail(streamPreview, errStreamClosed), true
		}
		m.showScreen(msg.u)
		return nextScreen(m.screens, msg.gen), true
	}
	return nil, false
}

// showScreen shows a screen the stream sent, each line through the
// sanitiser of pane lines (screenLine), or why it could not be read.
func (m *Model) showScreen(u api.PreviewUpdate) {
	lines := make([]string, len(u.Lines))
	for i, l := range u.Lines {
		lines[i] = screenLine(l, m.st.color)
	}
	m.detail.SetPreview(m.previewOf.pane, lines, u.Err)
}
