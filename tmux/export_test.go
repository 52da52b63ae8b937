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
