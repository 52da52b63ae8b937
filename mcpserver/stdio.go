package mcpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio speaks MCP on in and out (a client that launched system3, like
// Claude Desktop) until in ends or ctx is done. Nothing else is written to
// out: logs go to the server's logger. mcp-go keeps one stdio session per
// process, so run one ServeStdio at a time.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	registered := s.primeResources(runCtx)
	wg.Go(func() { s.watchResources(runCtx, registered) })

	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	stdio.SetContextFunc(withTracking)
	s.log.Info("mcp server on stdio", "read_only", s.opts.ReadOnly)
	err := stdio.Listen(runCtx, in, trackingWriter{w: notFoundWriter{w: out}, t: s.tracker})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil
	}
	return err
}
