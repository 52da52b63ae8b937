package mcpserver

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind: every
// server loop must stop with its context.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Keep-alive connections of net/http's shared client pool.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}
