package tmux

import (
	"context"
	"sync"
)

// queue holds events between the control clients' readers, which must
// never block, and a consumer that may be slow. It is bounded two ways:
//
//   - EventOutput is coalesced per pane: while a pane's event waits to be
//     delivered, more output from that pane only appends to it (up to
//     outLimit bytes of Data, then Truncated is set). So there is at most
//     one queued output event per pane, however chatty the pane.
//   - An event identical to one already waiting is dropped (each control
//     client reports server-wide changes, so duplicates are common); a
//     newer EventListed gives the waiting one its listing.
//   - If limit events are waiting, everything queued is replaced by a single
//     EventResync: the consumer re-lists and re-captures, which subsumes
//     whatever it missed.
type queue struct {
	mu       sync.Mutex
	items    []*Event
	panes    map[string]*Event // the queued EventOutput of each pane
	limit    int
	outLimit int
	wake     chan struct{} // buffered 1: "items may be non-empty"
}

func newQueue(limit, outLimit int) *queue {
	return &queue{
		panes:    make(map[string]*Event),
		limit:    limit,
		outLimit: outLimit,
		wake:     make(chan struct{}, 1),
	}
}

func (q *queue) push(e Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e.Kind == EventOutput {
		if p := q.panes[e.PaneID]; p != nil {
			q.appendData(p, e.Data, e.Truncated)
			p.Streaming = p.Streaming && e.Streaming
			return
		}
	} else {
		for _, it := range q.items {
			if sameEvent(*it, e) {
				if e.Kind == EventListed {
					it.Panes = e.Panes
				}
				return
			}
		}
	}
	if len(q.items) >= q.limit {
		clear(q.items)
		q.items = q.items[:0]
		clear(q.panes)
		q.items = append(q.items, &Event{Kind: EventResync, Reason: "event queue overflowed: the consumer fell behind"})
		q.signal()
		return
	}
	ev := e
	if ev.Kind == EventOutput {
		ev.Data = nil
		q.appendData(&ev, e.Data, e.Truncated)
		q.panes[ev.PaneID] = &ev
	}
	q.items = append(q.items, &ev)
	q.signal()
}

func (q *queue) appendData(p *Event, data []byte, truncated bool) {
	if truncated {
		p.Truncated = true
	}
	room := q.outLimit - len(p.Data)
	if len(data) > room {
		data = data[:max(room, 0)]
		p.Truncated = true
	}
	if len(data) > 0 {
		p.Data = append(p.Data, data...)
	}
}

func sameEvent(a, b Event) bool {
	return a.Kind == b.Kind && a.PaneID == b.PaneID && a.WindowID == b.WindowID &&
		a.SessionID == b.SessionID && a.Name == b.Name && a.Layout == b.Layout && a.Reason == b.Reason
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop waits for the next event; ok is false when ctx is done.
func (q *queue) pop(ctx context.Context) (Event, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			e := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			if e.Kind == EventOutput && q.panes[e.PaneID] == e {
				delete(q.panes, e.PaneID)
			}
			if len(q.items) > 0 {
				q.signal()
			}
			q.mu.Unlock()
			return *e, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return Event{}, false
		}
	}
}

// len reports how many events wait (for tests).
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
