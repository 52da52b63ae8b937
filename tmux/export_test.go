package tmux

import (
	"context"
	"errors"
)

// Exported for the external tests that capture real tmux output.
var (
	PaneFormat = paneFormat
	ParsePanes = parsePanes
)

// RunNative runs a command over the native client only. fellBack reports
// that the native client declined it (it was not run to completion).
func (s Server) RunNative(ctx context.Context, args ...string) (out []byte, err error, fellBack bool) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	out, err = s.execNative(ctx, "native", "", args)
	if errors.Is(err, errFallback) {
		return nil, nil, true
	}
	return out, err, false
}

// RunForked runs a command by forking a tmux client.
func (s Server) RunForked(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	return s.fork(ctx, "native", "", nil, args...)
}

var NativeOK = nativeOK

// TTYFeed is the watcher's terminal write feed, for the external tests.
type TTYFeed struct{ f *ttyFeed }

func NewTTYFeed() (*TTYFeed, error) {
	f, err := newTTYFeed()
	if err != nil {
		return nil, err
	}
	return &TTYFeed{f}, nil
}

// SetBuffer sets the size of the feed's read buffer, so that a test can
// queue more events than one read takes.
func (t *TTYFeed) SetBuffer(n int) { t.f.buf = make([]byte, n) }

func (t *TTYFeed) Sync(panes []Pane) (added, unwatched int) { return t.f.sync(panes) }
func (t *TTYFeed) Watching(pane string) bool                { return t.f.watching(pane) }
func (t *TTYFeed) Close()                                   { t.f.close() }

// Drain returns the panes written to since the last call.
func (t *TTYFeed) Drain() (wrote map[string]bool, topology, lost bool, err error) {
	wrote = map[string]bool{}
	topology, lost, err = t.f.drain(wrote)
	return wrote, topology, lost, err
}
