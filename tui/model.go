package tui

import (
	"context"
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

const (
	// answerHold blocks a second answer to a pane until the monitor
	// reports the pane again (or this long passes), so a double key press
	// cannot answer the next prompt by accident.
	answerHold = 3 * time.Second
	// flashFor is how long a new wake stands out in the status line.
	flashFor = 3 * time.Second
	// bellGap keeps a burst of wakes from ringing more than once.
	bellGap = time.Second
	// wideAt is the width from which the detail pane sits beside the
	// table instead of below it.
	wideAt = 120
	// firstBackoff is the wait before reconnecting a stream that failed
	// once; it doubles with each failure up to maxBackoff.
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// focusID is the list the navigation keys move in.
type focusID int

const (
	focusSessions focusID = iota
	focusWakes
)

// inputID is the text input that has the keyboard, if any.
type inputID int

const (
	inputNone inputID = iota
	inputFilter
	inputCompose
	inputForm
)

// status is the one-line message under the body.
type status struct {
	text  string
	level statusLevel
	at    time.Time
}

// Model is the dashboard, a tea.Model. It holds no truth of its own: the
// sessions and wakes it shows come from the service, through Watch and
// SubscribeWakes, and every action goes back through the service.
type Model struct {
	svc  facade.Service
	opts Options
	// feats are the parts the service has, and agents the agents a spawn
	// may name, as read when the dashboard started.
	feats  facade.Features
	agents []string
	ctx    context.Context
	stop   context.CancelFunc
	st     *styles
	keys   keyMap

	w, h int
	now  time.Time
	mcp  *MCPStatus
	// hosts is the header's hosts item, once known; hostsDown: a host is
	// disconnected.
	hosts     *string
	hostsDown bool

	// The registry as last reported.
	loaded   bool
	server   string
	running  bool
	problem  string
	syncedAt time.Time         // when the registry was last known to be current
	notice   string            // the last Options.Notice shown
	sessions []api.Session     // sorted with api.SortSessions
	revs     map[string]uint64 // pane → revision, bumped on every change
	rev      uint64
	counts   map[api.State]int

	watch, wakeS stream
	updates      <-chan api.Update
	wakeCh       <-chan api.WakeMessage
	// preview is the stream of the selected pane's screens (preview.go),
	// following previewOf; screens is its channel.
	preview   stream
	previewOf previewTarget
	screens   <-chan api.PreviewUpdate
	book      wakeBook
	wakeVer   uint64 // bumped whenever the wakes shown change
	lastBell  time.Time

	table   sessionTable
	feed    wakeFeed
	detail  detail
	compose compose
	filter  filterBox
	form    form
	overlay helpOverlay
	learn   learnPanel // a panel (panels)
	help    help.Model

	focus    focusID
	input    inputID
	showHelp bool
	query    string // the filter in force

	lists    map[string]bool // task lists being read
	answered map[string]time.Time
	history  []string
	status   status
	// spawning is the initiative being spawned, if any.
	spawning string
	// stopping is the session being stopped, if any.
	stopping string

	dirtyRows, dirtyWakes bool
	cache                 *viewCaches
}

// New returns the dashboard for svc. Run runs it; a caller with its own
// tea.Program may run the Model directly (it stops its streams on quit).
func New(svc facade.Service, opts Options) Model {
	return newModel(context.Background(), svc, opts, nil)
}

func newModel(ctx context.Context, svc facade.Service, opts Options, st *styles) Model {
	opts = opts.withDefaults()
	if st == nil {
		st = newStyles(rendererFor(nil, opts.NoColor), opts.NoColor)
	}
	ctx, stop := context.WithCancel(ctx)
	keys := newKeyMap()
	m := Model{
		svc:  svc,
		opts: opts,
		ctx:  ctx,
		stop: stop,
		st:   st,
		keys: keys,
		now:  opts.Clock(),
		// Until the terminal tells its size; output that is not a
		// terminal never does.
		w:        80,
		h:        24,
		revs:     map[string]uint64{},
		counts:   map[api.State]int{},
		book:     newWakeBook(),
		table:    newSessionTable(st, keys.Nav),
		feed:     newWakeFeed(st, keys.Nav),
		detail:   newDetail(st, keys.Zoom),
		compose:  newCompose(st, keys.Compose, keys.Picker, opts.Templates),
		filter:   newFilterBox(st, keys.Filter),
		form:     newForm(st, keys.Form),
		overlay:  newHelpOverlay(st, keys),
		learn:    newLearnPanel(st, keys.Learn),
		help:     st.helpModel(),
		lists:    map[string]bool{},
		answered: map[string]time.Time{},
		cache:    &viewCaches{},
		watch:    newStream(),
		wakeS:    newStream(),
		preview:  newStream(),
	}
	m.feats, m.agents = features(ctx, svc)
	if opts.MCP != nil {
		s := opts.MCP()
		m.mcp = &s
	}
	m.detail.remind = keys.Session.Remind
	m.table.title = "Panes"
	m.table.focused = true
	m.renew(streamWatch)
	m.renew(streamWakes)
	m.renew(streamPreview)
	m.dirtyRows = true
	m.wakeVer = 1
	return m
}

// Init connects to the service and starts the clock.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.start(streamWatch), m.start(streamWakes), tick(m.ctx, m.opts.Clock, m.opts.MCP, m.opts.Notice, m.opts.Hosts))
}

// Update routes a message to the component it concerns. It does no I/O:
// service calls go out as commands and come back as messages.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	after := m.sync()
	return m, tea.Batch(cmd, after)
}

// panels are the views that take the body while open (see panel).
func (m *Model) panels() []panel { return []panel{&m.learn} }

func (m *Model) update(msg tea.Msg) tea.Cmd {
	if cmd, ok := m.onStream(msg); ok {
		return cmd
	}
	if cmd, ok := m.panelMsg(msg); ok {
		return cmd
	}
	if cmd, ok := m.inputMsg(msg); ok {
		return cmd
	}
	if cmd, ok := m.lifecycleMsg(msg); ok {
		return cmd
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		return nil
	case tea.KeyMsg:
		return m.key(msg)
	case tickMsg:
		return m.onTick(msg)

	case taskListMsg:
		delete(m.lists, msg.id)
		if s, ok := m.table.Selected(); ok && s.TaskList == msg.id {
			switch {
			case msg.err != nil:
				m.detail.SetTaskList(nil, msg.err.Error())
			case len(msg.lists) > 0:
				l := msg.lists[0]
				m.detail.SetTaskList(&l, "")
			default:
				m.detail.SetTaskList(nil, "")
			}
		}
		return nil
	case actionMsg:
		m.onAction(msg)
		return nil
	case ackMsg:
		m.onAck(msg)
		return nil
	case jumpMsg:
		if msg.err != nil {
			m.setStatus(levelWarn, fmt.Sprintf("cannot switch to %s (%v); attach with: %s", clean(msg.sess.Target), msg.err, m.attachHint(msg.sess)))
		} else {
			m.setStatus(levelOK, "switched to "+clean(msg.sess.Target))
		}
		return nil
	case bellDoneMsg:
		return nil
	}
	// Anything else (a paste, a cursor message) belongs to the input.
	var cmd tea.Cmd
	switch m.input {
	case inputCompose:
		m.compose, cmd = m.compose.Update(msg)
	case inputFilter:
		m.filter, cmd = m.filter.Update(msg)
		m.setQuery(m.filter.Value())
	case inputForm:
		m.form, cmd = m.form.Update(msg)
	}
	return cmd
}

// inputMsg handles what the open input (compose, filter, form) reports:
// sent, applied, submitted or closed. ok is false for other messages.
func (m *Model) inputMsg(msg tea.Msg) (cmd tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case composeSendMsg:
		m.closeInput()
		m.history = append(m.history, msg.text)
		m.setStatus(levelInfo, "sending to "+clean(msg.sess.Target)+"…")
		return inject(m.ctx, m.svc, msg.sess, msg.text), true
	case composeCloseMsg:
		m.closeInput()
		m.setStatus(levelInfo, "message not sent")
		return nil, true
	case filterApplyMsg:
		m.closeInput()
		m.focus = focusSessions
		m.table.focused, m.feed.focused = true, false
		m.table.SelectFirst()
		if q := clean(m.query); q != "" {
			if s, ok := m.table.Selected(); ok {
				m.setStatus(levelInfo, "filter: "+q+" · selected "+clean(s.Target))
			} else {
				m.setStatus(levelWarn, "no session matches "+q+"; esc clears the filter")
			}
		}
		return nil, true
	case filterClearMsg:
		m.closeInput()
		m.setQuery("")
		return nil, true
	case formSubmitMsg:
		return m.onFormSubmit(msg), true
	case formCloseMsg:
		m.closeInput()
		return nil, true
	}
	return nil, false
}

// lifecycleMsg handles the results of spawn, link, stop, finish and
// restore. ok is false for other messages.
func (m *Model) lifecycleMsg(msg tea.Msg) (cmd tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case spawnProgressMsg:
		if m.spawning != "" {
			m.setStatus(levelInfo, "spawning "+clean(m.spawning)+": "+clean(msg.text))
		}
		return nextSpawnStep(msg.ch), true
	case spawnDoneMsg:
		m.onSpawnDone(msg)
		return nil, true
	case linkDoneMsg:
		m.onLinkDone(msg)
		return nil, true
	case stopDoneMsg:
		m.onStopDone(msg)
		return nil, true
	case finishDiffMsg:
		return m.onFinishDiff(msg), true
	case finishDoneMsg:
		m.onFinishDone(msg)
		return nil, true
	case restoreDoneMsg:
		m.onRestoreDone(msg)
		return nil, true
	}
	return nil, false
}

// featuresTimeout bounds the start's question of what the service has.
const featuresTimeout = 2 * time.Second

// features asks the service which parts it has and, when it has
// orchestrators, which agents a spawn may name. A service that does not
// answer has none of them: the keys that need them say so.
func features(ctx context.Context, svc facade.Service) (facade.Features, []string) {
	ctx, cancel := context.WithTimeout(ctx, featuresTimeout)
	defer cancel()
	f, err := svc.Features(ctx)
	if err != nil {
		return facade.Features{}, nil
	}
	var agents []string
	if f.Orchestrators {
		agents, _ = svc.Agents(ctx)
	}
	return f, agents
}
