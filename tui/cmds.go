package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// Every call to the service happens in a tea.Cmd with a deadline, and
// comes back to Update as one of these messages.

const (
	// readTimeout bounds snapshots, wake lists, a preview's first screen
	// and task lists.
	readTimeout = 5 * time.Second
	// actionTimeout bounds an action; an injection waits for the pane to
	// show the text, which takes a few seconds at most.
	actionTimeout = 20 * time.Second
	// tickEvery paces the age column (whole seconds), the status line's
	// flash and the header's MCP and hosts items.
	tickEvery = time.Second
	// zoomHistory is how much scrollback the zoomed preview fetches.
	zoomHistory = 2000
	// origin and acker name the dashboard in the audit log and on acks.
	origin = "tui"
)

type (
	// tickMsg paces the ages; it carries the time and the MCP status,
	// read off the UI goroutine.
	tickMsg struct {
		now    time.Time
		mcp    *MCPStatus
		notice string
		// hosts is the header's hosts item (hostsText), when there are
		// hosts; hostsDown: one is disconnected.
		hosts     *string
		hostsDown bool
	}

	// watchStartedMsg: Watch answered for stream generation gen.
	watchStartedMsg struct {
		gen int
		ch  <-chan api.Update
		err error
	}
	// snapshotMsg: a snapshot for generation gen.
	snapshotMsg struct {
		gen  int
		snap api.Snapshot
		err  error
	}
	// updateMsg: one registry update, or (ok false) the end of the stream.
	updateMsg struct {
		gen int
		u   api.Update
		ok  bool
	}

	// wakesStartedMsg: SubscribeWakes answered for generation gen.
	wakesStartedMsg struct {
		gen int
		ch  <-chan api.WakeMessage
		err error
	}
	// wakeListMsg: the unacknowledged wakes (open and resolved), read to
	// (re)synchronise.
	wakeListMsg struct {
		gen int
		evs []api.Wake
		err error
	}
	// wakeMsg: one wake message, or (ok false) the end of the stream.
	wakeMsg struct {
		gen int
		m   api.WakeMessage
		ok  bool
	}

	// retryMsg: time to reconnect a stream.
	retryMsg struct {
		stream streamID
		gen    int
	}

	// previewStartedMsg: WatchPreview answered for generation gen, with
	// the pane's screen now (first), or failed.
	previewStartedMsg struct {
		gen   int
		ch    <-chan api.PreviewUpdate
		first api.PreviewUpdate
		err   error
	}
	// screenMsg: one screen of the preview stream, or (ok false) its end.
	screenMsg struct {
		gen int
		u   api.PreviewUpdate
		ok  bool
	}
	taskListMsg struct {
		id    string
		lists []api.TaskListDoc
		err   error
	}

	// actionMsg: an inject, answer or interrupt came back.
	actionMsg struct {
		action string // "inject", "answer", "interrupt"
		pane   string
		target string // the session's target when the action was asked
		what   string // what was asked: the answer, the text
		res    api.ActionResult
		err    error
		// note: recording a sent reminder failed (it was typed).
		note error
	}
	ackMsg struct {
		all bool
		evs []api.Wake
		err error
	}
	jumpMsg struct {
		sess api.Session
		err  error
	}
	// bellDoneMsg: the bell was written (or failed to be).
	bellDoneMsg struct{ err error }
)

// streamID names one of the event streams.
type streamID int

const (
	streamWatch streamID = iota
	streamWakes
	streamPreview
)

func (s streamID) String() string {
	switch s {
	case streamWatch:
		return "session updates"
	case streamWakes:
		return "wakes"
	}
	return "the preview"
}

// A command that waits (for a timer or a stream) is a method value of
// one of the types below, never a closure, so it is recognisable.

// timer waits d, then makes its message; it gives up (no message) when
// ctx ends, so no timer outlives the dashboard.
type timer struct {
	ctx context.Context
	d   time.Duration
	msg func() tea.Msg
}

func (t timer) wait() tea.Msg {
	tm := time.NewTimer(t.d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return t.msg()
	case <-t.ctx.Done():
		return nil
	}
}

func tick(ctx context.Context, clock func() time.Time, mcp func() MCPStatus, notice func() string, hosts func() []HostStatus) tea.Cmd {
	return timer{ctx: ctx, d: tickEvery, msg: func() tea.Msg {
		msg := tickMsg{now: clock()}
		if mcp != nil {
			st := mcp()
			msg.mcp = &st
		}
		if hosts != nil {
			t, down := hostsText(hosts(), msg.now)
			msg.hosts, msg.hostsDown = &t, down
		}
		if notice != nil {
			msg.notice = notice()
		}
		return msg
	}}.wait
}

func startWatch(ctx context.Context, svc api.Service, gen int) tea.Cmd {
	return func() tea.Msg {
		ch, err := svc.Watch(ctx)
		return watchStartedMsg{gen: gen, ch: ch, err: err}
	}
}

func takeSnapshot(ctx context.Context, svc api.Service, gen int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		snap, err := svc.Snapshot(ctx)
		return snapshotMsg{gen: gen, snap: snap, err: err}
	}
}

// updateReader reads one registry update.
type updateReader struct {
	ch  <-chan api.Update
	gen int
}

func (r updateReader) read() tea.Msg {
	u, ok := <-r.ch
	return updateMsg{gen: r.gen, u: u, ok: ok}
}

// nextUpdate reads one update; Update re-issues it after each one.
func nextUpdate(ch <-chan api.Update, gen int) tea.Cmd {
	return updateReader{ch: ch, gen: gen}.read
}

func startWakes(ctx context.Context, svc api.Service, gen int) tea.Cmd {
	return func() tea.Msg {
		ch, err := svc.SubscribeWakes(ctx, api.WakeFilter{IncludeResolved: true})
		return wakesStartedMsg{gen: gen, ch: ch, err: err}
	}
}

func listWakes(ctx context.Context, svc api.Service, gen int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		evs, err := svc.Wakes(ctx, api.WakeFilter{IncludeResolved: true})
		return wakeListMsg{gen: gen, evs: evs, err: err}
	}
}

// wakeReader reads one wake message.
type wakeReader struct {
	ch  <-chan api.WakeMessage
	gen int
}

func (r wakeReader) read() tea.Msg {
	m, ok := <-r.ch
	return wakeMsg{gen: r.gen, m: m, ok: ok}
}

// nextWake reads one wake message; Update re-issues it after each one.
func nextWake(ch <-chan api.WakeMessage, gen int) tea.Cmd { return wakeReader{ch: ch, gen: gen}.read }

func retryAfter(ctx context.Context, d time.Duration, s streamID, gen int) tea.Cmd {
	return timer{ctx: ctx, d: d, msg: func() tea.Msg { return retryMsg{stream: s, gen: gen} }}.wait
}

// startPreview opens the preview stream of t (coloured; zoomed, with
// scrollback) and reads its first screen, the pane's now.
func startPreview(ctx context.Context, svc api.Service, t previewTarget, gen int) tea.Cmd {
	return func() tea.Msg {
		req := api.PreviewRequest{Target: api.Target{Pane: t.pane}, Escapes: true}
		if t.zoomed {
			req.History = zoomHistory
		}
		ch, err := svc.WatchPreview(ctx, req)
		if err != nil {
			return previewStartedMsg{gen: gen, err: err}
		}
		first := time.NewTimer(readTimeout)
		defer first.Stop()
		select {
		case u, ok := <-ch:
			if !ok {
				return previewStartedMsg{gen: gen, err: errStreamClosed}
			}
			return previewStartedMsg{gen: gen, ch: ch, first: u}
		case <-first.C:
			return previewStartedMsg{gen: gen, err: fmt.Errorf("the pane's screen did not come within %v", readTimeout)}
		}
	}
}

// screenReader reads one screen of the preview stream.
type screenReader struct {
	ch  <-chan api.PreviewUpdate
	gen int
}

func (r screenReader) read() tea.Msg {
	u, ok := <-r.ch
	return screenMsg{gen: r.gen, u: u, ok: ok}
}

// nextScreen reads one screen; Update re-issues it after each one.
func nextScreen(ch <-chan api.PreviewUpdate, gen int) tea.Cmd {
	return screenReader{ch: ch, gen: gen}.read
}

func fetchTaskList(ctx context.Context, svc api.Service, id string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		lists, err := svc.TaskLists(ctx, id)
		return taskListMsg{id: id, lists: lists, err: err}
	}
}

func inject(ctx context.Context, svc api.Service, sess api.Session, text string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		res, err := svc.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: sess.Pane}, Text: text, Origin: origin})
		return actionMsg{action: "inject", pane: sess.Pane, target: sess.Target, what: text, res: res, err: err}
	}
}

// remind sends a wake's reminder through the service's Remind, the way
// every reminder is sent (api.SendReminder): typed into its pane, then
// recorded so the coach measures it. A reminder typed but not recorded is a
// sent reminder with a note.
func remind(ctx context.Context, svc facade.Coaching, sess api.Session, r api.Reminder) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		res, err := svc.Remind(ctx, facade.RemindRequest{Pane: sess.Pane, Reminder: r, Origin: origin})
		msg := actionMsg{action: "remind", pane: sess.Pane, target: sess.Target, what: r.Pattern, res: res, err: err}
		if nr := (*api.NotRecordedError)(nil); errors.As(err, &nr) {
			msg.err, msg.note = nil, nr.Err
		} else if errors.Is(err, api.ErrNotRecorded) {
			// Across the socket: the sentence, whose cause follows.
			msg.err, msg.note = nil, err
			if _, cause, ok := strings.Cut(err.Error(), "but not recorded: "); ok {
				msg.note = errors.New(cause)
			}
		}
		return msg
	}
}

func answer(ctx context.Context, svc api.Service, sess api.Session, ans string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		// The prompt the operator sees on the row: system3 types only
		// while that prompt is still on screen.
		res, err := svc.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: sess.Pane}, Prompt: sess.Prompt, Answer: ans, Origin: origin})
		return actionMsg{action: "answer", pane: sess.Pane, target: sess.Target, what: ans, res: res, err: err}
	}
}

func interrupt(ctx context.Context, svc api.Service, sess api.Session) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		res, err := svc.Interrupt(ctx, api.InterruptRequest{Target: api.Target{Pane: sess.Pane}, Origin: origin})
		return actionMsg{action: "interrupt", pane: sess.Pane, target: sess.Target, res: res, err: err}
	}
}

func ack(ctx context.Context, svc api.Service, id string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		ev, err := svc.Ack(ctx, id, origin)
		return ackMsg{evs: []api.Wake{ev}, err: err}
	}
}

func ackAll(ctx context.Context, svc api.Service) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		evs, err := svc.AckAll(ctx, origin)
		return ackMsg{all: true, evs: evs, err: err}
	}
}

func jump(fn func(api.Session) error, sess api.Session) tea.Cmd {
	return func() tea.Msg { return jumpMsg{sess: sess, err: fn(sess)} }
}

// ringBell writes the terminal bell. In the alternate screen Bubble Tea
// has no print command, so the bell goes to the output directly; Run
// serialises it with the renderer's writes.
func ringBell(w io.Writer) tea.Cmd {
	return func() tea.Msg {
		_, err := io.WriteString(w, "\a")
		return bellDoneMsg{err: err}
	}
}
