package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
)

// stream is the state of one event stream from the service (registry
// updates, wakes, or the selected pane's screens): each (re)connection is
// a new generation, and messages of older generations are ignored.
type stream struct {
	gen    int
	ctx    context.Context
	cancel context.CancelFunc
	// up: synchronised and reading. backoff counts failed connections
	// since the last success; err is the last failure.
	up      bool
	backoff api.Backoff
	err     error
	retryAt time.Time
}

func newStream() stream {
	return stream{backoff: api.Backoff{First: firstBackoff, Max: maxBackoff}}
}

// errStreamClosed: the service closed a stream (it stopped, or the socket
// to it broke).
var errStreamClosed = errors.New("the service closed the stream")

// onStream handles the messages of the event streams: each stream
// connects, reads the state (a snapshot, the unacknowledged wakes, the
// pane's screen), then reads events one at a time; a resync reads the
// state again, and a failure reconnects with backoff. ok is false for
// other messages.
func (m *Model) onStream(msg tea.Msg) (cmd tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case watchStartedMsg:
		if msg.gen != m.watch.gen {
			return nil, true
		}
		if msg.err != nil {
			return m.fail(streamWatch, msg.err), true
		}
		m.updates = msg.ch
		return takeSnapshot(m.watch.ctx, m.svc, msg.gen), true
	case snapshotMsg:
		if msg.gen != m.watch.gen {
			return nil, true
		}
		if msg.err != nil {
			return m.fail(streamWatch, msg.err), true
		}
		m.applySnapshot(msg.snap)
		m.watch.up, m.watch.err = true, nil
		m.watch.backoff.Reset()
		return nextUpdate(m.updates, msg.gen), true
	case updateMsg:
		if msg.gen != m.watch.gen {
			return nil, true
		}
		if !msg.ok {
			return m.fail(streamWatch, errStreamClosed), true
		}
		switch {
		case msg.u.Kind == api.Resync:
			// Read the registry again; updates wait in the channel.
			return takeSnapshot(m.watch.ctx, m.svc, msg.gen), true
		case msg.u.Kind == api.StatusChanged && msg.u.Status != nil:
			m.setHeader(*msg.u.Status)
		default:
			m.applyUpdate(msg.u)
		}
		return nextUpdate(m.updates, msg.gen), true

	case wakesStartedMsg:
		if msg.gen != m.wakeS.gen {
			return nil, true
		}
		if msg.err != nil {
			return m.fail(streamWakes, msg.err), true
		}
		m.wakeCh = msg.ch
		return listWakes(m.wakeS.ctx, m.svc, msg.gen), true
	case wakeListMsg:
		if msg.gen != m.wakeS.gen {
			return nil, true
		}
		if msg.err != nil {
			return m.fail(streamWakes, msg.err), true
		}
		m.book.reconcile(msg.evs)
		m.dirtyWakes = true
		m.wakeS.up, m.wakeS.err = true, nil
		m.wakeS.backoff.Reset()
		return nextWake(m.wakeCh, msg.gen), true
	case wakeMsg:
		if msg.gen != m.wakeS.gen {
			return nil, true
		}
		if !msg.ok {
			return m.fail(streamWakes, errStreamClosed), true
		}
		if msg.m.Kind == api.WakeResync {
			return listWakes(m.wakeS.ctx, m.svc, msg.gen), true
		}
		return tea.Batch(m.applyWake(msg.m), nextWake(m.wakeCh, msg.gen)), true
	case retryMsg:
		if msg.gen != m.stream(msg.stream).gen {
			return nil, true
		}
		m.renew(msg.stream)
		return m.start(msg.stream), true

	default:
		return m.onPreviewStream(msg)
	}
}

// renew starts a new generation of a stream: the previous one's context
// is cancelled (its channel closes, its reader ends) and its messages
// will be ignored.
func (m *Model) renew(id streamID) {
	s := m.stream(id)
	if s.cancel != nil {
		s.cancel()
	}
	s.gen++
	s.ctx, s.cancel = context.WithCancel(m.ctx)
	switch id {
	case streamWatch:
		m.updates = nil
	case streamWakes:
		m.wakeCh = nil
	case streamPreview:
		m.screens = nil
	}
}

// start connects the current generation of a stream.
func (m Model) start(id streamID) tea.Cmd {
	switch id {
	case streamWatch:
		return startWatch(m.watch.ctx, m.svc, m.watch.gen)
	case streamWakes:
		return startWakes(m.wakeS.ctx, m.svc, m.wakeS.gen)
	}
	if m.previewOf.pane == "" {
		return nil
	}
	return startPreview(m.preview.ctx, m.svc, m.previewOf, m.preview.gen)
}

func (m *Model) stream(id streamID) *stream {
	switch id {
	case streamWatch:
		return &m.watch
	case streamWakes:
		return &m.wakeS
	}
	return &m.preview
}

// fail marks a stream down and schedules a new connection, backing off.
func (m *Model) fail(id streamID, err error) tea.Cmd {
	if m.ctx.Err() != nil {
		return nil // quitting
	}
	s := m.stream(id)
	if id == streamWatch && s.up {
		m.dirtyRows = true // the title says the rows are stale
	}
	s.up = false
	s.err = err
	d := s.backoff.Next()
	s.retryAt = m.now.Add(d)
	if !m.loaded {
		m.dirtyRows = true // the table says why there is nothing yet
	}
	return retryAfter(m.ctx, d, id, s.gen)
}

func (m *Model) onTick(msg tickMsg) tea.Cmd {
	m.now = msg.now
	if msg.mcp != nil {
		m.mcp = msg.mcp
	}
	if msg.hosts != nil {
		m.hosts, m.hostsDown = msg.hosts, msg.hostsDown
	}
	if msg.notice != m.notice {
		m.notice = msg.notice
		if m.notice != "" {
			m.setStatus(levelWake, "⚑ "+clean(m.notice))
		}
	}
	for pane, at := range m.answered {
		if m.now.Sub(at) >= answerHold {
			delete(m.answered, pane)
		}
	}
	if m.watch.up {
		m.syncedAt = m.now // reading the stream: the registry is current
	}
	// The tick only moves the clock (ages, the status line's flash) and
	// brings the MCP and hosts items: the registry, the header and the
	// preview come pushed, so an idle dashboard asks the service nothing.
	return tick(m.ctx, m.opts.Clock, m.opts.MCP, m.opts.Notice, m.opts.Hosts)
}

// setHeader keeps the registry's status: the server's state and the
// problem, from a snapshot or a StatusChanged update. The empty table says
// whether the server runs.
func (m *Model) setHeader(st api.Status) {
	if st.Running != m.running || st.Server != m.server {
		m.dirtyRows = true
	}
	m.server, m.running, m.problem = st.Server, st.Running, st.Problem
}

// applySnapshot replaces the registry.
func (m *Model) applySnapshot(snap api.Snapshot) {
	m.setHeader(snap.Status())
	m.syncedAt = m.now
	m.loaded = true
	old := m.sessions
	m.sessions = slices.Clone(snap.Sessions)
	for i := range m.sessions {
		if j := slices.IndexFunc(old, func(x api.Session) bool { return x.Pane == m.sessions[i].Pane }); j >= 0 {
			keepSince(&m.sessions[i], old[j])
		}
	}
	api.SortSessions(m.sessions)
	m.revs = make(map[string]uint64, len(m.sessions))
	for _, s := range m.sessions {
		m.rev++
		m.revs[s.Pane] = m.rev
	}
	m.dirtyRows = true
}

// keepSince keeps the time the dashboard saw a pane's state begin when
// the state is the one it already held: monitors that start afresh (a
// takeover after the daemon died, a reconnection) see every state begin
// now, and every FOR timer would restart.
func keepSince(s *api.Session, held api.Session) {
	if s.State == held.State && s.Kind == held.Kind && s.Prompt == held.Prompt && !held.Since.IsZero() && held.Since.Before(s.Since) {
		s.Since = held.Since
	}
}

// applyUpdate applies one session's change; an update of any other kind
// changes no session.
func (m *Model) applyUpdate(u api.Update) {
	s := u.Session
	i := slices.IndexFunc(m.sessions, func(x api.Session) bool { return x.Pane == s.Pane })
	switch u.Kind {
	case api.SessionAdded, api.SessionChanged:
		if i >= 0 {
			keepSince(&s, m.sessions[i])
			m.sessions[i] = s
		} else {
			m.sessions = append(m.sessions, s)
		}
		m.rev++
		m.revs[s.Pane] = m.rev
		api.SortSessions(m.sessions)
	case api.SessionRemoved:
		if i >= 0 {
			m.sessions = slices.Delete(m.sessions, i, i+1)
		}
		delete(m.revs, s.Pane)
	default:
		return
	}
	// The pane moved on: a new answer may go.
	delete(m.answered, s.Pane)
	m.syncedAt = m.now
	m.dirtyRows = true
}

// applyWake applies one wake message; a new wake that needs a person
// flashes in the status line and rings the bell.
func (m *Model) applyWake(msg api.WakeMessage) tea.Cmd {
	if !m.book.apply(msg) {
		return nil
	}
	m.dirtyWakes = true
	ev := msg.Event
	if msg.Kind != api.WakeRaised || msg.Replayed || ev.Acked || routine(ev) {
		return nil
	}
	text := "new wake: " + string(ev.Reason)
	if w := m.where(ev); w != "" {
		text += " · " + w
	}
	if q := clean(ev.Question); q != "" {
		text += " · " + q
	} else if a := clean(ev.SuggestedAction); a != "" {
		text += " · " + a
	}
	m.setStatus(levelWake, "⚑ "+text)
	if m.opts.Bell && m.opts.BellOut != nil && (m.lastBell.IsZero() || m.now.Sub(m.lastBell) >= bellGap) {
		m.lastBell = m.now
		return ringBell(m.opts.BellOut)
	}
	return nil
}

// where names a wake's pane by its current target, or by the session the
// wake names when the pane is gone.
func (m *Model) where(ev api.Wake) string {
	if ev.Pane != "" {
		for i := range m.sessions {
			if m.sessions[i].Pane == ev.Pane {
				return clean(m.sessions[i].Target)
			}
		}
	}
	return clean(ev.Session)
}

// sync brings the components in line with the registry, the wakes, the
// filter and the window after a message, and asks for what the selected
// session now needs (its preview, its task list).
func (m *Model) sync() tea.Cmd {
	prev, hadPrev := m.detail.sess, m.detail.has
	if m.dirtyRows {
		m.dirtyRows = false
		m.counts = map[api.State]int{}
		for _, s := range m.sessions {
			m.counts[s.State]++
		}
		m.rebuildRows()
		m.dirtyWakes = true // targets may have changed
	}
	if m.dirtyWakes {
		m.dirtyWakes = false
		targets := make(map[string]string, len(m.sessions))
		for _, s := range m.sessions {
			targets[s.Pane] = clean(s.Target)
		}
		m.feed.where = func(ev api.Wake) string {
			if t, ok := targets[ev.Pane]; ok {
				return t
			}
			return clean(ev.Session)
		}
		m.feed.SetItems(m.book.sorted())
		m.wakeVer++
	}
	m.layout()
	m.table.now, m.feed.now, m.detail.now = m.now, m.now, m.now
	if m.stale() {
		// The rows are as they were when the stream broke: their ages
		// stop there instead of counting as if they were live.
		m.table.now, m.detail.now = m.syncedAt, m.syncedAt
	}

	sel, ok := m.table.Selected()
	m.detail.SetSession(sel, m.revs[sel.Pane], ok)
	follow := m.followPreview(sel, ok)
	if !ok {
		return follow
	}
	if m.detail.wakeVer != m.wakeVer {
		m.detail.SetWakes(m.book.forPane(sel.Pane), m.wakeVer)
	}
	cmds := []tea.Cmd{follow}
	changedPane := !hadPrev || prev.Pane != sel.Pane
	if sel.TaskList != "" && !m.lists[sel.TaskList] && (changedPane || prev.TaskList != sel.TaskList || !sameProgress(prev.Tasks, sel.Tasks)) {
		m.lists[sel.TaskList] = true
		cmds = append(cmds, fetchTaskList(m.ctx, m.svc, sel.TaskList))
	}
	return tea.Batch(cmds...)
}

func sameProgress(a, b *api.TaskProgress) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Completed == b.Completed && a.Total == b.Total && a.Blocked == b.Blocked && slices.Equal(a.InProgress, b.InProgress)
}

// rebuildRows gives the table the sessions the filter lets through.
func (m *Model) rebuildRows() {
	terms := filterTerms(m.query)
	rows := make([]sessionRow, 0, len(m.sessions))
	for _, s := range m.sessions {
		if matches(s, terms) {
			rows = append(rows, sessionRow{sess: s, rev: m.revs[s.Pane]})
		}
	}
	pane := ""
	if s, ok := m.table.Selected(); ok {
		pane = s.Pane
	}
	m.table.SetRows(rows, pane)
	m.filter.SetCounts(len(rows), len(m.sessions))
	title := "Panes · " + fmt.Sprint(len(m.sessions))
	if m.query != "" {
		title = fmt.Sprintf("Panes · %d of %d · filter: %s", len(rows), len(m.sessions), clean(m.query))
	}
	if m.stale() {
		title += " · stale, as of " + m.syncedAt.Format("15:04:05")
	}
	m.table.title = title
	switch {
	case !m.loaded:
		m.table.SetEmpty([]string{m.st.Dim.Render(m.connectText())})
	case len(m.sessions) == 0 && !m.running:
		m.table.SetEmpty(serverGoneLines(m.st, m.serverName(), tmuxArgs(m.serverName())))
	case len(m.sessions) == 0:
		m.table.SetEmpty(emptyLines(m.st, m.serverName(), tmuxArgs(m.serverName())))
	default:
		m.table.SetEmpty([]string{"No session matches “" + clean(m.query) + "”. esc clears the filter."})
	}
}

// stale: the registry was read, but its stream is down, so the rows may
// no longer be true.
func (m *Model) stale() bool { return m.loaded && !m.watch.up }

// connectText is the table's text before the first snapshot.
func (m *Model) connectText() string {
	if m.watch.err != nil {
		return fmt.Sprintf("Cannot reach system3: %v. Retrying…", m.watch.err)
	}
	return "Connecting to system3…"
}

func (m *Model) serverName() string {
	if m.opts.Server != "" {
		return m.opts.Server
	}
	if m.server != "" {
		return m.server
	}
	return "default tmux server"
}

func (m *Model) setQuery(q string) {
	if q == m.query {
		return
	}
	m.query = q
	m.rebuildRows()
}
