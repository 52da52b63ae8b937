package monitor

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

const (
	// previewFollow is how long a preview stream keeps reading a pane
	// after the watcher reported its output: the watcher reports a pane
	// that keeps printing only once a BusyGap (a second), so between two
	// reports the stream reads it every api.PreviewEvery itself.
	previewFollow = time.Second
	// previewRead bounds one read of a followed pane.
	previewRead = 5 * time.Second
)

// previewHub is who follows which pane's screen (WatchPreview). The tmux
// watcher's reports of a pane's output (Supervisor.handle) wake the
// pane's followers without blocking: each has a wake-up of one slot, so
// reports that come while it reads are one.
type previewHub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{} // by pane id
}

// add makes a follower of pane; drop ends it.
func (h *previewHub) add(pane string) (wake <-chan struct{}, drop func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[string]map[chan struct{}]struct{}{}
	}
	if h.subs[pane] == nil {
		h.subs[pane] = map[chan struct{}]struct{}{}
	}
	h.subs[pane][ch] = struct{}{}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[pane], ch)
		if len(h.subs[pane]) == 0 {
			delete(h.subs, pane)
		}
	}
}

// output wakes pane's followers: its screen may have changed.
func (h *previewHub) output(pane string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[pane] {
		select {
		case ch <- struct{}{}:
		default: // already woken
		}
	}
}

// WatchPreview delivers the pane's screen now, then again whenever it
// changed: nothing is read while the watcher reports no output of the
// pane. A report has the pane read at once, or PreviewEvery after the
// last read; then, as long as each read finds the screen changed and the
// last report is less than previewFollow old, every PreviewEvery (the
// watcher reports a pane that keeps printing only once a second, and
// again once it stops, so the last screen is always read). Only a screen
// that differs from the last one sent is sent; a consumer that reads
// slowly gets the newest screen, never a backlog. The channel closes when
// ctx ends.
func (s *Supervisor) WatchPreview(ctx context.Context, req api.PreviewRequest) (<-chan api.PreviewUpdate, error) {
	sess, err := s.resolve(req.Target)
	if err != nil {
		return nil, err
	}
	req.Target = api.Target{Pane: sess.Pane}
	wake, drop := s.previews.add(sess.Pane)
	out := make(chan api.PreviewUpdate)
	go func() {
		defer close(out)
		defer drop()
		s.followPreview(ctx, req, wake, out)
	}()
	return out, nil
}

// followPreview is WatchPreview's loop.
func (s *Supervisor) followPreview(ctx context.Context, req api.PreviewRequest, wake <-chan struct{}, out chan<- api.PreviewUpdate) {
	var (
		last   api.PreviewUpdate
		sent   bool
		readAt time.Time // the last read
		until  time.Time // reads go on until then while the screen changes
		armed  = true
	)
	next := time.NewTimer(0) // the screen now
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			until = time.Now().Add(previewFollow)
			if !armed {
				next.Reset(max(0, time.Until(readAt.Add(api.PreviewEvery))))
				armed = true
			}
			continue
		case <-next.C:
			armed = false
		}
		u := s.readPreview(ctx, req)
		readAt = time.Now()
		if sent && samePreview(u, last) {
			continue // as it was: wait for the next report
		}
		select {
		case out <- u:
		case <-ctx.Done():
			return
		}
		last, sent = u, true
		if time.Now().Before(until) {
			next.Reset(max(0, time.Until(readAt.Add(api.PreviewEvery))))
			armed = true
		}
	}
}

// readPreview reads the pane's screen as Preview does, or why it cannot.
func (s *Supervisor) readPreview(ctx context.Context, req api.PreviewRequest) api.PreviewUpdate {
	ctx, cancel := context.WithTimeout(ctx, previewRead)
	defer cancel()
	p, err := s.Preview(ctx, req)
	if err != nil {
		return api.PreviewUpdate{Preview: api.Preview{Pane: req.Pane, Lines: []string{}}, Err: err.Error()}
	}
	return api.PreviewUpdate{Preview: p}
}

// samePreview reports whether two reads show the same thing.
func samePreview(a, b api.PreviewUpdate) bool {
	return a.Err == b.Err && a.Pane == b.Pane && a.Session == b.Session && a.Truncated == b.Truncated && slices.Equal(a.Lines, b.Lines)
}
