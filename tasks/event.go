package tasks

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// EventKind says what changed.
type EventKind uint8

// The transitions a Watcher reports. Run loads the initial state without
// events: read it with Snapshot once Ready is closed.
const (
	// EventListAdded: a list directory (or legacy todo file) appeared. Its
	// tasks follow as EventTaskCreated.
	EventListAdded EventKind = iota + 1
	// EventListRemoved: a list went away with all its tasks. Some of them may
	// have been reported as EventTaskDeleted just before.
	EventListRemoved
	// EventTaskCreated: a task appeared. Task holds it.
	EventTaskCreated
	// EventTaskStatusChanged: a task's status went From -> To. Task holds the
	// new version. Other fields that changed with it come as EventTaskUpdated.
	EventTaskStatusChanged
	// EventTaskUpdated: fields other than the status changed; Fields names
	// them (subject, description, active_form, owner, blocks, blocked_by,
	// metadata, extra). Task holds the new version.
	EventTaskUpdated
	// EventTaskDeleted: a task's file was deleted (or its item left a legacy
	// file). Task holds its last version.
	EventTaskDeleted
	// EventListCompleted: every task of the list is now completed (and it has
	// Total > 0). Raised once per transition to complete.
	EventListCompleted
	// EventFileError: a file (or list directory) has a new or different
	// problem, in Err. The last good version of its task is kept.
	EventFileError
	// EventFileRecovered: the problem with Path (in Err) is gone: the file
	// was fixed or deleted.
	EventFileRecovered
	// EventOverflow: this subscriber fell behind and events were dropped.
	// Call Snapshot to resynchronise; events already queued after this one
	// may repeat what the snapshot shows.
	EventOverflow
)

var kindNames = [...]string{
	EventListAdded:         "list_added",
	EventListRemoved:       "list_removed",
	EventTaskCreated:       "task_created",
	EventTaskStatusChanged: "task_status_changed",
	EventTaskUpdated:       "task_updated",
	EventTaskDeleted:       "task_deleted",
	EventListCompleted:     "list_completed",
	EventFileError:         "file_error",
	EventFileRecovered:     "file_recovered",
	EventOverflow:          "overflow",
}

// String returns the kind in snake case, as used in logs and journals.
func (k EventKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// MarshalText encodes the kind as its String.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Event is one transition seen by a Watcher. Fields that do not apply to the
// Kind are zero. Treat it as read-only: subscribers share it.
type Event struct {
	Kind     EventKind
	Time     time.Time
	ListID   string
	ListPath string
	Legacy   bool

	TaskID string
	Task   Task     // task events: the new version (the last one for EventTaskDeleted)
	From   Status   // EventTaskStatusChanged
	To     Status   // EventTaskStatusChanged
	Fields []string // EventTaskUpdated

	Path  string // the file concerned: task events and file events
	Err   string // EventFileError, EventFileRecovered (the problem that is gone)
	Total int    // EventListCompleted: number of tasks
}

// String describes the event in one line, for logs.
func (e Event) String() string {
	var b strings.Builder
	b.WriteString(e.Kind.String())
	if e.ListID != "" {
		fmt.Fprintf(&b, " list=%q", e.ListID)
	}
	if e.TaskID != "" {
		fmt.Fprintf(&b, " task=%q", e.TaskID)
	}
	switch e.Kind {
	case EventTaskStatusChanged:
		fmt.Fprintf(&b, " %s->%s", e.From, e.To)
	case EventTaskUpdated:
		fmt.Fprintf(&b, " fields=%s", strings.Join(e.Fields, ","))
	case EventFileError, EventFileRecovered:
		fmt.Fprintf(&b, " path=%q err=%q", e.Path, e.Err)
	case EventListCompleted:
		fmt.Fprintf(&b, " total=%d", e.Total)
	}
	return b.String()
}

// Subscription receives a Watcher's events on a bounded channel. If the
// subscriber does not keep up, events are dropped, counted, and an
// EventOverflow is delivered in their place.
type Subscription struct {
	w       *Watcher
	ch      chan Event
	dropped atomic.Uint64
}

// C returns the channel of events. It is closed when the subscription is
// closed or the watcher's Run returns.
func (s *Subscription) C() <-chan Event { return s.ch }

// Dropped returns how many events this subscriber has missed so far.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close stops the subscription and closes its channel. It is safe to call
// more than once.
func (s *Subscription) Close() {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if _, ok := s.w.subs[s]; ok {
		delete(s.w.subs, s)
		close(s.ch)
	}
}

// send delivers ev without blocking. The caller holds w.mu, and is the only
// sender, so the length checks cannot be invalidated by another send. The
// last slot of the buffer is kept for EventOverflow, so a subscriber that
// fell behind always learns it after the events it did get.
func (s *Subscription) send(ev Event) {
	if len(s.ch) < cap(s.ch)-1 {
		s.ch <- ev
		return
	}
	s.dropped.Add(1)
	if len(s.ch) < cap(s.ch) {
		s.ch <- Event{Kind: EventOverflow, Time: ev.Time}
	}
}
