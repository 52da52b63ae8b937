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
	stdin  io.Reader
	stdout io.Writer
	flags  config.Overrides
}

// setup resolves the settings from the global flags and opens the log.
func (a *app) setup() error { return a.App.Setup(a.flags) }
