package tmux

import "fmt"

// EventKind says what an Event reports.
type EventKind int

// Event kinds. Control-mode notifications map one to one onto the first
// group; the Watcher adds EventResync and EventDisconnected.
const (
	// EventOutput: pane PaneID changed. From a control client it means the
	// pane wrote output (Data holds it when asked for); from the polling
	// fallback it means the pane's activity, cursor, size, mode, title or
	// history changed. Capture the pane to see what it shows now.
	EventOutput              EventKind = iota + 1
	EventWindowAdd                     // WindowID was linked to the watched session
	EventWindowClose                   // WindowID closed
	EventWindowRenamed                 // WindowID is now called Name
	EventUnlinkedWindowAdd             // WindowID was created in another session
	EventUnlinkedWindowClose           // WindowID, in another session, closed
	EventSessionChanged                // the control client now shows SessionID (Name)
	// EventSessionsChanged: a session was created or destroyed. The Watcher
	// sends it only after it has attached to new sessions, so a consumer that
	// re-lists panes on it misses no output; the polling fallback sends it when
	// the set of panes changes.
	EventSessionsChanged
	EventSessionRenamed  // SessionID (when tmux says) was renamed to Name
	EventPaneModeChanged // PaneID entered or left copy mode or another mode
	EventLayoutChange    // WindowID's layout changed (pane split, closed or resized)
	EventExit            // the control client exited; Reason says why if tmux did. Always a Conn's last event.
	EventResync          // the Watcher may have missed events: re-list panes and re-capture. Reason says why.
	EventDisconnected    // the server went away; the Watcher waits for it to come back
	// EventListed: the polling Watcher listed every pane in full; Panes
	// holds that listing. It comes before the events the listing gave
	// rise to (EventSessionsChanged, EventOutput), so a consumer that
	// keeps this listing need not list panes again for them. (The
	// EventResync that starts watching a server, or follows lost events,
	// asks for a listing made anew.) Only the newest waits in the queue.
	EventListed
)

var kindNames = map[EventKind]string{
	EventOutput:              "output",
	EventWindowAdd:           "window-add",
	EventWindowClose:         "window-close",
	EventWindowRenamed:       "window-renamed",
	EventUnlinkedWindowAdd:   "unlinked-window-add",
	EventUnlinkedWindowClose: "unlinked-window-close",
	EventSessionChanged:      "session-changed",
	EventSessionsChanged:     "sessions-changed",
	EventSessionRenamed:      "session-renamed",
	EventPaneModeChanged:     "pane-mode-changed",
	EventLayoutChange:        "layout-change",
	EventExit:                "exit",
	EventResync:              "resync",
	EventDisconnected:        "disconnected",
	EventListed:              "listed",
}

func (k EventKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one change on a tmux server. Only the fields that the Kind
// documents are set.
type Event struct {
	Kind      EventKind
	PaneID    string // "%3"
	WindowID  string // "@2"
	SessionID string // "$1"
	Name      string // new session or window name
	Layout    string // window layout (EventLayoutChange)
	Reason    string // EventExit, EventResync, EventDisconnected
	// Data is the decoded output of EventOutput, when decoding was asked for
	// (ConnOptions.Output, WatcherOptions.OutputBytes). The Watcher
	// concatenates the output of coalesced events up to its limit and sets
	// Truncated when it dropped some.
	Data      []byte
	Truncated bool
	// Panes is the listing of EventListed, in list-panes -a order.
	Panes []Pane
	// Streaming marks an EventOutput of the polling Watcher sent only
	// because the pane kept changing (its beat, once every BusyGap): the
	// pane has not paused, so nothing it shows can be waiting for an
	// answer yet. A pane's first change after a quiet spell, a change of
	// its layout after a steady spell, and its first pause are reported
	// with Streaming false. Coalesced events are Streaming only when all
	// of them were.
	Streaming bool
}

func (e Event) String() string {
	s := e.Kind.String()
	for _, f := range []string{e.PaneID, e.WindowID, e.SessionID, e.Name, e.Reason} {
		if f != "" {
			s += " " + f
		}
	}
	return s
}
