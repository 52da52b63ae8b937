package main

import (
	"io"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/cmd/system3/internal/core"
)

// app is what the commands share: the standard streams, the global flags,
// and the process they run in (App).
type app struct {
	core.App
	stdin io.Reader
	// stdout is the commands' text output. It passes through the one
	// sanitiser (internal/termtext) as its last step, so no printing path
	// can put an escape sequence from an agent's screen, a store or a
	// client on the user's terminal.
	stdout io.Writer
	// term is the terminal itself, for what draws on it (the dashboard,
	// the fake agent, attach, notification escapes) or speaks a protocol
	// over it (MCP on stdio): those choose every byte they write.
	term  io.Writer
	flags config.Overrides
}

// setup resolves the settings from the global flags and opens the log.
func (a *app) setup() error { return a.App.Setup(a.flags) }
